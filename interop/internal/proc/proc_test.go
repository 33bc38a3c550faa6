//go:build unix

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// generous bounds only keep a broken test from hanging.
const hang = 30 * time.Second

func TestStartAndStop(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		script string
	}{
		{"exits on SIGTERM", "echo ready; exec sleep 60"},
		// Ignores SIGTERM: Stop kills it after the grace period.
		{"ignores SIGTERM", "trap '' TERM; echo ready; while true; do sleep 1; done"},
		// Leaves a short-lived grandchild holding stdout: Stop still returns.
		{"leaves a grandchild", "echo ready; sleep 8 & wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			p, line, err := StartReady(ctx, tt.name, exec.Command("sh", "-c", tt.script), filepath.Join(dir, "log"))
			if err != nil {
				t.Fatal(err)
			}
			if string(line) != "ready" {
				t.Fatalf("readiness line %q", line)
			}
			if exited, _ := p.Exited(); exited {
				t.Fatal("exited before Stop")
			}
			stopped := make(chan struct{})
			go func() {
				p.Stop()
				p.Stop() // a second Stop is harmless
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(hang):
				t.Fatal("Stop did not return")
			}
			if exited, _ := p.Exited(); !exited {
				t.Fatal("still running after Stop")
			}
		})
	}
}

func TestStartReadyFails(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		want    string
	}{
		{"exits before the line", "echo oops >&2; exit 3", hang, "exited before it was ready"},
		{"never ready", "exec sleep 60", 200 * time.Millisecond, "not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			_, _, err := StartReady(ctx, tt.name, exec.Command("sh", "-c", tt.script), filepath.Join(dir, "log"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		out     string
		wantErr error
		logHas  string
	}{
		{"success", "echo out; echo diagnostics >&2", hang, "out\n", nil, "diagnostics"},
		{"non-zero exit", "echo partial; exit 2", hang, "partial\n", ErrExited, ""},
		{"context ends", "exec sleep 60", 200 * time.Millisecond, "", context.DeadlineExceeded, ""},
		{"context ends, a grandchild holds stdout", "sleep 8 & wait", 200 * time.Millisecond, "", context.DeadlineExceeded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			log := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".log")
			out, err := Run(ctx, tt.name, exec.Command("sh", "-c", tt.script), log)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if string(out) != tt.out {
				t.Errorf("stdout %q, want %q", out, tt.out)
			}
			if tt.logHas != "" && !strings.Contains(Tail(log, 5), tt.logHas) {
				t.Errorf("log lacks %q: %q", tt.logHas, Tail(log, 5))
			}
		})
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("1\n2\n3\n4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n    int
		want string
	}{
		{2, "3\n4"},
		{10, "1\n2\n3\n4"},
	}
	for _, tt := range tests {
		if got := Tail(path, tt.n); got != tt.want {
			t.Errorf("Tail(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := Tail(filepath.Join(t.TempDir(), "missing"), 3); !strings.Contains(got, "cannot read") {
		t.Errorf("Tail of a missing file = %q", got)
	}
}
