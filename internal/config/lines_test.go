package config

import (
	"errors"
	"strings"
	"testing"
)

// Every problem of a file is reported at once, each with its line and
// field path, whether the decoder or the validation found it.
func TestProblemsNameLineAndField(t *testing.T) {
	const file = `
auth:
  api_keys: [{name: ci, tenant: t, key_sha256: "0000000000000000000000000000000000000000000000000000000000000000"}]
limits:
  body_timeout: 10 minutes
  max_streams: ten
  max_body_bytes: 10
shutdown:
  timeout: 30
agents:
  - name: demo
    timeouts:
      connect: 5s
      requets: 60s
  - name: other
    url: "http://127.0.0.1:9002"
    jsonrpc_path: [a, b]
`
	_, err := ParseEnv([]byte(file), nil)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("want Problems, got %T %v", err, err)
	}
	want := []string{
		`line 5: limits.body_timeout: want a duration such as "30s", got "10 minutes"`,
		`line 6: limits.max_streams: want an integer, got "ten"`,
		`line 7: limits.max_body_bytes: must be at least 1024`,
		`line 9: shutdown.timeout: want a duration such as "30s", got "30"`,
		`line 11: agents[0].url: required`,
		`line 14: agents[0].timeouts.requets: unknown field; this section has connect, request, stream_idle`,
		`line 17: agents[1].jsonrpc_path: want a string, got a list`,
	}
	got := make([]string, len(ps))
	for i, p := range ps {
		got[i] = p.String()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(err.Error(), "7 problems:\n  line 5: ") {
		t.Fatalf("message: %s", err)
	}
}

// A variable a *_env field names is checked unless the environment is
// skipped, and its value never appears in a message.
func TestEnvChecksCanBeSkipped(t *testing.T) {
	file := minimal + `
store:
  redis: {addrs: ["127.0.0.1:6379"], password_env: A2AGW_TEST_UNSET_PASSWORD}
lifecycle:
  ops_token_env: A2AGW_TEST_SHORT_OPS
`
	env := Env(func(name string) (string, bool) {
		if name == "A2AGW_TEST_SHORT_OPS" {
			return "short-secret", true
		}
		return "", false
	})
	_, err := ParseEnv([]byte(file), env)
	if err == nil {
		t.Fatal("unset and short variables accepted")
	}
	for _, want := range []string{
		"store.redis.password_env: environment variable A2AGW_TEST_UNSET_PASSWORD is not set or empty",
		"lifecycle.ops_token_env: the token in A2AGW_TEST_SHORT_OPS must be at least",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%s", want, err)
		}
	}
	if strings.Contains(err.Error(), "short-secret") {
		t.Errorf("a secret's value is in the message: %s", err)
	}
	if _, err := ParseEnv([]byte(file), nil); err != nil {
		t.Fatalf("with the environment skipped: %v", err)
	}
}

func TestUnknownFieldNamesTheSection(t *testing.T) {
	for path, want := range map[string]string{
		"bogus":                  "admin_listen, agents, auth",
		"agents[3].timeouts.x":   "connect, request, stream_idle",
		"push.tenants.acme.x":    "allowlist",
		"agents[0].auth_flow.xx": "delivery",
		"nothing.here.x":         "",
	} {
		got := unknownFieldMessage(path)
		if want == "" {
			if got != "unknown field" {
				t.Errorf("%s: %q", path, got)
			}
			continue
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to list %q", path, got, want)
		}
	}
}
