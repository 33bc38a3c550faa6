package proxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// rawCall is one request written byte for byte on a fresh connection: the
// head's lines (each ending in CRLF, without the blank line) and the start
// of a body, which may be shorter than its Content-Length.
type rawCall struct {
	name string
	head string
	body string
	rpc  bool
	v    a2a.Version // the shape the error must take
}

// rawHead is a request head for target on the env's gateway, with the
// given header fields ("Name: value").
func (e *env) rawHead(method, target string, fields ...string) string {
	h := method + " " + target + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(e.url, "http://") + "\r\n"
	for _, f := range fields {
		h += f + "\r\n"
	}
	return h
}

// padded adds field name with a value that makes head exactly size bytes.
func padded(t *testing.T, head, name, prefix string, size int) string {
	t.Helper()
	n := size - len(head) - len(name+": \r\n") - len(prefix)
	if n < 1 {
		t.Fatalf("head of %d bytes cannot be padded to %d", len(head), size)
	}
	return head + name + ": " + prefix + strings.Repeat("p", n) + "\r\n"
}

// send writes c and reads the answer; with checkClose it then reports
// whether the gateway closed the connection after it (an EOF rather than
// the test's deadline).
func (e *env) send(t *testing.T, c rawCall, checkClose bool) (resp *http.Response, body []byte, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, c.head+"\r\n"+c.body); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if !checkClose {
		return resp, body, false
	}
	_, err = br.ReadByte()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return resp, body, false
	}
	if err == nil {
		t.Fatal("bytes after the answer")
	}
	return resp, body, true
}

// wantError checks that the answer to c is want in c's shape.
func (c rawCall) wantError(t *testing.T, resp *http.Response, body []byte, want *a2a.Error, restStatus string) {
	t.Helper()
	switch {
	case c.rpc:
		wantRPCError(t, resp, body, c.v, "null", want)
	case c.v == a2a.V10:
		wantRESTError(t, resp, body, want, restStatus)
	default:
		wantREST03Error(t, resp, body, want)
	}
}

// partialBodies are requests in every binding and version whose body stops
// short of its declared length; none names its version unless it must.
func (e *env) partialBodies() []rawCall {
	const declared = "Content-Length: 500"
	start := `{"jsonrpc"`
	return []rawCall{
		{"rpc 1.0", e.rawHead("POST", "/agents/up/", declared, "A2A-Version: 1.0"), start, true, a2a.V10},
		{"rpc 0.3", e.rawHead("POST", "/agents/up/", declared), start, true, a2a.V03},
		{"rpc with a credential", e.rawHead("POST", "/agents/up/", declared, "Authorization: Bearer abc"), start, true, a2a.V03},
		{"rest 1.0", e.rawHead("POST", "/agents/up/message:send", declared), `{"message"`, false, a2a.V10},
		{"rest 1.0 named", e.rawHead("POST", "/agents/up/message:send", declared, "A2A-Version: 1.0"), `{"message"`, false, a2a.V10},
		{"rest 0.3", e.rawHead("POST", "/agents/up/v1/message:send", declared), `{"message"`, false, a2a.V03},
		{"rest 1.0 chunked", e.rawHead("POST", "/agents/up/message:send", "Transfer-Encoding: chunked"), "a\r\n{\"message\"", false, a2a.V10},
		{"rpc 0.3 chunked", e.rawHead("POST", "/agents/up/", "Transfer-Encoding: chunked"), "1f4\r\n" + start, true, a2a.V03},
	}
}

// TestBodyTimeout: a body that does not arrive within limits.body_timeout
// gets REQUEST_TIMEOUT in the caller's binding and version, and the
// connection is closed at once rather than held for the rest of the body.
func TestBodyTimeout(t *testing.T) {
	up := unreachable(t)
	e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.BodyTimeout = duration.Duration(200 * time.Millisecond) }))
	calls := e.partialBodies()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			resp, body, closed := e.send(t, c, true)
			c.wantError(t, resp, body, a2a.ErrRequestTimeout, "DEADLINE_EXCEEDED")
			if !closed || !resp.Close {
				t.Fatalf("connection left open (Connection: close %v, closed %v)", resp.Close, closed)
			}
		})
	}
	if n := up.count(); n != 0 {
		t.Fatalf("the agent saw %d requests", n)
	}
	e.logs.wantLog(t, "INFO", "request refused", map[string]any{"agent": agentName, "reason": "REQUEST_TIMEOUT"})
	e.wantRefusals(t, "REQUEST_TIMEOUT", len(calls))
}

