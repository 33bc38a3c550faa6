// Package gwtest starts a whole gateway in front of a demo agent on
// loopback for integration tests: real listeners, real HTTP, the embedded
// store unless a test passes Redis options, and a development issuer whose
// tokens the test can mint for any tenant.
package gwtest

import (
	"bytes"
	"context"
	"crypto"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/gateway"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// Issuer and audience of the test tokens.
const (
	Issuer   = "gwtest"
	Audience = "a2a-gateway"
	kid      = "gwtest"
)

// AllScopes is every scope a test token carries unless a test asks for fewer.
var AllScopes = []string{"a2a:tasks.read", "a2a:tasks.write", "a2a:tasks.cancel", "a2a:push.write", "a2a:card.extended"}

// Env is a running gateway with its demo agent.
type Env struct {
	Agent    *demoagent.Agent
	AgentURL string
	// Gateway is the public base URL; AgentBase the demo agent's mount on it.
	Gateway   string
	AgentBase string
	Admin     string
	GW        *gateway.Gateway
	Config    *config.Config
	key       crypto.Signer
}

// Option adjusts the configuration before the gateway starts.
type Option func(*config.Config)

// Start brings up a demo agent and a gateway in front of it, mounted as
// "demo". Everything is torn down by t.Cleanup.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	return StartLogged(t, discard(), opts...)
}

// StartLogged is Start with the gateway logging to log, for tests that
// read what the gateway writes (audit lines, the absence of secrets).
func StartLogged(t testing.TB, log *slog.Logger, opts ...Option) *Env {
	t.Helper()
	agent := demoagent.New(demoagent.Options{Push: true, StepDelay: 20 * time.Millisecond, Logger: discard()})
	agentSrv := httptest.NewServer(agent)
	agent.SetBaseURL(agentSrv.URL)
	t.Cleanup(func() { agent.Close(); agentSrv.Close() })

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

	pub := httptest.NewUnstartedServer(nil)
	adm := httptest.NewUnstartedServer(nil)
	cfg := &config.Config{
		Listen:      pub.Listener.Addr().String(),
		AdminListen: adm.Listener.Addr().String(),
		Auth: authz.Options{Issuers: []authz.IssuerOptions{{
			Name: "test", Issuer: Issuer, Audiences: []string{Audience},
			Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwksPath},
		}}},
		Agents: []config.Agent{{Name: "demo", URL: agentSrv.URL}},
	}
	for _, o := range opts {
		o(cfg)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	pub.Config.Handler = gw.Public()
	adm.Config.Handler = gw.Admin()
	pub.Start()
	adm.Start()
	t.Cleanup(func() { pub.CloseClientConnections(); pub.Close(); adm.Close(); gw.Close() })
	return &Env{
		Agent: agent, AgentURL: agentSrv.URL,
		Gateway: pub.URL, AgentBase: pub.URL + "/agents/demo", Admin: adm.URL,
		GW: gw, Config: cfg, key: key,
	}
}

// Token mints a bearer token for tenant and subject with the given scopes
// (AllScopes when none are given).
func (e *Env) Token(t testing.TB, tenant, subject string, scopes ...string) string {
	t.Helper()
	if len(scopes) == 0 {
		scopes = AllScopes
	}
	tok, err := authz.MintToken(e.key, kid, Issuer, Audience, tenant, subject, scopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Do sends a request to the gateway with a bearer token (none when token
// is empty) and an optional A2A-Version header, and returns the response
// with its body read.
func (e *Env) Do(t testing.TB, method, url, token, version string, body []byte) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
