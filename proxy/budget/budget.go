// Package budget enforces per-tenant budgets: a request rate with a burst
// (golang.org/x/time/rate) and a cap on concurrently open streams. Budgets
// are per replica: with N replicas behind a balancer a tenant may use up to
// N times its budget, so size them per replica.
package budget

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Limits is one tenant's budget. Zero fields are unlimited.
type Limits struct {
	// Rate is the sustained request rate, per second.
	Rate float64 `yaml:"rate"`
	// Burst is how many requests may arrive at once above the rate.
	// Default: Rate rounded up, at least 1.
	Burst int `yaml:"burst"`
	// MaxStreams caps the tenant's concurrently open streams.
	MaxStreams int `yaml:"max_streams"`
	// MaxActiveTasks caps the tenant's tasks that have not reached a
	// terminal state, across all replicas (counted in the store). A send
	// that would start another task is refused.
	MaxActiveTasks int `yaml:"max_active_tasks"`
}

// Options is the `budgets:` section of the configuration.
type Options struct {
	// Default applies to every tenant without an entry in Tenants.
	Default Limits `yaml:"default"`
	// Tenants overrides the default per tenant name.
	Tenants map[string]Limits `yaml:"tenants"`
	// ActiveTaskWindow is how long a task without any activity still counts
	// against max_active_tasks, so tasks an agent abandoned do not hold the
	// budget forever. Default 24h.
	ActiveTaskWindow duration.Duration `yaml:"active_task_window"`
}

// TracksActiveTasks reports whether any tenant has a cap on active tasks,
// so that task states need counting at all.
func (o *Options) TracksActiveTasks() bool {
	if o.Default.MaxActiveTasks > 0 {
		return true
	}
	for _, l := range o.Tenants {
		if l.MaxActiveTasks > 0 {
			return true
		}
	}
	return false
}

// Validate checks the options; errors name the field.
func (o *Options) Validate() error {
	check := func(field string, l Limits) error {
		if l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) {
			return fmt.Errorf("%s.rate: must be a non-negative number", field)
		}
		if l.Burst < 0 || l.MaxStreams < 0 || l.MaxActiveTasks < 0 {
			return fmt.Errorf("%s: burst, max_streams and max_active_tasks must not be negative", field)
		}
		return nil
	}
	if err := check("budgets.default", o.Default); err != nil {
		return err
	}
	for name, l := range o.Tenants {
		if err := check("budgets.tenants."+name, l); err != nil {
			return err
		}
	}
	return nil
}

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
