package gateway_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// cardPaths are the well-known card locations of 0.3 and later, and of
// earlier versions.
var cardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// TestPublicCard serves the agent's card through the gateway without a
// token: every URL in it points at the gateway's mount, the security
// schemes are the gateway's, and it revalidates with its ETag.
func TestPublicCard(t *testing.T) {
	env := gwtest.Start(t)
	c := newCaller(t, env)
	// The caller's credentials must not travel to the agent with the card
	// fetch: send some on the request that makes the gateway fetch it.
	env.Agent.ResetRequests()
	if resp, body := c.do(t, request{method: http.MethodGet, path: cardPaths[0]}); resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	for _, r := range env.Agent.Requests() {
		if r.Header.Get("Authorization") != "" {
			t.Fatalf("the card fetch carried the caller's Authorization to %s", r.Path)
		}
	}

	for _, path := range cardPaths {
		for _, version := range []string{"", "0.3", "1.0"} {
			t.Run(path+" version "+version, func(t *testing.T) {
				var h http.Header
				if version != "" {
					h = header(a2a.VersionHeader, version)
				}
				resp, body := c.do(t, request{method: http.MethodGet, path: path, header: h, anonymous: true})
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					t.Fatalf("HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
				card := decode(t, body)
				wantGatewayURLs(t, env, card)
				wantGatewaySecurity(t, card)
				wantCacheHeaders(t, resp)
				wantRevalidation(t, c, path, h, resp.Header.Get("ETag"))
			})
		}
	}
}

// wantGatewayURLs checks that every URL in the card is below the
// gateway's mount of the agent and that the agent's address appears
// nowhere.
func wantGatewayURLs(t *testing.T, env *gwtest.Env, card map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(card)
	if strings.Contains(string(raw), env.AgentURL) || strings.Contains(string(raw), strings.TrimPrefix(env.AgentURL, "http://")) {
		t.Fatalf("the agent's address leaked into the card: %s", raw)
	}
	urls := collectURLs(card, nil)
	if len(urls) == 0 {
		t.Fatalf("no URL in the card: %s", raw)
	}
	for _, u := range urls {
		if u != env.AgentBase && !strings.HasPrefix(u, env.AgentBase+"/") {
			t.Fatalf("URL %q does not point at the gateway mount %s", u, env.AgentBase)
		}
	}
	if u, _ := card["url"].(string); u == "" {
		t.Fatalf("the card has no url: %s", raw)
	}
	ifaces, _ := card["supportedInterfaces"].([]any)
	if len(ifaces) == 0 {
		t.Fatalf("the card has no supportedInterfaces: %s", raw)
	}
}

// collectURLs gathers every string value that is an absolute http(s) URL.
func collectURLs(v any, out []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			out = collectURLs(x, out)
		}
	case []any:
		for _, x := range v {
			out = collectURLs(x, out)
		}
	case string:
		if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
			out = append(out, v)
		}
	}
	return out
}

// wantGatewaySecurity checks that the schemes are the gateway's (a bearer
// JWT: the test gateway issues no API keys, so its card offers none), not
// the agent's, and that the requirements name only them.
func wantGatewaySecurity(t *testing.T, card map[string]any) {
	t.Helper()
	schemes, _ := card["securitySchemes"].(map[string]any)
	var names []string
	for name := range schemes {
		names = append(names, name)
	}
	slices.Sort(names)
	if !reflect.DeepEqual(names, []string{"bearer"}) {
		t.Fatalf("security schemes %v, want the gateway's bearer alone", schemes)
	}
	bearer, _ := schemes["bearer"].(map[string]any)
	if !strings.EqualFold(stringAt(bearer, "scheme", "httpAuthSecurityScheme"), "bearer") {
		t.Fatalf("bearer scheme %v", bearer)
	}
	if desc := stringAt(bearer, "description", "httpAuthSecurityScheme"); !strings.Contains(desc, "gateway") {
		t.Fatalf("the bearer scheme is not the gateway's: %v", bearer)
	}
	reqs, _ := card["security"].([]any)
	if reqs == nil {
		reqs, _ = card["securityRequirements"].([]any)
	}
	if len(reqs) == 0 {
		t.Fatalf("no security requirements: %v", card)
	}
	raw, _ := json.Marshal(reqs)
	for _, name := range names {
		if !strings.Contains(string(raw), `"`+name+`"`) {
			t.Fatalf("requirements %s do not name %s", raw, name)
		}
	}
}

// stringAt reads key from a 0.3 scheme object, or from inside its 1.0
// one-of member.
func stringAt(scheme map[string]any, key, member string) string {
	if s, ok := scheme[key].(string); ok {
		return s
	}
	inner, _ := scheme[member].(map[string]any)
	s, _ := inner[key].(string)
	return s
}

func wantCacheHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	if resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") == "" {
		t.Fatalf("no ETag or Cache-Control: %v", resp.Header)
	}
	if !slices.ContainsFunc(resp.Header.Values("Vary"), func(v string) bool {
		return strings.Contains(strings.ToLower(v), strings.ToLower(a2a.VersionHeader))
	}) {
		t.Fatalf("Vary %q does not name %s", resp.Header.Values("Vary"), a2a.VersionHeader)
	}
}

// wantRevalidation: the ETag gets a 304 without a body, and another tag
// the card again.
func wantRevalidation(t *testing.T, c *caller, path string, h http.Header, etag string) {
	t.Helper()
	cond := h.Clone()
	if cond == nil {
		cond = http.Header{}
	}
	cond.Set("If-None-Match", etag)
	resp, body := c.do(t, request{method: http.MethodGet, path: path, header: cond, anonymous: true})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("If-None-Match with the ETag: HTTP %d: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("ETag") != etag {
		t.Fatalf("304 carries ETag %q, want %q", resp.Header.Get("ETag"), etag)
	}
	cond.Set("If-None-Match", `"something-else"`)
	if resp, body := c.do(t, request{method: http.MethodGet, path: path, header: cond, anonymous: true}); resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("If-None-Match with another tag: HTTP %d: %s", resp.StatusCode, body)
	}
}
