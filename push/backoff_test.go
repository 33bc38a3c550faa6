package push

import (
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestBackoffNext(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	answered := at.Add(100 * time.Millisecond)
	schedule := []time.Duration{time.Second, time.Minute, time.Hour}
	tests := []struct {
		name       string
		jitter     float64
		rand       func(int64) int64
		failed     int
		retryAfter time.Duration // from answered
		notBefore  time.Time
		want       time.Duration // after at
		exhausted  bool
	}{
		{name: "first retry", failed: 1, want: time.Second},
		{name: "last retry", failed: 3, want: time.Hour},
		{name: "schedule exhausted", failed: 4, exhausted: true},
		{name: "no attempt failed", failed: 0, exhausted: true},
		{name: "jitter at its top", jitter: 0.2, rand: func(n int64) int64 { return n }, failed: 2, want: 72 * time.Second},
		{name: "jitter at its bottom", jitter: 0.2, rand: func(int64) int64 { return 0 }, failed: 2, want: 48 * time.Second},
		{name: "jitter halfway", jitter: 0.2, rand: func(n int64) int64 { return n / 2 }, failed: 2, want: time.Minute},
		{name: "largest jitter at its bottom", jitter: MaxJitter, rand: func(int64) int64 { return 0 }, failed: 3, want: 30 * time.Minute},
		{name: "retry-after longer than the schedule, from the answer", failed: 1, retryAfter: 10 * time.Second, want: 10*time.Second + 100*time.Millisecond},
		{name: "retry-after shorter than the schedule", failed: 2, retryAfter: 10 * time.Second, want: time.Minute},
		{name: "retry-after is capped", failed: 1, retryAfter: 48 * time.Hour, want: 2*time.Hour + 100*time.Millisecond},
		{name: "jitter never undercuts retry-after", jitter: 0.5, rand: func(int64) int64 { return 0 }, failed: 1, retryAfter: 5 * time.Second, want: 5*time.Second + 100*time.Millisecond},
		{name: "not before the breaker closes", failed: 1, notBefore: at.Add(30 * time.Second), want: 30 * time.Second},
		{name: "a past bound changes nothing", failed: 1, notBefore: at.Add(-time.Hour), want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackoff(schedule, tt.jitter, 2*time.Hour)
			if tt.rand != nil {
				b.rand = tt.rand
			}
			notBefore := maxTime(tt.notBefore, b.honour(answered, tt.retryAfter))
			got, ok := b.next(tt.failed, at, notBefore)
			if ok == tt.exhausted {
				t.Fatalf("next(%d) ok = %v, want %v", tt.failed, ok, !tt.exhausted)
			}
			if ok && !got.Equal(at.Add(tt.want)) {
				t.Errorf("next(%d) = at + %s, want at + %s", tt.failed, got.Sub(at), tt.want)
			}
		})
	}
	if got := newBackoff(schedule, 0, time.Hour).honour(answered, 0); !got.IsZero() {
		t.Errorf("honour without Retry-After = %s, want no bound", got)
	}
}

// seeded makes b draw from a fixed sequence, so the test is repeatable.
func seeded(b *backoff, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b.rand = func(n int64) int64 { return r.Int64N(n + 1) }
}

