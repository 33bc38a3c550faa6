package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawAgent is a loopback HTTP/1.1 server scripted per connection: serve
// gets the connection's number (from 1) and the connection, read through
// br, and answers as the test needs.
type rawAgent struct {
	url   *url.URL
	mu    sync.Mutex
	conns int
}

func newRawAgent(t testing.TB, serve func(n int, c net.Conn, br *bufio.Reader)) *rawAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &rawAgent{url: &url.URL{Scheme: "http", Host: ln.Addr().String()}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns++
			n := a.conns
			a.mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(n, c, bufio.NewReader(c))
			})
		}
	})
	return a
}

func (a *rawAgent) connCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns
}

// answerAll answers every request of the connection with body, adding
// extra header lines, until the client closes it.
func answerAll(extra string) func(int, net.Conn, *bufio.Reader) {
	return func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"+extra+"\r\nok"); err != nil {
				return
			}
		}
	}
}

func testPool(a *rawAgent) *Pool {
	return newPool(a.url, &net.Dialer{Timeout: testTimeout}, 1024)
}

// newPool is a pool with the limits the gateway gives its agent pools.
func newPool(u *url.URL, d *net.Dialer, readBuffer int) *Pool {
	return NewPool(u, Options{Dial: d.DialContext, Handshake: testTimeout, ReadBuffer: readBuffer, MaxIdle: 512, MaxHeadBytes: 10 << 20})
}

const testTimeout = 30 * time.Second

func post(t *testing.T, ctx context.Context, p *Pool, method string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, p.url(), bytes.NewReader([]byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	return p.RoundTrip(req)
}

func (p *Pool) url() string { return "http://" + p.addr + "/" }

// readAll reads an answer to its end and checks it.
func readAll(t *testing.T, resp *http.Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "ok" {
		t.Fatalf("body %q, %v", b, err)
	}
}

func TestPoolReusesConnection(t *testing.T) {
	a := newRawAgent(t, answerAll(""))
	p := testPool(a)
	defer p.CloseIdle()
	for range 3 {
		resp, err := post(t, t.Context(), p, http.MethodPost)
		readAll(t, resp, err)
	}
	if n := a.connCount(); n != 1 {
		t.Fatalf("%d connections for 3 keep-alive exchanges, want 1", n)
	}
}

func TestPoolKeepAliveRefused(t *testing.T) {
	a := newRawAgent(t, answerAll("Connection: close\r\n"))
	p := testPool(a)
	for range 2 {
		resp, err := post(t, t.Context(), p, http.MethodPost)
		readAll(t, resp, err)
	}
	if n := a.connCount(); n != 2 {
		t.Fatalf("%d connections, want 2: an answer refusing keep-alive ends its connection", n)
	}
	if len(p.idle) != 0 {
		t.Fatalf("%d idle connections pooled", len(p.idle))
	}
}

func TestPoolBodyNotReadToTheEnd(t *testing.T) {
	a := newRawAgent(t, answerAll(""))
	p := testPool(a)
	defer p.CloseIdle()
	resp, err := post(t, t.Context(), p, http.MethodPost)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // unread: the connection cannot be reused
	resp, err = post(t, t.Context(), p, http.MethodPost)
	readAll(t, resp, err)
	if n := a.connCount(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// The agent closes an idle connection: the next request goes on a new one.
func TestPoolStalePooledConnection(t *testing.T) {
	closed := make(chan struct{})
	a := newRawAgent(t, func(n int, c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if n == 1 {
			c.Close()
			close(closed)
			return
		}
		answerAll("")(n, c, br)
	})
	p := testPool(a)
	defer p.CloseIdle()
	resp, err := post(t, t.Context(), p, http.MethodPost)
	readAll(t, resp, err)
	<-closed
	// The close may not have reached this side yet when the pooled
	// connection is checked; either way the request must succeed.
	eventuallyDead(t, p)
	resp, err = post(t, t.Context(), p, http.MethodPost)
	readAll(t, resp, err)
	if n := a.connCount(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// eventuallyDead waits until the agent's close of the only pooled
// connection has arrived, as a read of its end.
func eventuallyDead(t *testing.T, p *Pool) {
	t.Helper()
	p.mu.Lock()
	c := p.idle[0]
	p.mu.Unlock()
	if n, err := c.Conn.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read %d bytes, %v, want the agent's close", n, err)
	}
}

// The agent reads a request on a reused connection and drops it without an
// answer: it may have acted on it, so only a replayable request is sent
// again.
func TestPoolRetryOnlyIdempotent(t *testing.T) {
	for _, tc := range []struct {
		method string
		retry  bool
	}{{http.MethodPost, false}, {http.MethodGet, true}} {
		t.Run(tc.method, func(t *testing.T) {
			a := newRawAgent(t, func(n int, c net.Conn, br *bufio.Reader) {
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if n == 1 && i == 1 {
						return // the second request on the first connection: dropped
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
						return
					}
				}
			})
			p := testPool(a)
			defer p.CloseIdle()
			resp, err := post(t, t.Context(), p, tc.method)
			readAll(t, resp, err)
			resp, err = post(t, t.Context(), p, tc.method)
			if !tc.retry {
				if err == nil {
					resp.Body.Close()
					t.Fatal("a request the agent may have received was sent again")
				}
				if dialFailed(err) {
					t.Fatalf("a request that was written reads as never sent: %v", err)
				}
				return
			}
			readAll(t, resp, err)
			if n := a.connCount(); n != 2 {
				t.Fatalf("%d connections, want 2", n)
			}
		})
	}
}

// sseAgent starts a stream with one event, then stays silent.
func sseAgent(t *testing.T) *rawAgent {
	return newRawAgent(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"9\r\ndata: 1\n\n\r\n")
		_, _ = io.Copy(io.Discard, br) // until the client closes
	})
}

// openStream opens a stream and reads its first event.
func openStream(t *testing.T, ctx context.Context, p *Pool) io.ReadCloser {
	t.Helper()
	resp, err := post(t, ctx, p, http.MethodPost)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 9)
	if _, err := io.ReadFull(resp.Body, b); err != nil || string(b) != "data: 1\n\n" {
		t.Fatalf("first event %q, %v", b, err)
	}
	return resp.Body
}

