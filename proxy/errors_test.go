package proxy_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// errorInfoType is the @type of the ErrorInfo detail every 1.0 error carries.
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// wantRPCError checks a JSON-RPC error response: HTTP 200 (401 for
// authentication), the request's id, the code, and in 1.0 the ErrorInfo
// list in data.
func wantRPCError(t *testing.T, resp *http.Response, body []byte, v a2a.Version, id string, want *a2a.Error) {
	t.Helper()
	status := http.StatusOK
	if want.HTTPStatus == http.StatusUnauthorized {
		status = http.StatusUnauthorized
	}
	if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("HTTP %d %q, want %d application/json: %s", resp.StatusCode, resp.Header.Get("Content-Type"), status, body)
	}
	wantRPCErrorBody(t, body, v, id, want)
}

// wantRPCStreamError checks the answer to a refused JSON-RPC streaming
// method, as the SDK servers write it and their clients read it: HTTP 200,
// an event stream of exactly one event whose data is the JSON-RPC error
// response, then the end. A 401 stays a plain HTTP 401 (see wantRPCError).
func wantRPCStreamError(t *testing.T, resp *http.Response, body []byte, v a2a.Version, id string, want *a2a.Error) {
	t.Helper()
	if want.HTTPStatus == http.StatusUnauthorized {
		wantRPCError(t, resp, body, v, id, want)
		return
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		t.Fatalf("HTTP %d %q, want 200 %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), a2a.SSEContentType, body)
	}
	events := sdkEvents(t, body)
	if len(events) != 1 {
		t.Fatalf("%d events, want one error event: %q", len(events), body)
	}
	wantRPCErrorBody(t, events[0], v, id, want)
}

// sdkEvents reads an event stream as the a2a-go client does: the payload
// of every "data: " line, whatever the event's type; and checks that the
// gateway's own reader sees the same events.
func sdkEvents(t *testing.T, body []byte) [][]byte {
	t.Helper()
	var sdk [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			sdk = append(sdk, data)
		}
	}
	rd := a2a.NewSSEReader(bytes.NewReader(body), len(body)+1)
	for i := 0; ; i++ {
		ev, err := rd.Next()
		if err == io.EOF {
			if i != len(sdk) {
				t.Fatalf("%d events, an SDK client reads %d: %q", i, len(sdk), body)
			}
			return sdk
		}
		if err != nil || i >= len(sdk) || !bytes.Equal(ev.Data, sdk[i]) {
			t.Fatalf("event %d: %v, an SDK client reads %q: %q", i, err, sdk, body)
		}
	}
}

// wantRPCErrorBody checks a JSON-RPC error response body.
func wantRPCErrorBody(t *testing.T, body []byte, v a2a.Version, id string, want *a2a.Error) {
	t.Helper()
	var got struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	if got.JSONRPC != "2.0" || got.Error == nil || got.Result != nil {
		t.Fatalf("not a JSON-RPC error response: %s", body)
	}
	if got.Error.Code != want.Code || got.Error.Message == "" {
		t.Fatalf("error code %d %q, want %d: %s", got.Error.Code, got.Error.Message, want.Code, body)
	}
	if !jsonEqual(got.ID, []byte(id)) {
		t.Fatalf("id %s, want %s: %s", got.ID, id, body)
	}
	if v == a2a.V10 {
		var details []map[string]any
		if err := json.Unmarshal(got.Error.Data, &details); err != nil || len(details) == 0 {
			t.Fatalf("1.0 error without an ErrorInfo list in data: %s", body)
		}
		if details[0]["@type"] != errorInfoType || details[0]["reason"] != want.Reason || details[0]["domain"] != a2a.ErrorDomain {
			t.Fatalf("data[0] = %v, want ErrorInfo %s: %s", details[0], want.Reason, body)
		}
	} else if bytes.HasPrefix(bytes.TrimSpace(got.Error.Data), []byte("[")) {
		t.Fatalf("0.x error with a 1.0 ErrorInfo list: %s", body)
	}
	if ev, err := a2a.ParseRPCEvent(body); err != nil || ev.Kind != a2a.EventError || ev.ErrorCode != want.Code {
		t.Fatalf("package a2a reads %+v, %v", ev, err)
	}
}

