package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// readyTimeout bounds how long a redis-server may take to answer PING. It is
// generous because the machine running the tests may be heavily loaded.
const readyTimeout = 20 * time.Second

// logTailBytes is how much of a server log is shown when a test fails.
const logTailBytes = 8 << 10

// errExited reports that redis-server stopped before it became ready, which
// usually means its port was taken between choosing and binding it.
var errExited = errors.New("redis-server exited before it was ready")

// process is one redis-server executable with a fixed argument list that can
// be started, killed and started again.
type process struct {
	bin     string
	args    []string
	dir     string
	logPath string

	mu  sync.Mutex
	run *run // nil while not running
}

// run is one lifetime of the operating-system process.
type run struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set before exited is closed
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != nil {
		return errors.New("redis-server is already running")
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	// The child inherits its own descriptor, so ours can be closed right away.
	defer logf.Close()
	fmt.Fprintf(logf, "=== redistest: starting %s %s\n", p.bin, strings.Join(p.args, " "))

	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.bin, err)
	}
	r := &run{cmd: cmd, exited: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.exited)
	}()
	p.run = r
	return nil
}

// kill stops the process with SIGKILL, as an outage would, and waits for it.
func (p *process) kill() {
	p.mu.Lock()
	r := p.run
	p.run = nil
	p.mu.Unlock()
	if r == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
}

func (p *process) current() *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run
}

func (p *process) running() bool {
	r := p.current()
	if r == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// waitReady polls addr with PING until the server answers, exits or the
// timeout passes.
func (p *process) waitReady(addr string, timeout time.Duration) error {
	r := p.current()
	if r == nil {
		return errors.New("redis-server is not running")
	}
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		select {
		case <-r.exited:
			return fmt.Errorf("%w (%v)", errExited, r.err)
		default:
		}
		if lastErr = ping(addr); lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s not ready after %s: %w", addr, timeout, lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ping speaks just enough RESP to tell whether the server accepts commands.
// NOAUTH counts as ready: the server is serving, it only wants a password.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimSpace(line)
	if line == "+PONG" || strings.HasPrefix(line, "-NOAUTH") {
		return nil
	}
	return fmt.Errorf("PING answered %q", line)
}

// logTail returns the end of the server log for failure reports.
func (p *process) logTail() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if st.Size() > logTailBytes {
		if _, err := f.Seek(st.Size()-logTailBytes, io.SeekStart); err != nil {
			return fmt.Sprintf("(no log: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}
