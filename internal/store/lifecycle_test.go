package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// lcTime is when the records of these tests were created.
func lcTime() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC) }

func lcRec(agent, id, tenant, state string, active time.Duration) store.TaskLifecycle {
	return store.TaskLifecycle{
		Agent: agent, TaskID: id, Tenant: tenant, State: state, Version: "1.0",
		StateSince: lcTime(), Created: lcTime(), LastActivity: lcTime().Add(active),
	}
}

func mustSave(t testing.TB, l store.Lifecycle, rec store.TaskLifecycle, ttl time.Duration) int64 {
	t.Helper()
	rev, ok, err := l.Save(context.Background(), rec, ttl)
	if err != nil || !ok {
		t.Fatalf("Save(%q, %q) = %d, %v, %v", rec.Agent, rec.TaskID, rev, ok, err)
	}
	return rev
}

func listIDs(t *testing.T, l store.Lifecycle, f store.LifecycleFilter) []string {
	t.Helper()
	recs, next, err := l.List(testContext(t), f, "", store.MaxLifecycleListLimit)
	if err != nil || next != "" {
		t.Fatalf("List(%+v): cursor %q, %v", f, next, err)
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.TaskID
	}
	return ids
}

// TestLifecycleRedisKeyLayout pins the documented keys and fields, which
// operators read and which must not change under running gateways.
func TestLifecycleRedisKeyLayout(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	l := store.NewRedis(client, store.Options{KeyPrefix: "lc-test"}).Lifecycle()
	rec := lcRec("bill:ing", "t{1}", "acme:x", "working", time.Second)
	rec.Subject, rec.ContextID, rec.Subscribers, rec.Escalated = "alice", "c1", 2, true
	rec.History = []store.TaskTransition{{To: "working", At: lcTime()}}
	rev := mustSave(t, l, rec, time.Hour)

	const record = "lc-test:lc:{bill%3Aing:t:t%7B1%7D}"
	fields, err := client.HGetAll(ctx, record).Result()
	if err != nil {
		t.Fatalf("HGETALL: %v", err)
	}
	want := map[string]string{
		"v": "1", "rev": fmt.Sprint(rev), "ten": "acme:x", "sub": "alice", "ctx": "c1", "ver": "1.0", "st": "working",
		"since": "2026-03-04T05:06:07.000000008Z", "crt": "2026-03-04T05:06:07.000000008Z", "act": "2026-03-04T05:06:08.000000008Z",
		"hist": `[{"from":"","to":"working","at":"2026-03-04T05:06:07.000000008Z"}]`,
		"subs": "2", "end": "", "esc": "1", "hold": "0",
	}
	if !maps.Equal(fields, want) {
		t.Errorf("record fields =\n %v\nwant\n %v", fields, want)
	}
	if ttl := client.PTTL(ctx, record).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("record PTTL = %s, want within the one-hour ttl", ttl)
	}

	const base = "lc-test:lcx:{bill%3Aing}"
	score := float64(lcTime().Add(time.Second).UnixMicro())
	for _, k := range []string{":all", ":s:working", ":open", ":t:acme%3Ax", ":ts:acme%3Ax:working", ":to:acme%3Ax"} {
		got, err := client.ZScore(ctx, base+k, "t%7B1%7D").Result()
		if err != nil || got != score {
			t.Errorf("ZSCORE %s = %v, %v; want %v", base+k, got, err, score)
		}
	}
	if got := client.HGet(ctx, base+":m", "t%7B1%7D").Val(); got != fmt.Sprintf("%d|working|1|acme%%3Ax", rev) {
		t.Errorf("index entry = %q", got)
	}
	if _, err := client.ZScore(ctx, base+":exp", "t%7B1%7D").Result(); err != nil {
		t.Errorf("no expiry entry: %v", err)
	}

	if ok, err := l.Lease(ctx, "watch:dog", "replica-a", time.Minute); err != nil || !ok {
		t.Fatalf("Lease = %v, %v", ok, err)
	}
	if got := client.Get(ctx, "lc-test:lease:{watch%3Adog}").Val(); got != "replica-a" {
		t.Errorf("lease value = %q, want the holder", got)
	}
}

