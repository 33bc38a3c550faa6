package interop

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/proc"
)

// The identities of the two tenants and the development issuer the
// gateway trusts for them.
const (
	issuer   = "a2a-gateway-interop"
	audience = "a2a-gateway"
)

type principal struct{ tenant, subject string }

var (
	alice = principal{tenant: "acme", subject: "alice"}
	bob   = principal{tenant: "globex", subject: "bob"}
)

// upstream is one agent behind the gateway, mounted with a bridge: the
// agent speaks one form, and the gateway offers it in every form.
type upstream struct {
	Name        string
	URL         string
	JSONRPCPath string
	RESTPath    string
	// GRPC is the agent's gRPC host:port, when it speaks gRPC; GRPCListen
	// the gateway's gRPC listener for the mount, chosen when the gateway
	// starts (every mount has one, for the gRPC forms it offers).
	GRPC       string
	GRPCListen string
	// Agent is the agent's one form, Offer every form the gateway serves
	// in front of it, as the bridge section spells them.
	Agent bridgeInterface
	Offer []bridgeInterface
}

// bridgeInterface is one form as a bridge section spells it.
type bridgeInterface struct{ Version, Binding string }

// gatewayConfig is the configuration the suite runs the gateway with:
// loopback only (every agent also on a gRPC listener of its own, h2c, and a
// gRPC agent's calls to its gRPC service), every agent with a bridge
// section (its one form, every form offered), bearer tokens from the
// development issuer, the embedded store, deduplication on (the default),
// both tenants allowed on every agent, and the push relay on. The relay signs notifications with the
// suite's own key and may call webhooks on loopback for the first tenant
// only (its allowlist); a failed delivery is retried within the case's
// time.
var gatewayConfig = template.Must(template.New("gateway.yaml").Parse(`# Written by the interop suite.
listen: "{{.Listen}}"
admin_listen: "{{.Admin}}"
log:
  level: debug
  format: json
auth:
  issuers:
    - name: interop
      issuer: "{{.Issuer}}"
      audiences: ["{{.Audience}}"]
      algorithms: [EdDSA]
      key_files: ["{{.JWKS}}"]
push:
  enabled: true
  signing:
    key_files: ["{{.PushKey}}"]
    key_ids: ["{{.PushKeyID}}"]
  tenants:
    {{.PushTenant}}:
      allowlist: ["127.0.0.1:*"]
  delivery:
    schedule: [200ms, 500ms, 1s, 2s, 5s]
agents:
{{- $tenants := .Tenants}}
{{- range .Agents}}
  - name: {{.Name}}
    url: "{{.URL}}"
    jsonrpc_path: "{{.JSONRPCPath}}"
{{- if .RESTPath}}
    rest_path: "{{.RESTPath}}"
{{- end}}
    grpc:
      listen: "{{.GRPCListen}}"
{{- if .GRPC}}
      upstream: "{{.GRPC}}"
{{- end}}
    bridge:
      agent: {version: "{{.Agent.Version}}", binding: "{{.Agent.Binding}}"}
      offer:
{{- range .Offer}}
        - {version: "{{.Version}}", binding: "{{.Binding}}"}
{{- end}}
    policy:
      tenants: [{{$tenants}}]
{{- end}}
`))

// pushKeyID names the key the gateway signs notifications with.
const pushKeyID = "interop-push"

// gateway is a running gateway process.
type gateway struct {
	proc   *proc.Proc
	public string // http://127.0.0.1:port
	// grpc is each agent's gRPC listener (host:port), by agent name.
	grpc map[string]string
}

// agentBase is an agent's URL on the gateway.
func (g *gateway) agentBase(name string) string { return g.public + "/agents/" + name }

// pushJWKS is where the gateway publishes the keys that sign its
// notifications.
func (g *gateway) pushJWKS() string { return g.public + "/.well-known/a2a-push-jwks.json" }

// pushIssuer is the iss of the notification JWTs: the gateway's public URL,
// which the suite leaves to its default.
func (g *gateway) pushIssuer() string { return g.public }

