package push

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// recordingQueue is an Enqueuer in front of the store's real queue that
// remembers what was enqueued, in order.
type recordingQueue struct {
	st store.DeliveryStore
	mu sync.Mutex
	ds []store.Delivery
}

func (q *recordingQueue) Enqueue(ctx context.Context, d store.Delivery) error {
	if _, err := enqueueOne(ctx, q.st, d); err != nil {
		return err
	}
	q.mu.Lock()
	q.ds = append(q.ds, d)
	q.mu.Unlock()
	return nil
}

func (q *recordingQueue) all() []store.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]store.Delivery(nil), q.ds...)
}

type relayHarness struct {
	st    store.Store
	relay *Relay
	queue *recordingQueue
}

func newRelayHarness(t *testing.T, policies *Policies) relayHarness {
	t.Helper()
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	q := &recordingQueue{st: st.Delivery()}
	r, err := NewRelay(RelayOptions{
		Configs: st.PushConfigs(), Events: st.EventLog(), Queue: q, Policies: policies,
		WebhookSecret: func(tenant string) []byte {
			if tenant == "acme" {
				return []byte(strings.Repeat("s", 32))
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return relayHarness{st: st, relay: r, queue: q}
}

func (h relayHarness) register(t *testing.T, c store.PushConfig) {
	t.Helper()
	if c.Agent == "" {
		c.Agent, c.TaskID, c.Tenant = "demo", "t1", "acme"
	}
	if _, err := h.st.PushConfigs().Put(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func (h relayHarness) publish(t *testing.T, kind a2a.EventKind, state a2a.State, payload string) Published {
	t.Helper()
	p, err := h.relay.Publish(context.Background(), Event{
		Agent: "demo", TaskID: "t1", ContextID: "c1", Version: a2a.V10, Kind: kind, State: state, Payload: []byte(payload),
	})
	if err != nil {
		t.Fatalf("Publish(%s): %v", payload, err)
	}
	return p
}

// The events of one task in 1.0, as an agent streams them.
var relayEvents = []struct {
	kind    a2a.EventKind
	state   a2a.State
	payload string
}{
	{a2a.EventTask, a2a.StateSubmitted, `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`},
	{a2a.EventStatusUpdate, a2a.StateWorking, `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`},
	{a2a.EventArtifactUpdate, a2a.StateUnknown, `{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"text":"one "}]}}}`},
	{a2a.EventArtifactUpdate, a2a.StateUnknown, `{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"text":"two"}]},"append":true,"lastChunk":true}}`},
	{a2a.EventStatusUpdate, a2a.StateCompleted, `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"metadata":{"k":"v"}}}`},
}

func TestRelayPublishRendersPerConsumerVersion(t *testing.T) {
	h := newRelayHarness(t, nil)
	h.register(t, store.PushConfig{ID: "new", Version: a2a.V10, URL: "https://a.example/hook", Token: "tok"})
	h.register(t, store.PushConfig{ID: "old", Version: a2a.V03, URL: "https://b.example/hook", AuthScheme: "Basic", AuthCredentials: "Zm9v"})
	for i, ev := range relayEvents {
		p := h.publish(t, ev.kind, ev.state, ev.payload)
		if p.Seq != int64(i+1) || p.Duplicate || p.ID != EventID([]byte(ev.payload)) || p.Terminal != (i == len(relayEvents)-1) {
			t.Fatalf("event %d: %+v", i, p)
		}
	}
	ds := h.queue.all()
	if len(ds) != 2*len(relayEvents) {
		t.Fatalf("%d deliveries for %d events and 2 configs", len(ds), len(relayEvents))
	}
	var v03 []Request
	for i, d := range ds {
		r, err := DecodePayload(d.Payload)
		if err != nil {
			t.Fatal(err)
		}
		ev := relayEvents[i/2]
		if d.ID != EventID([]byte(ev.payload)) || d.TaskID != "t1" {
			t.Fatalf("delivery %d: id %s task %s", i, d.ID, d.TaskID)
		}
		switch d.Endpoint {
		case "*/demo/t1/new":
			if string(r.Body) != ev.payload || r.ContentType != "application/a2a+json" || r.Token != "tok" || string(r.WebhookSecret) != strings.Repeat("s", 32) {
				t.Fatalf("1.0 delivery %d: %+v", i, r)
			}
		case "*/demo/t1/old":
			if r.ContentType != "application/json" || r.AuthScheme != "Basic" || r.AuthCredentials != "Zm9v" {
				t.Fatalf("0.3 delivery %d: %+v", i, r)
			}
			v03 = append(v03, r)
		default:
			t.Fatalf("delivery %d to endpoint %q", i, d.Endpoint)
		}
	}
	want := []string{
		`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"}}`,
		`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"}}`,
		`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"one "}]}]}`,
		`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"one "},{"kind":"text","text":"two"}]}]}`,
		`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"one "},{"kind":"text","text":"two"}]}],"metadata":{"k":"v"}}`,
	}
	for i, r := range v03 {
		if canon(t, r.Body) != canon(t, []byte(want[i])) {
			t.Fatalf("0.3 notification %d:\n got %s\nwant %s", i, r.Body, want[i])
		}
	}
	// The terminal event took the task out of the watched index.
	if refs, err := h.st.PushConfigs().Watched(context.Background(), 10); err != nil || len(refs) != 0 {
		t.Fatalf("Watched after the terminal event: %v, %v", refs, err)
	}
	// The log replays what was published.
	logged, found, err := h.relay.Replay(context.Background(), "demo", "t1", EventID([]byte(relayEvents[2].payload)), 10)
	if err != nil || !found || len(logged) != 2 || string(logged[1].Payload) != relayEvents[4].payload {
		t.Fatalf("Replay = %+v, %v, %v", logged, found, err)
	}
}

// The same event from a second source is logged once and enqueued again,
// which the queue ignores: no second delivery, and the 0.3 snapshot is not
// folded twice.
func TestRelayPublishDuplicate(t *testing.T) {
	h := newRelayHarness(t, nil)
	h.register(t, store.PushConfig{ID: "old", Version: a2a.V03, URL: "https://b.example/hook"})
	for _, i := range []int{0, 2, 2} {
		h.publish(t, relayEvents[i].kind, relayEvents[i].state, relayEvents[i].payload)
	}
	// Another source's copy: other member order and white space.
	again := h.publish(t, a2a.EventArtifactUpdate, a2a.StateUnknown, `{ "artifactUpdate": {"contextId":"c1","taskId":"t1","artifact":{"parts":[{"text":"one "}],"artifactId":"a"}}}`)
	if !again.Duplicate || again.Seq != 2 {
		t.Fatalf("a reordered copy: %+v; want the duplicate of event 2", again)
	}
	n, _, err := h.st.Delivery().Depth(context.Background(), "*/demo/t1/old")
	if err != nil || n != 2 {
		t.Fatalf("queued %d, %v; want 2", n, err)
	}
	_, snap, _, err := h.st.EventLog().Snapshot(context.Background(), "demo", "t1")
	if err != nil || strings.Count(string(snap), "one ") != 1 {
		t.Fatalf("snapshot %s, %v: the artifact folded more than once", snap, err)
	}
}

// A 410 from a receiver deletes its config: at the next event (the queue
// refuses the disabled endpoint), or at once through EndpointDisabled.
func TestRelayDropsConfigsOfDisabledEndpoints(t *testing.T) {
	h := newRelayHarness(t, nil)
	ctx := context.Background()
	h.register(t, store.PushConfig{ID: "a", Version: a2a.V10, URL: "https://a.example/hook"})
	h.register(t, store.PushConfig{ID: "b", Version: a2a.V10, URL: "https://b.example/hook"})
	if _, err := h.st.Delivery().DisableEndpoint(ctx, "*/demo/t1/a", "gone"); err != nil {
		t.Fatal(err)
	}
	h.publish(t, relayEvents[0].kind, relayEvents[0].state, relayEvents[0].payload)
	if _, ok, _ := h.st.PushConfigs().Get(ctx, "demo", "t1", "a"); ok {
		t.Fatal("the config of a disabled endpoint is still there")
	}
	h.relay.EndpointDisabled("*/demo/t1/b")
	if _, ok, _ := h.st.PushConfigs().Get(ctx, "demo", "t1", "b"); ok {
		t.Fatal("EndpointDisabled left the config")
	}
}

func TestRelayRefusesNonTaskEvents(t *testing.T) {
	h := newRelayHarness(t, nil)
	for _, ev := range []Event{
		{Agent: "demo", TaskID: "t1", Kind: a2a.EventMessage, Payload: []byte(`{}`)},
		{Agent: "demo", Kind: a2a.EventTask, Payload: []byte(`{}`)},
		{Agent: "demo", TaskID: "t1", Kind: a2a.EventTask},
	} {
		if _, err := h.relay.Publish(context.Background(), ev); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Publish(%+v): %v", ev, err)
		}
	}
}

func TestEndpointNames(t *testing.T) {
	def, err := NewURLPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPolicies(def, map[string]*URLPolicy{"acme": def})
	long := strings.Repeat("t", 510)
	for _, tc := range []struct {
		c      store.PushConfig
		want   string
		parsed bool
	}{
		{store.PushConfig{Tenant: "acme", Agent: "demo", TaskID: "t/1 x", ID: "c%"}, "acme/demo/t%2F1%20x/c%25", true},
		{store.PushConfig{Tenant: "globex", Agent: "demo", TaskID: "t", ID: "c"}, "*/demo/t/c", true},
		{store.PushConfig{Tenant: "acme", Agent: "demo", TaskID: long, ID: "c"}, "", false},
	} {
		ep := p.endpoint(tc.c)
		if tc.want != "" && ep != tc.want || len(ep) > store.MaxNameBytes {
			t.Fatalf("endpoint(%+v) = %q, want %q", tc.c, ep, tc.want)
		}
		got, ok := parseEndpoint(ep)
		if ok != tc.parsed || ok && (got.Agent != tc.c.Agent || got.TaskID != tc.c.TaskID || got.ID != tc.c.ID) {
			t.Fatalf("parseEndpoint(%q) = %+v, %v", ep, got, ok)
		}
		if pol := p.policyOf(ep); pol != p.key(tc.c.Tenant) {
			t.Fatalf("policyOf(%q) = %q", ep, pol)
		}
	}
}

func TestEventIDIgnoresEncoding(t *testing.T) {
	a := EventID([]byte(`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}`))
	b := EventID([]byte("{ \"statusUpdate\" : {\"status\":{\"state\":\"TASK_STATE_WORKING\"},\n\"taskId\":\"t\"} }"))
	c := EventID([]byte(`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}`))
	if a != b || a == c || len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("EventID: %s %s %s", a, b, c)
	}
	// Text without a canonical form still gets a stable id.
	if d := EventID([]byte(`{"a":1,"a":2}`)); d != EventID([]byte(`{"a":1,"a":2}`)) || len(d) != 32 {
		t.Fatalf("EventID of a duplicate member: %s", d)
	}
}

// canon re-encodes JSON with sorted keys.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// An event that cannot be rendered for one consumer does not hold back
// the others.
func TestRelaySkipsWhatCannotBeRendered(t *testing.T) {
	h := newRelayHarness(t, nil)
	h.register(t, store.PushConfig{ID: "new", Version: a2a.V10, URL: "https://a.example/hook"})
	h.register(t, store.PushConfig{ID: "old", Version: a2a.V03, URL: "https://b.example/hook"})
	// Said to be an artifact update, but a task: the 0.3 snapshot cannot
	// take it.
	h.publish(t, a2a.EventArtifactUpdate, a2a.StateUnknown, `{"task":{"id":"t1","status":{"state":"TASK_STATE_WORKING"}}}`)
	ds := h.queue.all()
	if len(ds) != 1 || ds[0].Endpoint != "*/demo/t1/new" {
		t.Fatalf("deliveries %+v; want the 1.0 one only", ds)
	}
}

// enqueueOne enqueues d alone.
func enqueueOne(ctx context.Context, s store.DeliveryStore, d store.Delivery) (bool, error) {
	queued, errs := s.EnqueueAll(ctx, []store.Delivery{d})
	return queued[0], errs[0]
}
