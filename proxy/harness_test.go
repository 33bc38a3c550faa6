package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 30 * time.Second

// agentName is the mount name of the scripted upstream.
const agentName = "up"

// env is a proxy.Gateway on a loopback listener in front of one upstream.
type env struct {
	gw     *proxy.Gateway
	url    string // the gateway's base URL
	base   string // the upstream's mount: url + "/agents/up"
	logs   *logSink
	reg    *prometheus.Registry
	client *http.Client
}

// setup adjusts the configuration and pipeline before the gateway starts.
type setup struct {
	cfg     *config.Config
	stages  []proxy.Stage
	eventID proxy.StreamEventID
	// oversized answers an oversized credential (Options.OversizedCredential).
	oversized func(http.Header) *a2a.Error
}

type option func(*setup)

func withConfig(f func(*config.Config)) option { return func(s *setup) { f(s.cfg) } }

func withStage(st proxy.Stage) option {
	return func(s *setup) { s.stages = append(s.stages, st) }
}

// start builds a gateway with proxy.New in front of upstreamURL. The
// pipeline has no stages unless a test adds some.
func start(t testing.TB, upstreamURL string, opts ...option) *env {
	t.Helper()
	s := &setup{cfg: &config.Config{Agents: []config.Agent{{Name: agentName, URL: upstreamURL}}}}
	for _, o := range opts {
		o(s)
	}
	s.cfg.ApplyDefaults()
	logs := &logSink{}
	reg := prometheus.NewRegistry()
	gw, err := proxy.New(proxy.Options{
		Config:  s.cfg,
		Stages:  s.stages,
		Metrics: metrics.New(reg),
		Logger:  slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),

		StreamEventID:       s.eventID,
		OversizedCredential: s.oversized,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
	})
	return &env{
		gw: gw, url: srv.URL, base: srv.URL + "/agents/" + agentName, logs: logs, reg: reg,
		client: &http.Client{Transport: tr},
	}
}

// request describes one call to the gateway.
type request struct {
	method string
	path   string // below the agent's mount, or absolute when it starts with "http"
	header http.Header
	body   []byte
	// chunked hides the body length, so only the read limit can catch it.
	chunked bool
	// timeout bounds the call; zero means testTimeout.
	timeout time.Duration
}

func (e *env) newRequest(t *testing.T, ctx context.Context, rq request) *http.Request {
	t.Helper()
	u := rq.path
	if !strings.HasPrefix(u, "http") {
		u = e.base + rq.path
	}
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
		if rq.chunked {
			body = io.MultiReader(body) // hides the length from the client
		}
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range rq.header {
		req.Header[k] = vs
	}
	if rq.body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// do makes one call and reads the whole answer.
func (e *env) do(t *testing.T, rq request) (*http.Response, []byte) {
	t.Helper()
	timeout := rq.timeout
	if timeout == 0 {
		timeout = testTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := e.client.Do(e.newRequest(t, ctx, rq))
	if err != nil {
		t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", rq.method, rq.path, err)
	}
	return resp, b
}

// stream is an open event stream from the gateway.
type stream struct {
	resp   *http.Response
	rd     *a2a.SSEReader
	cancel context.CancelFunc
}

// open starts a call that must answer with an event stream.
func (e *env) open(t *testing.T, rq request) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	resp, err := e.client.Do(e.newRequest(t, ctx, rq))
	if err != nil {
		cancel()
		t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, a2a.SSEContentType) {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("want an event stream, got HTTP %d %q: %s", resp.StatusCode, ct, b)
	}
	s := &stream{resp: resp, rd: a2a.NewSSEReader(resp.Body, 1<<20), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next reads one event and fails the test unless there is one.
func (s *stream) next(t *testing.T) a2a.SSEEvent {
	t.Helper()
	ev, err := s.rd.Next()
	if err != nil {
		t.Fatalf("want an event, got %v", err)
	}
	ev.Raw = append([]byte(nil), ev.Raw...)
	ev.Data = append([]byte(nil), ev.Data...)
	return ev
}

// wantCleanEnd reads the rest of the body raw: the stream must end with a
// properly terminated response and nothing after the events already read.
func (s *stream) wantCleanEnd(t *testing.T) {
	t.Helper()
	rest, err := io.ReadAll(s.resp.Body)
	if err != nil {
		t.Fatalf("the stream did not end cleanly: %v (after %q)", err, rest)
	}
	if len(rest) != 0 {
		t.Fatalf("unexpected bytes at the end of the stream: %q", rest)
	}
}

// rpcBody is a JSON-RPC request of method m in version v with raw params.
func rpcBody(m a2a.Method, v a2a.Version, id, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + a2a.RPCMethodName(m, v) + `","params":` + params + `}`)
}

// sendParams are minimal SendMessage params in the 1.0 shape.
const sendParams = `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`

// v10 is the header set of a 1.0 caller.
func v10() http.Header { return header(a2a.VersionHeader, "1.0") }

// header builds a header with canonical keys.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// streamRequest is a 1.0 JSON-RPC SendStreamingMessage.
func streamRequest() request {
	return request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodStream, a2a.V10, `"s-1"`, sendParams)}
}

