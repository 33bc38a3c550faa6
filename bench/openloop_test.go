package bench

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// serviceTimes answers the k-th send of a window (counted from 0) after
// slow[k], or after normal.
type serviceTimes struct {
	normal time.Duration
	slow   map[int]time.Duration
	fail   map[int]bool
	mu     sync.Mutex
	next   int
}

func (s *serviceTimes) send(ctx context.Context, _ int) error {
	s.mu.Lock()
	k := s.next
	s.next++
	s.mu.Unlock()
	d, ok := s.slow[k]
	if !ok {
		d = s.normal
	}
	time.Sleep(d)
	if s.fail[k] {
		return errors.New("status 502")
	}
	return nil
}

// queueModel is what a run with one sender must measure: each send starts
// at its scheduled time or when the previous one ends, whichever is
// later, and is measured from its scheduled time.
func queueModel(n int, interval time.Duration, s *serviceTimes) (latency *Histogram, late int64) {
	latency = NewHistogram()
	var free time.Duration
	for k := range n {
		at := time.Duration(k) * interval
		start := max(at, free)
		d, ok := s.slow[k]
		if !ok {
			d = s.normal
		}
		free = start + d
		latency.Record(free - at)
		if start-at > openLateAfter {
			late++
		}
	}
	return latency, late
}

func TestOpenScheduleMeasuresFromScheduledTime(t *testing.T) {
	const interval, n = time.Millisecond, 100
	stall := map[int]time.Duration{10: 20 * time.Millisecond}
	tests := []struct {
		name    string
		senders int
		// want is the latency each send must be measured with.
		want         func(st *serviceTimes) (*Histogram, int64)
		wantInFlight int64
		// minLate keeps the queue model honest: the stall must make sends late.
		minLate int64
	}{
		// One stalled answer holds one sender; the others keep the rate,
		// so only the stalled request is slow and no send is late.
		{"enough senders", 4, func(st *serviceTimes) (*Histogram, int64) {
			h := NewHistogram()
			for k := range n {
				h.Record(cmp.Or(st.slow[k], st.normal))
			}
			return h, 0
		}, 2, 0},
		// With a single sender every request scheduled during the stall
		// waits for it, and each of them is measured from its own time:
		// a closed loop would have counted one slow request here.
		{"one sender", 1, func(st *serviceTimes) (*Histogram, int64) { return queueModel(n, interval, st) }, 1, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &serviceTimes{normal: 500 * time.Microsecond, slow: stall}
				w := openSchedule{interval: interval, senders: tt.senders}.run(t.Context(), time.Now(), n*interval, st.send)
				if w.scheduled != n || w.errors != 0 || w.latency.Count() != n {
					t.Fatalf("scheduled %d, %d errors, %d measured; want %d, 0, %d", w.scheduled, w.errors, w.latency.Count(), n, n)
				}
				want, late := tt.want(st)
				for _, q := range []float64{0.5, 0.85, 0.9, 0.99, 1} {
					if got := w.latency.Quantile(q); got != want.Quantile(q) {
						t.Errorf("q%.2f = %v, want %v", q, got, want.Quantile(q))
					}
				}
				if w.late != late || w.late < tt.minLate || w.maxInFlight != tt.wantInFlight {
					t.Errorf("%d late, %d in flight at most; want %d and %d", w.late, w.maxInFlight, late, tt.wantInFlight)
				}
			})
		})
	}
}

func TestOpenScheduleErrorsAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &serviceTimes{normal: 300 * time.Microsecond, fail: map[int]bool{3: true, 7: true}}
		w := openSchedule{interval: time.Millisecond, senders: 8}.run(t.Context(), time.Now(), 20*time.Millisecond, st.send)
		if w.scheduled != 20 || w.errors != 2 || w.latency.Count() != 18 || w.kinds["status 502"] != 2 {
			t.Fatalf("scheduled %d, errors %d %v, measured %d; want 20, 2, 18", w.scheduled, w.errors, w.kinds, w.latency.Count())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		st := &serviceTimes{normal: 300 * time.Microsecond}
		time.AfterFunc(10*time.Millisecond+time.Microsecond, cancel)
		w := openSchedule{interval: time.Millisecond, senders: 8}.run(ctx, time.Now(), time.Second, st.send)
		// Sends scheduled at 0..10ms went out; the rest never did.
		if w.scheduled != 11 {
			t.Fatalf("scheduled %d sends before the cancellation, want 11", w.scheduled)
		}
	})
}

// window builds an open-loop window of 1,000 sends, 2% of which took
// tail, which makes it the p99, and the others d.
func window(d, tail time.Duration) *openWindow {
	w := &openWindow{latency: NewHistogram(), lag: NewHistogram(), scheduled: 1000}
	for k := range 1000 {
		if k%50 == 0 {
			w.latency.Record(tail)
		} else {
			w.latency.Record(d)
		}
		w.lag.Record(0)
	}
	return w
}

func TestOpenLoopAddedAndVerdicts(t *testing.T) {
	us := time.Microsecond
	tests := []struct {
		name string
		// per round: the full policy row's p50 and its tail, against a
		// direct row at 200µs with a 2ms tail.
		p50, tail []time.Duration
		wantP50   time.Duration
		met       bool
	}{
		{"met", []time.Duration{400 * us, 450 * us, 420 * us}, []time.Duration{2500 * us, 2900 * us, 2600 * us}, 220 * us, true},
		// One bad round does not decide the verdict: the median does.
		{"median of rounds", []time.Duration{400 * us, 9000 * us, 420 * us}, []time.Duration{2500 * us, 40000 * us, 2600 * us}, 220 * us, true},
		{"missed", []time.Duration{700 * us, 800 * us, 750 * us}, []time.Duration{6000 * us, 7000 * us, 6500 * us}, 550 * us, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			direct := &openTarget{name: TargetDirect, latency: NewHistogram(), lag: NewHistogram(), res: OpenTarget{Name: TargetDirect}}
			full := &openTarget{name: TargetJWTRedis, latency: NewHistogram(), lag: NewHistogram(), res: OpenTarget{Name: TargetJWTRedis}}
			for i := range tt.p50 {
				direct.add(window(200*us, 2*time.Millisecond))
				full.add(window(tt.p50[i], tt.tail[i]))
			}
			direct.finish(direct)
			full.finish(direct)
			if direct.res.Added != nil || full.res.Added == nil || len(full.res.Rounds) != 3 || full.res.Rounds[1].Added == nil {
				t.Fatalf("added latencies: direct %+v, full %+v", direct.res.Added, full.res)
			}
			if d := time.Duration(full.res.Added.P50) - tt.wantP50; d < -5*us || d > 5*us {
				t.Fatalf("added p50 %v, want about %v", full.res.Added.P50, tt.wantP50)
			}
			r := &Report{OpenLoop: &OpenLoopResult{Rate: 1000, Rounds: 3, Baseline: TargetDirect, Targets: []OpenTarget{direct.res, full.res}}}
			r.evaluate()
			if len(r.Verdicts) != 2 {
				t.Fatalf("verdicts %+v, want p50 and p99", r.Verdicts)
			}
			for _, v := range r.Verdicts {
				if v.Met != tt.met || !strings.Contains(v.Detail, "rounds +") {
					t.Errorf("verdict %+v, want met=%v with the rounds", v, tt.met)
				}
			}
			var table strings.Builder
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"open loop", "round 3:", TargetJWTRedis} {
				if !strings.Contains(table.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, table.String())
				}
			}
		})
	}
}
