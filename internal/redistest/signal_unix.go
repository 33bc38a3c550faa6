//go:build unix

package redistest

import (
	"syscall"
	"testing"
)

// Pause freezes the server with SIGSTOP: connections stay open but nothing
// is answered, so clients run into their read timeouts instead of the
// immediate "connection refused" that Stop produces.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGSTOP)
}

// Resume continues a paused server.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGCONT)
}

func (s *Server) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	r := s.proc.current()
	if r == nil {
		t.Fatalf("redistest: redis-server on %s is not running", s.addr)
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: signal %v to redis-server on %s: %v", sig, s.addr, err)
	}
}
