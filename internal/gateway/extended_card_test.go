package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// The extended card is rewritten like the public one, in both bindings,
// and revalidates with its ETag.
func TestExtendedCardIsRewritten(t *testing.T) {
	env := gwtest.Start(t)
	tok := env.Token(t, "acme", "alice")
	cases := []struct {
		name, method, path, version, body string
	}{
		{"rest 1.0", http.MethodGet, "/extendedAgentCard", "1.0", ""},
		{"rest 0.3", http.MethodGet, "/v1/card", "", ""},
		{"json-rpc 1.0", http.MethodPost, "/", "1.0", `{"jsonrpc":"2.0","id":"c1","method":"GetExtendedAgentCard","params":{}}`},
		{"json-rpc 0.3", http.MethodPost, "/", "", `{"jsonrpc":"2.0","id":"c2","method":"agent/getAuthenticatedExtendedCard"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			}
			resp, got := env.Do(t, c.method, env.AgentBase+c.path, tok, c.version, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			cardJSON := got
			if c.method == http.MethodPost {
				res, code, err := a2a.UnwrapRPC(got)
				if err != nil || res == nil {
					t.Fatalf("not a result (code %d, %v): %s", code, err, got)
				}
				cardJSON = res
			}
			var card map[string]any
			if err := json.Unmarshal(cardJSON, &card); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(cardJSON), env.AgentURL) {
				t.Fatalf("the agent's own URL leaked into the extended card: %s", cardJSON)
			}
			if !strings.Contains(string(cardJSON), env.AgentBase) {
				t.Fatalf("the extended card does not point at the gateway: %s", cardJSON)
			}
			if etag := resp.Header.Get("ETag"); c.method == http.MethodGet {
				req, _ := http.NewRequest(http.MethodGet, env.AgentBase+c.path, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("If-None-Match", etag)
				if c.version != "" {
					req.Header.Set("A2A-Version", c.version)
				}
				r2, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				r2.Body.Close()
				if r2.StatusCode != http.StatusNotModified {
					t.Fatalf("revalidation with the ETag answered %d, want 304", r2.StatusCode)
				}
			}
		})
	}
	if resp, _ := env.Do(t, http.MethodGet, env.AgentBase+"/extendedAgentCard", "", "1.0", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the extended card needs a token; got %d", resp.StatusCode)
	}
}
