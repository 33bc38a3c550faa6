package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// authMinimal is minimal with an agent that takes part in auth flows.
const authMinimal = `
auth:
  api_keys: [{name: ci, tenant: t, key_sha256: "0000000000000000000000000000000000000000000000000000000000000000"}]
auth_flows:
  keys: [{id: k1, key_env: A2AGW_TEST_AF_KEY}]
agents:
  - name: cal
    url: "http://127.0.0.1:9001"
    auth_flow:
      oauth: {authorization_url: "https://idp.example/authorize", token_url: "http://127.0.0.1:9/token", client_id: gw}
`

func TestAuthFlowDefaults(t *testing.T) {
	t.Setenv("A2AGW_TEST_AF_KEY", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, AuthFlowKeyBytes)))
	cfg, err := Parse([]byte(authMinimal))
	if err != nil {
		t.Fatal(err)
	}
	o, f := cfg.AuthFlows, cfg.Agents[0].AuthFlow
	if o.ChallengeTTL.D() != 10*time.Minute || o.Retention.D() != time.Hour || o.SweepInterval.D() != 30*time.Second || !o.Keys[0].Active {
		t.Fatalf("section defaults: %+v", o)
	}
	if f.Delivery != DeliverAuthorization || f.OAuth.RedirectURL != "http://127.0.0.1:8080/auth/callback" {
		t.Fatalf("agent defaults: %+v %+v", f, f.OAuth)
	}
}

func TestAuthFlowKeyFormats(t *testing.T) {
	raw := bytes.Repeat([]byte{0xfb}, AuthFlowKeyBytes)
	for _, v := range []string{
		hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw) + "\n",
	} {
		t.Setenv("A2AGW_TEST_AF_KEY", v)
		got, err := AuthFlowKey{ID: "k", KeyEnv: "A2AGW_TEST_AF_KEY"}.Load()
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("%q: %v", v, err)
		}
	}
	t.Setenv("A2AGW_TEST_AF_KEY", "c2hvcnQ=")
	if _, err := (AuthFlowKey{ID: "k", KeyEnv: "A2AGW_TEST_AF_KEY"}).Load(); err == nil || strings.Contains(err.Error(), "c2hvcnQ") {
		t.Fatalf("a short key: %v (the value must not be quoted)", err)
	}
}

func TestAuthFlowRejects(t *testing.T) {
	t.Setenv("A2AGW_TEST_AF_KEY", hex.EncodeToString(bytes.Repeat([]byte{2}, AuthFlowKeyBytes)))
	agent := func(s string) string {
		return strings.Replace(authMinimal, `    auth_flow:
      oauth: {authorization_url: "https://idp.example/authorize", token_url: "http://127.0.0.1:9/token", client_id: gw}
`, "    auth_flow: "+s+"\n", 1)
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"no keys", strings.Replace(authMinimal, "  keys: [{id: k1, key_env: A2AGW_TEST_AF_KEY}]\n", "", 1), "auth_flows.keys: required"},
		{"unset key env", strings.Replace(authMinimal, "A2AGW_TEST_AF_KEY", "A2AGW_TEST_SURELY_UNSET", 1), "auth_flows.keys[0].key_env"},
		{"two active keys", strings.Replace(authMinimal, "keys: [{id: k1, key_env: A2AGW_TEST_AF_KEY}]",
			"keys: [{id: k1, key_env: A2AGW_TEST_AF_KEY, active: true}, {id: k2, key_env: A2AGW_TEST_AF_KEY, active: true}]", 1), "exactly one key must be active"},
		{"duplicate key id", strings.Replace(authMinimal, "keys: [{id: k1, key_env: A2AGW_TEST_AF_KEY}]",
			"keys: [{id: k1, key_env: A2AGW_TEST_AF_KEY, active: true}, {id: k1, key_env: A2AGW_TEST_AF_KEY}]", 1), "used by another key"},
		{"bad key id", strings.Replace(authMinimal, "id: k1", `id: "k:1"`, 1), "auth_flows.keys[0].id"},
		{"short ttl", strings.Replace(authMinimal, "auth_flows:\n", "auth_flows:\n  challenge_ttl: 10ms\n", 1), "auth_flows.challenge_ttl"},
		{"bad delivery", agent("{delivery: carrier-pigeon}"), "agents[0].auth_flow.delivery"},
		{"header without a name", agent("{delivery: header}"), "agents[0].auth_flow.header"},
		{"header that carries callers' credentials", agent("{delivery: header, header: authorization}"), "carries the caller's credentials"},
		{"header with another delivery", agent("{delivery: metadata, header: X-Token}"), "only with delivery"},
		{"plain http provider", agent(`{oauth: {authorization_url: "http://idp.example/a", token_url: "https://idp.example/t", client_id: gw}}`), "oauth.authorization_url"},
		{"no client id", agent(`{oauth: {authorization_url: "https://idp.example/a", token_url: "https://idp.example/t"}}`), "oauth.client_id"},
		{"unset client secret", agent(`{oauth: {authorization_url: "https://idp.example/a", token_url: "https://idp.example/t", client_id: gw, client_secret_env: A2AGW_TEST_SURELY_UNSET}}`), "oauth.client_secret_env"},
		{"redirect elsewhere", agent(`{oauth: {authorization_url: "https://idp.example/a", token_url: "https://idp.example/t", client_id: gw, redirect_url: "https://gw.example/callback"}}`), "oauth.redirect_url"},
		{"scope with a space", agent(`{oauth: {authorization_url: "https://idp.example/a", token_url: "https://idp.example/t", client_id: gw, scopes: ["a b"]}}`), "oauth.scopes[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}
