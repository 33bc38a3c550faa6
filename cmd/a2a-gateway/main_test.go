package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	cfg := demoConfig("127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:3", key+".jwks.json", filepath.Join(dir, "push-key.pem"), "127.0.0.1")
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

func TestCheckCommand(t *testing.T) {
	var out bytes.Buffer
	t.Setenv("A2AGW_REDIS_PASSWORD", "x")
	t.Setenv("A2AGW_BATCH_HMAC", "0123456789abcdef0123456789abcdef")
	t.Setenv("A2AGW_KEY_NIGHTLY", "abcdefghijklmnopqrstu")
	t.Setenv("A2AGW_APPROVALS_UPSTREAM_AUTH", "Bearer x")
	t.Setenv("A2AGW_PAGE_TOKEN_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err := runCheck([]string{"-config", "../../deploy/examples/gateway.yaml"}, &out); err != nil || !strings.Contains(out.String(), "ok (2 agents)") {
		t.Fatalf("check: %v %s", err, out.String())
	}
	if err := runCheck([]string{"-config", "nope.yaml"}, &out); err == nil {
		t.Fatal("a missing file passed the check")
	}
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
		done <- runDemo(ctx, []string{"-listen", pub, "-admin", adm, "-webhook", hook, "-log-level", "error"}, &out)
	}()
	waitReady(t, adm)
	resp, err := http.Get("http://" + pub + "/agents/demo/.well-known/agent-card.json")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card: %v %v", resp, err)
	}
	resp.Body.Close()
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
