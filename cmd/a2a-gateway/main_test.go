package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gateway"
)

// The demo's configuration is valid as built, and the token command mints
// a token the demo's issuer would accept.
func TestDemoConfigAndToken(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k.pem")
	var out bytes.Buffer
	if err := runToken([]string{"-key", key, "-generate", "-tenant", "acme", "-subject", "alice"}, &out); err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(strings.TrimSpace(out.String()), "."); len(parts) != 3 {
		t.Fatalf("not a JWT: %q", out.String())
	}
	t.Setenv(demoOpsTokenEnv, "0123456789abcdef0123")
	t.Setenv(demoAuthFlowKeyEnv, newDemoKey())
	t.Setenv(demoConsoleKeyEnv, newDemoKey())
	cfg := demoConfig("127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:3", &config.AgentGRPC{Listen: "127.0.0.1:5", Upstream: "127.0.0.1:6"},
		key+".jwks.json", filepath.Join(dir, "push-key.pem"), "127.0.0.1:4")
	if err := cfg.Validate(); err != nil {
		t.Fatalf("demo configuration: %v", err)
	}
	// Loopback webhooks are lifted for tenant demo only.
	if al := cfg.Push.TenantAllowlists(); !cfg.Push.Enabled || len(cfg.Push.Allowlist) != 0 || len(al) != 1 || len(al["demo"]) != 1 {
		t.Fatalf("demo push settings: %+v", cfg.Push)
	}
	if err := runToken([]string{"-key", filepath.Join(dir, "missing.pem")}, &out); err == nil {
		t.Fatal("a missing key without -generate was accepted")
	}
}

