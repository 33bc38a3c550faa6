package scaletest

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// buildGateway compiles the gateway binary, as a deployment would run it.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "a2a-gateway")
	build := exec.Command("go", "build", "-o", bin, "github.com/a2a-gateway/a2a-gateway/cmd/a2a-gateway")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the gateway: %v\n%s", err, out)
	}
	return bin
}

// gateway is one `a2a-gateway serve` process.
type gateway struct {
	name  string
	base  string // public listener, http://host:port
	admin string // admin listener, http://host:port
	cmd   *exec.Cmd
	logs  *tailBuffer
	// down is set when the process was killed, or when a client found it
	// refusing connections, as a load balancer's health check would.
	down atomic.Bool
}

// startGateway writes cfg (with fresh listen addresses) to a file, starts
// the binary on it and waits until /readyz answers 200.
func startGateway(t *testing.T, bin, name string, cfg config.Config) *gateway {
	t.Helper()
	cfg.Listen, cfg.AdminListen = freeAddr(t), freeAddr(t)
	cfg.PublicURL = "http://" + cfg.Listen
	raw, err := yaml.Marshal(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gateway{name: name, base: "http://" + cfg.Listen, admin: "http://" + cfg.AdminListen, logs: &tailBuffer{max: 64 << 10}}
	g.cmd = exec.Command(bin, "serve", "-config", path)
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = g.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("log of gateway %s (last %d bytes):\n%s", g.name, g.logs.max, g.logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(g.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		select {
		case <-exited:
			t.Fatalf("gateway %s exited before it was ready:\n%s", name, g.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway %s not ready after 60s:\n%s", name, g.logs.String())
		}
	}
}

// kill ends the process with SIGKILL: no draining, no lease released, as a
// crash or an OOM kill would.
func (g *gateway) kill(t *testing.T) {
	t.Helper()
	g.down.Store(true)
	if err := g.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("kill gateway %s: %v", g.name, err)
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

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// writers (a process's stdout and stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if over := len(b.b) - b.max; over > 0 {
		b.b = append(b.b[:0], b.b[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.Clone(b.b))
}
