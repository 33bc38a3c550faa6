// Package h1 is a pool of HTTP/1.1 client connections to one origin whose
// exchanges run on the caller's goroutine. The gateway reaches its agents
// through it, and delivers webhooks through it.
package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Pool is one origin's pool of HTTP/1.1 connections, and the exchange on
// them. Each exchange runs on the caller's goroutine: net/http's Transport
// runs a read and a write goroutine per connection and hands every request
// and answer across them, which costs wake-ups and context switches per
// request and two goroutine stacks per open stream. The request is written
// by (*http.Request).Write and the answer read by http.ReadResponse, the
// bytes and parser Transport uses. A request is written whole before its
// answer is read, so an Expect: 100-continue is not waited for. The origin
// is dialed directly, never through an HTTP proxy, which would see tenant
// data; over TLS, HTTP/1.1 is the only protocol offered.
type Pool struct {
	addr string      // host:port dialed
	tls  *tls.Config // nil for http origins
	o    Options
	// readers are the connections' read buffers, held only during an
	// exchange, so that an idle pooled connection holds none.
	readers sync.Pool

	mu   sync.Mutex
	idle []*conn // the most recently used last
}

// Options shape a Pool.
type Options struct {
	// Dial connects to host:port; it bounds the TCP handshake.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Handshake bounds the TLS handshake.
	Handshake time.Duration
	// ReadBuffer is the size of a connection's read buffer.
	ReadBuffer int
	// MaxIdle bounds the idle connections kept.
	MaxIdle int
	// MaxHeadBytes bounds what is read before an answer's headers end, so
	// a peer cannot grow them without end.
	MaxHeadBytes int64
}

const (
	// idleConnTimeout closes a pooled connection unused that long.
	idleConnTimeout = 90 * time.Second
	// max1xxAnswers bounds the informational answers skipped before the
	// final one, as Transport does.
	max1xxAnswers = 5
)

// writers buffer requests while they are written; a request is written in
// one go, so the buffer is not kept with its connection.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4096) }}

// NewPool returns the pool of u's origin (scheme, host and port).
func NewPool(u *url.URL, o Options) *Pool {
	p := &Pool{o: o}
	p.readers.New = func() any { return bufio.NewReaderSize(nil, o.ReadBuffer) }
	port := u.Port()
	switch {
	case u.Scheme == "https":
		p.tls = &tls.Config{ServerName: u.Hostname()}
		if port == "" {
			port = "443"
		}
	case port == "":
		port = "80"
	}
	p.addr = net.JoinHostPort(u.Hostname(), port)
	return p
}

// conn is one connection to the origin. Its counters are of the current
// exchange, written and read on the exchange's goroutine only.
type conn struct {
	net.Conn
	pool          *Pool
	br            *bufio.Reader // nil while idle
	read, written int64
	// headLimit, while positive, is how many bytes may be read before the
	// answer's head is complete.
	headLimit int64
	// expiry closes the connection once it has been idle for
	// idleConnTimeout; it runs only while the connection is pooled.
	expiry *time.Timer
}

func (c *conn) Read(p []byte) (int, error) {
	if c.headLimit > 0 && c.read >= c.headLimit {
		return 0, fmt.Errorf("answer headers exceed %d bytes", c.pool.o.MaxHeadBytes)
	}
	n, err := c.Conn.Read(p)
	c.read += int64(n)
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written += int64(n)
	return n, err
}

