package budget

import (
	"sync"
	"testing"
	"time"
)

// clock is a manual clock for Budgets.now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newAt(t *testing.T, o Options) (*Budgets, *clock) {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatalf("options %+v: %v", o, err)
	}
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := New(o)
	b.now = c.now
	return b, c
}

// step is one Allow call after advancing the clock.
type step struct {
	after time.Duration
	ok    bool
	wait  time.Duration
}

func runSteps(t *testing.T, b *Budgets, c *clock, tenant string, steps []step) {
	t.Helper()
	for i, s := range steps {
		c.advance(s.after)
		ok, wait := b.Allow(tenant)
		if ok != s.ok || wait != s.wait {
			t.Fatalf("step %d (+%s): Allow = %v, %s; want %v, %s", i, s.after, ok, wait, s.ok, s.wait)
		}
	}
}

func TestAllowRateAndBurst(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{"burst then one per second", Limits{Rate: 1, Burst: 2}, []step{
			{0, true, 0}, {0, true, 0}, {0, false, time.Second},
			// A refusal spends nothing: the wait keeps shrinking.
			{500 * time.Millisecond, false, 500 * time.Millisecond},
			{500 * time.Millisecond, true, 0}, {0, false, time.Second},
			// A long pause refills only up to the burst.
			{time.Hour, true, 0}, {0, true, 0}, {0, false, time.Second},
		}},
		{"default burst is the rate rounded up", Limits{Rate: 2.5}, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, 400 * time.Millisecond},
		}},
		{"default burst is at least one", Limits{Rate: 0.5}, []step{
			{0, true, 0}, {0, false, 2 * time.Second}, {2 * time.Second, true, 0},
		}},
		{"zero rate is unlimited", Limits{Burst: 1, MaxStreams: 3}, []step{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, c := newAt(t, Options{Default: tc.limits})
			runSteps(t, b, c, "acme", tc.steps)
		})
	}
}

func TestTenantsHaveTheirOwnBudgets(t *testing.T) {
	b, c := newAt(t, Options{
		Default: Limits{Rate: 1, Burst: 1},
		Tenants: map[string]Limits{"big": {Rate: 100, Burst: 3}, "free": {}},
	})
	runSteps(t, b, c, "small", []step{{0, true, 0}, {0, false, time.Second}})
	// Another default tenant is not charged for "small".
	runSteps(t, b, c, "other", []step{{0, true, 0}, {0, false, time.Second}})
	runSteps(t, b, c, "big", []step{{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, 10 * time.Millisecond}})
	// An override with zero limits is unlimited, not the default.
	runSteps(t, b, c, "free", []step{{0, true, 0}, {0, true, 0}, {0, true, 0}})
}

func TestAcquireStream(t *testing.T) {
	b, _ := newAt(t, Options{Default: Limits{MaxStreams: 2}, Tenants: map[string]Limits{"free": {}}})
	r1, ok1 := b.AcquireStream("acme")
	r2, ok2 := b.AcquireStream("acme")
	if !ok1 || !ok2 {
		t.Fatal("two streams within max_streams 2 refused")
	}
	if r, ok := b.AcquireStream("acme"); ok || r != nil {
		t.Fatal("third concurrent stream allowed")
	}
	if _, ok := b.AcquireStream("other"); !ok {
		t.Fatal("another tenant's stream refused")
	}
	r1()
	r1() // releasing twice must not free a second slot
	r3, ok := b.AcquireStream("acme")
	if !ok {
		t.Fatal("stream refused after one was released")
	}
	if _, ok := b.AcquireStream("acme"); ok {
		t.Fatal("a double release freed two slots")
	}
	r2()
	r3()
	for range 100 {
		if _, ok := b.AcquireStream("free"); !ok {
			t.Fatal("max_streams 0 must be unlimited")
		}
	}
}

func TestAcquireStreamConcurrent(t *testing.T) {
	const limit, workers = 5, 32
	b, _ := newAt(t, Options{Default: Limits{MaxStreams: limit}})
	var mu sync.Mutex
	held, peak := 0, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				release, ok := b.AcquireStream("acme")
				if !ok {
					continue
				}
				mu.Lock()
				held++
				peak = max(peak, held)
				mu.Unlock()
				mu.Lock()
				held--
				mu.Unlock()
				release()
			}
		}()
	}
	wg.Wait()
	if peak > limit {
		t.Fatalf("%d streams held at once, limit %d", peak, limit)
	}
	b.mu.Lock()
	left := b.tenants["acme"].streams
	b.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d stream slots still counted after every release", left)
	}
}

func TestIdleTenantsAreEvicted(t *testing.T) {
	b, c := newAt(t, Options{Default: Limits{Rate: 1, Burst: 1, MaxStreams: 1}})
	b.Allow("idle")
	release, _ := b.AcquireStream("streaming")
	c.advance(idleAfter + time.Second)
	b.Allow("active")

	b.mu.Lock()
	_, idleKept := b.tenants["idle"]
	_, streamingKept := b.tenants["streaming"]
	n := len(b.tenants)
	b.mu.Unlock()
	if idleKept {
		t.Error("a tenant unused for longer than idleAfter was kept")
	}
	if !streamingKept {
		t.Error("a tenant with an open stream was evicted; its slot count would be lost")
	}
	if n != 2 {
		t.Errorf("%d tenants tracked, want 2 (streaming, active)", n)
	}
	// The kept tenant still knows its stream is open.
	if _, ok := b.AcquireStream("streaming"); ok {
		t.Error("eviction sweep forgot an open stream")
	}
	release()
	if _, ok := b.AcquireStream("streaming"); !ok {
		t.Error("stream refused after release")
	}
}

// Eviction forgets a tenant's limiter; it must not hand the tenant a
// request the rate has not yet earned. At one request per 20 minutes, an
// 11-minute pause has refilled only about half a token.
func TestEvictionDoesNotRefillEarly(t *testing.T) {
	b, c := newAt(t, Options{Default: Limits{Rate: 1.0 / 1200, Burst: 1}})
	runSteps(t, b, c, "slow", []step{{0, true, 0}})
	c.advance(idleAfter + time.Minute)
	b.Allow("someone-else") // triggers the sweep
	if ok, _ := b.Allow("slow"); ok {
		t.Error("a request was allowed 11 minutes after the last one at a rate of one per 20 minutes: the idle sweep reset the limiter")
	}
}
