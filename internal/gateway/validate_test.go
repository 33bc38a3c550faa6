package gateway

import (
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// TestValidateRejects covers the problems of a file that the
// configuration's own validation passes and only the packages using it
// find, each located at its line as check reports it.
func TestValidateRejects(t *testing.T) {
	const minimal = `auth:
  api_keys: [{name: ci, tenant: t, key_sha256: "0000000000000000000000000000000000000000000000000000000000000000"}]
agents: [{name: demo, url: "http://127.0.0.1:9001"}]
`
	for _, c := range []struct{ name, yaml, want string }{
		{"bad scope op", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", policy: {scopes: {teleport: [x]}}`, 1),
			`line 3: agents[0].policy.scopes: unknown operation "teleport"`},
		{"no auth", "agents: [{name: demo, url: \"http://127.0.0.1:9001\"}]\n", "auth: configure at least one issuer or api key"},
		{"bad allowlist", minimal + "push: {allowlist: [\"not a host/99\"]}\n", "line 4: push.allowlist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.ParseEnv([]byte(c.yaml), nil)
			if err != nil {
				t.Fatalf("the configuration's own validation refused it: %v", err)
			}
			if err := cfg.Locate(Validate(cfg, nil)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}