// TestUnreadBodyClosesTheConnection: requests refused before their body is
// read get their answer at once, then the connection closes; net/http does
// not wait for a body nobody will read.
func TestUnreadBodyClosesTheConnection(t *testing.T) {
	up := unreachable(t)
	// A body timeout no test waits for: the answers must not wait for it.
	e := start(t, up.url, withConfig(func(c *config.Config) {
		c.Limits.BodyTimeout, c.Limits.MaxBodyBytes = duration.Duration(time.Hour), 1024
	}))
	const declared = "Content-Length: 500"
	for _, c := range []struct {
		rawCall
		want *a2a.Error
	}{
		{rawCall{"unknown agent", e.rawHead("POST", "/agents/nope/", declared), "{", false, a2a.V10}, a2a.ErrMethodNotFound},
		{rawCall{"outside /agents/", e.rawHead("POST", "/message:send", declared), "{", false, a2a.V10}, a2a.ErrMethodNotFound},
		{rawCall{"over the body limit", e.rawHead("POST", "/agents/up/message:send", "Content-Length: 5000"), "{", false, a2a.V10}, a2a.ErrPayloadTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body, closed := e.send(t, c.rawCall, true)
			if c.want == a2a.ErrMethodNotFound {
				c.wantError(t, resp, body, c.want, "NOT_FOUND")
			} else {
				c.wantError(t, resp, body, c.want, "RESOURCE_EXHAUSTED")
			}
			if !closed {
				t.Fatal("connection left open")
			}
		})
	}
}

// TestBodyDeadlineEndsWithTheBody: the body's deadline is lifted once the
// body is read, so a stream outlives it, and a kept-alive connection
// serves the next request.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	const bodyTimeout = 100 * time.Millisecond
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		select {
		case <-time.After(5 * bodyTimeout):
		case <-u.done:
			return
		}
		writeFlush(w, event(2))
	})
	e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.BodyTimeout = duration.Duration(bodyTimeout) }))
	for i := range 2 {
		s := e.open(t, streamRequest())
		for n := 1; n <= 2; n++ {
			if ev := s.next(t); !strings.Contains(string(ev.Data), `"n":`+strconv.Itoa(n)) {
				t.Fatalf("stream %d: event %d is %s", i, n, ev.Data)
			}
		}
		s.wantCleanEnd(t)
	}
	if n := up.count(); n != 2 {
		t.Fatalf("the agent saw %d requests, want 2", n)
	}
}

// TestEarlyErrorsTakeTheCallersShape: errors raised before the body is
// read or the operation is known are written in the shape of the version
// the path and header say, without an A2A-Version header too: REST paths
// outside /v1/ are 1.0 paths.
func TestEarlyErrorsTakeTheCallersShape(t *testing.T) {
	const bodyLimit, headerLimit = 1024, 8192
	up := unreachable(t)
	e := start(t, up.url, withConfig(func(c *config.Config) {
		c.Limits.MaxBodyBytes, c.Limits.MaxHeaderBytes = bodyLimit, headerLimit
	}))
	big := `{"message":{"parts":[{"text":"` + strings.Repeat("x", 2*bodyLimit) + `"}]}}`
	length := "Content-Length: " + strconv.Itoa(len(big))
	chunk := strconv.FormatInt(int64(len(big)), 16) + "\r\n" + big + "\r\n0\r\n\r\n"
	over := func(c rawCall) rawCall {
		c.head = padded(t, c.head, "X-Pad", "", headerLimit+1)
		return c
	}
	cases := []struct {
		name       string
		want       *a2a.Error
		restStatus string
		calls      []rawCall
	}{
		{"malformed path", a2a.ErrInvalidRequest, "INVALID_ARGUMENT", []rawCall{
			{"rest 1.0", e.rawHead("GET", "/agents/up/tasks/./x"), "", false, a2a.V10},
			{"rest 1.0 encoded slash", e.rawHead("GET", "/agents/up/tasks/a%2Fb"), "", false, a2a.V10},
			{"rest 0.3", e.rawHead("GET", "/agents/up/v1/tasks/./x"), "", false, a2a.V03},
		}},
		{"body over the limit", a2a.ErrPayloadTooLarge, "RESOURCE_EXHAUSTED", []rawCall{
			{"rest 1.0", e.rawHead("POST", "/agents/up/message:send", length), big, false, a2a.V10},
			{"rest 1.0 chunked", e.rawHead("POST", "/agents/up/message:send", "Transfer-Encoding: chunked"), chunk, false, a2a.V10},
			{"rest 0.3", e.rawHead("POST", "/agents/up/v1/message:send", length), big, false, a2a.V03},
			{"rest 0.3 named", e.rawHead("POST", "/agents/up/message:send", length, "A2A-Version: 0.3"), big, false, a2a.V03},
			{"rpc 1.0", e.rawHead("POST", "/agents/up/", length, "A2A-Version: 1.0"), big, true, a2a.V10},
		}},
		{"header over the limit", a2a.ErrHeadersTooLarge, "RESOURCE_EXHAUSTED", []rawCall{
			over(rawCall{"rest 1.0", e.rawHead("GET", "/agents/up/tasks/t-1"), "", false, a2a.V10}),
			over(rawCall{"rest 0.3", e.rawHead("GET", "/agents/up/v1/tasks/t-1"), "", false, a2a.V03}),
			over(rawCall{"rpc 0.3", e.rawHead("POST", "/agents/up/", length), big, true, a2a.V03}),
			over(rawCall{"rpc 1.0", e.rawHead("POST", "/agents/up/", length, "A2A-Version: 1.0"), big, true, a2a.V10}),
			over(rawCall{"card", e.rawHead("GET", "/agents/up/.well-known/agent-card.json"), "", false, a2a.V10}),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range tc.calls {
				t.Run(c.name, func(t *testing.T) {
					resp, body, _ := e.send(t, c, false)
					c.wantError(t, resp, body, tc.want, tc.restStatus)
				})
			}
			e.wantRefusals(t, tc.want.Reason, len(tc.calls))
		})
	}
	// Outside an agent's mount the REST shape is the only one.
	outside := over(rawCall{"outside /agents/", e.rawHead("GET", "/tasks/t-1"), "", false, a2a.V10})
	resp, body, _ := e.send(t, outside, false)
	outside.wantError(t, resp, body, a2a.ErrHeadersTooLarge, "RESOURCE_EXHAUSTED")
	if n := up.count(); n != 0 {
		t.Fatalf("the agent saw %d refused requests", n)
	}
}