// wantRESTError checks a google.rpc.Status error of the HTTP+JSON binding.
func wantRESTError(t *testing.T, resp *http.Response, body []byte, want *a2a.Error, status string) {
	t.Helper()
	if resp.StatusCode != want.HTTPStatus || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("HTTP %d %q, want %d application/json: %s", resp.StatusCode, resp.Header.Get("Content-Type"), want.HTTPStatus, body)
	}
	wantRESTErrorBody(t, body, want, status)
}

// wantRESTErrorBody checks a google.rpc.Status error body.
func wantRESTErrorBody(t *testing.T, body []byte, want *a2a.Error, status string) {
	t.Helper()
	var got struct {
		Error *struct {
			Code    int              `json:"code"`
			Status  string           `json:"status"`
			Message string           `json:"message"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.Error == nil {
		t.Fatalf("not a REST error: %v: %s", err, body)
	}
	g := got.Error
	if g.Code != want.HTTPStatus || g.Status != status || g.Message == "" || len(g.Details) == 0 {
		t.Fatalf("error %+v, want code %d status %s: %s", g, want.HTTPStatus, status, body)
	}
	if g.Details[0]["@type"] != errorInfoType || g.Details[0]["reason"] != want.Reason || g.Details[0]["domain"] != a2a.ErrorDomain {
		t.Fatalf("details[0] = %v, want ErrorInfo %s", g.Details[0], want.Reason)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// call is one request in one binding and version, and how its error must look.
type call struct {
	name string
	rq   request
	rpc  bool
	// stream marks a streaming method, whose JSON-RPC errors are events.
	stream bool
	v      a2a.Version // the shape of a JSON-RPC error
	id     string      // the id a JSON-RPC error must carry, as JSON
}

// check sends c, checks the error it gets and returns the answer.
func (c call) check(t *testing.T, e *env, want *a2a.Error, restStatus string) (*http.Response, []byte) {
	t.Helper()
	resp, body := e.do(t, c.rq)
	switch {
	case c.rpc && c.stream:
		wantRPCStreamError(t, resp, body, c.v, c.id, want)
	case c.rpc:
		wantRPCError(t, resp, body, c.v, c.id, want)
	case strings.Contains(c.rq.path, "/v1/") && c.rq.header.Get(a2a.VersionHeader) == "":
		wantREST03Error(t, resp, body, want)
	default:
		wantRESTError(t, resp, body, want, restStatus)
	}
	return resp, body
}

// wantREST03Error checks a 0.3 HTTP+JSON error: the HTTP status and the
// {"code", "message"} object the 0.3 SDKs read.
func wantREST03Error(t *testing.T, resp *http.Response, body []byte, want *a2a.Error) {
	t.Helper()
	if resp.StatusCode != want.HTTPStatus {
		t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, body, want.HTTPStatus)
	}
	wantREST03ErrorBody(t, body, want)
}

func wantREST03ErrorBody(t *testing.T, body []byte, want *a2a.Error) {
	t.Helper()
	var got struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &got) != nil || got.Code != want.Code || got.Message == "" {
		t.Fatalf("error %s, want code %d", body, want.Code)
	}
}

func rpcCall(name string, v a2a.Version, header http.Header, id string, body []byte) call {
	return call{name: name, rq: request{method: http.MethodPost, path: "/", header: header, body: body}, rpc: true, v: v, id: id}
}

// rpcStreamCall is a call of a JSON-RPC streaming method.
func rpcStreamCall(name string, v a2a.Version, header http.Header, id string, body []byte) call {
	c := rpcCall(name, v, header, id, body)
	c.stream = true
	return c
}

func restCall(name, method, path string, header http.Header, body []byte) call {
	return call{name: name, rq: request{method: method, path: path, header: header, body: body}}
}

// unreachable is an upstream the test must never reach.
func unreachable(t *testing.T) *upstream {
	t.Helper()
	return newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
}

// TestRefusedBeforeForwarding covers every request the gateway refuses
// itself: each answer is shaped for the caller's version and binding, is
// logged, is counted, and the agent never sees the request.
func TestRefusedBeforeForwarding(t *testing.T) {
	const bodyLimit = 1024
	big := rpcBody(a2a.MethodSend, a2a.V10, "9", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"`+strings.Repeat("x", 4*bodyLimit)+`"}]}}`)
	bigREST := []byte(`{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", 4*bodyLimit) + `"}]}}`)
	chunked := func(c call) call { c.rq.chunked = true; c.name += " chunked"; return c }
	batch := []byte(`[` + string(rpcBody(a2a.MethodSend, a2a.V10, "1", sendParams)) + `]`)
	unknownMethod := func(id string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tasks/explode","params":{}}`)
	}

	cases := []struct {
		name       string
		want       *a2a.Error
		restStatus string
		calls      []call
	}{
		{"malformed JSON", a2a.ErrParse, "INVALID_ARGUMENT", []call{
			rpcCall("rpc 1.0", a2a.V10, v10(), "null", []byte(`{"jsonrpc":"2.0","id":1,`)),
			rpcCall("rpc 0.3", a2a.V03, nil, "null", []byte(`{"jsonrpc":"2.0","id":1,`)),
			restCall("rest 1.0", http.MethodPost, "/message:send", v10(), []byte(`{"message":`)),
			restCall("rest 0.3", http.MethodPost, "/v1/message:send", nil, []byte(`{"message":`)),
		}},
		{"unknown method", a2a.ErrMethodNotFound, "", []call{
			rpcCall("rpc 1.0", a2a.V10, v10(), `"abc"`, unknownMethod(`"abc"`)),
			rpcCall("rpc 0.3", a2a.V03, nil, "42", unknownMethod("42")),
		}},
		{"batch request", a2a.ErrInvalidRequest, "", []call{
			rpcCall("rpc 1.0", a2a.V10, v10(), "null", batch),
			rpcCall("rpc 0.3", a2a.V03, nil, "null", batch),
		}},
		{"body over the limit", a2a.ErrPayloadTooLarge, "RESOURCE_EXHAUSTED", []call{
			rpcCall("rpc 1.0", a2a.V10, v10(), "null", big),
			chunked(rpcCall("rpc 1.0", a2a.V10, v10(), "null", big)),
			rpcCall("rpc 0.3", a2a.V03, nil, "null", big),
			restCall("rest 1.0", http.MethodPost, "/message:send", v10(), bigREST),
			chunked(restCall("rest 1.0", http.MethodPost, "/message:send", v10(), bigREST)),
		}},
		{"unknown REST path", a2a.ErrMethodNotFound, "NOT_FOUND", []call{
			restCall("no operation", http.MethodGet, "/nothing/here", v10(), nil),
			restCall("wrong HTTP method", http.MethodDelete, "/tasks/t-1", v10(), nil),
			restCall("GET on the JSON-RPC path", http.MethodGet, "/", v10(), nil),
		}},
		// Paths an agent could read differently from the gateway.
		{"malformed REST path", a2a.ErrInvalidRequest, "INVALID_ARGUMENT", []call{
			restCall("encoded slash", http.MethodGet, "/tasks/a%2Fb", v10(), nil),
			restCall("dot segment", http.MethodGet, "/tasks/%2e%2e", v10(), nil),
			restCall("empty segment", http.MethodGet, "/tasks//t-1", v10(), nil),
		}},
		{"unsupported version", a2a.ErrVersionNotSupported, "INVALID_ARGUMENT", []call{
			restCall("rest header", http.MethodGet, "/tasks/t-1", header(a2a.VersionHeader, "9.9"), nil),
			restCall("rest query", http.MethodGet, "/tasks/t-1?"+a2a.VersionHeader+"=2.0", nil, nil),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := unreachable(t)
			e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.MaxBodyBytes = bodyLimit }))
			for _, c := range tc.calls {
				t.Run(c.name, func(t *testing.T) { c.check(t, e, tc.want, tc.restStatus) })
			}
			if n := up.count(); n != 0 {
				t.Fatalf("the agent saw %d refused requests", n)
			}
			e.logs.wantLog(t, "INFO", "request refused", map[string]any{"agent": agentName, "reason": tc.want.Reason, "code": float64(tc.want.Code)})
			e.wantRefusals(t, tc.want.Reason, len(tc.calls))
		})
	}
}

