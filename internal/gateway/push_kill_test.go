package gateway_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// killLease is the subscription lease of the kill test: a killed holder's
// tasks are taken over soon after it runs out.
const killLease = 2 * time.Second

// Delivery leases are as short as a notification's timeout allows, so a
// receiver whose queue the killed holder was delivering is taken over
// soon too.
const (
	killDeliveryTimeout = time.Second
	killDeliveryLease   = 2 * killDeliveryTimeout
)

// gatewayProc is one gateway process.
type gatewayProc struct {
	cmd         *exec.Cmd
	public, adm string
	logs        bytes.Buffer
	killed      bool
}

// startGatewayProc runs the gateway binary on cfg with addresses of its own.
func startGatewayProc(t *testing.T, bin string, cfg config.Config) *gatewayProc {
	t.Helper()
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
	p := &gatewayProc{public: "http://" + cfg.Listen, adm: "http://" + cfg.AdminListen}
	p.cmd = exec.Command(bin, "serve", "-config", path)
	p.cmd.Stderr = &p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.killed {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	waitReady(t, p.adm+"/readyz", &p.logs)
	return p
}

// subscriptions is how many upstream subscriptions the process holds.
func (p *gatewayProc) subscriptions(t *testing.T) float64 {
	t.Helper()
	return sourceMetric(t, p.adm, "a2agw_push_upstream_subscriptions", "demo")
}

// Two gateway processes share one Redis; the one that holds a task's
// upstream subscription is killed mid-stream. The other takes the task
// over once the lease runs out, and the consumer ends up with every part
// and the terminal event, in order; duplicates carry their notification id.
func TestPushSubscriptionHolderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills gateway processes")
	}
	redis := redistest.Start(t)
	agent := demoagent.New(demoagent.Options{StepDelay: 20 * time.Millisecond})
	agentSrv := httptest.NewServer(agent)
	agent.SetBaseURL(agentSrv.URL)
	t.Cleanup(func() { agent.Close(); agentSrv.Close() })
	rcv := newWebhook(t)

	dir := t.TempDir()
	key, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := jose.PublicJWKS(key, "kill")
	if err != nil {
		t.Fatal(err)
	}
	jwksPath, signPath := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "push.pem")
	if err := os.WriteFile(jwksPath, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := jose.WritePrivateKeyPEM(signPath, key); err != nil {
		t.Fatal(err)
	}
	// Notifications carry their id in webhook-id (Standard Webhooks); the
	// processes inherit the secret from the environment.
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	t.Setenv(pushSecretEnv, "whsec_"+base64.StdEncoding.EncodeToString(secret))
	src := fastSource(config.PushSourceStream)
	src.LeaseTTL = duration.Duration(killLease)
	cfg := config.Config{
		Log:   config.LogOptions{Level: "info"},
		Store: store.Options{Redis: store.RedisOptions{Addrs: []string{redis.Addr()}}},
		Auth: authz.Options{Issuers: []authz.IssuerOptions{{
			Name: "test", Issuer: gwtest.Issuer, Audiences: []string{gwtest.Audience},
			Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwksPath},
		}}},
		Push: config.PushOptions{
			Enabled:          true,
			Signing:          config.PushSigning{KeyFiles: []string{signPath}, KeyIDs: []string{"kill-push"}},
			WebhookSecretEnv: pushSecretEnv,
			Tenants:          map[string]config.PushTenant{"acme": {Allowlist: []string{"127.0.0.1/32:*"}}},
			Delivery: config.PushDelivery{
				Schedule:     []duration.Duration{duration.Duration(50 * time.Millisecond), duration.Duration(100 * time.Millisecond)},
				PollInterval: duration.Duration(20 * time.Millisecond),
				Timeout:      duration.Duration(killDeliveryTimeout),
				LeaseTTL:     duration.Duration(killDeliveryLease),
			},
		},
		Agents: []config.Agent{{Name: "demo", URL: agentSrv.URL, Push: src}},
	}
	bin := filepath.Join(dir, "a2a-gateway")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/a2a-gateway/a2a-gateway/cmd/a2a-gateway").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	procs := []*gatewayProc{startGatewayProc(t, bin, cfg), startGatewayProc(t, bin, cfg)}

	tok, err := authz.MintToken(key, "kill", gwtest.Issuer, gwtest.Audience, "acme", "alice", gwtest.AllScopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := &caller{client: &http.Client{}, token: tok}
	const parts = 16
	task := sendWithPush(t, c, procs[0].public+"/agents/demo", a2a.V10, "parts 16 200ms", rcv.url())

	var holder, survivor *gatewayProc
	eventually(t, "a process holding the subscription", func() bool {
		for i, p := range procs {
			if p.subscriptions(t) == 1 {
				holder, survivor = p, procs[1-i]
				return true
			}
		}
		return false
	})
	eventually(t, "parts relayed by the holder", func() bool {
		return len(readProgress(t, a2a.V10, rcv.acked()).artifacts) >= 3
	})
	before := subscribes(agent, task)
	if err := holder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	holder.killed = true
	_ = holder.cmd.Wait()
	partsAtKill := len(readProgress(t, a2a.V10, rcv.acked()).artifacts)

	eventually(t, "the survivor taking the subscription over", func() bool {
		return sourceMetric(t, survivor.adm, "a2agw_push_upstream_lease_takeovers_total", "demo") == 1
	})
	var takeover time.Duration
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodSubscribe && r.Op.TaskID == task && r.At.After(killed) {
			takeover = r.At.Sub(killed)
			break
		}
	}
	if subscribes(agent, task) <= before || takeover == 0 {
		t.Fatalf("the survivor did not subscribe to the task; its log:\n%s", survivor.logs.String())
	}

	// A delivery the killed process had claimed waits for its claim
	// (killDeliveryLease) to run out before the survivor delivers it.
	deadline := time.Now().Add(testTimeout)
	var p progress
	var ended time.Time
	for {
		p = readProgress(t, a2a.V10, rcv.acked())
		if len(p.states) > 0 && p.states[len(p.states)-1].Terminal() {
			ended = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no terminal notification; %d parts so far; survivor log:\n%s", len(p.artifacts), survivor.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantAllParts(t, a2a.V10, rcv, parts)
	acked := rcv.acked()
	unique := map[string]bool{}
	for _, call := range acked {
		unique[call.id()] = true
	}
	t.Logf("holder killed after %d of %d parts; takeover %s after the kill (lease %s); terminal notification %s after the kill (delivery lease %s); %d notifications acknowledged, %d distinct, %d duplicates (same notification id)",
		partsAtKill, parts, takeover.Round(time.Millisecond), killLease, ended.Sub(killed).Round(time.Millisecond), killDeliveryLease,
		len(acked), len(unique), len(acked)-len(unique))
}
