package push

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const cooldown = 30 * time.Second
	type step struct {
		op      string // admit, success, failure, abandon, blocked
		at      time.Duration
		wantOK  bool // admit: admitted; blocked: blocked
		probe   bool // admit: is the probe; abandon: abandons a probe
		wantTil time.Duration
	}
	tests := []struct {
		name      string
		threshold int
		steps     []step
	}{
		{"opens after the threshold", 3, []step{
			{op: "admit", wantOK: true},
			{op: "failure"}, {op: "failure"},
			{op: "blocked", wantOK: false},
			{op: "admit", wantOK: true},
			{op: "failure", at: time.Second},
			{op: "blocked", at: time.Second, wantOK: true, wantTil: time.Second + cooldown},
			{op: "admit", at: 2 * time.Second, wantOK: false},
		}},
		{"a success resets the count", 2, []step{
			{op: "failure"}, {op: "success"}, {op: "failure"},
			{op: "blocked", wantOK: false},
			{op: "failure"},
			{op: "blocked", wantOK: true, wantTil: cooldown},
		}},
		{"one probe after the cooldown, which closes it", 1, []step{
			{op: "failure"},
			{op: "blocked", at: cooldown - time.Nanosecond, wantOK: true, wantTil: cooldown},
			{op: "admit", at: cooldown, wantOK: true, probe: true},
			{op: "admit", at: cooldown, wantOK: false},
			{op: "blocked", at: cooldown, wantOK: true},
			{op: "success"},
			{op: "blocked", at: cooldown, wantOK: false},
			{op: "admit", at: cooldown, wantOK: true},
		}},
		{"a failed probe opens it again", 5, []step{
			{op: "failure"}, {op: "failure"}, {op: "failure"}, {op: "failure"}, {op: "failure"},
			{op: "admit", at: cooldown, wantOK: true, probe: true},
			{op: "failure", at: cooldown + time.Second},
			{op: "blocked", at: cooldown + time.Second, wantOK: true, wantTil: 2*cooldown + time.Second},
		}},
		{"an abandoned probe lets another probe", 1, []step{
			{op: "failure"},
			{op: "admit", at: cooldown, wantOK: true, probe: true},
			{op: "abandon", probe: true},
			{op: "admit", at: cooldown, wantOK: true, probe: true},
		}},
		{"threshold 0 never opens", 0, []step{
			{op: "failure"}, {op: "failure"}, {op: "failure"},
			{op: "blocked", wantOK: false},
			{op: "admit", wantOK: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBreaker(tt.threshold, cooldown)
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				switch s.op {
				case "admit":
					ok, probe := b.admit(now)
					if ok != s.wantOK || probe != s.probe {
						t.Fatalf("step %d: admit = %v, probe %v; want %v, %v", i, ok, probe, s.wantOK, s.probe)
					}
				case "blocked":
					blocked, until := b.blocked(now)
					want := time.Time{}
					if s.wantTil != 0 {
						want = t0.Add(s.wantTil)
					}
					if blocked != s.wantOK || !until.Equal(want) {
						t.Fatalf("step %d: blocked = %v until %s; want %v until %s", i, blocked, until, s.wantOK, want)
					}
				case "success":
					b.success()
				case "failure":
					b.failure(now)
				case "abandon":
					b.abandon(s.probe)
				}
			}
		})
	}
}

func TestReceiversShareStateAndForgetIdle(t *testing.T) {
	rs := newReceivers(2, 10, 3, 1, time.Minute)
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := rs.get("https://a:443")
	if a2 := rs.get("https://a:443"); a2 != a {
		t.Fatal("one receiver key gave two states")
	}
	if cap(a.slots) != 2 || a.limiter == nil || a.limiter.Burst() != 3 {
		t.Fatalf("receiver limits: %d slots, limiter %v", cap(a.slots), a.limiter)
	}
	b := rs.get("https://b:443")
	rs.put(b, t0)
	b2 := rs.get("https://b:443")
	b2.breaker.failure(t0) // open: kept however idle
	rs.put(b2, t0)
	c := rs.get("https://c:443")
	rs.put(c, t0)
	rs.put(a, t0)

	rs.sweep(t0.Add(time.Hour))
	// a has a user still; b's breaker is open; c is idle and clean.
	rs.mu.Lock()
	n := len(rs.m)
	rs.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d receivers after the sweep, want 2 (a in use, b open)", n)
	}
	if rs.get("https://c:443") == c {
		t.Fatal("an idle receiver was kept")
	}
	if unlimited := newReceivers(1, 0, 1, 0, time.Minute).get("k"); unlimited.limiter != nil {
		t.Fatal("a zero rate built a limiter")
	}
}