// TestLifecycleRedisStaleIndexEntries checks what the two-step Save promises
// when its index step never ran: List skips entries whose record is gone or
// no longer matches, and the next Save or Delete repairs the indexes.
func TestLifecycleRedisStaleIndexEntries(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	l := store.NewRedis(client, store.Options{KeyPrefix: "stale"}).Lifecycle()
	const (
		record  = "stale:lc:{agent:t:t1}"
		working = "stale:lcx:{agent}:s:working"
		done    = "stale:lcx:{agent}:s:completed"
	)
	mustSave(t, l, lcRec("agent", "t1", "acme", "working", 0), 0)
	mustSave(t, l, lcRec("agent", "t2", "acme", "working", time.Second), 0)

	// The record completed, but the index step after its compare-and-set
	// was lost.
	if err := client.HSet(ctx, record, "st", "completed").Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.HIncrBy(ctx, record, "rev", 1).Err(); err != nil {
		t.Fatal(err)
	}
	// And an index entry names a record that is gone.
	if err := client.ZAdd(ctx, working, redis.Z{Score: 1, Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	workingOnly := store.LifecycleFilter{Agent: "agent", State: "working"}
	if got := listIDs(t, l, workingOnly); !slicesEqual(got, "t2") {
		t.Fatalf("working = %q, want only t2", got)
	}
	for _, limit := range []int{1, 2} {
		recs, _, err := l.List(ctx, workingOnly, "", limit)
		if err != nil || len(recs) != 1 || recs[0].TaskID != "t2" {
			t.Fatalf("first page of %d past stale entries = %v, %v; want t2", limit, recs, err)
		}
	}

	// The next Save moves the record to the index it belongs in.
	rec, ok, err := l.Get(ctx, "agent", "t1")
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	mustSave(t, l, rec, 0)
	if err := client.ZScore(ctx, working, "t1").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("t1 still in the working index after its next Save: %v", err)
	}
	if got := listIDs(t, l, store.LifecycleFilter{Agent: "agent", State: "completed"}); !slicesEqual(got, "t1") {
		t.Errorf("completed = %q, want t1", got)
	}
	if n := client.ZCard(ctx, done).Val(); n != 1 {
		t.Errorf("completed index holds %d entries, want 1", n)
	}

	// Delete of a record that is gone cleans up after it. The ghost has no
	// entry in the hash of indexed tasks, so only its own index entry
	// shows; the record t3 below shows the whole clean-up.
	mustSave(t, l, lcRec("agent", "t3", "globex", "failed", 0), 0)
	if err := client.Del(ctx, "stale:lc:{agent:t:t3}").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Delete(ctx, "agent", "t3"); err != nil || ok {
		t.Fatalf("Delete of a vanished record = %v, %v; want false", ok, err)
	}
	for _, k := range []string{":all", ":s:failed", ":t:globex", ":ts:globex:failed"} {
		if err := client.ZScore(ctx, "stale:lcx:{agent}"+k, "t3").Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("t3 still in %s: %v", k, err)
		}
	}
	counts, err := l.CountByState(ctx, "agent")
	if err != nil || !maps.Equal(counts, map[string]int{"working": 2, "completed": 1}) {
		t.Errorf("CountByState = %v, %v; want the ghost still counted until it is cleaned", counts, err)
	}
}

// TestLifecycleRedisConcurrentSaves checks that Saves made at the same
// time, which go out together, each get their own outcome: every new
// record of two agents is saved and indexed, of two creates of one task
// exactly one wins, and a stale revision loses. Together they cost fewer
// round trips than one per Save.
func TestLifecycleRedisConcurrentSaves(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{KeyPrefix: "batch"})
	l := s.Lifecycle()
	var trips atomic.Int64
	store.Observe(s, func(string, bool, time.Duration, bool) { trips.Add(1) })
	// Loads the scripts, so the count below is the steady state.
	stale := lcRec("a", "stale", "acme", "working", 0)
	mustSave(t, l, stale, 0)
	trips.Store(0)

	const tasks = 100
	type outcome struct {
		rev int64
		ok  bool
		err error
	}
	outcomes := make([]outcome, 2*tasks+2)
	var wg sync.WaitGroup
	save := func(i int, rec store.TaskLifecycle) {
		defer wg.Done()
		rev, ok, err := l.Save(ctx, rec, 0)
		outcomes[i] = outcome{rev, ok, err}
	}
	for i := range tasks {
		wg.Add(2)
		go save(2*i, lcRec("a", fmt.Sprint("t", i), "acme", "working", time.Duration(i)))
		go save(2*i+1, lcRec("b", fmt.Sprint("t", i), "globex", "completed", time.Duration(i)))
	}
	wg.Add(3)
	go save(2*tasks, lcRec("a", "twice", "acme", "working", 0))
	go save(2*tasks+1, lcRec("a", "twice", "acme", "working", 0))
	var staleErr error
	go func() {
		defer wg.Done()
		// Rev 0 says no record may exist, but one does.
		_, ok, err := l.Save(ctx, stale, 0)
		if ok || err != nil {
			staleErr = fmt.Errorf("Save on a stale revision = %v, %v; want false, nil", ok, err)
		}
	}()
	wg.Wait()
	if staleErr != nil {
		t.Error(staleErr)
	}
	for i, o := range outcomes[:2*tasks] {
		if !o.ok || o.err != nil || o.rev <= 0 {
			t.Errorf("Save %d = %+v, want saved", i, o)
		}
	}
	if a, b := outcomes[2*tasks], outcomes[2*tasks+1]; a.ok == b.ok || a.err != nil || b.err != nil {
		t.Errorf("two creates of one task = %+v and %+v, want exactly one saved", a, b)
	}
	if n := trips.Load(); n >= 2*tasks+3 {
		t.Errorf("%d round trips for %d Saves, want fewer than one per Save", n, 2*tasks+3)
	}
	if got := listIDs(t, l, store.LifecycleFilter{Agent: "a", State: "working"}); len(got) != tasks+2 {
		t.Errorf("agent a has %d working records indexed, want %d", len(got), tasks+2)
	}
	if got := listIDs(t, l, store.LifecycleFilter{Agent: "b", Tenant: "globex", State: "completed"}); len(got) != tasks {
		t.Errorf("agent b has %d completed records of globex indexed, want %d", len(got), tasks)
	}
	counts, err := l.CountByState(ctx, "b")
	if err != nil || !maps.Equal(counts, map[string]int{"completed": tasks}) {
		t.Errorf("CountByState(b) = %v, %v", counts, err)
	}
}

