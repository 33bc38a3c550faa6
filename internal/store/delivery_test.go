package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/store/storetest"
)

func delivery(endpoint, id string) store.Delivery {
	return store.Delivery{ID: id, Endpoint: endpoint, TaskID: "task", Payload: []byte("body " + id), Enqueued: time.Unix(1_772_600_000, 5).UTC()}
}

func mustEnqueue(t *testing.T, s store.DeliveryStore, d store.Delivery) {
	t.Helper()
	if queued, err := storetest.EnqueueOne(testContext(t), s, d); err != nil || !queued {
		t.Fatalf("Enqueue(%q, %q) = %v, %v", d.Endpoint, d.ID, queued, err)
	}
}

func queueIDs(t *testing.T, s store.DeliveryStore, endpoint string) []string {
	t.Helper()
	var ids []string
	for {
		d, _, ok, err := storetest.ReadHead(testContext(t), s, endpoint)
		if err != nil {
			t.Fatalf("Head(%q): %v", endpoint, err)
		}
		if !ok {
			return ids
		}
		ids = append(ids, d.ID)
		if _, err := s.AckHeads(testContext(t), endpoint, []string{d.ID}, "", 1); err != nil {
			t.Fatalf("AckHead(%q, %q): %v", endpoint, d.ID, err)
		}
	}
}

// TestDeliveryRedisKeyLayout pins the documented keys, which operators read
// and which must not change under running gateways.
func TestDeliveryRedisKeyLayout(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{KeyPrefix: "dq-test"}).Delivery()
	// FNV-1a("acme:agent:t1:cfg") % 64 is 21; the test pins that too.
	const (
		ep   = "acme:agent:t1:cfg"
		base = "dq-test:dq:{21}"
		esc  = "acme%3Aagent%3At1%3Acfg"
	)
	mustEnqueue(t, s, delivery(ep, "t1:1"))
	mustEnqueue(t, s, delivery(ep, "t1:2"))
	if err := s.RecordAttempt(ctx, ep, "t1:1", store.Attempt{At: time.Unix(1_772_600_001, 0), Status: 503, Latency: time.Millisecond, Err: "503"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimEndpoint(ctx, ep, "replica-a", time.Minute); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}

	entries, err := client.XRange(ctx, base+":q:"+esc, "-", "+").Result()
	if err != nil || len(entries) != 2 {
		t.Fatalf("queue stream = %v, %v", entries, err)
	}
	wantEntry := map[string]any{"id": "t1:1", "task": "task", "enq": "1772600000000000005", "pl": "body t1:1"}
	if fmt.Sprint(entries[0].Values) != fmt.Sprint(wantEntry) {
		t.Errorf("queue entry = %v, want %v", entries[0].Values, wantEntry)
	}
	if got := client.ZScore(ctx, base+":ids:"+esc, "t1:2").Val(); got < 1e300 {
		t.Errorf("a queued id's marker = %v, want +inf", got)
	}
	if got := client.HGet(ctx, base+":att:"+esc, "t1:1").Val(); !strings.Contains(got, `"st":503`) {
		t.Errorf("attempt log = %q", got)
	}
	if got := client.Get(ctx, base+":lease:"+esc).Val(); got != "replica-a" {
		t.Errorf("lease = %q", got)
	}
	if got := client.Get(ctx, base+":n").Val(); got != "2" {
		t.Errorf("bucket count = %q, want 2", got)
	}
	if _, err := client.ZScore(ctx, base+":due", esc).Result(); err != nil {
		t.Errorf("due registry: %v", err)
	}
	if got := client.ZScore(ctx, base+":heads", esc).Val(); got != 1_772_600_000_000 {
		t.Errorf("head score = %v, want the Enqueued ms", got)
	}

	if err := s.DeadLetter(ctx, ep, "t1:1", "gave up", nil); err != nil {
		t.Fatal(err)
	}
	members := client.ZRange(ctx, base+":dead", 0, -1).Val()
	if len(members) != 1 || !strings.HasSuffix(members[0], "|"+esc+"|t1%3A1") || len(strings.Split(members[0], "|")[0]) != 13 {
		t.Fatalf("dead letter index = %q", members)
	}
	fields := client.HGetAll(ctx, base+":dl:"+esc+":t1%3A1").Val()
	if fields["v"] != "1" || fields["id"] != "t1:1" || fields["why"] != "gave up" || fields["m"] != members[0] || fields["pl"] != "body t1:1" {
		t.Errorf("dead letter hash = %v", fields)
	}
	if got := client.ZScore(ctx, base+":ids:"+esc, "t1:1").Val(); got > 1e300 || got < 1e12 {
		t.Errorf("a dead-lettered id's marker = %v, want when it left (ms)", got)
	}

	if _, err := s.DisableEndpoint(ctx, ep, "410"); err != nil {
		t.Fatal(err)
	}
	if got := client.Get(ctx, base+":off:"+esc).Val(); got != "410" {
		t.Errorf("disabled marker = %q", got)
	}
	if pttl := client.PTTL(ctx, base+":off:"+esc).Val(); pttl <= 0 || pttl > store.DisabledEndpointTTL {
		t.Errorf("disabled marker PTTL = %s", pttl)
	}
	// The drained queue's stream is gone; its id set expires.
	if n := client.Exists(ctx, base+":q:"+esc).Val(); n != 0 {
		t.Error("the stream of a drained queue was kept")
	}
	if pttl := client.PTTL(ctx, base+":ids:"+esc).Val(); pttl <= 0 || pttl > store.DeliveryIDRetention {
		t.Errorf("id set PTTL of a drained queue = %s, want within the retention", pttl)
	}
	if got := client.Get(ctx, base+":n").Val(); got != "0" {
		t.Errorf("bucket count after draining = %q", got)
	}
}

