// Package proc runs the suite's child processes (the gateway, the Node.js
// agent, the Node.js client) with their output in log files, and stops them
// so that nothing outlives the suite: by signal when the suite ends, and on
// Linux by the kernel if the test binary itself dies first.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// stopGrace is how long a process gets to exit after SIGTERM before it is
// killed.
const stopGrace = 5 * time.Second

// Proc is a running child process.
type Proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error

	stopOnce sync.Once
}

// Start runs cmd with its stderr (and stdout, unless the caller took it)
// appended to logPath.
func Start(name string, cmd *exec.Cmd, logPath string) (*Proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", name, err)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = log
	}
	cmd.Stderr = log
	if cmd.WaitDelay == 0 {
		// A grandchild that inherited stdout must not keep Wait (and so
		// Stop) waiting after the process itself is gone.
		cmd.WaitDelay = stopGrace
	}
	isolate(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	p := &Proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// StartReady starts cmd and waits for the first line it prints on stdout,
// the readiness line; the rest of stdout goes to the log file.
func StartReady(ctx context.Context, name string, cmd *exec.Cmd, logPath string) (*Proc, []byte, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	p, err := Start(name, cmd, logPath)
	if err != nil {
		return nil, nil, err
	}
	type lineResult struct {
		line []byte
		err  error
	}
	first := make(chan lineResult, 1)
	go func() {
		r := bufio.NewReader(out)
		line, err := r.ReadBytes('\n')
		first <- lineResult{bytes.TrimSpace(line), err}
		_, _ = io.Copy(p.log, r)
	}()
	select {
	case res := <-first:
		if res.err != nil {
			p.Stop()
			return nil, nil, fmt.Errorf("%s exited before it was ready (%v); see %s", name, res.err, logPath)
		}
		return p, res.line, nil
	case <-ctx.Done():
		p.Stop()
		return nil, nil, fmt.Errorf("%s not ready: %w; see %s", name, ctx.Err(), logPath)
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after a grace period. It is
// safe to call more than once and after the process exited. Signals go
// through os.Process, which never reaches another process that reused the
// pid of one already reaped.
func (p *Proc) Stop() {
	p.stopOnce.Do(func() {
		_ = terminate(p.cmd.Process)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		p.log.Close()
	})
}

// Exited reports whether the process has exited, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Tail returns the last n lines of a log file, for failure reports.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ErrExited is returned by Run when the process ends with a non-zero status.
var ErrExited = errors.New("process exited with an error")

// Run runs cmd to completion, stopping it when ctx ends, and returns its
// stdout. Its stderr goes to logPath.
func Run(ctx context.Context, name string, cmd *exec.Cmd, logPath string) ([]byte, error) {
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	p, err := Start(name, cmd, logPath)
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Stop()
		return stdout.Bytes(), fmt.Errorf("%s: %w", name, ctx.Err())
	}
	p.Stop()
	if p.err != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w: %w; see %s", name, ErrExited, p.err, logPath)
	}
	return stdout.Bytes(), nil
}
