package push_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// subTimeout only keeps a broken test from hanging.
const subTimeout = 30 * time.Second

// discardQueue takes every notification and keeps none: these tests read
// the event log, which holds every published event in order.
type discardQueue struct{}

func (discardQueue) Enqueue(context.Context, store.Delivery) error { return nil }

// countingMetrics records the subscriber's events.
type countingMetrics struct {
	mu                                   sync.Mutex
	held, resubscribes, polls, takenOver int
}

func (m *countingMetrics) Subscriptions(_ string, d int) { m.mu.Lock(); m.held += d; m.mu.Unlock() }
func (m *countingMetrics) Resubscribed(string)           { m.mu.Lock(); m.resubscribes++; m.mu.Unlock() }
func (m *countingMetrics) PollingFallback(string)        { m.mu.Lock(); m.polls++; m.mu.Unlock() }
func (m *countingMetrics) TakenOver(string)              { m.mu.Lock(); m.takenOver++; m.mu.Unlock() }

func (m *countingMetrics) get() countingMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	return countingMetrics{held: m.held, resubscribes: m.resubscribes, polls: m.polls, takenOver: m.takenOver}
}

// replica is one gateway replica's share of the relay: its tracker, relay,
// proxy and subscriber, on a store shared with the other replicas.
type replica struct {
	relay   *push.Relay
	px      *proxy.Gateway
	sub     *push.Subscriber
	metrics *countingMetrics
}

const agentName = "demo"

func newReplica(t *testing.T, st store.Store, agentURL, holder string, lease time.Duration) *replica {
	t.Helper()
	return newReplicaWith(t, st, agentURL, holder, lease, discardQueue{})
}

// newReplicaWith is newReplica with the relay enqueueing to q.
func newReplicaWith(t *testing.T, st store.Store, agentURL, holder string, lease time.Duration, q push.Enqueuer) *replica {
	t.Helper()
	return newReplicaAsking(t, st, agentURL, holder, lease, q, 0)
}

