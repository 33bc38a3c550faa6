package push

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoffNext(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	answered := at.Add(100 * time.Millisecond)
	schedule := []time.Duration{time.Second, time.Minute, time.Hour}
	tests := []struct {
		name       string
		jitter     bool
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
		{name: "full jitter at its top", jitter: true, rand: func(n int64) int64 { return n }, failed: 2, want: time.Minute},
		{name: "full jitter at its bottom", jitter: true, rand: func(int64) int64 { return 0 }, failed: 2, want: 0},
		{name: "full jitter halfway", jitter: true, rand: func(n int64) int64 { return n / 2 }, failed: 2, want: 30 * time.Second},
		{name: "retry-after longer than the schedule, from the answer", failed: 1, retryAfter: 10 * time.Second, want: 10*time.Second + 100*time.Millisecond},
		{name: "retry-after shorter than the schedule", failed: 2, retryAfter: 10 * time.Second, want: time.Minute},
		{name: "retry-after is capped", failed: 1, retryAfter: 48 * time.Hour, want: 2*time.Hour + 100*time.Millisecond},
		{name: "jitter never undercuts retry-after", jitter: true, rand: func(int64) int64 { return 0 }, failed: 3, retryAfter: 5 * time.Second, want: 5*time.Second + 100*time.Millisecond},
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
	if got := newBackoff(schedule, false, time.Hour).honour(answered, 0); !got.IsZero() {
		t.Errorf("honour without Retry-After = %s, want no bound", got)
	}
}

func TestBackoffJitterStaysInRange(t *testing.T) {
	at := time.Unix(1_772_600_000, 0)
	b := newBackoff([]time.Duration{time.Second}, true, time.Hour)
	seen := map[bool]int{}
	for range 2000 {
		got, ok := b.next(1, at, time.Time{})
		d := got.Sub(at)
		if !ok || d < 0 || d > time.Second {
			t.Fatalf("jittered delay %s (ok %v) outside [0, 1s]", d, ok)
		}
		seen[d < 500*time.Millisecond]++
	}
	// Uniform: both halves are hit (the chance of missing one is 2^-2000).
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("jitter hit only one half of the range: %v", seen)
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
