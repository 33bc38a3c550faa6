package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// bridgedCard is what the SDKs read of a card: 1.0 readers the
// supportedInterfaces, 0.3 readers url, preferredTransport and
// additionalInterfaces, and each the security schemes of its shape.
type bridgedCard struct {
	URL                  string `json:"url"`
	PreferredTransport   string `json:"preferredTransport"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
	SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
	Skills          []struct {
		ID string `json:"id"`
	} `json:"skills"`
}

// A bridged agent's cards, public and extended, in every HTTP form a
// caller reads them in, list the bridge's offer at the gateway, with the
// schemes in the caller's shape; the extended card keeps the agent's
// extended skills.
func TestBridgedAgentCards(t *testing.T) {
	env := gwtest.Start(t, func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{
			Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"},
			Offer: []config.BridgeInterface{{Version: "1.0", Binding: "JSONRPC"}, {Version: "0.3", Binding: "HTTP+JSON"}, {Version: "0.3", Binding: "JSONRPC"}},
		}
	})
	tok := env.Token(t, "acme", "alice")
	for _, c := range []struct {
		name, method, path, version, body string
		extended                          bool
	}{
		{"public 1.0", http.MethodGet, "/.well-known/agent-card.json", "1.0", "", false},
		{"public 0.3", http.MethodGet, "/.well-known/agent-card.json", "", "", false},
		{"extended json-rpc 1.0", http.MethodPost, "/", "1.0", `{"jsonrpc":"2.0","id":"c1","method":"GetExtendedAgentCard","params":{}}`, true},
		{"extended json-rpc 0.3", http.MethodPost, "/", "", `{"jsonrpc":"2.0","id":"c2","method":"agent/getAuthenticatedExtendedCard"}`, true},
		{"extended rest 0.3", http.MethodGet, "/v1/card", "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			}
			resp, got := env.Do(t, c.method, env.AgentBase+c.path, tok, c.version, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, got)
			}
			if c.method == http.MethodPost {
				res, code, err := a2a.UnwrapRPC(got)
				if err != nil || res == nil {
					t.Fatalf("not a result (code %d, %v): %s", code, err, got)
				}
				got = res
			}
			var card bridgedCard
			if err := json.Unmarshal(got, &card); err != nil {
				t.Fatal(err)
			}
			var v10 []string
			for _, i := range card.SupportedInterfaces {
				v10 = append(v10, i.ProtocolVersion+" "+i.ProtocolBinding+" "+i.URL)
			}
			rpc, rest := env.AgentBase, env.AgentBase
			if want := []string{"1.0 JSONRPC " + rpc, "0.3 HTTP+JSON " + rest, "0.3 JSONRPC " + rpc}; !slices.Equal(v10, want) {
				t.Errorf("supportedInterfaces %v, want %v", v10, want)
			}
			var v03 []string
			for _, i := range card.AdditionalInterfaces {
				v03 = append(v03, i.Transport+" "+i.URL)
			}
			if want := []string{"HTTP+JSON " + rest, "JSONRPC " + rpc}; !slices.Equal(v03, want) || card.URL != rest || card.PreferredTransport != "HTTP+JSON" {
				t.Errorf("0.3 interfaces %s %s %v, want %s HTTP+JSON %v", card.PreferredTransport, card.URL, v03, rest, want)
			}
			bearer := card.SecuritySchemes["bearer"]
			if _, wrapped := bearer["httpAuthSecurityScheme"]; wrapped != (c.version == "1.0") || (bearer["type"] == "http") == (c.version == "1.0") {
				t.Errorf("caller version %q reads the scheme %v", c.version, bearer)
			}
			extended := slices.ContainsFunc(card.Skills, func(s struct {
				ID string `json:"id"`
			}) bool {
				return s.ID == "extended-report"
			})
			if extended != c.extended {
				t.Errorf("extended skill listed: %v, want %v", extended, c.extended)
			}
		})
	}
}
