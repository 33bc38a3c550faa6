package push

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// batchRecorder is the deliverer as the relay's queue, remembering how
// each event's notifications were handed over.
type batchRecorder struct {
	*Deliverer
	mu      sync.Mutex
	singles int
	batches [][]store.Delivery
}

func (b *batchRecorder) Enqueue(ctx context.Context, n store.Delivery) error {
	b.mu.Lock()
	b.singles++
	b.mu.Unlock()
	return b.Deliverer.Enqueue(ctx, n)
}

func (b *batchRecorder) EnqueueAll(ctx context.Context, ns []store.Delivery) []error {
	b.mu.Lock()
	b.batches = append(b.batches, slices.Clone(ns))
	b.mu.Unlock()
	return b.Deliverer.EnqueueAll(ctx, ns)
}

func redisStore(t *testing.T) store.Store {
	t.Helper()
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// An event of a task with several push configs is enqueued for all of
// them in one batch; a disabled endpoint's config is deleted, the others
// are queued.
func TestRelayEnqueuesEveryConfigAtOnce(t *testing.T) {
	ctx := context.Background()
	st := redisStore(t)
	q := &batchRecorder{Deliverer: NewDeliverer(st.Delivery(), nil, DeliveryOptions{}, nil, nil)}
	r, err := NewRelay(RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	var configs []store.PushConfig
	for _, id := range []string{"a", "b", "gone"} {
		c := store.PushConfig{Agent: "demo", TaskID: "t1", ID: id, Tenant: "acme", Version: a2a.V10, URL: "https://" + id + ".example/hook"}
		if _, err := st.PushConfigs().Put(ctx, c); err != nil {
			t.Fatal(err)
		}
		configs = append(configs, c)
	}
	if _, err := st.Delivery().DisableEndpoint(ctx, r.policies.endpoint(configs[2]), "410 Gone"); err != nil {
		t.Fatal(err)
	}
	ev := relayEvents[1]
	p, err := r.Publish(ctx, Event{Agent: "demo", TaskID: "t1", Version: a2a.V10, Kind: ev.kind, State: ev.state, Payload: []byte(ev.payload)})
	if err != nil {
		t.Fatal(err)
	}
	if q.singles != 0 || len(q.batches) != 1 || len(q.batches[0]) != 3 {
		t.Fatalf("enqueued %d one by one and batches %v; want one batch of three", q.singles, q.batches)
	}
	for _, c := range configs[:2] {
		n, _, ok, err := readHead(ctx, st.Delivery(), r.policies.endpoint(c))
		if err != nil || !ok || n.ID != p.ID {
			t.Fatalf("config %s: queue head %+v, %v, %v; want %s", c.ID, n, ok, err, p.ID)
		}
	}
	left, err := st.PushConfigs().List(ctx, "demo", "t1")
	if err != nil || len(left) != 2 || left[0].ID != "a" || left[1].ID != "b" {
		t.Fatalf("configs left %+v, %v; want a and b", left, err)
	}
}

// EnqueueAll answers per notification what Enqueue would, in one round
// trip on Redis and one by one in memory.
func TestDelivererEnqueueAll(t *testing.T) {
	stores := map[string]store.Store{"memory": store.NewMemory(store.Options{}), "redis": redisStore(t)}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			t.Cleanup(func() { _ = st.Close() })
			if _, err := st.Delivery().DisableEndpoint(ctx, "ep-off", "410 Gone"); err != nil {
				t.Fatal(err)
			}
			d := NewDeliverer(st.Delivery(), nil, DeliveryOptions{}, nil, nil)
			n := func(ep, id string) store.Delivery {
				return store.Delivery{ID: id, Endpoint: ep, TaskID: "t1", Payload: []byte("{}"), Enqueued: time.Now()}
			}
			errs := d.EnqueueAll(ctx, []store.Delivery{n("ep-a", "e1"), n("ep-a", "bad.id"), n("ep-off", "e1"), n("ep-b", "e1"), n("ep-a", "e1")})
			want := []error{nil, store.ErrInvalidArgument, store.ErrEndpointDisabled, nil, nil}
			for i := range want {
				if !errors.Is(errs[i], want[i]) || (want[i] == nil) != (errs[i] == nil) {
					t.Errorf("notification %d: %v, want %v", i, errs[i], want[i])
				}
			}
			for _, ep := range []string{"ep-a", "ep-b"} {
				if h, _, ok, err := readHead(ctx, st.Delivery(), ep); err != nil || !ok || h.ID != "e1" {
					t.Fatalf("%s: head %+v, %v, %v; want e1", ep, h, ok, err)
				}
			}
		})
	}
}

