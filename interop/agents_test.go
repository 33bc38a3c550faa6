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

	"github.com/a2a-gateway/a2a-gateway/interop/goagent"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/proc"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
)

const a2aGoModule = "github.com/a2aproject/a2a-go"

// Where js/agent.mjs serves its bindings.
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

// startJSAgent runs js/agent.mjs and returns its base URL and gRPC
// host:port.
func startJSAgent(ctx context.Context, dir string) (p *proc.Proc, base, grpcAddress string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	logPath := filepath.Join(dir, "js-agent.log")
	p, line, err := proc.StartReady(ctx, "js agent", exec.Command("node", "js/agent.mjs"), logPath)
	if err != nil {
		return nil, "", "", err
	}
	var ready struct {
		Port     int `json:"port"`
		GRPCPort int `json:"grpcPort"`
	}
	if err := json.Unmarshal(line, &ready); err != nil || ready.Port == 0 || ready.GRPCPort == 0 {
		p.Stop()
		return nil, "", "", fmt.Errorf("js agent: unexpected readiness line %q", line)
	}
	return p, fmt.Sprintf("http://127.0.0.1:%d", ready.Port), fmt.Sprintf("127.0.0.1:%d", ready.GRPCPort), nil
}

// startGoAgent serves the a2a-go agent on two loopback ports of this
// process, HTTP and gRPC; stop closes its servers and open streams.
func startGoAgent(dir string) (stop func(), base, grpcAddress string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", "", err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, "", "", err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "go-agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		ln.Close()
		gln.Close()
		return nil, "", "", err
	}
	base, grpcAddress = "http://"+ln.Addr().String(), gln.Addr().String()
	log := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	agent := goagent.New(base, grpcAddress, log)
	srv := &http.Server{Handler: agent.HTTP, ReadHeaderTimeout: 10 * time.Second}
	var served sync.WaitGroup
	served.Go(func() { _ = srv.Serve(ln) })
	served.Go(func() { _ = agent.GRPC.Serve(gln) })
	stop = func() {
		_ = srv.Close()
		agent.GRPC.Stop()
		served.Wait()
		logFile.Close()
	}
	return stop, base, grpcAddress, nil
}