// devKey makes an Ed25519 key at path and its public JWKS at path.jwks.json.
func devKey(t *testing.T, path string) {
	t.Helper()
	if err := runToken([]string{"-key", path, "-generate"}, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// exampleWithKeys is the example configuration with its key files made in
// dir.
func exampleWithKeys(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/examples/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	devKey(t, filepath.Join(dir, "partner.pem"))
	devKey(t, filepath.Join(dir, "push-2026.pem"))
	devKey(t, filepath.Join(dir, "push-2025.pem"))
	text := strings.ReplaceAll(string(raw), "/etc/a2a-gateway/keys/partner.jwks.json", filepath.Join(dir, "partner.pem.jwks.json"))
	text = strings.ReplaceAll(text, "/etc/a2a-gateway/keys/", dir+"/")
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// lineWith is "line N" of the first line of the file that contains text.
func lineWith(t *testing.T, path, text string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, text) && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			return fmt.Sprintf("line %d", i+1)
		}
	}
	t.Fatalf("%s has no line with %q", path, text)
	return ""
}

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	path := exampleWithKeys(t, dir)
	for _, name := range []string{"A2AGW_REDIS_PASSWORD", "A2AGW_BATCH_HMAC", "A2AGW_KEY_NIGHTLY", "A2AGW_APPROVALS_UPSTREAM_AUTH", "A2AGW_PAGE_TOKEN_KEY"} {
		t.Setenv(name, "")
	}
	// Every problem at once, each with its line and field.
	var out bytes.Buffer
	err := runCheck([]string{"-config", path}, &out)
	if err == nil {
		t.Fatal("the example passed without its secrets")
	}
	for _, want := range []string{
		": 5 problems:",
		lineWith(t, path, "page_token_key_env: A2AGW_PAGE_TOKEN_KEY") + ": list_tasks.page_token_key_env:",
		lineWith(t, path, "password_env: A2AGW_REDIS_PASSWORD") + ": store.redis.password_env:",
		lineWith(t, path, "hmac_secret_env: A2AGW_BATCH_HMAC") + ": auth.issuers[2].hmac_secret_env:",
		lineWith(t, path, "key_env: A2AGW_KEY_NIGHTLY") + ": auth.api_keys[0].key_env:",
		lineWith(t, path, "upstream_auth_env: A2AGW_APPROVALS_UPSTREAM_AUTH") + ": agents[1].upstream_auth_env:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	// In CI, where the secrets are absent, the rest of the file is linted.
	out.Reset()
	if err := runCheck([]string{"-skip-env", "-config", path}, &out); err != nil || !strings.Contains(out.String(), "ok (2 agents; environment variables not checked)") {
		t.Fatalf("check -skip-env: %v %s", err, out.String())
	}
	if err := os.Remove(filepath.Join(dir, "partner.pem.jwks.json")); err != nil {
		t.Fatal(err)
	}
	if err := runCheck([]string{"-skip-env", "-config", path}, &out); err == nil || !strings.Contains(err.Error(), lineWith(t, path, "partner.pem.jwks.json")+": auth.issuers[1].key_files[0]:") {
		t.Fatalf("check -skip-env with a key file missing: %v", err)
	}
	t.Setenv("A2AGW_REDIS_PASSWORD", "x")
	t.Setenv("A2AGW_BATCH_HMAC", "0123456789abcdef0123456789abcdef")
	t.Setenv("A2AGW_KEY_NIGHTLY", "abcdefghijklmnopqrstu")
	t.Setenv("A2AGW_APPROVALS_UPSTREAM_AUTH", "Bearer x")
	t.Setenv("A2AGW_PAGE_TOKEN_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	devKey(t, filepath.Join(dir, "partner.pem.again"))
	if err := os.Rename(filepath.Join(dir, "partner.pem.again.jwks.json"), filepath.Join(dir, "partner.pem.jwks.json")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runCheck([]string{"-config", path}, &out); err != nil || !strings.Contains(out.String(), "ok (2 agents)") {
		t.Fatalf("check: %v %s", err, out.String())
	}
	if err := runCheck([]string{"-config", "nope.yaml"}, &out); err == nil {
		t.Fatal("a missing file passed the check")
	}
}

// Whatever serve refuses at start-up, check refuses too, naming the same
// field: every key file and secret the file names is in the class.
func TestCheckRefusesWhatServeRefuses(t *testing.T) {
	dir := t.TempDir()
	devKey(t, filepath.Join(dir, "caller.pem"))
	devKey(t, filepath.Join(dir, "push.pem"))
	devKey(t, filepath.Join(dir, "card.pem"))
	const (
		hmacEnv   = "A2AGW_TEST_CHECK_HMAC"
		apiEnv    = "A2AGW_TEST_CHECK_API"
		opsEnv    = "A2AGW_TEST_CHECK_OPS"
		hookEnv   = "A2AGW_TEST_CHECK_HOOK"
		flowEnv   = "A2AGW_TEST_CHECK_FLOW"
		upEnv     = "A2AGW_TEST_CHECK_UPSTREAM"
		secretHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	good := map[string]string{
		hmacEnv: "0123456789abcdef0123456789abcdef",
		apiEnv:  "abcdefghijklmnopqrstu",
		opsEnv:  "0123456789abcdef0123",
		hookEnv: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		flowEnv: secretHex,
		upEnv:   "Bearer upstream",
	}
	base := `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
auth:
  issuers:
    - {name: dev, issuer: dev, audiences: [gw], algorithms: [EdDSA], key_files: ["` + dir + `/caller.pem.jwks.json"]}
    - {name: batch, issuer: batch, audiences: [gw], algorithms: [HS256], hmac_secret_env: ` + hmacEnv + `}
  api_keys: [{name: ci, tenant: t, key_env: ` + apiEnv + `}]
lifecycle: {ops_token_env: ` + opsEnv + `}
card_signing: {key_file: "` + dir + `/card.pem", key_id: c1}
auth_flows:
  keys: [{id: k1, key_env: ` + flowEnv + `, active: true}]
push:
  enabled: true
  signing: {key_files: ["` + dir + `/push.pem"]}
  webhook_secret_env: ` + hookEnv + `
agents:
  - name: demo
    url: "http://127.0.0.1:9"
    upstream_auth_env: ` + upEnv + `
    auth_flow: {delivery: authorization}
`
	cases := []struct {
		name, field string
		file        func(string) string
		env         map[string]string
	}{
		{"caller key file missing", "auth.issuers[0].key_files[0]", replace(dir+"/caller.pem.jwks.json", dir+"/nope.json"), nil},
		{"caller key file is a private key", "auth.issuers[0].key_files[0]", replace(dir+"/caller.pem.jwks.json", dir+"/caller.pem"), nil},
		{"hmac secret unset", "auth.issuers[1].hmac_secret_env", nil, map[string]string{hmacEnv: ""}},
		{"hmac secret too short", "auth.issuers[1].hmac_secret_env", nil, map[string]string{hmacEnv: "Zq9xW"}},
		{"api key unset", "auth.api_keys[0].key_env", nil, map[string]string{apiEnv: ""}},
		{"api key too short", "auth.api_keys[0].key_env", nil, map[string]string{apiEnv: "Zq9xW"}},
		{"ops token short", "lifecycle.ops_token_env", nil, map[string]string{opsEnv: "Zq9xW"}},
		{"card key missing", "card_signing.key_file", replace(dir+"/card.pem", dir+"/nope.pem"), nil},
		{"push key missing", "push.signing.key_files[0]", replace(dir+"/push.pem", dir+"/nope.pem"), nil},
		{"webhook secret malformed", "Standard Webhooks secret in " + hookEnv, nil, map[string]string{hookEnv: "not base64 !"}},
		{"auth flow key malformed", "auth_flows.keys[0].key_env", nil, map[string]string{flowEnv: "Zq9xW"}},
		{"upstream auth unset", "agents[0].upstream_auth_env", nil, map[string]string{upEnv: ""}},
	}
	setEnv := func(t *testing.T, over map[string]string) {
		for k, v := range good {
			if o, ok := over[k]; ok {
				v = o
			}
			t.Setenv(k, v)
		}
	}
	serve := func(path string) error {
		cfg, err := config.Load(path)
		if err != nil {
			return err
		}
		gw, err := gateway.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
		if err == nil {
			gw.Close()
		}
		return err
	}
	write := func(t *testing.T, text string) string {
		path := filepath.Join(t.TempDir(), "gw.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("base", func(t *testing.T) {
		setEnv(t, nil)
		path := write(t, base)
		if err := runCheck([]string{"-config", path}, io.Discard); err != nil {
			t.Fatalf("check: %v", err)
		}
		if err := serve(path); err != nil {
			t.Fatalf("serve: %v", err)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			text := base
			if tc.file != nil {
				text = tc.file(text)
			}
			path := write(t, text)
			serr := serve(path)
			if serr == nil || !strings.Contains(serr.Error(), tc.field) {
				t.Fatalf("serve: %v, want a refusal naming %s", serr, tc.field)
			}
			cerr := runCheck([]string{"-config", path}, io.Discard)
			if cerr == nil || !strings.Contains(cerr.Error(), tc.field) {
				t.Fatalf("check: %v, want a refusal naming %s (serve: %v)", cerr, tc.field, serr)
			}
			for _, v := range tc.env {
				if len(v) > 3 && strings.Contains(cerr.Error(), v) {
					t.Fatalf("a secret's value is in the message: %v", cerr)
				}
			}
		})
	}
}

// check warns about mounts of one upstream URL that keep separate task
// records, and says nothing of mounts that share them.
func TestCheckWarnsOfSplitNamespaces(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, agents string
		warn         bool
	}{
		{"split", `[{name: a, url: "http://agent:9001", namespace: billing}, {name: b, url: "http://AGENT:9001/"}]`, true},
		{"shared url", `[{name: a, url: "http://agent:9001"}, {name: b, url: "http://agent:9001/", rest_path: /rest}]`, false},
		{"shared namespace", `[{name: a, url: "http://agent:9001", namespace: billing}, {name: b, url: "http://10.0.0.5:9001", namespace: billing}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".yaml")
			yaml := "auth:\n  api_keys: [{name: ci, tenant: t, key_sha256: \"" + strings.Repeat("0", 64) + "\"}]\nagents: " + tc.agents + "\n"
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := runCheck([]string{"-config", path}, &out); err != nil || !strings.Contains(out.String(), "ok (2 agents)") {
				t.Fatalf("check: %v %s", err, out.String())
			}
			if got := strings.Contains(out.String(), "warning: agents[0] (a) and agents[1] (b) reach the same upstream"); got != tc.warn {
				t.Errorf("warned %v, want %v: %s", got, tc.warn, out.String())
			}
		})
	}
}

// check names, for each bridged agent, the form it speaks and those it is
// served in, defaults filled; an agent without a bridge gets no line.
func TestCheckPrintsBridges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	yaml := "auth:\n  api_keys: [{name: ci, tenant: t, key_sha256: \"" + strings.Repeat("0", 64) + "\"}]\n" +
		"agents:\n" +
		"  - {name: plain, url: \"http://agent:9000\"}\n" +
		"  - {name: old, url: \"http://agent:9001\", bridge: {agent: {version: \"0.3\", binding: JSONRPC}}}\n" +
		"  - name: rest\n    url: \"http://agent:9002\"\n    grpc: {listen: \"127.0.0.1:50051\"}\n" +
		"    bridge: {agent: {version: \"1.0\", binding: HTTP+JSON}, offer: [{version: \"1.0\", binding: HTTP+JSON}, {version: \"0.3\", binding: GRPC}]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runCheck([]string{"-config", path}, &out); err != nil {
		t.Fatalf("check: %v %s", err, out.String())
	}
	want := path + ": agent old speaks 0.3 over JSONRPC; bridged for 1.0 over JSONRPC, 1.0 over HTTP+JSON, 0.3 over JSONRPC, 0.3 over HTTP+JSON\n" +
		path + ": agent rest speaks 1.0 over HTTP+JSON; bridged for 1.0 over HTTP+JSON, 0.3 over GRPC\n" +
		path + ": ok (3 agents)\n"
	var got strings.Builder
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if !strings.Contains(line, ": warning: ") {
			got.WriteString(line)
		}
	}
	if got.String() != want {
		t.Fatalf("check printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A problem found both by validation and by reading the keys, and one only
// the packages using the configuration find, are each reported once, at
// their lines.
func TestCheckReportsEachProblemOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	yaml := "auth:\n  api_keys: [{name: ci, tenant: t, key_sha256: \"00\"}]\n" +
		"agents: [{name: demo, url: \"http://agent:9001\", policy: {scopes: {teleport: [x]}}}]\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	err := runCheck([]string{"-config", path}, io.Discard)
	if err == nil {
		t.Fatal("check accepted a malformed key digest and an unknown operation")
	}
	for _, want := range []string{
		"line 2: auth.api_keys[0].key_sha256: must be 64 hex digits",
		`line 3: agents[0].policy.scopes: unknown operation "teleport"`,
	} {
		if n := strings.Count(err.Error(), want); n != 1 {
			t.Errorf("%q reported %d times in:\n%v", want, n, err)
		}
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.ReplaceAll(s, old, new) }
}

// The demo comes up and answers, then stops when its context ends.
func TestDemoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo")
	}
	pub, adm, hook := freePort(t), freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, []string{"-listen", pub, "-admin", adm, "-webhook", hook, "-grpc", "127.0.0.1:0", "-log-level", "error"}, &out)
	}()
	waitReady(t, adm)
	resp, err := http.Get("http://" + pub + "/agents/demo/.well-known/agent-card.json")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card: %v %v", resp, err)
	}
	card, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(card), `"GRPC"`) {
		t.Fatalf("the demo card lists no gRPC interface: %s %v", card, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "export TOKEN=") || !strings.Contains(out.String(), "/ops/tasks?agent=demo") {
		t.Fatalf("the demo did not print its instructions:\n%s", out.String())
	}
}

// waitReady waits for the demo's admin listener at adm to answer ready.
func waitReady(t *testing.T, adm string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + adm + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestVersionCommand(t *testing.T) {
	var out bytes.Buffer
	runVersion(&out)
	// A test binary has no ldflags stamp and no module version.
	if got := out.String(); !strings.HasPrefix(got, "a2a-gateway dev (revision ") || !strings.HasSuffix(got, ")\n") {
		t.Fatalf("version output %q", got)
	}
}