// TestDeliveryRedisSpreadsOverBuckets checks that endpoints land in many
// buckets, so the cluster shares the load.
func TestDeliveryRedisSpreadsOverBuckets(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{KeyPrefix: "spread"}).Delivery()
	for i := range 200 {
		mustEnqueue(t, s, delivery(fmt.Sprintf("tenant:agent:task-%d:cfg", i), "1"))
	}
	keys, err := client.Keys(ctx, "spread:dq:*:due").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 48 {
		t.Fatalf("200 endpoints use %d of 64 buckets", len(keys))
	}
}

// TestDeliveryRedisRestartKeepsUnacked checks, against a Redis killed and
// restarted from its append-only file, that everything acknowledged
// survives: queued deliveries in order with their attempt logs, acks,
// dead letters, remembered ids and leases.
func TestDeliveryRedisRestartKeepsUnacked(t *testing.T) {
	srv := redistest.Start(t, redistest.WithAOF(), redistest.WithArgs("--appendfsync", "always"))
	client := srv.Client(t)
	s := store.NewRedis(client, store.Options{KeyPrefix: "aof"}).Delivery()
	ctx := testContext(t)
	const n = 300
	for i := range n {
		mustEnqueue(t, s, delivery(fmt.Sprint("ep-", i%3), fmt.Sprintf("n-%03d", i)))
	}
	// ep-0: the first 40 delivered; ep-1: its head dead-lettered; ep-2:
	// its head has attempts.
	for range 40 {
		d, _, _, err := storetest.ReadHead(ctx, s, "ep-0")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AckHeads(ctx, "ep-0", []string{d.ID}, "", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeadLetter(ctx, "ep-1", "n-001", "gave up", nil); err != nil {
		t.Fatal(err)
	}
	att := store.Attempt{At: time.Unix(1_772_600_001, 0).UTC(), Status: 500, RetryAt: time.Unix(1_772_600_100, 0).UTC()}
	if err := s.RecordAttempt(ctx, "ep-2", "n-002", att); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimEndpoint(ctx, "ep-2", "replica-a", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}

	srv.Stop(t)
	srv.Restart(t)
	eventually(t, func() error { return client.Ping(testContext(t)).Err() })

	if ok, err := s.ClaimEndpoint(ctx, "ep-2", "replica-b", time.Hour); err != nil || ok {
		t.Errorf("the lease did not survive the restart: claim by another = %v, %v", ok, err)
	}
	head, atts, _, err := storetest.ReadHead(ctx, s, "ep-2")
	if err != nil || head.ID != "n-002" || len(atts) != 1 || !atts[0].RetryAt.Equal(att.RetryAt) {
		t.Errorf("attempt log after the restart = %+v, %v", atts, err)
	}
	if dl, ok, err := s.GetDeadLetter(ctx, "ep-1", "n-001"); err != nil || !ok || dl.Reason != "gave up" {
		t.Errorf("dead letter after the restart = %+v, %v, %v", dl, ok, err)
	}
	if queued, err := storetest.EnqueueOne(ctx, s, delivery("ep-0", "n-000")); err != nil || queued {
		t.Errorf("a delivered id was queued again after the restart: %v, %v", queued, err)
	}
	if total, _, err := s.Backlog(ctx); err != nil || total != n-40-1 {
		t.Errorf("Backlog after the restart = %d, %v; want %d", total, err, n-40-1)
	}
	for ep, skip := range map[string]int{"ep-0": 40, "ep-1": 1, "ep-2": 0} {
		var want []string
		for i := range n {
			if i%3 == int(ep[3]-'0') {
				want = append(want, fmt.Sprintf("n-%03d", i))
			}
		}
		if got := queueIDs(t, s, ep); !slices.Equal(got, want[skip:]) {
			t.Errorf("%s after the restart: %d deliveries %q..., want %d from %q", ep, len(got), got[:min(3, len(got))], len(want)-skip, want[skip])
		}
	}
}

// TestDeliveryOutage checks that a stopped Redis is reported as
// ErrUnavailable by the store's own timeouts, and that the store recovers.
func TestDeliveryOutage(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := redistest.Start(t)
	st, _ := open(t, store.Options{Redis: store.RedisOptions{
		Addrs:       []string{srv.Addr()},
		DialTimeout: duration.Duration(timeout), ReadTimeout: duration.Duration(timeout), WriteTimeout: duration.Duration(timeout),
	}})
	s := st.Delivery()
	mustEnqueue(t, s, delivery("ep", "a"))

	srv.Stop(t)
	ops := map[string]func(context.Context) error{
		"Enqueue": func(ctx context.Context) error {
			_, err := storetest.EnqueueOne(ctx, s, delivery("ep", "b"))
			return err
		},
		"Head":      func(ctx context.Context) error { _, _, _, err := storetest.ReadHead(ctx, s, "ep"); return err },
		"AckHead":   func(ctx context.Context) error { _, err := s.AckHeads(ctx, "ep", []string{"a"}, "", 1); return err },
		"Endpoints": func(ctx context.Context) error { _, err := s.Endpoints(ctx, 10); return err },
		"Backlog":   func(ctx context.Context) error { _, _, err := s.Backlog(ctx); return err },
		"Claim":     func(ctx context.Context) error { _, err := s.ClaimEndpoint(ctx, "ep", "h", time.Second); return err },
		"DeadLetters": func(ctx context.Context) error {
			_, _, err := s.DeadLetters(ctx, "", 10)
			return err
		},
	}
	for name, op := range ops {
		err := op(testContext(t))
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s during the outage: err = %v, want ErrUnavailable", name, err)
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("%s during the outage: err = %v came from the caller's context", name, err)
		}
	}
	// Without persistence the restarted server is empty; the store carries on.
	srv.Restart(t)
	eventually(t, func() error {
		_, err := storetest.EnqueueOne(testContext(t), s, delivery("ep", "b"))
		return err
	})
}

// TestDeliveryRedisCorruptEntry checks that an entry the store cannot read
// is an error naming its key, not an outage.
func TestDeliveryRedisCorruptEntry(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{KeyPrefix: "corrupt"}).Delivery()
	const key = "corrupt:dq:{21}:q:acme%3Aagent%3At1%3Acfg"
	if err := client.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"id", "x", "enq", "soon"}}).Err(); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := storetest.ReadHead(ctx, s, "acme:agent:t1:cfg")
	if err == nil || errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), key) {
		t.Fatalf("Head of a corrupt entry: %v, want an error naming %s", err, key)
	}
}

