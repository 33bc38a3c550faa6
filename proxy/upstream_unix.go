//go:build unix

package proxy

import (
	"crypto/tls"
	"net"
	"syscall"
)

// idleOpen reports whether an idle connection can carry another exchange:
// nothing is waiting to be read on it, neither the agent's close nor
// bytes it was not asked for. Without a goroutine reading every pooled
// connection, this one non-blocking peek is how a connection the agent
// closed while idle is found before a request is written to it.
func idleOpen(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var open bool
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && open
}