// A publication names the event with the id the caller has, and marks the
// task live only for a client's stream.
func TestRelayIDAndLiveMark(t *testing.T) {
	ctx := context.Background()
	st := redisStore(t)
	r, err := NewRelay(RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: discard{}, LiveTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ev := relayEvents[0]
	base := Event{Agent: "demo", TaskID: "t1", Version: a2a.V10, Kind: ev.kind, State: ev.state, Payload: []byte(ev.payload)}
	for _, tc := range []struct {
		name   string
		id     string
		live   bool
		wantID string
	}{
		{"computed", "", false, EventID(base.Payload)},
		{"named by the stream", "stream-named", true, "stream-named"},
	} {
		e := base
		e.ID, e.Live = tc.id, tc.live
		p, err := r.Publish(ctx, e)
		if err != nil || p.ID != tc.wantID {
			t.Fatalf("%s: published as %q, %v; want %q", tc.name, p.ID, err, tc.wantID)
		}
		left, err := r.Live(ctx, "demo", "t1")
		if err != nil || (left > 0) != tc.live || left > time.Minute {
			t.Fatalf("%s: live for %v, %v; want live %v", tc.name, left, err, tc.live)
		}
	}
	if _, err := NewRelay(RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: discard{}, LiveTTL: -time.Second}); err == nil {
		t.Fatal("a negative live TTL was accepted")
	}
}

// discard takes every notification and keeps none.
type discard struct{}

func (discard) Enqueue(context.Context, store.Delivery) error { return nil }

// The event of a task whose lone 1.0 push config is the one its event
// before found is logged and enqueued in one round trip; once the config
// changed, its notification goes to the config as it is now, and once it
// is deleted, nowhere.
func TestRelayLogsAndEnqueuesInOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := redisStore(t)
	var trips atomic.Int64
	store.Observe(st, func(string, bool, time.Duration, bool) { trips.Add(1) })
	d := NewDeliverer(st.Delivery(), nil, DeliveryOptions{}, nil, nil)
	r, err := NewRelay(RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: d})
	if err != nil {
		t.Fatal(err)
	}
	c := store.PushConfig{Agent: "demo", TaskID: "t1", ID: "a", Tenant: "acme", Version: a2a.V10, URL: "https://a.example/hook"}
	if _, err := st.PushConfigs().Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	publish := func(i int) Published {
		t.Helper()
		ev := relayEvents[i]
		p, err := r.Publish(ctx, Event{Agent: "demo", TaskID: "t1", Version: a2a.V10, Kind: ev.kind, State: ev.state, Payload: []byte(ev.payload)})
		if err != nil || p.Seq != int64(i+1) {
			t.Fatalf("event %d: %+v, %v", i, p, err)
		}
		return p
	}
	ep := r.policies.endpoint(c)
	// The first event learns the config; the second loads the script.
	publish(0)
	publish(1)
	trips.Store(0)
	publish(2)
	if n := trips.Load(); n != 1 {
		t.Fatalf("the third event took %d round trips, want 1", n)
	}
	urls := func() []string {
		t.Helper()
		heads, err := st.Delivery().AckHeads(ctx, ep, nil, "", store.MaxHeadsPerRead)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range heads {
			req, err := DecodePayload(h.Payload)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, req.URL)
		}
		return out
	}
	if got := urls(); len(got) != 3 {
		t.Fatalf("queued %v, want three notifications", got)
	}

	c.URL = "https://b.example/hook"
	if _, err := st.PushConfigs().Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	publish(3)
	if got := urls(); len(got) != 4 || got[3] != c.URL {
		t.Fatalf("queued %v, want the fourth to %s", got, c.URL)
	}
	if _, err := st.PushConfigs().Delete(ctx, "demo", "t1", "a"); err != nil {
		t.Fatal(err)
	}
	publish(4)
	if got := urls(); len(got) != 4 {
		t.Fatalf("queued %v after the config was deleted, want four", got)
	}
}
