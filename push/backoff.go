package push

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSchedule is the delay before each retry of a notification, close
// to Standard Webhooks' schedule: a notification is attempted up to eight
// times over about 27.5 hours (27h35m5s before jitter), then
// dead-lettered.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Bounds on a retry schedule.
const (
	// MaxRetries bounds len(DeliveryOptions.Schedule); the store keeps
	// enough of each attempt log to count that many.
	MaxRetries  = 32
	maxRetryGap = 48 * time.Hour
	// DefaultJitter spreads each retry over ±20% of its delay; with the
	// default schedule the last attempt starts 27.6 hours after the first
	// on average, 90% of the time between 24.5 and 30.7 hours, never
	// before 22 or after 33.2 (TestDefaultScheduleWindow).
	DefaultJitter = 0.2
	// MaxJitter keeps every retry at least half its scheduled delay
	// after the failure, so jitter cannot undo the schedule.
	MaxJitter = 0.5
)

// backoff decides when a failed notification is tried again.
type backoff struct {
	schedule []time.Duration
	// jitter is the fraction J of each delay d the retry may move by: it
	// is drawn uniformly from [(1-J)d, (1+J)d], so the schedule's total is
	// kept on average.
	jitter float64
	// maxRetryAfter caps a receiver's Retry-After, so a receiver cannot
	// park a queue for longer than the operator allows.
	maxRetryAfter time.Duration
	// rand returns a uniform value in [0, n]; replaced in tests.
	rand func(n int64) int64
}

func newBackoff(schedule []time.Duration, jitter float64, maxRetryAfter time.Duration) backoff {
	return backoff{schedule: schedule, jitter: jitter, maxRetryAfter: maxRetryAfter, rand: func(n int64) int64 { return rand.Int64N(n + 1) }}
}

// next returns when the attempt after failed attempts (counting the one
// that began at at and just failed) is due, or false when the schedule is
// exhausted. The delay is the schedule's, moved by up to ±jitter of it so
// that queues that failed together do not all retry together; and never
// before notBefore (a receiver's Retry-After, an open circuit breaker).
func (b backoff) next(failed int, at, notBefore time.Time) (time.Time, bool) {
	if failed < 1 || failed > len(b.schedule) {
		return time.Time{}, false
	}
	d := b.schedule[failed-1]
	// spread <= jitter*d, so the delay stays inside [(1-J)d, (1+J)d].
	if spread := int64(float64(d) * b.jitter); spread > 0 {
		d += time.Duration(b.rand(2*spread) - spread)
	}
	return maxTime(at.Add(d), notBefore), true
}

// honour returns the earliest retry a receiver's Retry-After allows, the
// delay counted from when its answer arrived and capped.
func (b backoff) honour(answered time.Time, retryAfter time.Duration) time.Time {
	if retryAfter <= 0 {
		return time.Time{}
	}
	return answered.Add(min(retryAfter, b.maxRetryAfter))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// retryAfter reads a Retry-After header (RFC 9110 §10.2.3): delay-seconds
// or an HTTP-date, relative to now. It reports false for a missing or
// malformed value; a date in the past is a zero delay.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 63); err == nil {
		// Capped here so the conversion cannot overflow; maxRetryAfter
		// caps it further.
		return time.Duration(min(secs, uint64(maxRetryGap/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
