package gateway_test

import (
	"net/http"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

func TestTenantRouting(t *testing.T) {
	env := gwtest.Start(t, func(c *config.Config) { c.Agents[0].TenantRouting = true })
	tok := env.Token(t, "acme", "alice")

	cases := []struct {
		name, method, path, body, wantPath string
		// wantBody is the JSON-RPC body the agent must receive, byte for
		// byte: the tenant spliced into what the caller sent.
		wantBody   string
		wantStatus int
	}{
		{"rest send gets the tenant prefix", http.MethodPost, "/message:send",
			`{"message":{"messageId":"tr-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "/acme/message:send", "", 200},
		{"rest send naming its own tenant", http.MethodPost, "/acme/message:send",
			`{"message":{"messageId":"tr-2","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "/acme/message:send", "", 200},
		{"json-rpc send gets params.tenant", http.MethodPost, "/",
			`{ "params" : {"x-extra":{"kept":true, "s":"a<b\/\u0065"} ,` + "\n\t" + `"message":{"messageId":"tr-3","role":"ROLE_USER","parts":[{"text":"hi"}]} }, "method":"S\u0065ndMessage","id":7,"jsonrpc":"2.0"}`, "/",
			`{ "params" : {"x-extra":{"kept":true, "s":"a<b\/\u0065"} ,` + "\n\t" + `"message":{"messageId":"tr-3","role":"ROLE_USER","parts":[{"text":"hi"}]},"tenant":"acme" }, "method":"S\u0065ndMessage","id":7,"jsonrpc":"2.0"}`, 200},
		{"json-rpc send naming its own tenant", http.MethodPost, "/",
			`{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{ "tenant" : "acme", "message":{"messageId":"tr-5","role":"ROLE_USER","parts":[{"text":"<hi>"}]}}}`, "/",
			`{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{ "tenant" : "acme", "message":{"messageId":"tr-5","role":"ROLE_USER","parts":[{"text":"<hi>"}]}}}`, 200},
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
			if c.wantBody != "" && string(reqs[0].Body) != c.wantBody {
				t.Fatalf("params not routed as expected:\n got %s\nwant %s", reqs[0].Body, c.wantBody)
			}
		})
	}
}
