package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/a2a-gateway/internal/h1"
)

// A relayed stream may stay idle for as long as its task lasts. Relayed on
// its handler's goroutine it would hold, all that time, that goroutine's
// stack (which runs through every stage) and net/http's buffers of the
// caller's connection. So a stream of an HTTP/1.1 caller is handed off once
// its first event is written: the connection is taken from net/http, the
// pipeline returns, and a goroutine of the stream's own relays the rest,
// writing the chunked body itself. What the stages do when a request ends
// waits for the stream's end (Scope.OnEnd), as does the request's metric and
// access line, so they see the whole stream either way. The connection is
// closed when the stream ends. HTTP/2 streams and bridged streams stay on
// their handlers, as do traced ones (prepareHandOff). A stream that may be
// handed off tells its caller so with Connection: close, so that no client
// sends another request on its connection.

// life is what a request does when it ends, shared by the scopes derived
// from the request's.
type life struct {
	ends []func(err error)
	// finish runs the ends and the request's own bookkeeping.
	finish func(err error)
	// handoff is set when the request's stream may be handed off.
	handoff *handoff
	// handedOff: the stream goes on without its handler, whose caller
	// must not finish the request.
	handedOff bool
}

// OnEnd registers what a stage does when the request ends, with the error
// the request ends with (nil when it was answered). Ends run in the reverse
// order of their registration, after the pipeline returns or, for a stream
// that was handed off, when the stream ends.
func (s *Scope) OnEnd(f func(err error)) { s.life.ends = append(s.life.ends, f) }

// end runs the registered ends.
func (l *life) end(err error) {
	for i := len(l.ends) - 1; i >= 0; i-- {
		l.ends[i](err)
	}
	l.ends = nil
}

// handoff is what handing a stream off needs: the writer at the bottom of
// the request's writers, and the request's context, which the caller's
// departure cancels before and after the hand-off.
type handoff struct {
	w      *streamWriter
	cancel context.CancelCauseFunc
	// unlink stops net/http's cancellation of the request from reaching
	// the request's context; false if it already did.
	unlink func() bool
	link   func()
	// quiet peeks at a handed-off stream's connection (nil: it cannot
	// be): false once the caller left.
	quiet func() bool
}

// callerLeft reports whether a handed-off stream's caller is seen to have
// left, ending the stream then: the relay checks before each event, so an
// event the agent sends after the caller left is not taken for one the
// caller received.
func (s *Scope) callerLeft() bool {
	h := s.life.handoff
	if h == nil || h.quiet == nil || h.quiet() {
		return false
	}
	h.cancel(nil)
	return true
}

// prepareHandOff makes an HTTP/1.1 streaming request's stream able to be
// handed off: rec writes through a streamWriter, and the request's context
// no longer ends with its handler.
func (g *Gateway) prepareHandOff(r *http.Request, s *Scope, rec *statusRecorder) *http.Request {
	// A traced stream stays on its handler: its server span ends when the
	// handler returns, and must see the whole stream.
	if !r.ProtoAtLeast(1, 1) || r.ProtoMajor != 1 || !s.Op.Method.Streaming() || s.bridged() ||
		trace.SpanFromContext(r.Context()).IsRecording() {
		return r
	}
	parent := r.Context()
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	h := &handoff{w: &streamWriter{rw: rec.ResponseWriter}, cancel: cancel}
	h.link = func() { h.unlink = context.AfterFunc(parent, func() { cancel(context.Cause(parent)) }) }
	h.link()
	rec.ResponseWriter = h.w
	s.life.handoff = h
	return r.WithContext(ctx)
}

// release ends what prepareHandOff set up, for a request that ended on its
// handler.
func (h *handoff) release() {
	h.unlink()
	h.cancel(nil)
}

// handOff takes the caller's connection from net/http and relays the rest
// of the stream on a goroutine of its own: rest relays it, and own is what
// the forwarder releases when it ends. It returns false, having changed
// nothing, when the stream stays on its handler: it cannot be handed off,
// was already, or the caller has left.
func (g *Gateway) handOff(s *Scope, rest func() error, own *cleanups) bool {
	l := s.life
	h := l.handoff
	if h == nil || l.handedOff {
		return false
	}
	if !h.unlink() {
		return false // the caller left
	}
	conn, brw, err := http.NewResponseController(h.w.rw).Hijack()
	if err != nil {
		h.link()
		l.handoff = nil // no second try
		s.Log().Debug("stream stays on its handler", "err", err)
		return false
	}
	h.w.take(conn)
	l.handedOff = true
	ends := own.take()
	unwatch := g.watchCaller(conn, brw.Reader, h)
	g.handedOff.add(1)
	go func() {
		defer g.handedOff.add(-1)
		err := relayRest(s, rest)
		unwatch()
		ends.run()
		l.finish(err)
		h.w.end()
		h.cancel(nil)
	}()
	return true
}

// relayRest runs rest, turning a panic into the stream's error: a stream
// without a handler has no net/http to recover it, and its ends must run.
func relayRest(s *Scope, rest func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.Log().Error("panic relaying a stream", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic relaying the stream: %v", p)
		}
	}()
	return rest()
}

