package gateway

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// limitListener keeps at most cap(slots) accepted connections open. When
// all are open it stops accepting: newcomers wait in the kernel's backlog,
// costing no goroutine or descriptor here, until a connection closes (the
// header, body and idle timeouts see to that).
type limitListener struct {
	net.Listener
	slots    chan struct{}
	done     chan struct{}
	close    sync.Once
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds of the last "full" log line
}

// fullLogEvery spaces the log lines of a listener that stays full.
const fullLogEvery = time.Minute

func newLimitListener(l net.Listener, max int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{}), log: log}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if now := time.Now().UnixNano(); now-l.lastWarn.Load() >= int64(fullLogEvery) {
			l.lastWarn.Store(now)
			l.log.Warn("connection limit reached; new connections wait until one closes", "max_connections", cap(l.slots))
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

func (l *limitListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed, once.
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// SyscallConn lets the proxy peek at a handed-off stream's connection for
// its caller leaving, without a goroutine reading it.
func (c *limitConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// CloseWrite keeps net/http's half-close before a final close (it lets the
// client read an error answer before the connection goes).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
