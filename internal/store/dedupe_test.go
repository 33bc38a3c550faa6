package store_test

import (
	"context"
	"errors"
	"fmt"
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

const (
	hour = time.Hour
	// dedupeKeyOf is where the Redis store keeps tenant "acme:x", key "m{1}"
	// under prefix "dd-test": both escaped inside one hash tag.
	dedupeKeyOf = "dd-test:dd:{acme%3Ax:m%7B1%7D}"
)

// TestDedupeRedisKeyLayout pins the documented key and record layout,
// which operators read and every replica must agree on.
func TestDedupeRedisKeyLayout(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	d := store.NewRedis(client, store.Options{KeyPrefix: "dd-test"}).Dedupe()
	if _, _, err := d.Claim(ctx, "acme:x", "m{1}", "fp", "h1", time.Minute, hour); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if _, err := d.SetTask(ctx, "acme:x", "m{1}", "h1", "task-1"); err != nil {
		t.Fatalf("SetTask: %v", err)
	}
	// In flight, new: holder, fingerprint, task, lease and the expiry the
	// lease started with (the ttl, as it is longer than the lease).
	if got, want := client.Get(ctx, dedupeKeyOf).Val(), "in002h1002fp006task-1005600000073600000"; got != want {
		t.Errorf("in-flight record = %q, want %q", got, want)
	}
	if ttl := client.PTTL(ctx, dedupeKeyOf).Val(); ttl <= 0 || ttl > hour {
		t.Errorf("PTTL = %s, want within the one-hour ttl", ttl)
	}

	if _, err := d.Complete(ctx, "acme:x", "m{1}", "h1", []byte("r\x00"), 2*hour); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got, want := client.Get(ctx, dedupeKeyOf).Val(), "d-002h1002fp006task-1000000r\x00"; got != want {
		t.Errorf("done record = %q, want %q", got, want)
	}
	if ttl := client.PTTL(ctx, dedupeKeyOf).Val(); ttl <= hour {
		t.Errorf("PTTL after Complete = %s, want the two-hour ttl", ttl)
	}
}

// TestDedupeRedisRecordWithoutExpiry checks a record someone made
// persistent (PERSIST, or a restore without its TTL): with no expiry to date
// its lease by, the lease counts as run out, so a retry can take it over
// rather than wait on it forever.
func TestDedupeRedisRecordWithoutExpiry(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	d := store.NewRedis(client, store.Options{KeyPrefix: "dd-test"}).Dedupe()
	if _, _, err := d.Claim(ctx, "acme:x", "m{1}", "fp", "h1", hour, hour); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := client.Persist(ctx, dedupeKeyOf).Err(); err != nil {
		t.Fatalf("PERSIST: %v", err)
	}
	rec, ok, err := d.Get(ctx, "acme:x", "m{1}")
	if err != nil || !ok || !rec.LeaseExpired {
		t.Fatalf("Get = %+v, %v, %v; want an in-flight record whose lease ran out", rec, ok, err)
	}
	if _, out, err := d.Claim(ctx, "acme:x", "m{1}", "fp", "h2", hour, hour); err != nil || out != store.ClaimTakeover {
		t.Fatalf("Claim by a retry = %s, %v; want takeover", out, err)
	}
	if ttl := client.PTTL(ctx, dedupeKeyOf).Val(); ttl <= 0 {
		t.Errorf("PTTL after the takeover = %s, want the record to expire again", ttl)
	}
}

// roundTrips counts a client's round trips: one per command sent alone,
// one per pipeline.
type roundTrips struct {
	n atomic.Int64
}

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

func TestDedupeRedisIsOneRoundTrip(t *testing.T) {
	ctx := testContext(t)
	srv := redistest.Start(t)
	client, unhooked := srv.Client(t), srv.Client(t)
	hook := &roundTrips{}
	client.AddHook(hook)
	d := store.NewRedis(client, store.Options{}).Dedupe()
	const lease = 50 * time.Millisecond

	ops := []struct {
		name string
		call func(key string) error
		// trips is 1 unless the operation says why not.
		trips int64
	}{
		{"Claim", func(key string) error { _, _, err := d.Claim(ctx, "acme", key, "fp", "h1", lease, hour); return err }, 1},
		// A duplicate of a send in flight dates the first one's lease with a
		// script, while it waits for it.
		{"Claim of a key in flight", func(key string) error { _, _, err := d.Claim(ctx, "acme", key, "fp", "h2", hour, hour); return err }, 2},
		{"Get", func(key string) error { _, _, err := d.Get(ctx, "acme", key); return err }, 1},
		// So is a takeover.
		{"Claim taking over", func(key string) error {
			// A lease is dated by its record's PTTL, which started at the
			// ttl: shortening it by twice the lease runs the lease out
			// without waiting, and without a round trip of the client
			// measured.
			if err := unhooked.PExpire(ctx, "a2agw:dd:{acme:"+key+"}", hour-2*lease).Err(); err != nil {
				return err
			}
			_, out, err := d.Claim(ctx, "acme", key, "fp", "h3", hour, hour)
			if err == nil && out != store.ClaimTakeover {
				err = fmt.Errorf("outcome %s, want takeover", out)
			}
			return err
		}, 2},
		{"Renew", func(key string) error { _, err := d.Renew(ctx, "acme", key, "h3", hour); return err }, 1},
		{"SetTask", func(key string) error { _, err := d.SetTask(ctx, "acme", key, "h3", "task"); return err }, 1},
		{"Complete", func(key string) error { _, err := d.Complete(ctx, "acme", key, "h3", []byte("r"), hour); return err }, 1},
		{"Claim of a completed key", func(key string) error { _, _, err := d.Claim(ctx, "acme", key, "fp", "h4", hour, hour); return err }, 1},
		{"Release", func(key string) error { _, err := d.Release(ctx, "acme", key, "h3"); return err }, 1},
	}
	// The first run of each script loads it into the server (EVALSHA, then
	// EVAL); that is once per script and node, not per request.
	for _, op := range ops {
		if err := op.call("warm-up"); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			hook.n.Store(0)
			if err := op.call("measured"); err != nil {
				t.Fatal(err)
			}
			if n := hook.n.Load(); n != op.trips {
				t.Errorf("%d round trips, want %d", n, op.trips)
			}
		})
	}
}

