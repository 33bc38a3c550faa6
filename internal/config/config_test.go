package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestExampleConfigLoads(t *testing.T) {
	for k, v := range map[string]string{
		"A2AGW_REDIS_PASSWORD":          "secret",
		"A2AGW_BATCH_HMAC":              "0123456789abcdef0123456789abcdef",
		"A2AGW_KEY_NIGHTLY":             "abcdefghijklmnopqrstu",
		"A2AGW_APPROVALS_UPSTREAM_AUTH": "Bearer upstream",
		"A2AGW_PAGE_TOKEN_KEY":          "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	} {
		t.Setenv(k, v)
	}
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "examples", "gateway.yaml")
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 2 || cfg.Agents[1].JSONRPCPath != "/a2a/jsonrpc" || cfg.Agents[0].Policy.Scopes["cancel"][0] != "a2a:tasks.cancel" {
		t.Fatalf("example not read as written: %+v", cfg.Agents)
	}
}

const minimal = `
auth:
  api_keys: [{name: ci, tenant: t, key_sha256: "0000000000000000000000000000000000000000000000000000000000000000"}]
agents: [{name: demo, url: "http://127.0.0.1:9001"}]
`

// withIssuer has one JWT issuer with the default max_token_bytes (8192).
const withIssuer = `
auth:
  issuers: [{name: idp, issuer: "https://idp.example/", audiences: [gw], algorithms: [RS256], jwks_url: "https://idp.example/jwks"}]
agents: [{name: demo, url: "http://127.0.0.1:9001"}]
`

