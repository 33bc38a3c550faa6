package store_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// TestRedisConcurrentClaimsAgree checks Claims and dedupe Claims made at
// the same time, which share pipelines: each ref gets one owner that every
// claimant sees, each dedupe key one first claimant, and together they
// cost fewer round trips than one per call (a dedupe Claim that finds
// another holder's record in flight makes two calls: the claim, then the
// script that dates its lease).
func TestRedisConcurrentClaimsAgree(t *testing.T) {
	ctx := testContext(t)
	s := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	var trips atomic.Int64
	store.Observe(s, func(string, bool, time.Duration, bool) { trips.Add(1) })
	// A claim of a record in flight loads the claim script, so the count
	// below is the steady state.
	for _, holder := range []string{"h1", "h2"} {
		if _, _, err := s.Dedupe().Claim(ctx, "acme", "warm-up", "fp", holder, time.Minute, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	trips.Store(0)

	const callers, refs = 50, 5
	owners := make([][]store.Owner, callers)
	outcomes := make([]store.ClaimOutcome, callers)
	errs := make([]error, 2*callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range callers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			rs := []store.Ref{{Kind: store.RefContext, ID: fmt.Sprint("own-", c)}}
			for i := range refs {
				rs = append(rs, store.Ref{Kind: store.RefTask, ID: fmt.Sprint("shared-", i)})
			}
			owners[c], errs[c] = s.Ownership().Claim(ctx, "agent", rs, store.Owner{Tenant: fmt.Sprint("t", c)})
		}()
		go func() {
			defer wg.Done()
			<-start
			_, outcomes[c], errs[callers+c] = s.Dedupe().Claim(ctx, "acme", fmt.Sprint("k", c%10), "fp", fmt.Sprint("h", c), time.Minute, time.Hour)
		}()
	}
	close(start)
	wg.Wait()
	calls := int64(2 * callers)
	for _, o := range outcomes {
		if o != store.ClaimNew {
			calls++
		}
	}
	if n := trips.Load(); n >= calls {
		t.Errorf("%d round trips for %d calls, want fewer than one each", n, calls)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for c := range callers {
		if got := owners[c][0]; got.Tenant != fmt.Sprint("t", c) {
			t.Errorf("caller %d's own context is owned by %+v", c, got)
		}
		for i := 1; i <= refs; i++ {
			if owners[c][i] != owners[0][i] {
				t.Errorf("shared task %d: caller %d sees %+v, caller 0 %+v", i-1, c, owners[c][i], owners[0][i])
			}
		}
	}
	firsts := map[string]int{}
	for c, o := range outcomes {
		if o == store.ClaimNew {
			firsts[fmt.Sprint("k", c%10)]++
		}
	}
	for k := range 10 {
		if n := firsts[fmt.Sprint("k", k)]; n != 1 {
			t.Errorf("dedupe key k%d claimed first by %d callers, want 1", k, n)
		}
	}
}
