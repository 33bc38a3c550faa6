package gateway_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/dedupe"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

// waitForSend waits until the agent has seen messageID.
func waitForSend(t *testing.T, env *gwtest.Env, messageID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for sendsReaching(env, messageID) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the agent", messageID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A caller that gives up mid-request does not stop the send: its retry
// waits for the same answer, and the agent sees the message once.
func TestDedupeCallerCancelsThenRetries(t *testing.T) {
	dedupeBackends(t, func(t *testing.T, store gwtest.Option) {
		env := gwtest.Start(t, store, shortLease)
		tok := env.Token(t, "acme", "alice")
		body := sendBody("m-cancel", "slow 1s")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.AgentBase+"/", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("A2A-Version", "1.0")
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		waitForSend(t, env, "m-cancel")
		cancel()
		<-done
		resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(dedupe.ReplayHeader) != "true" {
			t.Fatalf("retry: %d replay=%q %s", resp.StatusCode, resp.Header.Get(dedupe.ReplayHeader), b)
		}
		taskIDOf(t, b)
		if got := sendsReaching(env, "m-cancel"); got != 1 {
			t.Fatalf("%d sends reached the agent, want 1", got)
		}
	})
}

// A gateway process killed while it holds a claim: a retry through another
// replica takes the claim over after the lease and succeeds. The first call
// really reached the agent, so the agent sees the message twice: the
// documented window.
func TestDedupeHolderProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a gateway process")
	}
	srv := redistest.Start(t)
	withRedis := func(c *config.Config) { c.Store.Redis.Addrs = []string{srv.Addr()} }
	env := gwtest.Start(t, withRedis, shortLease)
	tok := env.Token(t, "acme", "alice")

	bin := filepath.Join(t.TempDir(), "a2a-gateway")
	build := exec.Command("go", "build", "-o", bin, "github.com/a2a-gateway/a2a-gateway/cmd/a2a-gateway")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := *env.Config
	cfg.Listen, cfg.AdminListen = freeAddr(t), freeAddr(t)
	cfg.PublicURL = "http://" + cfg.Listen
	raw, err := yaml.Marshal(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	proc := exec.Command(bin, "serve", "-config", path)
	var logs bytes.Buffer
	proc.Stderr = &logs
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Process.Kill(); _ = proc.Wait() })
	waitReady(t, "http://"+cfg.AdminListen+"/readyz", &logs)

	body := sendBody("m-killed", "slow 3s")
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+cfg.Listen+"/agents/demo/", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitForSend(t, env, "m-killed")
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retry after the holder died: %d %s", resp.StatusCode, b)
	}
	taskIDOf(t, b)
	if got := sendsReaching(env, "m-killed"); got != 2 {
		t.Fatalf("%d sends reached the agent; want 2 (the killed holder's and the takeover's)", got)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(t *testing.T, url string, logs *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gateway process not ready; its log:\n%s", logs.String())
}
