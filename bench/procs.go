package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a child may take to exit after SIGTERM before the
// whole process group is killed.
const stopGrace = 5 * time.Second

// procSet owns every child process of a run, so that all of them end when
// the run does, whichever way it ends.
type procSet struct {
	dir   string
	mu    sync.Mutex
	procs []*proc
}

// proc is one running child, in its own process group so that stopping it
// also stops whatever it started (nginx workers).
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

func newProcSet(dir string) *procSet { return &procSet{dir: dir} }

// start runs cmd with its output in a log file named after the child. The
// kernel sends the child SIGTERM should the harness die without cleaning up.
func (s *procSet) start(name string, cmd *exec.Cmd) (*proc, error) {
	logPath := filepath.Join(s.dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", name, err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, cmd.Path, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// Pid is the child's process id.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// exited reports whether the child has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the child's process group: SIGTERM, then SIGKILL after the
// grace period. Stopping an ended child is a no-op.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Children the leader left behind share its group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// logTail is the end of the child's log, for error messages.
func (p *proc) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	const keep = 2048
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(bytes.TrimSpace(b))
}

// failure describes why the child cannot be used, with its log.
func (p *proc) failure(what string) error {
	msg := fmt.Sprintf("%s: %s", p.name, what)
	if p.exited() {
		msg += fmt.Sprintf(" (exited: %v)", p.waitErr)
	}
	if tail := p.logTail(); tail != "" {
		msg += "\n--- " + p.logPath + " ---\n" + tail
	}
	return errors.New(msg)
}

// closeAll stops every child still running, in reverse start order.
func (s *procSet) closeAll() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// waitReady polls ready until it succeeds, the child exits, ctx ends or
// the timeout passes.
func waitReady(ctx context.Context, p *proc, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if p.exited() {
			return p.failure("exited before it was ready")
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return p.failure(fmt.Sprintf("not ready after %v: %v", timeout, last))
			}
			return ctx.Err()
		case <-p.done:
		case <-tick.C:
		}
	}
}

// dialReady succeeds once addr accepts TCP connections.
func dialReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// freeAddr finds a loopback port nobody listens on. Another process could
// take it before the child binds it; startWithRetry covers that race.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startWithRetry starts a child via launch up to three times, with fresh
// ports each time, for the rare case that a port was taken in between.
func startWithRetry(ctx context.Context, launch func(ctx context.Context) (*proc, error)) (*proc, error) {
	var err error
	for range 3 {
		var p *proc
		if p, err = launch(ctx); err == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}