// TestDedupeRedisConcurrentCompletes checks that Completes made at the
// same time, which share a pipeline, each get their own outcome: the
// holder's completes its record, another holder's changes nothing.
func TestDedupeRedisConcurrentCompletes(t *testing.T) {
	ctx := testContext(t)
	s := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	var trips atomic.Int64
	store.Observe(s, func(string, bool, time.Duration, bool) { trips.Add(1) })
	d := s.Dedupe()
	const keys = 100
	for i := range keys {
		if _, out, err := d.Claim(ctx, "acme", fmt.Sprint("k", i), "fp", "h", hour, hour); err != nil || out != store.ClaimNew {
			t.Fatalf("Claim %d = %v, %v", i, out, err)
		}
	}
	// Loads the script, so the count below is the steady state.
	if ok, err := d.Complete(ctx, "acme", "k0", "h", []byte("r0"), hour); !ok || err != nil {
		t.Fatalf("Complete = %v, %v", ok, err)
	}
	trips.Store(0)
	done := make([]bool, keys)
	errs := make([]error, keys)
	var wg sync.WaitGroup
	for i := 1; i < keys; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := "h"
			if i%2 == 0 {
				holder = "other"
			}
			done[i], errs[i] = d.Complete(ctx, "acme", fmt.Sprint("k", i), holder, []byte(fmt.Sprint("r", i)), hour)
		}()
	}
	wg.Wait()
	if n := trips.Load(); n >= keys-1 {
		t.Errorf("%d round trips for %d Completes, want fewer than one each", n, keys-1)
	}
	for i := 1; i < keys; i++ {
		rec, found, err := d.Get(ctx, "acme", fmt.Sprint("k", i))
		if err != nil || !found {
			t.Fatalf("Get %d = %v, %v", i, found, err)
		}
		mine := i%2 == 1
		if errs[i] != nil || done[i] != mine {
			t.Errorf("Complete %d = %v, %v; want %v", i, done[i], errs[i], mine)
		}
		if want := store.DedupeInFlight; mine && (rec.State != store.DedupeDone || string(rec.Result) != fmt.Sprint("r", i)) ||
			!mine && rec.State != want {
			t.Errorf("record %d = %v %q after Complete by the holder: %v", i, rec.State, rec.Result, mine)
		}
	}
}