// wantRefusals waits until n requests are counted with result reason,
// whatever their operation.
func (e *env) wantRefusals(t *testing.T, reason string, n int) {
	t.Helper()
	count := func() float64 {
		var total float64
		for _, op := range append([]a2a.Method{a2a.MethodUnknown}, a2a.AllMethods...) {
			total += e.counter(t, "requests_total", map[string]string{"agent": agentName, "operation": op.String(), "result": reason})
		}
		return total
	}
	deadline := time.Now().Add(testTimeout)
	for got := count(); got != float64(n); got = count() {
		if got > float64(n) || time.Now().After(deadline) {
			t.Fatalf("requests_total{result=%q} = %v, want %d", reason, got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUnsupportedVersionOverJSONRPC: VersionNotSupportedError exists only
// in A2A 1.0, so its JSON-RPC form is the 1.0 one, and like every JSON-RPC
// error it answers the request's id, which the body names.
func TestUnsupportedVersionOverJSONRPC(t *testing.T) {
	up := unreachable(t)
	e := start(t, up.url)
	body := rpcBody(a2a.MethodSend, a2a.V10, `"req-7"`, sendParams)
	for _, c := range []call{
		rpcCall("header", a2a.V10, header(a2a.VersionHeader, "9.9"), `"req-7"`, body),
		{name: "query", rq: request{method: http.MethodPost, path: "/?" + a2a.VersionHeader + "=0.1", body: body}, rpc: true, v: a2a.V10, id: `"req-7"`},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, e, a2a.ErrVersionNotSupported, "") })
	}
	if n := up.count(); n != 0 {
		t.Fatalf("the agent saw %d refused requests", n)
	}
}

// TestUnknownAgent answers 404 for agents that are not mounted, logs it,
// and never guesses an upstream.
func TestUnknownAgent(t *testing.T) {
	up := unreachable(t)
	e := start(t, up.url)
	for _, c := range []call{
		restCall("rest", http.MethodGet, e.url+"/agents/nope/tasks/t-1", v10(), nil),
		restCall("rpc", http.MethodPost, e.url+"/agents/nope/", v10(), rpcBody(a2a.MethodSend, a2a.V10, "1", sendParams)),
		restCall("prefix of a known agent", http.MethodGet, e.url+"/agents/u/tasks/t-1", v10(), nil),
		restCall("outside /agents/", http.MethodGet, e.url+"/tasks/t-1", v10(), nil),
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, e, a2a.ErrMethodNotFound, "NOT_FOUND") })
	}
	if n := up.count(); n != 0 {
		t.Fatalf("the agent saw %d requests", n)
	}
	e.logs.wantLog(t, "INFO", "request for an unknown agent", map[string]any{"path": "/agents/nope/tasks/t-1"})
}

