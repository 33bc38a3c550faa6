//go:build unix

package h1

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// Peeker returns quiet, which peeks at c without waiting: true when
// nothing is waiting to be read on it, neither the peer's close nor bytes
// it was not asked for. ok is false when c cannot be peeked at. Without a
// goroutine reading every such connection, this non-blocking peek is how a
// peer that left is found: an agent's idle pooled connection, a caller's
// handed-off stream.
func Peeker(c net.Conn) (quiet func() bool, ok bool) {
	if tc, isTLS := c.(*tls.Conn); isTLS {
		c = tc.NetConn()
	}
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, false
	}
	if err != nil {
		return func() bool { return false }, true
	}
	return func() bool {
		var open bool
		var b [1]byte
		err := raw.Read(func(fd uintptr) bool {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
			return true // never wait
		})
		return err == nil && open
	}, true
}