// newReplicaAsking is newReplicaWith whose subscriber asks the agent in
// version v (0: each task's consumers' version).
func newReplicaAsking(t *testing.T, st store.Store, agentURL, holder string, lease time.Duration, q push.Enqueuer, v a2a.Version) *replica {
	t.Helper()
	cfg := &config.Config{Agents: []config.Agent{{Name: agentName, URL: agentURL}}}
	cfg.ApplyDefaults()
	m := metrics.New(prometheus.NewRegistry())
	log := slog.New(slog.DiscardHandler)
	px, err := proxy.New(proxy.Options{Config: cfg, Metrics: m, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	lo := cfg.Lifecycle
	tracker, err := lifecycle.New(lifecycle.Options{Store: st.Lifecycle(), Config: lo, Metrics: m.Lifecycle, Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tracker.Close)
	relay, err := push.NewRelay(push.RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{relay: relay, px: px, metrics: &countingMetrics{}}
	r.sub, err = push.NewSubscriber(push.SubscriberOptions{
		Relay: relay, Configs: st.PushConfigs(), Sources: st.PushSources(), Leases: st.Lifecycle(),
		Tracker: tracker, Upstream: px,
		Capabilities: func(context.Context, string) (push.Capabilities, error) {
			return push.Capabilities{Streaming: true}, nil
		},
		Agents: []push.SourceAgent{{
			Name: agentName, Mode: push.SourceAuto, Version: v, LeaseTTL: lease, MaxBackoff: 100 * time.Millisecond,
			MaxStreamFailures: 3, PollInterval: 50 * time.Millisecond, ReconcileInterval: time.Minute,
		}},
		InboundURL: "http://127.0.0.1:1/push/inbound", Holder: holder, ScanInterval: 50 * time.Millisecond,
		Metrics: r.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs the replica's subscriber until the returned stop is called.
func (r *replica) run(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.sub.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// watchTask starts a task at the agent and gives it a push config, which
// puts it in the watched index.
func watchTask(t *testing.T, st store.Store, px *proxy.Gateway, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), subTimeout)
	defer cancel()
	params := map[string]any{
		"message":       map[string]any{"messageId": "m-" + text, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}},
		"configuration": map[string]any{"returnImmediately": true},
	}
	res, err := px.Call(ctx, agentName, a2a.V10, a2a.MethodSend, params)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := a2a.ParseResult(res)
	if err != nil || ev.TaskID == "" {
		t.Fatalf("send answered %s", res)
	}
	c := store.PushConfig{Agent: agentName, TaskID: ev.TaskID, ID: "c1", Tenant: "acme", Version: a2a.V10, URL: "https://hooks.example/a2a"}
	if _, err := st.PushConfigs().Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	return ev.TaskID
}

// logged reads the task's event log: the artifact ids in order, the
// states, and the metadata of the last status update.
func logged(t *testing.T, r *push.Relay, task string) (arts []string, states []a2a.State, meta map[string]any) {
	t.Helper()
	events, _, err := r.Replay(context.Background(), agentName, task, "", store.MaxEventLogReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	for _, le := range events {
		var obj map[string]map[string]any
		if err := json.Unmarshal(le.Payload, &obj); err != nil {
			t.Fatalf("logged event: %v: %s", err, le.Payload)
		}
		if au, ok := obj["artifactUpdate"]; ok {
			arts = append(arts, au["artifact"].(map[string]any)["artifactId"].(string))
			continue
		}
		ev, err := a2a.ParseResult(le.Payload)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, ev.State)
		if su, ok := obj["statusUpdate"]; ok {
			meta, _ = su["metadata"].(map[string]any)
		}
	}
	return arts, states, meta
}

func parts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "part-" + strconv.Itoa(i+1)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(subTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func demo(t *testing.T, o demoagent.Options) (*demoagent.Agent, string) {
	t.Helper()
	agent := demoagent.New(o)
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	t.Cleanup(func() { agent.Close(); srv.Close() })
	return agent, srv.URL
}

// A replica that stops renewing its lease loses the task to another one
// once the lease runs out; the other logs what the first missed, so the
// log ends with every part and the terminal state.
func TestSubscriberTakeover(t *testing.T) {
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	agent, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	a := newReplica(t, st, url, "replica-a", 500*time.Millisecond)
	b := newReplica(t, st, url, "replica-b", 500*time.Millisecond)
	stopA := a.run(t)
	task := watchTask(t, st, a.px, "parts 12 100ms")
	waitFor(t, "replica a following the task", func() bool { return a.metrics.get().held == 1 })
	waitFor(t, "parts logged by replica a", func() bool {
		arts, _, _ := logged(t, a.relay, task)
		return len(arts) >= 2
	})
	stopA()
	b.run(t)
	waitFor(t, "the terminal event", func() bool {
		_, states, _ := logged(t, b.relay, task)
		return len(states) > 0 && states[len(states)-1] == a2a.StateCompleted
	})
	arts, _, _ := logged(t, b.relay, task)
	if !slices.Equal(arts, parts(12)) {
		t.Fatalf("logged artifacts %v", arts)
	}
	if got := b.metrics.get(); got.takenOver != 1 {
		t.Fatalf("replica b counted %d takeovers, want 1", got.takenOver)
	}
	waitFor(t, "replica b letting go", func() bool { return b.metrics.get().held == 0 })
	if refs, err := st.PushConfigs().Watched(context.Background(), 10); err != nil || len(refs) != 0 {
		t.Fatalf("still watched: %v %v", refs, err)
	}
	subs := 0
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodSubscribe {
			subs++
		}
	}
	if subs < 2 {
		t.Fatalf("%d subscriptions; want one per replica", subs)
	}
}

// Only one replica follows a task however many scan for it.
func TestSubscriberOneHolder(t *testing.T) {
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	agent, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	var reps []*replica
	for i := range 3 {
		r := newReplica(t, st, url, "replica-"+strconv.Itoa(i), time.Second)
		r.run(t)
		reps = append(reps, r)
	}
	task := watchTask(t, st, reps[0].px, "parts 5 50ms")
	waitFor(t, "the terminal event", func() bool {
		_, states, _ := logged(t, reps[0].relay, task)
		return len(states) > 0 && states[len(states)-1] == a2a.StateCompleted
	})
	held := 0
	for _, r := range reps {
		if r.metrics.get().resubscribes+r.metrics.get().takenOver > 0 {
			t.Fatalf("a replica resubscribed or took over: %+v", r.metrics.get())
		}
	}
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodSubscribe && r.Op.TaskID == task {
			held++
		}
	}
	if held != 1 {
		t.Fatalf("the agent saw %d subscriptions, want 1", held)
	}
}

// The watchdog's notice reaches the log as a status update with the
// task's current state; an orphan is then no longer watched.
func TestSubscriberWatchdogNotice(t *testing.T) {
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	_, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	r := newReplica(t, st, url, "replica", time.Second)
	r.run(t)
	task := watchTask(t, st, r.px, "never")
	waitFor(t, "the task followed", func() bool {
		_, states, _ := logged(t, r.relay, task)
		return slices.Contains(states, a2a.StateWorking)
	})
	notice := push.WatchdogNotice{Action: "orphaned", Reason: "silent", State: a2a.StateSubmitted, LetGo: true}
	if err := r.sub.Watchdog(context.Background(), agentName, task, notice); err != nil {
		t.Fatal(err)
	}
	_, states, meta := logged(t, r.relay, task)
	want := map[string]any{"action": "orphaned", "reason": "silent"}
	if got, _ := meta[push.WatchdogMetadataKey].(map[string]any); !mapsEqual(got, want) || states[len(states)-1] != a2a.StateWorking {
		t.Fatalf("notice %v in state %s", meta, states[len(states)-1])
	}
	waitFor(t, "the orphan let go", func() bool { return r.metrics.get().held == 0 })
	if err := r.sub.Watchdog(context.Background(), agentName, "no-config", notice); err != nil {
		t.Fatalf("a task without configs: %v", err)
	}
}

func mapsEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// A task whose configs were all deleted is let go.
func TestSubscriberLetsGoWithoutConfigs(t *testing.T) {
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	_, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	r := newReplica(t, st, url, "replica", time.Second)
	task := watchTask(t, st, r.px, "wait")
	if _, err := st.PushConfigs().Delete(context.Background(), agentName, task, "c1"); err != nil {
		t.Fatal(err)
	}
	r.run(t)
	waitFor(t, "the task out of the watched index", func() bool {
		refs, err := st.PushConfigs().Watched(context.Background(), 10)
		return err == nil && len(refs) == 0
	})
}

// TestSubscriberAsksInTheAgentsVersion: the subscriber asks an agent about
// a task in the version its consumers registered in, unless the agent has a
// version of its own (a bridged agent's), which it is then always asked in.
func TestSubscriberAsksInTheAgentsVersion(t *testing.T) {
	for _, tt := range []struct {
		name         string
		agent, asked a2a.Version
	}{
		{"the consumers' version", 0, a2a.V03},
		{"a bridged agent's own version", a2a.V10, a2a.V10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			t.Cleanup(func() { _ = st.Close() })
			agent, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
			r := newReplicaAsking(t, st, url, "replica", time.Second, discardQueue{}, tt.agent)
			task := watchTask(t, st, r.px, "parts 3 50ms")
			// The task's consumer registered in 0.3.
			c := store.PushConfig{Agent: agentName, TaskID: task, ID: "c1", Tenant: "acme", Version: a2a.V03, URL: "https://hooks.example/a2a"}
			if _, err := st.PushConfigs().Put(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			agent.ResetRequests()
			r.run(t)
			// The subscriber lets go of the task once it ended.
			waitFor(t, "the task out of the watched index", func() bool {
				refs, err := st.PushConfigs().Watched(context.Background(), 10)
				return err == nil && len(refs) == 0
			})
			asked := 0
			for _, req := range agent.Requests() {
				if req.Op.TaskID != task {
					continue
				}
				asked++
				if req.Op.Version != tt.asked {
					t.Errorf("%s asked in %s, want %s", req.Op.Method, req.Op.Version, tt.asked)
				}
			}
			if asked == 0 {
				t.Fatal("the agent was never asked about the task")
			}
		})
	}
}