// upstream is a scripted agent. It reads each request body before the
// script runs. Scripts that wait should also watch done, which closes
// before the server does, so no test can hang on cleanup.
type upstream struct {
	srv  *httptest.Server
	url  string
	done chan struct{}

	mu       sync.Mutex
	requests int
}

func newUpstream(t *testing.T, h func(u *upstream, w http.ResponseWriter, r *http.Request)) *upstream {
	t.Helper()
	u := &upstream{done: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Agents read the request first; only then can the server notice
		// that the gateway hung up and cancel the request's context.
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		u.mu.Lock()
		u.requests++
		u.mu.Unlock()
		h(u, w, r)
	}))
	u.url = u.srv.URL
	t.Cleanup(func() {
		close(u.done)
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

// count is the number of requests the upstream has received.
func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// sseHeader starts an event stream answer.
func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", a2a.SSEContentType)
	w.WriteHeader(http.StatusOK)
	flush(w)
}

// writeFlush writes raw bytes and flushes them at once.
func writeFlush(w http.ResponseWriter, raw string) {
	_, _ = io.WriteString(w, raw)
	flush(w)
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

// event is an SSE event whose data is a 1.0 JSON-RPC stream response.
func event(n int) string {
	return `data: {"jsonrpc":"2.0","id":"s-1","result":{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"metadata":{"n":` +
		itoa(n) + `}}}}` + "\n\n"
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// waitUntil waits for a signal, failing the test after testTimeout.
func waitUntil(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting until %s", what)
	}
}

// eventually polls cond until it holds, failing the test after testTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// logSink collects the gateway's JSON log lines.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	data := append([]byte(nil), l.buf.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Bytes())
		}
		out = append(out, rec)
	}
	return out
}

// find returns the first record with msg whose attributes include want.
func (l *logSink) find(t *testing.T, msg string, want map[string]any) (map[string]any, bool) {
	t.Helper()
	for _, rec := range l.records(t) {
		if rec["msg"] != msg {
			continue
		}
		match := true
		for k, v := range want {
			if rec[k] != v {
				match = false
				break
			}
		}
		if match {
			return rec, true
		}
	}
	return nil, false
}

// wantLog waits for a record with msg, level and attributes; log lines can
// be written after the caller already has its answer.
func (l *logSink) wantLog(t *testing.T, level, msg string, attrs map[string]any) map[string]any {
	t.Helper()
	want := map[string]any{"level": level}
	for k, v := range attrs {
		want[k] = v
	}
	var rec map[string]any
	deadline := time.Now().Add(testTimeout)
	for {
		var ok bool
		if rec, ok = l.find(t, msg, want); ok {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s log %q with %v; logs:\n%s", level, msg, attrs, l.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *logSink) dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// counter reads one a2agw counter from the registry; 0 when absent.
func (e *env) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metrics.Namespace+"_"+name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// wantCounter waits until a counter reaches want: metrics are recorded
// after the answer is on its way.
func (e *env) wantCounter(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		got := e.counter(t, name, labels)
		if got == want {
			return
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
