package push

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// breaker is a circuit breaker for one receiver. After threshold failures
// in a row it opens for cooldown: deliveries to the receiver are not
// attempted, so a dead receiver costs no connections, timeouts or worker
// time. Then one probe is let through (half-open): success closes the
// breaker, failure opens it for another cooldown. A threshold of 0 turns
// the breaker off. It is safe for concurrent use.
type breaker struct {
	threshold int
	cooldown  time.Duration

	mu       sync.Mutex
	failures int       // in a row
	until    time.Time // open until; zero when closed
	probing  bool      // half-open and the probe is out
}

func newBreaker(threshold int, cooldown time.Duration) *breaker {
	return &breaker{threshold: threshold, cooldown: cooldown}
}

// blocked reports whether a delivery may not be attempted now, and until
// when the breaker stays open (zero while a probe is out: it may close any
// moment).
func (b *breaker) blocked(now time.Time) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.until.IsZero():
		return false, time.Time{}
	case now.Before(b.until):
		return true, b.until
	}
	return b.probing, time.Time{}
}

// admit is called just before a request. It reports whether the request
// may go, and whether it is the half-open probe, whose outcome the caller
// must report with success, failure or abandon.
func (b *breaker) admit(now time.Time) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.until.IsZero():
		return true, false
	case now.Before(b.until) || b.probing:
		return false, false
	}
	b.probing = true
	return true, true
}

// success records a response that shows the receiver alive.
func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures, b.until, b.probing = 0, time.Time{}, false
}

// failure records a failed request at now.
func (b *breaker) failure(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if b.threshold > 0 && (b.probing || b.failures >= b.threshold) {
		b.until, b.probing = now.Add(b.cooldown), false
	}
}

// abandon records that an admitted request was not made or got no verdict
// (the gateway shut down, say), so the next one may probe.
func (b *breaker) abandon(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

// idle reports whether the breaker holds no state worth keeping.
func (b *breaker) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures == 0 && b.until.IsZero() && !b.probing
}

// receiver is what deliveries to one receiver share within a replica:
// the rate limiter, the concurrency limit and the circuit breaker.
type receiver struct {
	limiter *rate.Limiter // nil: no rate limit
	slots   chan struct{} // a send holds a slot
	breaker *breaker

	mu       sync.Mutex
	users    int // runners between get and put
	lastUsed time.Time
}

// receivers keeps a receiver per key and forgets idle ones, so a gateway
// that has called many receivers over time does not keep them all.
type receivers struct {
	newReceiver func() *receiver

	mu sync.Mutex
	m  map[string]*receiver
}

func newReceivers(concurrency int, perSecond float64, burst, breakerFailures int, breakerCooldown time.Duration) *receivers {
	return &receivers{
		m: map[string]*receiver{},
		newReceiver: func() *receiver {
			r := &receiver{slots: make(chan struct{}, concurrency), breaker: newBreaker(breakerFailures, breakerCooldown)}
			if perSecond > 0 {
				r.limiter = rate.NewLimiter(rate.Limit(perSecond), burst)
			}
			return r
		},
	}
}

// get returns the receiver for key; the caller must put it back.
func (rs *receivers) get(key string) *receiver {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.m[key]
	if r == nil {
		r = rs.newReceiver()
		rs.m[key] = r
	}
	r.mu.Lock()
	r.users++
	r.mu.Unlock()
	return r
}

func (rs *receivers) put(r *receiver, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users--
	r.lastUsed = now
}

// sweep forgets receivers unused since before cutoff whose breaker is
// closed and clean; a rate limiter left alone that long is full again, so
// nothing is lost.
func (rs *receivers) sweep(cutoff time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for k, r := range rs.m {
		r.mu.Lock()
		forget := r.users == 0 && r.lastUsed.Before(cutoff)
		r.mu.Unlock()
		if forget && r.breaker.idle() {
			delete(rs.m, k)
		}
	}
}
