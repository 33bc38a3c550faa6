//go:build !unix

package redistest

import "testing"

// Pause needs SIGSTOP, which only unix systems have.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	t.Skip("redistest: Pause needs unix signals")
}

// Resume needs SIGCONT, which only unix systems have.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	t.Skip("redistest: Resume needs unix signals")
}