// upstreamCalls are the same operation in each binding, for failures of
// the agent rather than of the request.
func upstreamCalls() []call {
	return []call{
		rpcCall("rpc 1.0", a2a.V10, v10(), "5", rpcBody(a2a.MethodSend, a2a.V10, "5", sendParams)),
		rpcCall("rpc 0.3", a2a.V03, nil, `"x"`, rpcBody(a2a.MethodGetTask, a2a.V03, `"x"`, `{"id":"t-1"}`)),
		restCall("rest 1.0", http.MethodGet, "/tasks/t-1", v10(), nil),
		restCall("rest 0.3", http.MethodPost, "/v1/tasks/t-1:cancel", nil, nil),
	}
}

// TestUpstreamNotListening answers 502 / BAD_GATEWAY and counts the failure.
func TestUpstreamNotListening(t *testing.T) {
	e := start(t, "http://"+freeAddr(t))
	calls := upstreamCalls()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) { c.check(t, e, a2a.ErrUpstreamFailed, "UNAVAILABLE") })
	}
	e.logs.wantLog(t, "WARN", "agent exchange failed", map[string]any{"agent": agentName, "reason": "unreachable"})
	e.wantCounter(t, "upstream_errors_total", map[string]string{"agent": agentName, "reason": "unreachable"}, float64(len(calls)))
}

// TestUpstreamTimeout answers 504 / DEADLINE_EXCEEDED when the agent takes
// longer than timeouts.request, whether it is silent or stalls mid-body,
// and hangs up on the agent.
func TestUpstreamTimeout(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"no answer", func(http.ResponseWriter) {}},
		{"stalled body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			writeFlush(w, `{"jsonrpc":"2.0",`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			released := make(chan struct{}, 16)
			up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
				tc.answer(w)
				select {
				case <-r.Context().Done():
					released <- struct{}{}
				case <-u.done:
				}
			})
			e := start(t, up.url, withConfig(func(c *config.Config) {
				c.Agents[0].Timeouts.Request = duration.Duration(200 * time.Millisecond)
			}))
			calls := upstreamCalls()
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					c.check(t, e, a2a.ErrUpstreamTimeout, "DEADLINE_EXCEEDED")
					waitUntil(t, "the agent's request is cancelled", released)
				})
			}
			e.logs.wantLog(t, "WARN", "agent exchange failed", map[string]any{"agent": agentName, "reason": "timeout"})
			e.wantCounter(t, "upstream_errors_total", map[string]string{"agent": agentName, "reason": "timeout"}, float64(len(calls)))
		})
	}
}