// TestDeliveryMemoryBounds checks the memory store's bound: remembered ids
// go first, then the oldest dead letters, and only then is Enqueue refused.
func TestDeliveryMemoryBounds(t *testing.T) {
	st := store.NewMemory(store.Options{Memory: store.MemoryOptions{MaxEntries: 4}})
	t.Cleanup(func() { _ = st.Close() })
	s := st.Delivery()
	ctx := testContext(t)
	for _, id := range []string{"a", "b", "c"} {
		mustEnqueue(t, s, delivery("ep", id))
	}
	// a delivered: remembered (3 entries); d fills the store.
	if _, err := s.AckHeads(ctx, "ep", []string{"a"}, "", 1); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, s, delivery("ep", "d"))
	// b dead-lettered: the dead letter is kept, a is forgotten.
	if err := s.DeadLetter(ctx, "ep", "b", "r", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetDeadLetter(ctx, "ep", "b"); !ok {
		t.Fatal("the dead letter was not kept")
	}
	// e evicts b's remembered id, f the dead letter, g is refused.
	mustEnqueue(t, s, delivery("ep", "e"))
	mustEnqueue(t, s, delivery("ep", "f"))
	if _, ok, _ := s.GetDeadLetter(ctx, "ep", "b"); ok {
		t.Fatal("the oldest dead letter was not evicted for a queued delivery")
	}
	if _, err := storetest.EnqueueOne(ctx, s, delivery("ep", "g")); !errors.Is(err, store.ErrQueueFull) {
		t.Fatalf("Enqueue into a full store: %v, want ErrQueueFull", err)
	}
	if got := queueIDs(t, s, "ep"); !slices.Equal(got, []string{"c", "d", "e", "f"}) {
		t.Fatalf("queue = %q; nothing queued may be evicted", got)
	}
	// a's id was forgotten to make room, so it may be queued again.
	if queued, err := storetest.EnqueueOne(ctx, s, delivery("ep", "a")); err != nil || !queued {
		t.Fatalf("Enqueue of a forgotten id = %v, %v", queued, err)
	}
}