// TestDedupeRedisCorruptRecord checks that a record the store cannot read
// is reported as a fault, not as an outage to retry, and is never taken
// over or overwritten.
func TestDedupeRedisCorruptRecord(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	d := store.NewRedis(client, store.Options{KeyPrefix: "dd-test"}).Dedupe()
	tests := []struct {
		name    string
		value   string // "": a hash instead of a string
		wantErr string
	}{
		{name: "empty", value: "i", wantErr: "record of 1 bytes"},
		{name: "unknown state", value: "x-002h1002fp000000000", wantErr: "unknown state"},
		{name: "unknown outcome", value: "ix002h1002fp00000110011", wantErr: "unknown outcome"},
		{name: "no fingerprint", value: "d-002h1000000000000", wantErr: "no fingerprint"},
		{name: "no holder", value: "in000002fp00000110011", wantErr: "no holder"},
		{name: "truncated", value: "in002h1002fp00", wantErr: "truncated"},
		{name: "length past the end", value: "in002h1099fp", wantErr: "malformed dedupe record"},
		{name: "length not a number", value: "in0x2h1002fp00000110011", wantErr: "malformed dedupe record"},
		{name: "in flight without lease", value: "in002h1002fp000000000", wantErr: "malformed lease"},
		{name: "in flight with a bad lease", value: "in002h1002fp000004soon0011", wantErr: "malformed lease"},
		{name: "in flight with a signed lease", value: "in002h1002fp000002+10011", wantErr: "malformed lease"},
		{name: "in flight with a result", value: "in002h1002fp00000110011r", wantErr: "has a result"},
		{name: "not a string", wantErr: "WRONGTYPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := client.Del(ctx, dedupeKeyOf).Err(); err != nil {
				t.Fatalf("DEL: %v", err)
			}
			var err error
			if tt.value == "" {
				err = client.HSet(ctx, dedupeKeyOf, "st", "inflight").Err()
			} else {
				err = client.Set(ctx, dedupeKeyOf, tt.value, 0).Err()
			}
			if err != nil {
				t.Fatalf("writing the record: %v", err)
			}
			before := client.Dump(ctx, dedupeKeyOf).Val()
			_, _, getErr := d.Get(ctx, "acme:x", "m{1}")
			_, _, claimErr := d.Claim(ctx, "acme:x", "m{1}", "fp", "h2", hour, hour)
			for name, err := range map[string]error{"Get": getErr, "Claim": claimErr} {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: err = %v, want one containing %q", name, err, tt.wantErr)
				}
				if errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s: %v satisfies ErrUnavailable", name, err)
				}
			}
			// The holder-checked scripts read the record too: they refuse
			// or fail, and never write.
			for name, op := range map[string]func() (bool, error){
				"Renew":    func() (bool, error) { return d.Renew(ctx, "acme:x", "m{1}", "h1", hour) },
				"SetTask":  func() (bool, error) { return d.SetTask(ctx, "acme:x", "m{1}", "h1", "t") },
				"Complete": func() (bool, error) { return d.Complete(ctx, "acme:x", "m{1}", "h1", []byte("r"), hour) },
				"Release":  func() (bool, error) { return d.Release(ctx, "acme:x", "m{1}", "h1") },
			} {
				if _, err := op(); errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s: %v satisfies ErrUnavailable", name, err)
				}
				if after := client.Dump(ctx, dedupeKeyOf).Val(); after != before {
					t.Fatalf("%s changed a corrupt record", name)
				}
			}
			if after := client.Dump(ctx, dedupeKeyOf).Val(); after != before {
				t.Error("reading a corrupt record changed it")
			}
		})
	}
}