// TestUpstreamResponseOverLimit answers 502 / INVALID_AGENT_RESPONSE for a
// response over limits.max_response_bytes, and relays one exactly at it.
func TestUpstreamResponseOverLimit(t *testing.T) {
	const limit = 1024
	// answer is a JSON-RPC result padded to exactly n bytes.
	answer := func(n int) []byte {
		head, tail := `{"jsonrpc":"2.0","id":5,"result":{"message":{"messageId":"a","parts":[{"text":"`, `"}]}}}`
		return []byte(head + strings.Repeat("z", n-len(head)-len(tail)) + tail)
	}
	size := make(chan int, 1)
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		b := answer(<-size)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	})
	e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.MaxResponseBytes = limit }))

	size <- limit
	resp, body := e.do(t, upstreamCalls()[0].rq)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, answer(limit)) {
		t.Fatalf("an answer at the limit: HTTP %d %s", resp.StatusCode, body)
	}
	calls := upstreamCalls()
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			size <- limit + 1
			c.check(t, e, a2a.ErrInvalidAgentResponse, "UNAVAILABLE")
		})
	}
	e.logs.wantLog(t, "WARN", "agent response over the size limit", map[string]any{"limit_bytes": float64(limit)})
	e.wantCounter(t, "upstream_errors_total", map[string]string{"agent": agentName, "reason": "invalid_response"}, float64(len(calls)))
}

// TestStageRefusal: a stage's error reaches the caller in its binding with
// the error's headers (a WWW-Authenticate challenge here), and the request
// goes no further.
func TestStageRefusal(t *testing.T) {
	const challenge = `Bearer realm="a2a-gateway", error="invalid_token"`
	refuse := proxy.Stage(func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			if r.Header.Get("Authorization") != "Bearer good" {
				return a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", challenge)
			}
			return next(w, r, s)
		}
	})
	up := unreachable(t)
	e := start(t, up.url, withStage(refuse))
	for _, c := range []call{
		rpcCall("rpc 1.0", a2a.V10, v10(), `"r"`, rpcBody(a2a.MethodSend, a2a.V10, `"r"`, sendParams)),
		rpcCall("rpc 0.3", a2a.V03, header("Authorization", "Bearer bad"), "3", rpcBody(a2a.MethodSend, a2a.V03, "3", sendParams)),
		restCall("rest 1.0", http.MethodGet, "/tasks/t-1", v10(), nil),
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do(t, c.rq)
			if got := resp.Header.Get("WWW-Authenticate"); got != challenge {
				t.Fatalf("WWW-Authenticate = %q", got)
			}
			if c.rpc {
				wantRPCError(t, resp, body, c.v, c.id, a2a.ErrUnauthenticated)
			} else {
				wantRESTError(t, resp, body, a2a.ErrUnauthenticated, "UNAUTHENTICATED")
			}
		})
	}
	if n := up.count(); n != 0 {
		t.Fatalf("the agent saw %d refused requests", n)
	}
	e.logs.wantLog(t, "INFO", "request refused", map[string]any{"reason": a2a.ErrUnauthenticated.Reason})
}

