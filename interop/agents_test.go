package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/a2a-gateway/a2a-gateway/interop/goagent"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/proc"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
)

const a2aGoModule = "github.com/a2aproject/a2a-go"

// Where js/agent.mjs serves its HTTP bindings.
const (
	jsAgentJSONRPCPath = "/a2a/jsonrpc"
	jsAgentRESTPath    = "/a2a/rest"
)

// jsSDKVersion reads the installed @a2a-js/sdk version, and says how to
// install it when it is missing.
func jsSDKVersion() (report.SDK, error) {
	b, err := os.ReadFile(filepath.Join("node_modules", "@a2a-js", "sdk", "package.json"))
	if errors.Is(err, os.ErrNotExist) {
		return report.SDK{}, errors.New("node_modules is missing @a2a-js/sdk: run ./interop/setup.sh (npm ci in interop/)")
	}
	if err != nil {
		return report.SDK{}, err
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return report.SDK{}, fmt.Errorf("@a2a-js/sdk package.json: %w", err)
	}
	return report.SDK{Name: jsSDK, Version: pkg.Version}, nil
}

// goSDKVersion is the a2a-go version the module selects. (Test binaries
// carry no dependency list in their build information, so ask go.)
func goSDKVersion(ctx context.Context) (report.SDK, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", a2aGoModule).Output()
	if err != nil {
		return report.SDK{}, fmt.Errorf("go list -m %s: %w", a2aGoModule, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return report.SDK{}, fmt.Errorf("go list -m %s printed no version", a2aGoModule)
	}
	return report.SDK{Name: goSDK, Version: v}, nil
}

// agent is one running agent serving one form.
type agent struct {
	peer report.Peer
	// base is its HTTP base URL (card, probe, and its HTTP binding);
	// grpcAddress its gRPC host:port when it speaks gRPC.
	base, grpcAddress string
	log               string // its log file's name in the run's directory
	// proc is the agent's process (JS), nil for an agent in this process.
	proc *proc.Proc
	stop func()
}

// startAgents starts an agent per peer, at once: they start in parallel.
func startAgents(ctx context.Context, dir string, peers []report.Peer) ([]*agent, error) {
	agents := make([]*agent, len(peers))
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			switch p.SDK.Name {
			case jsSDK:
				agents[i], errs[i] = startJSAgent(ctx, dir, p)
			case goSDK:
				agents[i], errs[i] = startGoAgent(dir, p)
			default:
				errs[i] = fmt.Errorf("no agent for %s", p.SDK)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, a := range agents {
			if a != nil {
				a.stop()
			}
		}
		return nil, err
	}
	return agents, nil
}

// startJSAgent runs js/agent.mjs in the peer's form and returns it once it
// serves.
func startJSAgent(ctx context.Context, dir string, peer report.Peer) (*agent, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	logName := "agent-" + peer.ID + ".log"
	cmd := exec.Command("node", "js/agent.mjs", "--version", peer.Form.Protocol, "--binding", cardBinding[peer.Form.Binding])
	p, line, err := proc.StartReady(ctx, "js agent "+peer.ID, cmd, filepath.Join(dir, logName))
	if err != nil {
		return nil, err
	}
	var ready struct {
		Port     int `json:"port"`
		GRPCPort int `json:"grpcPort"`
	}
	overGRPC := peer.Form.Binding == grpcName
	if err := json.Unmarshal(line, &ready); err != nil || ready.Port == 0 || overGRPC != (ready.GRPCPort != 0) {
		p.Stop()
		return nil, fmt.Errorf("js agent %s: unexpected readiness line %q", peer.ID, line)
	}
	a := &agent{peer: peer, base: fmt.Sprintf("http://127.0.0.1:%d", ready.Port), log: logName, proc: p, stop: p.Stop}
	if overGRPC {
		a.grpcAddress = fmt.Sprintf("127.0.0.1:%d", ready.GRPCPort)
	}
	return a, nil
}

// startGoAgent serves the a2a-go agent in the peer's form on loopback ports
// of this process: HTTP, and gRPC when that is its binding; stop closes its
// servers and open streams.
func startGoAgent(dir string, peer report.Peer) (*agent, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &agent{peer: peer, base: "http://" + ln.Addr().String(), log: "agent-" + peer.ID + ".log"}
	transport := a2a.TransportProtocolJSONRPC
	var gln net.Listener
	if peer.Form.Binding == grpcName {
		transport = a2a.TransportProtocolGRPC
		if gln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			ln.Close()
			return nil, err
		}
		a.grpcAddress = gln.Addr().String()
	}
	logFile, err := os.OpenFile(filepath.Join(dir, a.log), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		ln.Close()
		if gln != nil {
			gln.Close()
		}
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	served := goagent.New(a.base, transport, a.grpcAddress, log)
	srv := &http.Server{Handler: served.HTTP, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	if gln != nil {
		wg.Go(func() { _ = served.GRPC.Serve(gln) })
	}
	a.stop = func() {
		_ = srv.Close()
		if served.GRPC != nil {
			served.GRPC.Stop()
		}
		wg.Wait()
		logFile.Close()
	}
	return a, nil
}
