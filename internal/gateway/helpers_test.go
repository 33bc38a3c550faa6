package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 30 * time.Second

// future is a member no version of the protocol defines, with values an
// encoder would rewrite (2.50, \u00e9): it must reach the agent untouched.
const future = `"x-future-field" : {"n": 2.50, "s": "caf\u00e9", "list": [true, null]}`

// caller talks to the gateway of one gwtest environment as one tenant.
type caller struct {
	env    *gwtest.Env
	client *http.Client
	token  string
	ids    atomic.Int64
}

func newCaller(t *testing.T, env *gwtest.Env) *caller {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &caller{env: env, client: &http.Client{Transport: tr}, token: env.Token(t, "acme", "alice")}
}

// nextID is unique within the test, for message and request ids.
func (c *caller) nextID(prefix string) string {
	return prefix + "-" + strconv.FormatInt(c.ids.Add(1), 10)
}

// request is one call below the agent's mount (or to an absolute URL).
type request struct {
	method string
	path   string
	// header is sent as given; a body without a Content-Type in it is
	// declared application/json.
	header http.Header
	body   []byte
	// rpc says how to read results: JSON-RPC responses or bare REST results.
	rpc bool
	// anonymous sends no credentials.
	anonymous bool
}

func (c *caller) newRequest(t *testing.T, ctx context.Context, rq request) *http.Request {
	t.Helper()
	u := rq.path
	if !strings.HasPrefix(u, "http") {
		u = c.env.AgentBase + rq.path
	}
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range rq.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if _, given := rq.header["Content-Type"]; rq.body != nil && !given {
		req.Header.Set("Content-Type", "application/json")
	}
	if !rq.anonymous && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req
}

// do makes one call and reads the whole answer.
func (c *caller) do(t *testing.T, rq request) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := c.client.Do(c.newRequest(t, ctx, rq))
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

// stream is an open event stream.
type stream struct {
	resp   *http.Response
	rd     *a2a.SSEReader
	rpc    bool
	cancel context.CancelFunc
}

// open starts a call that must answer with an event stream.
func (c *caller) open(t *testing.T, ctx context.Context, rq request) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.client.Do(c.newRequest(t, ctx, rq))
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
	s := &stream{resp: resp, rd: a2a.NewSSEReader(resp.Body, 1<<20), rpc: rq.rpc, cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next reads and parses one event; io.EOF when the stream has ended.
func (s *stream) next(t *testing.T) (a2a.Event, error) {
	t.Helper()
	ev, err := s.rd.Next()
	if err != nil {
		return a2a.Event{}, err
	}
	parsed, err := parse(ev.Data, s.rpc)
	if err != nil {
		t.Fatalf("unreadable event: %v: %s", err, ev.Data)
	}
	return parsed, nil
}

// all reads to the end of the stream, which must end cleanly.
func (s *stream) all(t *testing.T) []a2a.Event {
	t.Helper()
	var out []a2a.Event
	for {
		ev, err := s.next(t)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream broke after %d events: %v", len(out), err)
		}
		out = append(out, ev)
	}
}

func parse(b []byte, rpc bool) (a2a.Event, error) {
	if rpc {
		return a2a.ParseRPCEvent(b)
	}
	return a2a.ParseResult(b)
}

func v10() http.Header { return header(a2a.VersionHeader, "1.0") }

// header builds a header with canonical keys, so Get finds them.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// rpcBody is a JSON-RPC request with an unknown member in the envelope.
func rpcBody(m a2a.Method, v a2a.Version, id, params string) []byte {
	return []byte(`{` + future + `, "jsonrpc":"2.0","id":"` + id + `","method":"` + a2a.RPCMethodName(m, v) + `","params":` + params + `}`)
}

// Messages in each dialect's shape, each with an unknown member.
func (c *caller) msg10(text string) string {
	return `{` + future + `,"messageId":"` + c.nextID("m") + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}`
}

func (c *caller) msg03(text string) string {
	return `{"kind":"message","messageId":"` + c.nextID("m") + `","role":"user","parts":[{"kind":"text","text":"` + text + `"}],` + future + `}`
}

// proto03 is a 0.3 HTTP+JSON message: protobuf JSON, "content" for parts.
func (c *caller) proto03(text string) string {
	return `{"messageId":"` + c.nextID("m") + `","role":"ROLE_USER","content":[{"text":"` + text + `"}],` + future + `}`
}

func legacyMsg(text string) string {
	return `{"role":"user","parts":[{"type":"text","text":"` + text + `"}],` + future + `}`
}

// waitingTask starts a task that works until canceled, through the gateway.
func (c *caller) waitingTask(t *testing.T) string {
	t.Helper()
	params := `{"message":` + c.msg10("wait") + `,"configuration":{"returnImmediately":true}}`
	resp, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSend, a2a.V10, c.nextID("fx"), params)})
	ev, err := a2a.ParseRPCEvent(b)
	if resp.StatusCode != http.StatusOK || err != nil || ev.Kind != a2a.EventTask || ev.State.Terminal() {
		t.Fatalf("starting a task: HTTP %d %v: %s", resp.StatusCode, err, b)
	}
	return ev.TaskID
}

// pushConfig gives task a push config with id cfgID, through the gateway.
func (c *caller) pushConfig(t *testing.T, taskID, cfgID, url string) {
	t.Helper()
	params := `{"taskId":"` + taskID + `","id":"` + cfgID + `","url":"` + url + `","token":"tok"}`
	resp, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodPushConfigSet, a2a.V10, c.nextID("fx"), params)})
	if ev, err := a2a.ParseRPCEvent(b); resp.StatusCode != http.StatusOK || err != nil || ev.Kind == a2a.EventError {
		t.Fatalf("creating a push config: HTTP %d %v: %s", resp.StatusCode, err, b)
	}
}

// scrape reads the admin /metrics endpoint.
func scrape(t *testing.T, adminURL string) map[string]*dto.MetricFamily {
	t.Helper()
	// Uncompressed: gzip under the race detector makes every scrape slow.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: testTimeout}
	defer client.CloseIdleConnections()
	resp, err := client.Get(adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return mfs
}

// requestCount is a2agw_requests_total for one label set; 0 when absent.
func requestCount(mfs map[string]*dto.MetricFamily, agent, op, result string) float64 {
	mf := mfs[metrics.Namespace+"_requests_total"]
	if mf == nil {
		return 0
	}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels["agent"] == agent && labels["operation"] == op && labels["result"] == result {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// tally is what a2agw_requests_total must say: expected counts by
// operation and result for the agent "demo".
type tally map[[2]string]float64

func (tl tally) add(op a2a.Method, result string) { tl[[2]string{op.String(), result}]++ }

// wait polls /metrics until every expected count is there: counters move
// after the answer is on its way to the caller.
func (tl tally) wait(t *testing.T, adminURL string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		mfs := scrape(t, adminURL)
		var diff []string
		over := false
		for k, want := range tl {
			if got := requestCount(mfs, "demo", k[0], k[1]); got != want {
				diff = append(diff, k[0]+"/"+k[1]+": got "+strconv.FormatFloat(got, 'f', -1, 64)+", want "+strconv.FormatFloat(want, 'f', -1, 64))
				over = over || got > want
			}
		}
		if len(diff) == 0 {
			return
		}
		if over || time.Now().After(deadline) {
			t.Fatalf("a2agw_requests_total: %s", strings.Join(diff, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// decode unmarshals a JSON object for shape assertions.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
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