// TestLifecycleRedisCorruptRecord checks that a record the store cannot read
// is reported as an error naming it, not as an outage, and is not changed.
func TestLifecycleRedisCorruptRecord(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	l := store.NewRedis(client, store.Options{KeyPrefix: "corrupt"}).Lifecycle()
	mustSave(t, l, lcRec("agent", "t", "acme", "working", 0), 0)
	const record = "corrupt:lc:{agent:t:t}"
	for _, tt := range []struct{ field, value, want string }{
		{"v", "9", "unknown format version"},
		{"act", "yesterday", "act"},
		{"hist", "{", "hist"},
		{"st", "open", "st"},
		{"hold", "yes", "hold"},
	} {
		t.Run(tt.field, func(t *testing.T) {
			if err := client.HSet(ctx, record, tt.field, tt.value).Err(); err != nil {
				t.Fatal(err)
			}
			before := client.Dump(ctx, record).Val()
			_, _, getErr := l.Get(ctx, "agent", "t")
			_, _, listErr := l.List(ctx, store.LifecycleFilter{Agent: "agent"}, "", 10)
			for name, err := range map[string]error{"Get": getErr, "List": listErr} {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), record) {
					t.Errorf("%s: err = %v, want one naming %q and %s", name, err, record, tt.want)
				}
				if errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s: %v satisfies ErrUnavailable", name, err)
				}
			}
			if after := client.Dump(ctx, record).Val(); after != before {
				t.Error("reading a corrupt record changed it")
			}
			rec := lcRec("agent", "t", "acme", "working", 0)
			if err := client.Del(ctx, record).Err(); err != nil {
				t.Fatal(err)
			}
			mustSave(t, l, rec, 0)
		})
	}
}

// TestLifecycleOutage checks that a stopped Redis is reported as
// ErrUnavailable by every method, and that the store recovers.
func TestLifecycleOutage(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := redistest.Start(t)
	s, _ := open(t, store.Options{Redis: store.RedisOptions{
		Addrs:       []string{srv.Addr()},
		DialTimeout: duration.Duration(timeout), ReadTimeout: duration.Duration(timeout), WriteTimeout: duration.Duration(timeout),
	}})
	l := s.Lifecycle()
	rec := lcRec("agent", "t", "acme", "working", 0)
	rec.Rev = mustSave(t, l, rec, 0)

	srv.Stop(t)
	ops := map[string]func(context.Context) error{
		"Get":  func(ctx context.Context) error { _, _, err := l.Get(ctx, "agent", "t"); return err },
		"Save": func(ctx context.Context) error { _, _, err := l.Save(ctx, rec, 0); return err },
		"List": func(ctx context.Context) error {
			_, _, err := l.List(ctx, store.LifecycleFilter{Agent: "agent"}, "", 10)
			return err
		},
		"CountByState": func(ctx context.Context) error { _, err := l.CountByState(ctx, "agent"); return err },
		"Delete":       func(ctx context.Context) error { _, err := l.Delete(ctx, "agent", "t"); return err },
		"Lease":        func(ctx context.Context) error { _, err := l.Lease(ctx, "n", "h", time.Second); return err },
	}
	for name, op := range ops {
		err := op(testContext(t))
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s during the outage: err = %v, want ErrUnavailable", name, err)
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("%s during the outage: err = %v came from the caller's context, not the store's timeouts", name, err)
		}
	}

	// The restarted server has lost its data and its script cache; both
	// must be recovered from transparently.
	srv.Restart(t)
	eventually(t, func() error { return s.Ping(testContext(t)) })
	mustSave(t, l, lcRec("agent", "t", "acme", "working", 0), 0)
	if got := listIDs(t, l, store.LifecycleFilter{Agent: "agent", State: store.LifecycleOpen}); !slicesEqual(got, "t") {
		t.Fatalf("open after the restart = %q", got)
	}
}

