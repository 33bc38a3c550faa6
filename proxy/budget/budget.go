// Package budget enforces per-tenant budgets: a request rate with a burst
// (golang.org/x/time/rate) and a cap on concurrently open streams. Budgets
// are per replica: with N replicas behind a balancer a tenant may use up to
// N times its budget, so size them per replica.
package budget

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// Limits is one tenant's budget; Options is the `budgets:` section. Both
// are defined, and validated, with the rest of the configuration.
type (
	Limits  = config.BudgetLimits
	Options = config.BudgetOptions
)

// idleAfter is how long an unused tenant's state is kept. Tenants come
// from tokens, so the map must not grow with every tenant ever seen.
const idleAfter = 10 * time.Minute

// Budgets tracks every active tenant's limiter and open streams.
type Budgets struct {
	opts Options
	now  func() time.Time

	mu      sync.Mutex
	tenants map[string]*tenantState
	swept   time.Time
}

type tenantState struct {
	limiter  *rate.Limiter
	streams  int
	lastSeen time.Time
}

// New creates the budgets.
func New(o Options) *Budgets {
	return &Budgets{opts: o, now: time.Now, tenants: map[string]*tenantState{}}
}

func (b *Budgets) limits(tenant string) Limits {
	if l, ok := b.opts.Tenants[tenant]; ok {
		return l
	}
	return b.opts.Default
}

// state returns the tenant's state; b.mu must be held.
func (b *Budgets) state(tenant string, now time.Time) *tenantState {
	if now.Sub(b.swept) > idleAfter {
		for name, st := range b.tenants {
			if st.streams == 0 && now.Sub(st.lastSeen) > idleAfter && st.refilled(now) {
				delete(b.tenants, name)
			}
		}
		b.swept = now
	}
	st, ok := b.tenants[tenant]
	if !ok {
		st = &tenantState{}
		if l := b.limits(tenant); l.Rate > 0 {
			burst := l.Burst
			if burst == 0 {
				burst = max(1, int(math.Ceil(l.Rate)))
			}
			st.limiter = rate.NewLimiter(rate.Limit(l.Rate), burst)
		}
		b.tenants[tenant] = st
	}
	st.lastSeen = now
	return st
}

// refilled reports whether forgetting the tenant's limiter loses nothing:
// a new one starts full, so the old one must be full too.
func (st *tenantState) refilled(now time.Time) bool {
	return st.limiter == nil || st.limiter.TokensAt(now) >= float64(st.limiter.Burst())
}

// Allow spends one request of the tenant's rate. When the budget is
// exhausted it reports how long until the next request would be allowed.
func (b *Budgets) Allow(tenant string) (ok bool, retryAfter time.Duration) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state(tenant, now)
	if st.limiter == nil {
		return true, 0
	}
	r := st.limiter.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// MaxActiveTasks is the tenant's cap on open tasks (0: none).
func (b *Budgets) MaxActiveTasks(tenant string) int { return b.limits(tenant).MaxActiveTasks }

// ActiveTaskWindow is how long an idle task keeps counting.
func (b *Budgets) ActiveTaskWindow() time.Duration { return b.opts.ActiveTaskWindow.Or(24 * time.Hour) }

// AcquireStream takes one of the tenant's stream slots; release returns it.
func (b *Budgets) AcquireStream(tenant string) (release func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state(tenant, b.now())
	if max := b.limits(tenant).MaxStreams; max > 0 && st.streams >= max {
		return nil, false
	}
	st.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			st.streams--
			b.mu.Unlock()
		})
	}, true
}