// writePushKey writes a fresh Ed25519 key for signing notifications, as a
// PKCS#8 PEM file.
func writePushKey(dir string) (string, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "push-key.pem")
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// buildGateway compiles the gateway of this checkout.
func buildGateway(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "a2a-gateway")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/a2a-gateway")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/a2a-gateway: %w\n%s", err, out)
	}
	return bin, nil
}

// mintTokens creates the development key and a token per principal with
// the gateway's own token command.
func mintTokens(ctx context.Context, bin, dir string) (jwks string, tokens map[principal]string, err error) {
	key := filepath.Join(dir, "dev-key.pem")
	tokens = map[principal]string{}
	for _, p := range []principal{alice, bob} {
		cmd := exec.CommandContext(ctx, bin, "token", "-key", key, "-generate",
			"-issuer", issuer, "-audience", audience, "-tenant", p.tenant, "-subject", p.subject, "-ttl", "2h")
		out, err := proc.Run(ctx, "a2a-gateway token", cmd, filepath.Join(dir, "token.log"))
		if err != nil {
			return "", nil, err
		}
		tok := strings.TrimSpace(string(out))
		if strings.Count(tok, ".") != 2 {
			return "", nil, fmt.Errorf("a2a-gateway token printed no JWT for %s/%s", p.tenant, p.subject)
		}
		tokens[p] = tok
	}
	return key + ".jwks.json", tokens, nil
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startAttempts bounds retries when the gateway exits at start-up, which
// happens when another process takes one of its free ports first.
const startAttempts = 3

// startGateway writes the configuration and runs `a2a-gateway serve` until
// its readiness endpoint answers.
func startGateway(ctx context.Context, bin, dir, jwks, pushKey string, agents []upstream) (*gateway, error) {
	var err error
	for range startAttempts {
		var g *gateway
		var exited bool
		g, exited, err = tryStartGateway(ctx, bin, dir, jwks, pushKey, agents)
		if err == nil || !exited {
			return g, err
		}
	}
	return nil, err
}

func tryStartGateway(ctx context.Context, bin, dir, jwks, pushKey string, agents []upstream) (g *gateway, exited bool, err error) {
	listen, err := freeAddr()
	if err != nil {
		return nil, false, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, false, err
	}
	agents = slices.Clone(agents)
	grpcListeners := map[string]string{}
	for i := range agents {
		if agents[i].GRPCListen, err = freeAddr(); err != nil {
			return nil, false, err
		}
		grpcListeners[agents[i].Name] = agents[i].GRPCListen
	}
	var cfg bytes.Buffer
	err = gatewayConfig.Execute(&cfg, map[string]any{
		"Listen": listen, "Admin": admin, "Issuer": issuer, "Audience": audience, "JWKS": jwks, "Agents": agents,
		"Tenants": alice.tenant + ", " + bob.tenant, "PushKey": pushKey, "PushKeyID": pushKeyID, "PushTenant": alice.tenant,
	})
	if err != nil {
		return nil, false, err
	}
	cfgPath := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, cfg.Bytes(), 0o600); err != nil {
		return nil, false, err
	}
	logPath := filepath.Join(dir, "gateway.log")
	p, err := proc.Start("a2a-gateway serve", exec.Command(bin, "serve", "-config", cfgPath), logPath)
	if err != nil {
		return nil, false, err
	}
	if err := waitReady(ctx, p, "http://"+admin+"/readyz"); err != nil {
		p.Stop()
		return nil, errors.Is(err, errExitedEarly), fmt.Errorf("gateway: %w\n%s", err, proc.Tail(logPath, 30))
	}
	return &gateway{proc: p, public: "http://" + listen, grpc: grpcListeners}, false, nil
}

var errExitedEarly = errors.New("exited before it was ready")

func waitReady(ctx context.Context, p *proc.Proc, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%w: %v", errExitedEarly, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready at %s: %w", url, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