func TestLifecycleMemoryEvictsLeastRecentlyActive(t *testing.T) {
	s := store.NewMemory(store.Options{Memory: store.MemoryOptions{MaxEntries: 3}})
	t.Cleanup(func() { _ = s.Close() })
	l := s.Lifecycle()
	ctx := testContext(t)
	held := lcRec("agent", "held", "acme", "completed", 0)
	held.LegalHold = true
	mustSave(t, l, held, 0)
	mustSave(t, l, lcRec("agent", "recent", "acme", "working", 3*time.Second), 0)
	mustSave(t, l, lcRec("agent", "idle", "acme", "working", time.Second), 0)
	mustSave(t, l, lcRec("agent", "new", "acme", "working", 2*time.Second), 0)
	if got := listIDs(t, l, store.LifecycleFilter{Agent: "agent"}); !slicesEqual(got, "held", "new", "recent") {
		t.Fatalf("records = %q; want the least recently active evicted, never the held one", got)
	}

	// With every record held, a new one is refused rather than breaking a
	// hold or the bound; existing records can still be saved.
	for _, id := range []string{"new", "recent"} {
		rec, _, err := l.Get(ctx, "agent", id)
		if err != nil {
			t.Fatal(err)
		}
		rec.LegalHold = true
		mustSave(t, l, rec, 0)
	}
	if _, ok, err := l.Save(ctx, lcRec("agent", "one-too-many", "acme", "working", time.Hour), 0); err == nil || ok {
		t.Fatalf("Save into a store full of held records = %v, %v; want an error", ok, err)
	}
	rec, _, err := l.Get(ctx, "agent", "recent")
	if err != nil {
		t.Fatal(err)
	}
	rec.State = "completed"
	mustSave(t, l, rec, 0)
}

// TestLifecycleMemoryEvictsExpiredFirst checks that a full store drops
// expired records before it evicts a live one, however idle.
func TestLifecycleMemoryEvictsExpiredFirst(t *testing.T) {
	s := store.NewMemory(store.Options{Memory: store.MemoryOptions{MaxEntries: 2}})
	t.Cleanup(func() { _ = s.Close() })
	l := s.Lifecycle()
	ctx := testContext(t)
	mustSave(t, l, lcRec("agent", "idle", "acme", "working", 0), 0)
	mustSave(t, l, lcRec("agent", "expiring", "acme", "working", time.Hour), time.Millisecond)
	eventually(t, func() error {
		if _, ok, err := l.Get(ctx, "agent", "expiring"); err != nil || ok {
			return fmt.Errorf("expiring still there (%v)", err)
		}
		return nil
	})
	mustSave(t, l, lcRec("agent", "new", "acme", "working", time.Hour), 0)
	if got := listIDs(t, l, store.LifecycleFilter{Agent: "agent"}); !slicesEqual(got, "idle", "new") {
		t.Fatalf("records = %q, want idle and new", got)
	}
}

func slicesEqual(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// benchLifecycle measures what the gateway does per task event: read the
// record, then save it on the revision read.
func benchLifecycle(b *testing.B, s store.Store) {
	l := s.Lifecycle()
	ctx := context.Background()
	rec := lcRec("agent", "hot", "acme", "working", 0)
	for i := range store.MaxLifecycleHistory {
		rec.History = append(rec.History, store.TaskTransition{From: "working", To: "input-required", At: lcTime().Add(time.Duration(i))})
	}
	mustSave(b, l, rec, 0)
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok, err := l.Get(ctx, "agent", "hot"); err != nil || !ok {
					b.Fatalf("Get = %v, %v", ok, err)
				}
			}
		})
	})
	var seq atomic.Int64
	b.Run("Save", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			// Each goroutine updates its own task, as events of different
			// tasks do, so every Save wins its compare-and-set.
			mine := rec
			mine.TaskID = fmt.Sprint("task-", seq.Add(1))
			for pb.Next() {
				rev, ok, err := l.Save(ctx, mine, time.Hour)
				if err != nil || !ok {
					b.Fatalf("Save = %v, %v", ok, err)
				}
				mine.Rev = rev
				mine.LastActivity = mine.LastActivity.Add(time.Millisecond)
			}
		})
	})
}

func BenchmarkLifecycleMemory(b *testing.B) {
	s := store.NewMemory(store.Options{})
	b.Cleanup(func() { _ = s.Close() })
	benchLifecycle(b, s)
}

func BenchmarkLifecycleRedis(b *testing.B) {
	benchLifecycle(b, store.NewRedis(redistest.Start(b).Client(b), store.Options{}))
}
