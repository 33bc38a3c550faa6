// Package redistest starts real redis-server processes for tests: a single
// server that can be stopped and restarted on the same port to simulate an
// outage, and a Redis Cluster whose masters can be killed to exercise
// failover. Nothing here mocks Redis.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startAttempts bounds retries when a freshly chosen port is taken before
// redis-server binds it.
const startAttempts = 5

// Server is one redis-server process on a loopback port.
type Server struct {
	addr string
	port int
	dir  string
	proc *process
}

// Option changes how Start configures the server.
type Option func(*config)

type config struct {
	aof   bool
	extra []string
}

// WithAOF turns on the append-only file with fsync every second, so data
// survives Stop and Restart except for writes of the last second, as in a
// production deployment with that setting. Add
// WithArgs("--appendfsync", "always") when a test cannot tolerate that loss.
func WithAOF() Option { return func(c *config) { c.aof = true } }

// WithArgs appends redis-server command-line arguments, for example
// WithArgs("--requirepass", "secret"). Later arguments override earlier ones.
func WithArgs(args ...string) Option {
	return func(c *config) { c.extra = append(c.extra, args...) }
}

// Start launches redis-server on a free loopback port in a fresh temporary
// directory, waits until it answers PING and registers a cleanup that kills
// it and removes the directory. Persistence is off unless WithAOF is given.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	persistence := []string{"--save", "", "--appendonly", "no"}
	if c.aof {
		persistence = []string{"--save", "", "--appendonly", "yes", "--appendfsync", "everysec"}
	}
	return launch(t, freePort, append(persistence, c.extra...))
}

// launch starts a server with args after the common ones, choosing its port
// with pick and retrying with a new port when the chosen one was taken.
func launch(t testing.TB, pick func() (int, error), args []string) *Server {
	t.Helper()
	bin := lookupRedis(t)
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		t.Fatalf("redistest: temp dir: %v", err)
	}
	s := &Server{dir: dir}
	t.Cleanup(func() { s.cleanup(t) })

	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := pick()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.port = port
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.proc = &process{
			bin:     bin,
			args:    append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no", "--logfile", ""}, args...),
			dir:     dir,
			logPath: filepath.Join(dir, "redis.log"),
		}
		if lastErr = s.proc.start(); lastErr != nil {
			break
		}
		lastErr = s.proc.waitReady(s.addr, readyTimeout)
		if lastErr == nil {
			return s
		}
		s.proc.kill()
		if !errors.Is(lastErr, errExited) {
			break
		}
	}
	t.Fatalf("redistest: redis-server did not start: %v\n--- log %s ---\n%s", lastErr, s.proc.logPath, s.proc.logTail())
	return nil
}

func (s *Server) cleanup(t testing.TB) {
	if s.proc != nil {
		s.proc.kill()
		if t.Failed() {
			t.Logf("redistest: log of redis-server %s:\n%s", s.addr, s.proc.logTail())
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		t.Logf("redistest: remove %s: %v", s.dir, err)
	}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Client returns a go-redis client for the server, closed on cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.addr, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server with SIGKILL to simulate an outage. The port stays
// reserved for Restart; data not persisted by WithAOF is lost.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.proc.kill()
}

// Restart starts the server again on the same port and waits for PING.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.proc.kill()
	deadline := time.Now().Add(readyTimeout)
	for {
		err := s.proc.start()
		if err == nil {
			err = s.proc.waitReady(s.addr, time.Until(deadline))
		}
		if err == nil {
			return
		}
		s.proc.kill()
		// Another process may hold the port for a moment (an outgoing
		// connection's local port, for example); keep trying until the deadline.
		if !errors.Is(err, errExited) || time.Now().After(deadline) {
			t.Fatalf("redistest: restart on %s: %v\n--- log ---\n%s", s.addr, err, s.proc.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool { return s.proc.running() }

// freePort asks the kernel for a free loopback port. The port is released
// before redis-server binds it, so a start can lose a race; launch retries.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clusterBusOffset is the distance Redis Cluster puts between a node's
// client port and its cluster bus port.
const clusterBusOffset = 10000

// freeClusterPort finds a port p such that p and p+10000 are both free and
// p+10000 is a valid port.
func freeClusterPort() (int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	// Keeping rejected listeners open stops the kernel from offering the same
	// port again in this loop.
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find free port: %w", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if port+clusterBusOffset >= 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+clusterBusOffset)))
		if err != nil {
			continue
		}
		held = append(held, bus)
		return port, nil
	}
	return 0, errors.New("find free port: no port p with p+10000 free and below 65535")
}
