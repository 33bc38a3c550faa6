package scaletest

import (
	"crypto"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Test issuer of the callers' tokens.
const (
	issuer   = "scaletest"
	audience = "a2a-gateway"
	kid      = "scaletest"
)

// dedupeLease is short so that a claim held by a killed gateway is taken
// over within the run; production keeps the 30 s default.
const dedupeLease = 2 * time.Second

// scopes lets a caller use every operation.
var scopes = []string{"a2a:tasks.read", "a2a:tasks.write", "a2a:tasks.cancel", "a2a:push.write"}

// world is the deployment under test: one demo agent, several gateway
// processes in front of it, and the callers' signing key.
type world struct {
	agent    *demoagent.Agent
	gateways []*gateway
	key      crypto.Signer
	client   *http.Client
	rr       atomic.Uint64 // round-robin position
}

// newWorld starts the demo agent in this process (so the test can read
// what reached it) and n gateway processes on redis.
func newWorld(t *testing.T, n int, redis store.RedisOptions, adjust func(*config.Config)) *world {
	t.Helper()
	agent := demoagent.New(demoagent.Options{Push: true, StepDelay: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	t.Cleanup(func() { agent.Close(); srv.Close() })

	key, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := jose.PublicJWKS(key, kid)
	if err != nil {
		t.Fatal(err)
	}
	jwksPath := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksPath, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{
		Log:   config.LogOptions{Level: "warn", Format: "text"},
		Store: store.Options{Redis: redis},
		Auth: authz.Options{Issuers: []authz.IssuerOptions{{
			Name: "test", Issuer: issuer, Audiences: []string{audience},
			Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwksPath},
		}}},
		Dedupe: config.DedupeOptions{Lease: duration.Duration(dedupeLease), Wait: duration.Duration(5 * time.Second)},
		Agents: []config.Agent{{Name: "demo", URL: srv.URL}},
	}
	if adjust != nil {
		adjust(&cfg)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	bin := buildGateway(t)
	w := &world{
		agent: agent, key: key,
		// Bounded, so a request to a replica that hangs counts as failed
		// instead of stalling the run.
		client: &http.Client{Timeout: 15 * time.Second},
	}
	for i := range n {
		w.gateways = append(w.gateways, startGateway(t, bin, fmt.Sprintf("gw%d", i), cfg))
	}
	return w
}

// caller is one tenant's user with a token.
type caller struct {
	tenant, subject, token string
}

func (w *world) caller(t *testing.T, tenant, subject string) caller {
	t.Helper()
	tok, err := authz.MintToken(w.key, kid, issuer, audience, tenant, subject, scopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return caller{tenant: tenant, subject: subject, token: tok}
}

// live lists the gateways not known to be down.
func (w *world) live() []*gateway {
	var out []*gateway
	for _, g := range w.gateways {
		if !g.down.Load() {
			out = append(out, g)
		}
	}
	return out
}

// next picks the next live gateway round-robin, as a load balancer would.
func (w *world) next() *gateway {
	live := w.live()
	return live[int(w.rr.Add(1)%uint64(len(live)))]
}

// other picks a live gateway other than g (g itself if it is the only one).
func (w *world) other(g *gateway, skip int) *gateway {
	live := w.live()
	for i, l := range live {
		if l == g {
			return live[(i+1+skip)%len(live)]
		}
	}
	return live[skip%len(live)]
}

// sendsReaching counts the sends with messageID the agent received.
func (w *world) sendsReaching(messageID string) int {
	n := 0
	for _, r := range w.agent.Requests() {
		if r.Op.MessageID == messageID {
			n++
		}
	}
	return n
}

// requestsNaming counts the agent's requests that name taskID.
func (w *world) requestsNaming(taskID string) int {
	n := 0
	for _, r := range w.agent.Requests() {
		if r.Op.TaskID == taskID {
			n++
		}
	}
	return n
}