// benchDelivery measures a delivery's store work on the success path:
// enqueue, then claim, read the head and its log, ack, release.
func benchDelivery(b *testing.B, s store.Store) {
	q := s.Delivery()
	ctx := context.Background()
	b.ReportAllocs()
	var seq int
	for b.Loop() {
		seq++
		ep := fmt.Sprint("ep-", seq%64)
		d := store.Delivery{ID: fmt.Sprint(seq), Endpoint: ep, TaskID: "t", Payload: make([]byte, 512)}
		if _, err := storetest.EnqueueOne(ctx, q, d); err != nil {
			b.Fatal(err)
		}
		if ok, err := q.ClaimEndpoint(ctx, ep, "bench", time.Minute); err != nil || !ok {
			b.Fatal(ok, err)
		}
		head, _, _, err := storetest.ReadHead(ctx, q, ep)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.AckHeads(ctx, ep, []string{head.ID}, "", 1); err != nil {
			b.Fatal(err)
		}
		if err := q.ReleaseEndpoint(ctx, ep, "bench", time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeliveryMemory(b *testing.B) {
	s := store.NewMemory(store.Options{})
	b.Cleanup(func() { _ = s.Close() })
	benchDelivery(b, s)
}

func BenchmarkDeliveryRedis(b *testing.B) {
	benchDelivery(b, store.NewRedis(redistest.Start(b, redistest.WithAOF()).Client(b), store.Options{}))
}