// RoundTrip sends req on a pooled connection, or a new one, and returns
// the answer; its body hands the connection back to the pool once
// read to the end, when the answer allows keep-alive. Closing the body
// earlier, or req's context ending, closes the connection, which also
// unblocks a read waiting on it.
func (p *Pool) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := validHeader(req.Header); err != nil {
		closeBody(req)
		return nil, err
	}
	for {
		c, reused, err := p.get(ctx)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.exchange(ctx, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		// A pooled connection the peer closed while it was idle fails the
		// next exchange. Another connection may try again only when the
		// peer cannot have acted on the request: none of it was written,
		// or it is idempotent and no answer began.
		if !reused || !(c.written == 0 || (c.read == 0 && isReplayable(req))) {
			return nil, err
		}
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// validHeader refuses what Transport refuses to send: a header field the
// peer could read differently from the gateway, such as a value with a
// line break (a credential read from a file with its newline).
func validHeader(h http.Header) error {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// rewind is req with a fresh copy of its body, for another attempt.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("connection lost and the request body cannot be sent again")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

// isReplayable is Transport's rule: a request the peer may receive twice.
func isReplayable(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := r.Header["Idempotency-Key"]
	_, b := r.Header["X-Idempotency-Key"]
	return a || b
}

// closeBody closes a request body RoundTrip will not send, as an
// http.RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// exchange writes req and reads the head of its answer. On error the
// connection is closed.
func (c *conn) exchange(ctx context.Context, req *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { c.Conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.Conn.Close()
		return nil, err
	}
	c.read, c.written = 0, 0
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(c)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	writers.Put(bw)
	if err != nil {
		return fail(err)
	}
	if c.br == nil {
		c.br = c.pool.readers.Get().(*bufio.Reader)
		c.br.Reset(c)
	}
	var resp *http.Response
	c.headLimit = c.read + c.pool.o.MaxHeadBytes
	for n := 0; ; n++ {
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return fail(err)
		}
		// Informational answers (100 Continue, 103 Early Hints) precede
		// the answer; 101 would switch protocols and is the answer.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == max1xxAnswers {
			return fail(errors.New("too many 1xx informational answers"))
		}
	}
	c.headLimit = 0
	if tc, ok := c.Conn.(*tls.Conn); ok {
		st := tc.ConnectionState()
		resp.TLS = &st
	}
	b := &body{
		body:  resp.Body,
		c:     c,
		ctx:   ctx,
		stop:  stop,
		reuse: !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols,
	}
	if resp.Body == http.NoBody {
		b.done(true)
	} else {
		resp.Body = b
	}
	return resp, nil
}

// body is an answer's body. Close may come from another goroutine while
// Read waits (an idle timer, draining): it closes the connection, which
// ends the read, and never touches the reader itself.
type body struct {
	body  io.ReadCloser
	c     *conn
	ctx   context.Context
	stop  func() bool
	reuse bool
	ended atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.done(true)
	} else if err != nil && b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	return n, err
}

func (b *body) Close() error {
	b.done(false)
	return nil
}

// done ends the exchange once: the connection goes back to the pool if the
// body was read to its end and nothing follows it, else it is closed.
func (b *body) done(atEOF bool) {
	if !b.ended.CompareAndSwap(false, true) {
		return
	}
	// stop fails once the context's end has begun closing the connection.
	if b.stop() && atEOF && b.reuse && b.c.br.Buffered() == 0 {
		b.c.pool.put(b.c)
		return
	}
	b.c.Conn.Close()
}

// get takes the most recently used idle connection that is still open, or
// dials a new one; reused says which.
func (p *Pool) get(ctx context.Context) (c *conn, reused bool, err error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		c = p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		c.expiry.Stop()
		p.mu.Unlock()
		if quiet, ok := Peeker(c.Conn); !ok || quiet() {
			return c, true, nil
		}
		c.Conn.Close()
	}
	c, err = p.dial(ctx)
	return c, false, err
}

// dial connects to the origin with Options.Dial, then shakes hands within
// Options.Handshake over TLS. The errors of Dial are returned as they are,
// so that a caller can tell a request that never left (a *net.OpError
// with Op "dial" from a net.Dialer).
func (p *Pool) dial(ctx context.Context) (*conn, error) {
	nc, err := p.o.Dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.tls != nil {
		tc := tls.Client(nc, p.tls)
		hctx, cancel := context.WithTimeout(ctx, p.o.Handshake)
		err = tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", p.addr, err)
		}
		nc = tc
	}
	return &conn{Conn: nc, pool: p}, nil
}

// put pools a connection whose exchange ended cleanly, without its read
// buffer (empty, as done checked).
func (p *Pool) put(c *conn) {
	p.readers.Put(c.br)
	c.br = nil
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.o.MaxIdle {
		c.Conn.Close()
		return
	}
	p.idle = append(p.idle, c)
	if c.expiry == nil {
		c.expiry = time.AfterFunc(idleConnTimeout, func() { p.expire(c) })
	} else {
		c.expiry.Reset(idleConnTimeout)
	}
}

// expire closes c if it is still idle.
func (p *Pool) expire(c *conn) {
	p.mu.Lock()
	i := slices.Index(p.idle, c)
	if i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
	}
	p.mu.Unlock()
	if i >= 0 {
		c.Conn.Close()
	}
}

// CloseIdle closes every idle connection; exchanges under way finish.
func (p *Pool) CloseIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	for _, c := range idle {
		c.expiry.Stop()
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.Conn.Close()
	}
}