// TestHeaderLimit holds a request header to limits.max_header_bytes, byte
// for byte: at the limit it is forwarded; one byte over it is refused with
// 431, or with the authenticator's 401 when it carries a credential the
// authenticator would refuse for its size.
func TestHeaderLimit(t *testing.T) {
	const limit, credentialLimit = 8192, 1024
	const challenge = `Bearer realm="a2a-gateway", error="invalid_token"`
	up := unreachable(t)
	e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.MaxHeaderBytes = limit }), func(s *setup) {
		s.oversized = func(h http.Header) *a2a.Error {
			if len(h.Get("Authorization")) > credentialLimit || len(h.Get("X-Api-Key")) > credentialLimit {
				return a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", challenge)
			}
			return nil
		}
	})
	get := e.rawHead("GET", "/agents/up/tasks/t-1", "A2A-Version: 1.0")
	rpc := e.rawHead("POST", "/agents/up/", "Content-Length: 2", "A2A-Version: 1.0")
	cases := []struct {
		name string
		head string
		rpc  bool
		want *a2a.Error // nil: forwarded
	}{
		{"padding at the limit", padded(t, get, "X-Pad", "", limit), false, nil},
		{"padding over the limit", padded(t, get, "X-Pad", "", limit+1), false, a2a.ErrHeadersTooLarge},
		{"bearer at the limit", padded(t, get, "Authorization", "Bearer ", limit), false, nil},
		{"bearer over the limit", padded(t, get, "Authorization", "Bearer ", limit+1), false, a2a.ErrUnauthenticated},
		{"api key over the limit", padded(t, get, "X-API-Key", "", limit+1), false, a2a.ErrUnauthenticated},
		{"rpc bearer over the limit", padded(t, rpc, "Authorization", "Bearer ", limit+1), true, a2a.ErrUnauthenticated},
		{"rpc padding over the limit", padded(t, rpc, "X-Pad", "", limit+1), true, a2a.ErrHeadersTooLarge},
		// A credential of an acceptable size: the rest is too large.
		{"small bearer, padding over the limit", padded(t, get+"Authorization: Bearer abc\r\n", "X-Pad", "", limit+1), false, a2a.ErrHeadersTooLarge},
	}
	forwarded := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawCall{name: tc.name, head: tc.head, rpc: tc.rpc, v: a2a.V10}
			if tc.rpc {
				c.body = "{}"
			}
			resp, body, _ := e.send(t, c, false)
			if tc.want == nil {
				forwarded++
				if resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge || resp.StatusCode == http.StatusUnauthorized || up.count() != forwarded {
					t.Fatalf("not forwarded: HTTP %d %s", resp.StatusCode, body)
				}
				return
			}
			c.wantError(t, resp, body, tc.want, map[*a2a.Error]string{a2a.ErrHeadersTooLarge: "RESOURCE_EXHAUSTED", a2a.ErrUnauthenticated: "UNAUTHENTICATED"}[tc.want])
			if got := resp.Header.Get("WWW-Authenticate"); (tc.want == a2a.ErrUnauthenticated) != (got == challenge) {
				t.Fatalf("WWW-Authenticate = %q", got)
			}
		})
	}
	if n := up.count(); n != forwarded {
		t.Fatalf("the agent saw %d requests, want %d", n, forwarded)
	}
}
