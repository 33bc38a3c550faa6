package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// Names the gateway configuration uses for the benchmark.
const (
	apiKeyEnv   = "BENCH_API_KEY"
	agentName   = "bench"
	gatewayPkg  = "github.com/a2a-gateway/a2a-gateway/cmd/a2a-gateway"
	startupWait = 30 * time.Second
)

// buildGateway compiles the gateway binary into dir with the go tool,
// from the module the working directory is in.
func buildGateway(ctx context.Context, dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building the gateway needs the go tool on PATH (or pass a prebuilt binary): %w", err)
	}
	bin := filepath.Join(dir, "a2a-gateway")
	// -buildvcs=auto stamps the revision into the binary for the report
	// even where GOFLAGS turns stamping off, and is silent outside git.
	cmd := exec.CommandContext(ctx, goTool, "build", "-buildvcs=auto", "-o", bin, gatewayPkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", gatewayPkg, err, out)
	}
	return bin, nil
}

// gatewayRevision names the source the gateway binary was built from, as
// the go tool stamped it: "5084ddd" or "5084ddd+modified".
func gatewayRevision(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "unknown (built without version control information)"
	}
	rev = rev[:min(len(rev), 12)]
	if modified == "true" {
		rev += "+modified"
	}
	return rev
}

// newAPIKey returns a random key for this run only.
func newAPIKey() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("api key: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// gatewaySetup is what distinguishes one benchmarked gateway from another.
type gatewaySetup struct {
	// jwksURL, when set, makes the gateway accept only bearer JWTs of the
	// benchmark issuer, whose keys it fetches from there; otherwise it
	// accepts only the run's API key. algorithm is the issuer's.
	jwksURL, algorithm string
	// redisAddr, when set, is the Redis the gateway keeps its state in,
	// under keyPrefix; otherwise it uses the embedded store.
	redisAddr, keyPrefix string
	// dedupeOff turns messageId deduplication off.
	dedupeOff bool
	// upstreamURL, when set, is the agent instead of the run's upstream.
	upstreamURL string
	// agentSpeaks, when set, gives the agent a bridge section: it speaks
	// that version over JSON-RPC, and callers reach it over JSON-RPC in
	// 1.0 and 0.3.
	agentSpeaks a2a.Version
	// extra replaces or adds whole top-level sections.
	extra map[string]any
}

// Names of the benchmark's token issuer.
const (
	issuerName  = "bench-idp"
	issuerURL   = "https://idp.a2abench.invalid"
	audience    = "a2a-gateway-bench"
	benchTenant = "bench"
)

// benchScopes are granted to every benchmark client.
var benchScopes = []string{"a2a:tasks.read", "a2a:tasks.write"}

// gatewayConfig is the configuration the benchmark runs the gateway with:
// one agent, one way to authenticate, the store and dedupe of setup,
// warnings only in the log. Only these settings are written, so every
// other one takes the gateway's own default, and a binary built from
// another revision still reads it.
func gatewayConfig(listen, admin, upstreamURL string, maxStreams int, setup gatewaySetup) map[string]any {
	cfg := map[string]any{
		"listen":       listen,
		"admin_listen": admin,
		"log":          map[string]any{"level": "warn", "format": "json"},
		"limits":       map[string]any{"max_streams": maxStreams},
		"shutdown":     map[string]any{"timeout": "3s", "stream_grace": "1s"},
	}
	agent := map[string]any{"name": agentName, "url": cmp.Or(setup.upstreamURL, upstreamURL)}
	if setup.agentSpeaks != 0 {
		iface := func(v a2a.Version) map[string]any {
			return map[string]any{"version": v.String(), "binding": a2a.BindingJSONRPC.CardName()}
		}
		agent["bridge"] = map[string]any{
			"agent": iface(setup.agentSpeaks),
			"offer": []any{iface(a2a.V10), iface(a2a.V03)},
		}
	}
	cfg["agents"] = []any{agent}
	if setup.jwksURL != "" {
		cfg["auth"] = map[string]any{"issuers": []any{map[string]any{
			"name": issuerName, "issuer": issuerURL, "audiences": []string{audience},
			"algorithms": []string{setup.algorithm}, "jwks_url": setup.jwksURL,
		}}}
	} else {
		cfg["auth"] = map[string]any{"api_keys": []any{map[string]any{
			"name": "bench", "tenant": benchTenant, "key_env": apiKeyEnv, "scopes": benchScopes,
		}}}
	}
	if setup.redisAddr != "" {
		cfg["store"] = map[string]any{
			"redis":      map[string]any{"addrs": []string{setup.redisAddr}},
			"key_prefix": setup.keyPrefix,
		}
	}
	if setup.dedupeOff {
		cfg["dedupe"] = map[string]any{"disabled": true}
	}
	for k, v := range setup.extra {
		cfg[k] = v
	}
	return cfg
}

// writeGatewayConfig writes cfg as YAML and checks that the gateway's own
// strict loader accepts it, so a renamed or removed setting fails here
// with the loader's reason rather than as a gateway that will not start.
func writeGatewayConfig(path string, cfg map[string]any) error {
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("gateway config: %w", err)
	}
	if _, err := config.Parse(raw); err != nil {
		return fmt.Errorf("gateway config rejected: %w", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("gateway config: %w", err)
	}
	return nil
}

// gatewayLaunch describes how to run one gateway process.
type gatewayLaunch struct {
	bin         string // the built binary; empty runs Self in the gateway role
	self        string
	dir         string
	name        string
	upstreamURL string
	apiKey      string
	maxStreams  int
	setup       gatewaySetup
	// Only with the in-process (self) gateway: a CPU profile file, and
	// whether to serve heap profiles on a debug port.
	cpuProfile string
	debug      bool
}

// runningGateway is a gateway process and where it listens.
type runningGateway struct {
	proc  *proc
	url   string // the benchmark agent's JSON-RPC endpoint
	admin string // admin base URL
	debug string // profile base URL, when served
}

// startGateway writes a configuration on fresh ports and starts the
// gateway, waiting until it is ready.
func startGateway(ctx context.Context, ps *procSet, gl gatewayLaunch) (*runningGateway, error) {
	var rg *runningGateway
	_, err := startWithRetry(ctx, func(ctx context.Context) (*proc, error) {
		listen, err := freeAddr()
		if err != nil {
			return nil, err
		}
		admin, err := freeAddr()
		if err != nil {
			return nil, err
		}
		cfgPath := filepath.Join(gl.dir, gl.name+".yaml")
		if err := writeGatewayConfig(cfgPath, gatewayConfig(listen, admin, gl.upstreamURL, gl.maxStreams, gl.setup)); err != nil {
			return nil, err
		}
		var cmd *exec.Cmd
		debug := ""
		if gl.bin != "" {
			cmd = exec.Command(gl.bin, "serve", "-config", cfgPath)
		} else {
			argv := []string{ChildCommand, "gateway", "-config", cfgPath, "-cpuprofile", gl.cpuProfile}
			if gl.debug {
				if debug, err = freeAddr(); err != nil {
					return nil, err
				}
				argv = append(argv, "-debug-addr", debug)
			}
			cmd = exec.Command(gl.self, argv...)
		}
		cmd.Env = append(os.Environ(), apiKeyEnv+"="+gl.apiKey)
		p, err := ps.start(gl.name, cmd)
		if err != nil {
			return nil, err
		}
		adminURL := "http://" + admin
		ready := func(ctx context.Context) error {
			if err := dialReady(listen)(ctx); err != nil {
				return err
			}
			return httpReady(ctx, adminURL+"/readyz")
		}
		if err := waitReady(ctx, p, startupWait, ready); err != nil {
			p.stop()
			return nil, err
		}
		rg = &runningGateway{proc: p, url: "http://" + listen + "/agents/" + agentName + "/", admin: adminURL}
		if debug != "" {
			if err := waitReady(ctx, p, startupWait, dialReady(debug)); err != nil {
				p.stop()
				return nil, err
			}
			rg.debug = "http://" + debug
		}
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return rg, nil
}

// httpReady succeeds once url answers 200.
func httpReady(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return nil
}
