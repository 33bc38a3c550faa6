package lifecycle_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 30 * time.Second

// agentName is the mount name of the upstream in every harness.
const agentName = "demo"

// tracked is a tracker with its registry and log.
type tracked struct {
	tr   *lifecycle.Tracker
	st   store.Lifecycle
	reg  *prometheus.Registry
	logs *syncBuffer
}

// trackerSetup adjusts a tracker's options before it is built.
type trackerSetup func(*lifecycle.Options)

func withWatchdog(w config.WatchdogOptions) trackerSetup {
	return func(o *lifecycle.Options) { o.Agents[0].Watchdog = w }
}

func withConfig(f func(*config.LifecycleOptions)) trackerSetup {
	return func(o *lifecycle.Options) { f(&o.Config) }
}

// newTracked builds a tracker on st for the one agent agentName.
func newTracked(t *testing.T, st store.Lifecycle, setups ...trackerSetup) *tracked {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	logs := &syncBuffer{}
	o := lifecycle.Options{
		Store:   st,
		Agents:  []lifecycle.Agent{{Name: agentName}},
		Metrics: m.Lifecycle,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	o.Config.SweepInterval = duration.Duration(100 * time.Millisecond) // leases last 300ms
	o.Config.ApplyDefaults()
	for _, s := range setups {
		s(&o)
	}
	tr, err := lifecycle.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return &tracked{tr: tr, st: st, reg: reg, logs: logs}
}

// memoryStore is a fresh embedded store.
func memoryStore(t *testing.T) store.Store {
	t.Helper()
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func (k *tracked) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := k.tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func (k *tracked) sweep(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := k.tr.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
}

// record queues ev and waits until it is applied.
func (k *tracked) record(t *testing.T, ev lifecycle.TaskEvent) {
	t.Helper()
	if err := k.tr.Record(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	k.flush(t)
}

// value is the value of a counter or gauge, or the sample count of a
// histogram, with the given labels ("name=value"); 0 when absent.
func value(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mf := family(t, g, name)
	if mf == nil {
		return 0
	}
	sum := 0.0
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// family is one metric family of a gathering, nil when absent.
func family(t *testing.T, g prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

func hasLabels(m *dto.Metric, labels []string) bool {
	have := map[string]string{}
	for _, lp := range m.GetLabel() {
		have[lp.GetName()] = lp.GetValue()
	}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		if have[k] != v {
			return false
		}
	}
	return true
}

// getRecord reads a task's record, failing the test when there is none.
func getRecord(t *testing.T, st store.Lifecycle, taskID string) store.TaskLifecycle {
	t.Helper()
	rec, found, err := st.Get(context.Background(), agentName, taskID)
	if err != nil || !found {
		t.Fatalf("record of %s: found %v, err %v", taskID, found, err)
	}
	return rec
}

// path renders a record's history as "unknown>working>completed".
func path(rec store.TaskLifecycle) string {
	if len(rec.History) == 0 {
		return ""
	}
	parts := []string{rec.History[0].From}
	for _, h := range rec.History {
		parts = append(parts, h.To)
	}
	return strings.Join(parts, ">")
}

// eventually polls cond until it holds, failing after testTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proxied is a proxy.Gateway in front of an upstream, with a tracker as
// its observer and guard, on a loopback listener.
type proxied struct {
	*tracked
	gw   *proxy.Gateway
	base string // the agent's mount on the gateway
}

// asTenant stands in for authentication: every caller is tenant "acme".
func asTenant(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		s.Principal = &request.Principal{Tenant: "acme", Subject: "alice"}
		return next(w, r, s)
	}
}

// startProxy puts a gateway with the tracker wired in front of upstream.
// The tracker's Caller is the gateway itself.
func startProxy(t *testing.T, st store.Lifecycle, upstream string, setups ...trackerSetup) *proxied {
	t.Helper()
	p := &proxied{}
	caller := lifecycle.CallerFunc(func(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error) {
		return p.gw.Call(ctx, agent, v, m, params)
	})
	setups = append([]trackerSetup{func(o *lifecycle.Options) { o.Caller = caller }}, setups...)
	p.tracked = newTracked(t, st, setups...)
	cfg := &config.Config{Agents: []config.Agent{{Name: agentName, URL: upstream}}}
	cfg.ApplyDefaults()
	gw, err := proxy.New(proxy.Options{
		Config:    cfg,
		Stages:    []proxy.Stage{asTenant, p.tr.Guard()},
		Observers: []proxy.Observer{p.tr},
		Metrics:   metrics.New(prometheus.NewRegistry()),
		Logger:    slog.New(slog.NewTextHandler(p.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.gw = gw
	srv := httptest.NewServer(gw)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); gw.Close() })
	p.base = srv.URL + "/agents/" + agentName
	return p
}

// startDemo starts a demo agent on loopback.
func startDemo(t *testing.T) (*demoagent.Agent, string) {
	t.Helper()
	agent := demoagent.New(demoagent.Options{StepDelay: 20 * time.Millisecond})
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	t.Cleanup(func() { agent.Close(); srv.Close() })
	return agent, srv.URL
}

// rpc sends a JSON-RPC request to the gateway and parses the answer.
func (p *proxied) rpc(t *testing.T, v a2a.Version, m a2a.Method, params string) (a2a.Event, []byte) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + a2a.RPCMethodName(m, v) + `","params":` + params + `}`
	req, err := http.NewRequest(http.MethodPost, p.base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if v == a2a.V10 {
		req.Header.Set(a2a.VersionHeader, "1.0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		// A refused stream is answered as one event, as SDK servers do.
		sse, err := a2a.NewSSEReader(bytes.NewReader(b), len(b)+1).Next()
		if err != nil {
			t.Fatalf("%s: %v: %s", m, err, b)
		}
		b = sse.Data
	}
	ev, err := a2a.ParseRPCEvent(b)
	if err != nil {
		t.Fatalf("%s: %v: %s", m, err, b)
	}
	return ev, b
}

// send10 sends a 1.0 message; extra adds members to the message.
func (p *proxied) send10(t *testing.T, text, extra string, returnImmediately bool) a2a.Event {
	t.Helper()
	params := `{"message":{"messageId":"` + newID() + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]` + extra + `}`
	if returnImmediately {
		params += `,"configuration":{"returnImmediately":true}`
	}
	ev, b := p.rpc(t, a2a.V10, a2a.MethodSend, params+`}`)
	if ev.Kind == a2a.EventError {
		t.Fatalf("send %q: %s", text, b)
	}
	return ev
}

var ids struct {
	mu sync.Mutex
	n  int
}

// newID is unique within the test binary.
func newID() string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	ids.n++
	return "id-" + strconv.Itoa(ids.n)
}