func TestPoolCancelMidStream(t *testing.T) {
	p := testPool(sseAgent(t))
	ctx, cancel := context.WithCancel(t.Context())
	body := openStream(t, ctx, p)
	defer body.Close()
	cancel()
	_, err := body.Read(make([]byte, 16))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
	if len(p.idle) != 0 {
		t.Fatal("a cancelled stream's connection was pooled")
	}
}

// The stream idle timer closes the body while its reader is blocked.
func TestPoolCloseUnblocksRead(t *testing.T) {
	p := testPool(sseAgent(t))
	body := openStream(t, t.Context(), p)
	done := make(chan error, 1)
	go func() {
		_, err := body.Read(make([]byte, 16))
		done <- err
	}()
	body.Close()
	if err := <-done; err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("read of a closed stream: %v, want an error other than EOF", err)
	}
}

// A failed dial is a *net.OpError with Op "dial": the request never left,
// which callers read to answer or retry safely.
func TestPoolDialFailureNotSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newPool(&url.URL{Scheme: "http", Host: addr}, &net.Dialer{}, 1024)
	_, err = post(t, t.Context(), p, http.MethodPost)
	if err == nil {
		t.Fatal("a closed port answered")
	}
	if !dialFailed(err) {
		t.Fatalf("dial failure %v does not read as one", err)
	}
}

func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func TestPoolRefusesInvalidHeader(t *testing.T) {
	a := newRawAgent(t, answerAll(""))
	p := testPool(a)
	defer p.CloseIdle()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url(), bytes.NewReader([]byte(`{}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer x\n")
	if resp, err := p.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatal("a header value with a line break was sent")
	}
	if n := a.connCount(); n != 0 {
		t.Fatalf("%d connections made for a refused request", n)
	}
}

func TestPoolAddr(t *testing.T) {
	for in, want := range map[string]string{
		"http://a.example":        "a.example:80",
		"https://a.example":       "a.example:443",
		"http://[::1]:9001/x":     "[::1]:9001",
		"https://a.example:8443/": "a.example:8443",
	} {
		u, _ := url.Parse(in)
		if got := newPool(u, &net.Dialer{}, 1024).addr; got != want {
			t.Errorf("%s: dials %s, want %s", in, got, want)
		}
	}
	if u, _ := url.Parse("https://a.example"); newPool(u, &net.Dialer{}, 1024).tls == nil {
		t.Error("https origin without TLS")
	}
}

// An answer whose headers never end is refused once MaxHeadBytes are read,
// and its connection closed, rather than read on without bound.
func TestPoolBoundsAnswerHeaders(t *testing.T) {
	a := newRawAgent(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\n"); err != nil {
			return
		}
		line := []byte("X-Filler: " + strings.Repeat("y", 100) + "\r\n")
		for {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	})
	d := &net.Dialer{Timeout: testTimeout}
	p := NewPool(a.url, Options{Dial: d.DialContext, Handshake: testTimeout, ReadBuffer: 1024, MaxIdle: 4, MaxHeadBytes: 4096})
	defer p.CloseIdle()
	resp, err := post(t, t.Context(), p, http.MethodPost)
	if err == nil {
		resp.Body.Close()
		t.Fatal("an answer with endless headers was read")
	}
	if !strings.Contains(err.Error(), "answer headers exceed 4096 bytes") {
		t.Fatalf("error %v, want the header limit", err)
	}
}
