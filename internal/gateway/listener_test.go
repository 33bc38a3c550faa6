package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// countingListener counts the connections it has handed out and not yet
// seen closed, and the most there ever were.
type countingListener struct {
	net.Listener
	mu        sync.Mutex
	open, max int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.max = max(l.max, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// serve runs the gateway's own Serve (its server options and listener
// limits) on loopback listeners and returns the public one.
func serve(t *testing.T, env *gwtest.Env) *countingListener {
	t.Helper()
	pub := &countingListener{Listener: listen(t)}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- env.GW.Serve(ctx, pub, listen(t)) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return pub
}

// exchange writes raw on a fresh connection and reads one answer.
func exchange(t *testing.T, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, b
}

// raiseFileLimit lifts the soft limit on descriptors towards want and
// returns what it is now.
func raiseFileLimit(t *testing.T, want uint64) uint64 {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < want {
		rl.Cur = min(want, rl.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Fatal(err)
		}
	}
	return rl.Cur
}

func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// slowCaller is one kind of connection that never finishes its request.
type slowCaller struct {
	name string
	raw  string
	// status and marker are what the answer must carry; status 0 means no
	// answer of the gateway's, only the connection closed.
	status int
	marker string
}

// TestSlowConnectionsStayBounded opens many connections that stop
// mid-header or mid-body. Each partial body gets REQUEST_TIMEOUT in its
// caller's shape and its connection closed, each partial header a closed
// connection; the gateway never holds more than limits.max_connections,
// and its goroutines and descriptors return to where they were.
func TestSlowConnectionsStayBounded(t *testing.T) {
	const maxConns = 200
	n := 1000
	// Each connection costs a descriptor on each side, plus the gateway's own.
	if have := raiseFileLimit(t, uint64(2*n+512)); have < uint64(2*n+512) {
		n = (int(have) - 512) / 2 // a low hard limit: fewer, still over max_connections
		if n <= maxConns {
			t.Skipf("RLIMIT_NOFILE %d leaves room for %d connections", have, n)
		}
	}
	env := gwtest.Start(t, func(c *config.Config) {
		c.Limits.HeaderTimeout = duration.Duration(time.Second)
		c.Limits.BodyTimeout = duration.Duration(time.Second)
		c.Limits.IdleTimeout = duration.Duration(time.Second)
		c.Limits.MaxStreams, c.Limits.MaxConnections = maxConns, maxConns
	})
	pub := serve(t, env)
	addr := pub.Addr().String()
	head := func(target string, fields ...string) string {
		return "POST /agents/demo" + target + " HTTP/1.1\r\nHost: " + addr + "\r\n" + strings.Join(fields, "\r\n") + "\r\n\r\n"
	}
	token := "Authorization: Bearer " + env.Token(t, "acme", "alice")
	callers := []slowCaller{
		{"partial header", "POST /agents/demo/ HTTP/1.1\r\nHost: " + addr + "\r\nContent-Le", 0, ""},
		{"rpc 1.0", head("/", "Content-Length: 500", "A2A-Version: 1.0", token) + `{"jsonrpc"`, http.StatusOK, `"reason":"REQUEST_TIMEOUT"`},
		{"rpc 0.3 anonymous", head("/", "Content-Length: 500") + `{"jsonrpc"`, http.StatusOK, `"code":-32062`},
		{"rest 1.0", head("/message:send", "Content-Length: 500", token) + `{"message"`, http.StatusRequestTimeout, `"reason":"REQUEST_TIMEOUT"`},
		{"rest 0.3 chunked", head("/v1/message:send", "Transfer-Encoding: chunked") + "1f4\r\n{", http.StatusRequestTimeout, `"code":-32062`},
	}

	// The baseline: the gateway serving, one request answered and closed.
	if resp, _ := exchange(t, addr, "GET /agents/demo/.well-known/agent-card.json HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); resp.StatusCode != http.StatusOK {
		t.Fatalf("card: HTTP %d", resp.StatusCode)
	}
	goroutines, files := runtime.NumGoroutine(), openFiles(t)

	deadline := time.Now().Add(4 * testTimeout)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		c := callers[i%len(callers)]
		wg.Go(func() {
			if err := c.run(addr, deadline); err != nil {
				errs <- errors.New(c.name + ": " + err.Error())
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 5 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d connections did not end as they should", failed, n)
	}
	if peak := pub.peak(); peak > maxConns || peak == 0 {
		t.Fatalf("%d connections open at once, limit %d", peak, maxConns)
	}
	eventually(t, "goroutines and descriptors are back to the baseline", func() bool {
		return runtime.NumGoroutine() <= goroutines+10 && openFiles(t) <= files+5
	})
	t.Logf("%d connections, at most %d open at once; goroutines %d -> %d, descriptors %d -> %d",
		n, pub.peak(), goroutines, runtime.NumGoroutine(), files, openFiles(t))
}

// run sends c's partial request and checks how the gateway ends it.
func (c slowCaller) run(addr string, deadline time.Time) error {
	conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := io.WriteString(conn, c.raw); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	if c.status == 0 {
		// net/http's own plain-text 400, if anything: a header not read in
		// time is no request the gateway could answer.
		if b, err := io.ReadAll(br); err != nil || (len(b) != 0 && !strings.HasPrefix(string(b), "HTTP/1.1 400 Bad Request\r\n")) {
			return errors.New("want the connection closed, got " + describe(b, err))
		}
		return nil
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != c.status || !resp.Close || !strings.Contains(string(b), c.marker) {
		return errors.New("want HTTP " + http.StatusText(c.status) + " with " + c.marker + " and Connection: close, got " + resp.Status + " " + string(b))
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		return errors.New("want the connection closed after the answer, got " + describe(rest, err))
	}
	return nil
}

func describe(b []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// TestHeaderLimitOnTheListener runs the gateway's own server: a header over
// limits.max_header_bytes gets 431 in the caller's shape, or 401 with a
// WWW-Authenticate challenge when the credential is what makes it too
// large; so does a token between auth.max_token_bytes and the header limit.
// Beyond twice the limit net/http answers alone, in plain text.
func TestHeaderLimitOnTheListener(t *testing.T) {
	const limit = 16 << 10
	probe := gwtest.Start(t)
	tokenBytes := len(probe.Token(t, "acme", "alice"))
	env := gwtest.Start(t, func(c *config.Config) {
		c.Limits.MaxHeaderBytes = limit
		c.Auth.Issuers[0].MaxTokenBytes = tokenBytes
	})
	addr := serve(t, env).Addr().String()
	token := env.Token(t, "acme", "alice")
	if len(token) != tokenBytes {
		t.Fatalf("tokens of the same claims are %d and %d bytes", len(token), tokenBytes)
	}
	longer := env.Token(t, "acme", "alice", append(gwtest.AllScopes, "x")...)

	get03 := `{"jsonrpc":"2.0","id":"h-1","method":"tasks/get","params":{"id":"t-nope"}}`
	get10 := `{"jsonrpc":"2.0","id":"h-1","method":"GetTask","params":{"id":"t-nope"}}`
	shapes := []struct {
		name, method, target, body string
		rpc                        bool
		v                          a2a.Version
	}{
		{"rpc 1.0", "POST", "/agents/demo/", get10, true, a2a.V10},
		{"rpc 0.3", "POST", "/agents/demo/", get03, true, a2a.V03},
		{"rest 1.0", "GET", "/agents/demo/tasks/t-nope", "", false, a2a.V10},
		{"rest 0.3", "GET", "/agents/demo/v1/tasks/t-nope", "", false, a2a.V03},
	}
	bearer := func(tok string) string { return "Authorization: Bearer " + tok }
	cases := []struct {
		name string
		// credential is the Authorization field; pad grows the head to
		// exactly size bytes with padFor (a credential or not).
		credential string
		padField   string
		size       int
		want       *a2a.Error // nil: authenticated, the agent says TaskNotFound
	}{
		{"token at max_token_bytes", bearer(token), "", 0, nil},
		{"token over max_token_bytes", bearer(longer), "", 0, a2a.ErrUnauthenticated},
		{"token between max_token_bytes and the header limit", bearer(token + strings.Repeat("a", limit/2)), "", 0, a2a.ErrUnauthenticated},
		{"header at the limit", bearer(token), "X-Pad", limit, nil},
		{"header over the limit", bearer(token), "X-Pad", limit + 1, a2a.ErrHeadersTooLarge},
		{"header near twice the limit", bearer(token), "X-Pad", 2 * limit, a2a.ErrHeadersTooLarge},
		{"token over the header limit", "", "Authorization", limit + 1, a2a.ErrUnauthenticated},
		{"api key over the header limit", "", "X-API-Key", limit + 1, a2a.ErrUnauthenticated},
	}
	for _, tc := range cases {
		for _, sh := range shapes {
			t.Run(tc.name+"/"+sh.name, func(t *testing.T) {
				h := sh.method + " " + sh.target + " HTTP/1.1\r\nHost: " + addr + "\r\n"
				if sh.v == a2a.V10 && sh.rpc {
					h += "A2A-Version: 1.0\r\n"
				}
				if sh.body != "" {
					h += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(sh.body)) + "\r\n"
				}
				if tc.credential != "" {
					h += tc.credential + "\r\n"
				}
				if tc.padField != "" {
					prefix := map[string]string{"Authorization": "Bearer "}[tc.padField]
					n := tc.size - len(h) - len(tc.padField+": \r\n") - len(prefix)
					h += tc.padField + ": " + prefix + strings.Repeat("p", n) + "\r\n"
				}
				resp, body := exchange(t, addr, h+"\r\n"+sh.body)
				want := tc.want
				if want == nil {
					want = a2a.ErrTaskNotFound
				}
				wantShape(t, resp, body, sh.rpc, sh.v, want)
				challenge := resp.Header.Get("WWW-Authenticate")
				if (want == a2a.ErrUnauthenticated) != strings.Contains(challenge, `error="invalid_token"`) {
					t.Fatalf("WWW-Authenticate %q for %s", challenge, want.Reason)
				}
			})
		}
	}
	// Past what the server reads at all, net/http refuses on its own.
	h := "GET /agents/demo/tasks/t-nope HTTP/1.1\r\nHost: " + addr + "\r\nX-Pad: " + strings.Repeat("p", 2*limit+8192) + "\r\n\r\n"
	resp, body := exchange(t, addr, h)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("beyond twice the limit: HTTP %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// wantShape checks that body is want in the shape of the binding and
// version: JSON-RPC (HTTP 200, 401 for authentication), google.rpc.Status
// for 1.0 REST, {"code","message"} for 0.3 REST.
func wantShape(t *testing.T, resp *http.Response, body []byte, rpc bool, v a2a.Version, want *a2a.Error) {
	t.Helper()
	var got struct {
		Code  int `json:"code"`
		Error struct {
			Code    int              `json:"code"`
			Data    []map[string]any `json:"data"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &got)
	status, code, reason := want.HTTPStatus, got.Error.Code, ""
	switch {
	case rpc:
		if status != http.StatusUnauthorized {
			status = http.StatusOK
		}
		if v == a2a.V10 && len(got.Error.Data) > 0 {
			reason, _ = got.Error.Data[0]["reason"].(string)
		}
	case v == a2a.V10:
		if code == want.HTTPStatus {
			code = want.Code // google.rpc.Status carries the HTTP status
		}
		if len(got.Error.Details) > 0 {
			reason, _ = got.Error.Details[0]["reason"].(string)
		}
	default:
		code = got.Code
	}
	if resp.StatusCode != status || code != want.Code || (v == a2a.V10 && reason != want.Reason) {
		t.Fatalf("HTTP %d %s, want %d with %s in the %s shape", resp.StatusCode, body, status, want.Reason, v)
	}
}