// watchCaller cancels the stream when its caller leaves, as net/http does
// for a handler's request, until unwatch is called. Where the connection
// can be peeked at, one goroutine checks every handed-off stream's each
// callerPollInterval (callerPoll), so that an idle stream needs no
// goroutine of its own for it; a caller that sends anything more is taken
// as leaving then, as the connection serves no other request. Bytes the
// caller sent after its request before the hand-off (net/http read them
// already) are read and dropped by a goroutine of the stream's, which also
// watches connections that cannot be peeked at.
func (g *Gateway) watchCaller(conn net.Conn, buffered *bufio.Reader, h *handoff) (unwatch func()) {
	cancel := h.cancel
	var from io.Reader = conn
	if buffered.Buffered() > 0 {
		from = buffered
	} else if quiet, ok := h1.Peeker(conn); ok {
		h.quiet = quiet
		return g.callers.watch(quiet, cancel)
	}
	g.handedOff.add(1)
	go func() {
		defer g.handedOff.add(-1)
		var b [1]byte
		for {
			if _, err := from.Read(b[:]); err != nil {
				cancel(nil)
				return
			}
		}
	}()
	return func() {}
}

// callerPollInterval is how long a handed-off stream may outlive its
// caller's departure, at most, before the gateway notices and releases the
// agent's connection.
const callerPollInterval = 500 * time.Millisecond

// callerPoll peeks at every handed-off stream's connection once each
// callerPollInterval, from one goroutine, which runs while there are any.
type callerPoll struct {
	mu      sync.Mutex
	conns   map[*polled]struct{}
	running bool
}

type polled struct {
	quiet  func() bool
	cancel context.CancelCauseFunc
}

func (p *callerPoll) watch(quiet func() bool, cancel context.CancelCauseFunc) (unwatch func()) {
	c := &polled{quiet: quiet, cancel: cancel}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[*polled]struct{}{}
	}
	p.conns[c] = struct{}{}
	if !p.running {
		p.running = true
		go p.run()
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.conns, c)
	}
}

func (p *callerPoll) run() {
	t := time.NewTicker(callerPollInterval)
	defer t.Stop()
	var batch []*polled
	for range t.C {
		p.mu.Lock()
		if len(p.conns) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		batch = batch[:0]
		for c := range p.conns {
			batch = append(batch, c)
		}
		p.mu.Unlock()
		for _, c := range batch {
			if !c.quiet() {
				c.cancel(nil)
			}
		}
		clear(batch)
	}
}

// WaitStreams waits, after DrainStreams, until every stream that left its
// handler has ended and finished its bookkeeping, or until ctx ends.
func (g *Gateway) WaitStreams(ctx context.Context) error {
	select {
	case <-g.handedOff.none():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("handed-off streams still open: %w", context.Cause(ctx))
	}
}

// goroutines counts goroutines that may start while others wait for there
// to be none, which a sync.WaitGroup does not allow.
type goroutines struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n is back to 0
}

func (c *goroutines) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.zero = make(chan struct{})
	}
	c.n += d
	if c.n == 0 {
		close(c.zero)
	}
}

// none is closed once no goroutine counted now is left.
func (c *goroutines) none() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		return closed
	}
	return c.zero
}

var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// streamWriter is the bottom of a stream's writers: net/http's response
// until the hand-off, then the caller's connection, on which it writes
// the chunks of the body net/http began.
type streamWriter struct {
	rw   http.ResponseWriter // net/http's; nil once handed off
	conn net.Conn
	// buf holds what was written since the last flush, which sends it as
	// one chunk.
	buf []byte
	err error
	// spare is the header map of a handed-off stream, whose header is
	// gone: changes to it reach no one.
	spare http.Header
}

// take makes w write to conn from now on.
func (w *streamWriter) take(conn net.Conn) {
	w.rw, w.conn = nil, conn
}

func (w *streamWriter) Header() http.Header {
	if w.rw != nil {
		return w.rw.Header()
	}
	if w.spare == nil {
		w.spare = http.Header{}
	}
	return w.spare
}

func (w *streamWriter) WriteHeader(code int) {
	if w.rw != nil {
		w.rw.WriteHeader(code)
	}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if w.rw != nil {
		return w.rw.Write(p)
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(w.buf) == 0 {
		w.buf = append(w.buf, chunkRoom[:]...)
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// chunkRoom is kept before a chunk's data for its size line, so that the
// chunk goes out in one write.
var chunkRoom [18]byte

// FlushError sends what was written as one chunk.
func (w *streamWriter) FlushError() error {
	if w.rw != nil {
		return http.NewResponseController(w.rw).Flush()
	}
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	var line [len(chunkRoom)]byte
	size := append(strconv.AppendInt(line[:0], int64(len(w.buf)-len(chunkRoom)), 16), "\r\n"...)
	start := len(chunkRoom) - len(size)
	copy(w.buf[start:], size)
	w.buf = append(w.buf, "\r\n"...)
	_, w.err = w.conn.Write(w.buf[start:])
	// An idle stream keeps no buffer.
	w.buf = nil
	return w.err
}

// Unwrap lets http.ResponseController reach net/http's response until the
// hand-off; after it, there is none.
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.rw }

// endWriteTimeout bounds writing the end of a handed-off stream to a
// caller that stopped reading.
const endWriteTimeout = 5 * time.Second

// end sends what is left and the body's last chunk, and closes the
// connection.
func (w *streamWriter) end() {
	_ = w.conn.SetWriteDeadline(time.Now().Add(endWriteTimeout))
	if err := w.FlushError(); err == nil {
		_, _ = w.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = w.conn.Close()
}

// cleanups is what the forwarder releases when a stream ends, last added
// first: on its handler, or after a hand-off on the stream's goroutine.
type cleanups struct{ fs []func() }

func (c *cleanups) add(f func()) { c.fs = append(c.fs, f) }

// take moves the cleanups out, leaving none.
func (c *cleanups) take() *cleanups {
	t := &cleanups{fs: c.fs}
	c.fs = nil
	return t
}

func (c *cleanups) run() {
	for i := len(c.fs) - 1; i >= 0; i-- {
		c.fs[i]()
	}
	c.fs = nil
}