// TestHeaderLimitFitsTokens: the header limit may come down to just above
// the issuers' token limit, not to it.
func TestHeaderLimitFitsTokens(t *testing.T) {
	if _, err := Parse([]byte(withIssuer + "limits: {max_header_bytes: 8193}\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte(strings.Replace(withIssuer, `jwks"}`, `jwks", max_token_bytes: 4096}`, 1) + "limits: {max_header_bytes: 4097}\n")); err != nil {
		t.Fatal(err)
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents[0]
	if cfg.Listen != "127.0.0.1:8080" || cfg.PublicURL != "http://127.0.0.1:8080" || cfg.Limits.MaxBodyBytes != 1<<20 ||
		a.JSONRPCPath != "/" || a.CardPath != "/.well-known/agent-card.json" || a.Timeouts.Request.D().Seconds() != 60 {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
	if l := cfg.Limits; l.HeaderTimeout.D().Seconds() != 10 || l.IdleTimeout.D().Seconds() != 120 || l.MaxConnections != 20000 || l.MaxHeaderBytes != 64<<10 {
		t.Fatalf("listener defaults not applied: %+v", l)
	}
}

func TestRejects(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown field", minimal + "bogus: 1\n", "line 5: bogus: unknown field; this section has admin_listen, agents,"},
		{"unknown agent field", strings.Replace(minimal, `url:`, `colour: red, url:`, 1), "agents[0].colour: unknown field; this section has auth_flow,"},
		{"bare number duration", minimal + "shutdown: {timeout: 30}\n", `want a duration such as "30s"`},
		{"bad listen", minimal + "listen: nowhere\n", "listen: want host:port"},
		{"bad public url", minimal + "public_url: ftp://x\n", "public_url: want an absolute http(s) URL"},
		{"bad log level", minimal + "log: {level: loud}\n", "log.level"},
		{"tiny body limit", minimal + "limits: {max_body_bytes: 10}\n", "limits.max_body_bytes"},
		{"connections below streams", minimal + "limits: {max_streams: 100, max_connections: 99}\n", "limits.max_connections"},
		{"tiny header limit", minimal + "limits: {max_header_bytes: 4095}\n", "limits.max_header_bytes"},
		{"tiny card limit", minimal + "limits: {max_card_bytes: 100}\n", "limits.max_card_bytes"},
		{"huge card limit", minimal + "limits: {max_card_bytes: 1073741824}\n", "limits.max_card_bytes"},
		{"card fetch without time", minimal + "limits: {card_fetch_timeout: 1ms}\n", "limits.card_fetch_timeout"},
		{"huge header limit", minimal + "limits: {max_header_bytes: 1048577}\n", "limits.max_header_bytes"},
		{"token limit at the header limit", withIssuer + "limits: {max_header_bytes: 8192}\n", "auth.issuers[0].max_token_bytes: 8192 must be below limits.max_header_bytes (8192)"},
		{"grace over timeout", minimal + "shutdown: {timeout: 5s, stream_grace: 10s}\n", "shutdown.stream_grace"},
		{"no agents", strings.Replace(minimal, `agents: [{name: demo, url: "http://127.0.0.1:9001"}]`, "", 1), "agents: at least one agent"},
		{"bad agent name", strings.Replace(minimal, "name: demo", `name: "../x"`, 1), "agents[0].name"},
		{"duplicate agent", strings.Replace(minimal, `agents: [`, `agents: [{name: demo, url: "http://a:1"}, `, 1), `"demo" is used by another agent`},
		{"agent url query", strings.Replace(minimal, `9001"`, `9001?x=1"`, 1), "agents[0].url"},
		{"bad path", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", rest_path: "a2a"`, 1), "agents[0].rest_path"},
		{"bad ownership", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", policy: {ownership: everyone}`, 1), "agents[0].policy.ownership"},
		{"unset upstream auth env", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", upstream_auth_env: A2AGW_TEST_SURELY_UNSET`, 1), "upstream_auth_env"},
		{"negative budget", minimal + "budgets: {default: {rate: -1}}\n", "budgets.default.rate"},
		{"no upstream pages", minimal + "list_tasks: {max_upstream_pages: -1}\n", "list_tasks.max_upstream_pages"},
		{"short page token ttl", minimal + "list_tasks: {page_token_ttl: 10ms}\n", "list_tasks.page_token_ttl"},
		{"unset page token key", minimal + "list_tasks: {page_token_key_env: A2AGW_TEST_SURELY_UNSET}\n", "list_tasks.page_token_key_env"},
		{"trusted proxy not a cidr", minimal + "trusted_proxies: [10.0.0.0/8, lb.internal]\n", "trusted_proxies[1]: want a CIDR"},
		{"trusted proxy host bits", minimal + "trusted_proxies: [10.0.0.1/8]\n", "trusted_proxies[0]"},
		{"trusted proxy zone", minimal + "trusted_proxies: [\"fe80::1%eth0\"]\n", "trusted_proxies[0]"},
		{"grpc h2c off loopback", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", grpc: {listen: "0.0.0.0:50051", upstream: "127.0.0.1:50061"}`, 1), "agents[0].grpc.listen: h2c (no tls) is served on loopback only"},
		{"grpc listen not host:port", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", grpc: {listen: "50051", upstream: "127.0.0.1:50061"}`, 1), "agents[0].grpc.listen: want host:port"},
		{"grpc listen on the public listener", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", grpc: {listen: "127.0.0.1:8080", upstream: "127.0.0.1:50061"}`, 1), `agents[0].grpc.listen: "127.0.0.1:8080" is already listen`},
		{"grpc upstream not host:port", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", grpc: {listen: "127.0.0.1:50051", upstream: "http://a"}`, 1), "agents[0].grpc.upstream: want the agent's gRPC host:port"},
		{"grpc public address not host:port", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", grpc: {listen: "127.0.0.1:50051", upstream: "127.0.0.1:50061", public_address: "https://gw"}`, 1), "agents[0].grpc.public_address: want host:port"},
		{"grpc tls without key", strings.Replace(minimal, `url: "http://127.0.0.1:9001"`, `url: "http://127.0.0.1:9001", grpc: {listen: "0.0.0.0:50051", upstream: "127.0.0.1:50061", tls: {cert_file: a.pem}}`, 1), "agents[0].grpc.tls: cert_file and key_file are both required"},
		{"grpc streams per connection", minimal + "limits: {grpc: {max_concurrent_streams: 20000}}\n", "limits.grpc.max_concurrent_streams"},
		{"grpc ping timeout over interval", minimal + "limits: {grpc: {ping_interval: 10s, ping_timeout: 11s}}\n", "limits.grpc.ping_timeout"},
		{"grpc tiny request limit", minimal + "limits: {grpc: {max_request_bytes: 10}}\n", "limits.grpc.max_request_bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(path, []byte(minimal+"listen: nowhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": line 5: listen:") {
		t.Fatalf("want the file and field named, got %v", err)
	}
}