// streamingCalls are the streaming methods in every binding and version,
// each with extra headers h.
func streamingCalls(h http.Header) []call {
	with := func(base http.Header) http.Header {
		out := h.Clone()
		if out == nil {
			out = http.Header{}
		}
		for k, vs := range base {
			out[k] = vs
		}
		return out
	}
	return []call{
		rpcStreamCall("SendStreamingMessage", a2a.V10, with(v10()), `"s-1"`, rpcBody(a2a.MethodStream, a2a.V10, `"s-1"`, sendParams)),
		rpcStreamCall("SubscribeToTask", a2a.V10, with(v10()), `"s-2"`, rpcBody(a2a.MethodSubscribe, a2a.V10, `"s-2"`, `{"id":"t-1"}`)),
		rpcStreamCall("message/stream", a2a.V03, with(nil), "7", rpcBody(a2a.MethodStream, a2a.V03, "7", sendParams)),
		rpcStreamCall("tasks/resubscribe", a2a.V03, with(nil), "8", rpcBody(a2a.MethodSubscribe, a2a.V03, "8", `{"id":"t-1"}`)),
		restCall("POST /message:stream", http.MethodPost, "/message:stream", with(v10()), []byte(sendParams)),
		restCall("POST /tasks/{id}:subscribe", http.MethodPost, "/tasks/t-1:subscribe", with(v10()), nil),
		restCall("POST /v1/message:stream", http.MethodPost, "/v1/message:stream", with(nil), []byte(sendParams)),
		restCall("GET /v1/tasks/{id}:subscribe", http.MethodGet, "/v1/tasks/t-1:subscribe", with(nil), nil),
	}
}

// TestRefusedStreamingMethods: whatever refuses a streaming method, a
// JSON-RPC caller gets the error as the SDK servers send it, one event of
// an HTTP 200 event stream, because its client reads any 200 as a stream:
// a plain JSON error would read as a stream without events. 401 stays an
// HTTP 401, which the client needs to authenticate again; REST clients
// check the status before reading a stream, so REST keeps its statuses.
func TestRefusedStreamingMethods(t *testing.T) {
	refusals := map[string]*a2a.Error{
		"foreign":      a2a.ErrTaskNotFound,
		"denied":       a2a.ErrPermissionDenied,
		"rate":         a2a.ErrRateLimited.WithRetryAfter(2 * time.Second),
		"unauthorized": a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", "Bearer"),
	}
	statuses := map[string]string{"foreign": "NOT_FOUND", "denied": "PERMISSION_DENIED", "rate": "RESOURCE_EXHAUSTED", "unauthorized": "UNAUTHENTICATED"}
	refuse := proxy.Stage(func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			if e, ok := refusals[r.Header.Get("X-Refuse")]; ok {
				return e
			}
			return next(w, r, s)
		}
	})
	up := unreachable(t)
	e := start(t, up.url, withStage(refuse))
	for name, want := range refusals {
		t.Run(name, func(t *testing.T) {
			for _, c := range streamingCalls(header("X-Refuse", name)) {
				t.Run(c.name, func(t *testing.T) {
					resp, body := c.check(t, e, want, statuses[name])
					if want.RetryAfter > 0 && resp.Header.Get("Retry-After") != "2" {
						t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
					}
					if want.HTTPStatus == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != "Bearer" {
						t.Fatalf("WWW-Authenticate %q: %s", resp.Header.Get("WWW-Authenticate"), body)
					}
				})
			}
		})
	}
	t.Run("bad params", func(t *testing.T) {
		// Refused by the classifier, which knows the method by then.
		for _, c := range []call{
			rpcStreamCall("SendStreamingMessage", a2a.V10, v10(), `"s-1"`, rpcBody(a2a.MethodStream, a2a.V10, `"s-1"`, `{"message":"hi"}`)),
			rpcStreamCall("SubscribeToTask", a2a.V10, v10(), `"s-2"`, rpcBody(a2a.MethodSubscribe, a2a.V10, `"s-2"`, `{"id":7}`)),
			rpcStreamCall("message/stream", a2a.V03, nil, "7", rpcBody(a2a.MethodStream, a2a.V03, "7", `{"message":"hi"}`)),
			rpcStreamCall("tasks/resubscribe", a2a.V03, nil, "8", rpcBody(a2a.MethodSubscribe, a2a.V03, "8", `{"id":7}`)),
		} {
			t.Run(c.name, func(t *testing.T) { c.check(t, e, a2a.ErrInvalidParams, "") })
		}
	})
	t.Run("method unknown", func(t *testing.T) {
		// Before the method is known there is no stream to answer in: the
		// SDK servers answer such requests with plain JSON too.
		c := rpcCall("unparsable", a2a.V03, nil, "null", []byte(`{"jsonrpc":"2.0","id":9,"method":"message/stream",`))
		c.check(t, e, a2a.ErrParse, "")
	})
	if n := up.count(); n != 0 {
		t.Fatalf("the agent saw %d refused requests", n)
	}
}