// TestDedupeOutage checks that a stopped Redis is reported as
// ErrUnavailable by every method, and that the store recovers.
func TestDedupeOutage(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := redistest.Start(t)
	s, _ := open(t, store.Options{Redis: store.RedisOptions{
		Addrs:       []string{srv.Addr()},
		DialTimeout: duration.Duration(timeout), ReadTimeout: duration.Duration(timeout), WriteTimeout: duration.Duration(timeout),
	}})
	d := s.Dedupe()
	if _, _, err := d.Claim(testContext(t), "acme", "m", "fp", "h1", hour, hour); err != nil {
		t.Fatalf("Claim before the outage: %v", err)
	}

	srv.Stop(t)
	ops := map[string]func(context.Context) error{
		"Claim": func(ctx context.Context) error {
			_, _, err := d.Claim(ctx, "acme", "m2", "fp", "h2", hour, hour)
			return err
		},
		"Get":     func(ctx context.Context) error { _, _, err := d.Get(ctx, "acme", "m"); return err },
		"Renew":   func(ctx context.Context) error { _, err := d.Renew(ctx, "acme", "m", "h1", hour); return err },
		"SetTask": func(ctx context.Context) error { _, err := d.SetTask(ctx, "acme", "m", "h1", "task"); return err },
		"Complete": func(ctx context.Context) error {
			_, err := d.Complete(ctx, "acme", "m", "h1", []byte("r"), hour)
			return err
		},
		"Release": func(ctx context.Context) error { _, err := d.Release(ctx, "acme", "m", "h1"); return err },
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
	eventually(t, func() error {
		_, out, err := d.Claim(testContext(t), "acme", "m", "fp", "h3", hour, hour)
		if err == nil && out != store.ClaimNew {
			err = fmt.Errorf("Claim after the restart = %s, want new", out)
		}
		return err
	})
}

func TestDedupeMemoryEvictsOldestAtCapacity(t *testing.T) {
	s := store.NewMemory(store.Options{Memory: store.MemoryOptions{MaxEntries: 3}})
	t.Cleanup(func() { _ = s.Close() })
	d := s.Dedupe()
	ctx := testContext(t)
	for i := range 4 {
		if _, _, err := d.Claim(ctx, "acme", fmt.Sprint(i), "fp", "h", hour, hour); err != nil {
			t.Fatalf("Claim %d: %v", i, err)
		}
		// Completing keeps a record's place in line: age is by claim.
		if _, err := d.Complete(ctx, "acme", fmt.Sprint(i), "h", nil, 2*hour); err != nil {
			t.Fatalf("Complete %d: %v", i, err)
		}
	}
	for i, want := range []bool{false, true, true, true} {
		if _, ok, err := d.Get(ctx, "acme", fmt.Sprint(i)); err != nil || ok != want {
			t.Errorf("Get(%d) = %v, %v; want found %v", i, ok, err, want)
		}
	}
}

// TestDedupeMemoryEvictsExpiredFirst checks that a full store drops expired
// records before it evicts a live one, however old.
func TestDedupeMemoryEvictsExpiredFirst(t *testing.T) {
	s := store.NewMemory(store.Options{Memory: store.MemoryOptions{MaxEntries: 2}})
	t.Cleanup(func() { _ = s.Close() })
	d := s.Dedupe()
	ctx := testContext(t)
	claim := func(key string, ttl time.Duration) {
		t.Helper()
		if _, out, err := d.Claim(ctx, "acme", key, "fp", "h", time.Millisecond, ttl); err != nil || out != store.ClaimNew {
			t.Fatalf("Claim(%s) = %v, %v; want new", key, out, err)
		}
	}
	claim("old-live", hour)
	claim("young-expiring", time.Millisecond)
	eventually(t, func() error {
		if _, ok, err := d.Get(ctx, "acme", "young-expiring"); err != nil || ok {
			return fmt.Errorf("young-expiring still there (%v)", err)
		}
		return nil
	})
	claim("new", hour)
	for _, key := range []string{"old-live", "new"} {
		if _, ok, err := d.Get(ctx, "acme", key); err != nil || !ok {
			t.Errorf("Get(%s) = %v, %v; want found", key, ok, err)
		}
	}
}

// benchDedupe measures the send path: a first request claims and later
// completes its message id; a retry claims and finds the record.
func benchDedupe(b *testing.B, s store.Store) {
	d := s.Dedupe()
	ctx := context.Background()
	result := []byte(strings.Repeat("r", 1024))
	var seq atomic.Int64
	b.Run("Claim", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				key := fmt.Sprint(seq.Add(1))
				if _, _, err := d.Claim(ctx, "acme", key, "fp", "holder-"+key, 30*time.Second, hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("ClaimDone", func(b *testing.B) {
		if _, _, err := d.Claim(ctx, "acme", "done", "fp", "h", 30*time.Second, hour); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Complete(ctx, "acme", "done", "h", result, hour); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, out, err := d.Claim(ctx, "acme", "done", "fp", "retry", 30*time.Second, hour); err != nil || out != store.ClaimExisting {
					b.Fatalf("Claim = %v, %v", out, err)
				}
			}
		})
	})
	b.Run("Complete", func(b *testing.B) {
		first := seq.Load() + 1
		for range b.N {
			key := fmt.Sprint(seq.Add(1))
			if _, _, err := d.Claim(ctx, "acme", key, "fp", "h", 30*time.Second, hour); err != nil {
				b.Fatal(err)
			}
		}
		next := atomic.Int64{}
		next.Store(first)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				key := fmt.Sprint(next.Add(1) - 1)
				if ok, err := d.Complete(ctx, "acme", key, "h", result, hour); err != nil || !ok {
					b.Fatalf("Complete(%s) = %v, %v", key, ok, err)
				}
			}
		})
	})
}

func BenchmarkDedupeMemory(b *testing.B) {
	s := store.NewMemory(store.Options{})
	b.Cleanup(func() { _ = s.Close() })
	benchDedupe(b, s)
}

func BenchmarkDedupeRedis(b *testing.B) {
	benchDedupe(b, store.NewRedis(redistest.Start(b).Client(b), store.Options{}))
}