// Every jittered delay stays within [(1-J)d, (1+J)d], for every jitter
// allowed and delays from a nanosecond to the longest gap, and both halves
// of the range are drawn.
func TestBackoffJitterStaysInRange(t *testing.T) {
	at := time.Unix(1_772_600_000, 0)
	delays := []time.Duration{1, 3, time.Millisecond, time.Second, 5 * time.Minute, 10 * time.Hour, maxRetryGap}
	for _, j := range []float64{0.01, 0.1, DefaultJitter, 1.0 / 3, MaxJitter} {
		b := newBackoff(delays, j, time.Hour)
		seeded(&b, 7)
		for i, d := range delays {
			lo, hi := time.Duration(float64(d)*(1-j)), time.Duration(float64(d)*(1+j))
			var below, above int
			for range 2000 {
				got, ok := b.next(i+1, at, time.Time{})
				delay := got.Sub(at)
				if !ok || delay < lo || delay > hi {
					t.Fatalf("jitter %g, delay %s: drew %s (ok %v), outside [%s, %s]", j, d, delay, ok, lo, hi)
				}
				switch {
				case delay < d:
					below++
				case delay > d:
					above++
				}
			}
			// Uniform: a spread of at least a nanosecond either way is
			// drawn on both sides (missing one has a chance below 2^-600).
			if int64(float64(d)*j) > 0 && (below == 0 || above == 0) {
				t.Errorf("jitter %g, delay %s: %d draws below, %d above", j, d, below, above)
			}
		}
	}
	b := newBackoff(delays, 0, time.Hour)
	for i, d := range delays {
		if got, _ := b.next(i+1, at, time.Time{}); got.Sub(at) != d {
			t.Errorf("no jitter: delay %s became %s", d, got.Sub(at))
		}
	}
}

// The delivery window of docs/push.md: with the default schedule and jitter, the
// last attempt starts 27.6 hours after the first on average, 90% of the
// time between 24.5 and 30.7 hours, never before 22 or after 33.2 hours.
func TestDefaultScheduleWindow(t *testing.T) {
	const runs = 20000
	b := newBackoff(DefaultSchedule, DefaultJitter, time.Hour)
	seeded(&b, 1)
	var total time.Duration
	for _, d := range DefaultSchedule {
		total += d
	}
	windows := make([]time.Duration, runs)
	var sum float64
	for i := range windows {
		at := time.Unix(1_772_600_000, 0)
		start := at
		for failed := 1; ; failed++ {
			next, ok := b.next(failed, at, time.Time{})
			if !ok {
				break
			}
			at = next
		}
		windows[i] = at.Sub(start)
		sum += windows[i].Hours()
	}
	slices.Sort(windows)
	mean := sum / runs
	p5, p95 := windows[runs*5/100].Hours(), windows[runs*95/100].Hours()
	lo, hi := windows[0].Hours(), windows[runs-1].Hours()
	t.Logf("window: mean %.2fh, p5 %.2fh, p95 %.2fh, min %.2fh, max %.2fh (schedule %s)", mean, p5, p95, lo, hi, total)
	if want := total.Hours(); math.Abs(mean-want) > 0.01*want {
		t.Errorf("mean window %.2fh, want %.2fh within 1%%", mean, want)
	}
	if p5 < 24.5 || p5 > 25.0 {
		t.Errorf("p5 %.2fh, want between 24.5h and 25h", p5)
	}
	if p95 > 30.7 || p95 < 30.2 {
		t.Errorf("p95 %.2fh, want between 30.2h and 30.7h", p95)
	}
	if lo < 22 || hi > 33.2 {
		t.Errorf("window between %.2fh and %.2fh, want within [22h, 33.2h]", lo, hi)
	}
}

func TestDefaultScheduleIsStandardWebhooks(t *testing.T) {
	var total time.Duration
	for _, d := range DefaultSchedule {
		total += d
	}
	if len(DefaultSchedule) != 7 || DefaultSchedule[0] != 5*time.Second || total != 27*time.Hour+35*time.Minute+5*time.Second {
		t.Fatalf("DefaultSchedule = %v (total %s)", DefaultSchedule, total)
	}
	if len(DefaultSchedule) > MaxRetries {
		t.Fatal("DefaultSchedule is longer than MaxRetries")
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"99999999999999999999", 48 * time.Hour, false}, // overflows uint63: malformed
		{"9999999999", 48 * time.Hour, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Wed, 04 Mar 2026 05:08:07 GMT", 2 * time.Minute, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.value != "" {
			h.Set("Retry-After", tt.value)
		}
		got, ok := retryAfter(h, now)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}
