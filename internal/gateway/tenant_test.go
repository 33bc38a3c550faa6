package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

func TestTenantRouting(t *testing.T) {
	env := gwtest.Start(t, func(c *config.Config) { c.Agents[0].TenantRouting = true })
	tok := env.Token(t, "acme", "alice")

	cases := []struct {
		name, method, path, body, wantPath, wantTenantParam string
		wantStatus                                          int
	}{
		{"rest send gets the tenant prefix", http.MethodPost, "/message:send",
			`{"message":{"messageId":"tr-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "/acme/message:send", "", 200},
		{"rest send naming its own tenant", http.MethodPost, "/acme/message:send",
			`{"message":{"messageId":"tr-2","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "/acme/message:send", "", 200},
		{"json-rpc send gets params.tenant", http.MethodPost, "/",
			`{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"tr-3","role":"ROLE_USER","parts":[{"text":"hi"}]},"x-extra":{"kept":true}}}`, "/", "acme", 200},
		{"rest send naming another tenant", http.MethodPost, "/globex/message:send",
			`{"message":{"messageId":"tr-4","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "", "", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env.Agent.ResetRequests()
			resp, body := env.Do(t, c.method, env.AgentBase+c.path, tok, "1.0", []byte(c.body))
			if resp.StatusCode != c.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.wantStatus, body)
			}
			reqs := env.Agent.Requests()
			if c.wantPath == "" {
				if len(reqs) != 0 {
					t.Fatalf("a refused request reached the agent: %+v", reqs)
				}
				return
			}
			if len(reqs) != 1 || reqs[0].Path != c.wantPath {
				t.Fatalf("agent saw %+v, want one request at %s", reqs, c.wantPath)
			}
			if c.wantTenantParam != "" {
				var env struct {
					Params map[string]json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(reqs[0].Body, &env); err != nil {
					t.Fatal(err)
				}
				if string(env.Params["tenant"]) != `"`+c.wantTenantParam+`"` || !strings.Contains(string(env.Params["x-extra"]), `"kept":true`) {
					t.Fatalf("params not routed as expected: %s", reqs[0].Body)
				}
			}
		})
	}
}
