package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of the open-loop measurement.
const (
	defaultOpenRate     = 1000
	defaultOpenDuration = 15 * time.Second
	defaultOpenRounds   = 3
	// defaultOpenSenders bounds the requests in flight at once: at 1,000
	// requests a second it lets answers take a quarter of a second before
	// a send has to wait for a free sender.
	defaultOpenSenders = 256
	// openLateAfter is how far behind its scheduled time a send may start
	// before it counts as late. The Go runtime's poller sleeps in whole
	// milliseconds, so its timers can wake an idle process up to a
	// millisecond late; a tighter bound would count the clock.
	openLateAfter = 2 * time.Millisecond
)

// openLoopTargets are the rows measured at a fixed rate, in the order of
// a round; the first is the baseline the others are compared with.
var openLoopTargets = []string{TargetDirect, TargetNginx, TargetGateway, TargetJWTRedis}

// openSchedule sends requests at a fixed rate. Each request has its own
// scheduled time and is measured from it, not from when a sender got to
// it, so a slow answer shows in the latency of every request scheduled
// behind it instead of silently lowering the rate (coordinated omission).
type openSchedule struct {
	interval time.Duration // between two scheduled sends
	senders  int           // requests that may be in flight at once
}

// openWindow is what one window of scheduled sends measured.
type openWindow struct {
	// mu guards everything below it while the senders run: one shared
	// histogram costs less than one per sender at a thousand requests a
	// second.
	mu sync.Mutex
	// latency is from each answered request's scheduled time to its
	// answer; lag from the scheduled time to the send starting.
	latency, lag *Histogram
	// scheduled sends, of which errors failed and late started more than
	// openLateAfter behind their time.
	scheduled, errors, late int64
	kinds                   map[string]int64
	// maxInFlight is the most sends in flight at once; at senders, sends
	// waited for a free sender.
	maxInFlight int64
}

// run sends window/interval requests, the k-th scheduled at start +
// k*interval, each with send(ctx, i) on sender i, and returns once every
// one of them is answered. The dispatcher only waits for the clock: a
// request whose sender is not free yet waits in a queue as long as there
// are senders, and its wait is part of its latency.
func (s openSchedule) run(ctx context.Context, start time.Time, window time.Duration, send func(ctx context.Context, i int) error) *openWindow {
	n := int64(window / s.interval)
	w := &openWindow{latency: NewHistogram(), lag: NewHistogram(), kinds: map[string]int64{}}
	jobs := make(chan time.Time, s.senders)
	var inFlight int64 // guarded by w.mu
	var wg sync.WaitGroup
	for i := range s.senders {
		wg.Go(func() {
			for at := range jobs {
				lag := time.Since(at)
				w.mu.Lock()
				inFlight++
				w.maxInFlight = max(w.maxInFlight, inFlight)
				w.lag.Record(lag)
				if lag > openLateAfter {
					w.late++
				}
				w.mu.Unlock()
				err := send(ctx, i)
				took := time.Since(at)
				w.mu.Lock()
				inFlight--
				if err != nil {
					w.errors++
					countKind(w.kinds, err)
				} else {
					w.latency.Record(took)
				}
				w.mu.Unlock()
			}
		})
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
dispatch:
	for ; w.scheduled < n; w.scheduled++ {
		at := start.Add(time.Duration(w.scheduled) * s.interval)
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break dispatch
			}
		}
		select {
		case jobs <- at:
		case <-ctx.Done():
			break dispatch
		}
	}
	timer.Stop()
	close(jobs)
	wg.Wait()
	return w
}

// OpenLoopResult is the fixed-rate measurement: every target in turn at
// the same rate, round after round.
type OpenLoopResult struct {
	Rate          float64 `json:"requests_per_second"`
	Senders       int     `json:"senders"`
	WarmupSeconds float64 `json:"warmup_seconds"`
	WindowSeconds float64 `json:"window_seconds"`
	Rounds        int     `json:"rounds"`
	LateAfter     Millis  `json:"late_after_ms"`
	// Baseline is the target the added latencies are measured against.
	Baseline string       `json:"baseline"`
	Targets  []OpenTarget `json:"targets"`
}

// OpenTarget is one target at the fixed rate.
type OpenTarget struct {
	Name string `json:"name"`
	// Scheduled sends over every round, of which Errors failed and Late
	// started more than LateAfter behind their time.
	Scheduled  int64            `json:"scheduled"`
	Errors     int64            `json:"errors"`
	Late       int64            `json:"late"`
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	// MaxInFlight is the most requests in flight at once in any round.
	MaxInFlight int64 `json:"max_in_flight"`
	// Latency from the scheduled send time, over every round.
	Quantiles
	Max Millis `json:"max_ms"`
	// SendLagP99 and SendLagMax: how far behind schedule sends started.
	SendLagP99 Millis `json:"send_lag_p99_ms"`
	SendLagMax Millis `json:"send_lag_max_ms"`
	// Added is the median over rounds of each round's added latency;
	// absent on the baseline and when it was not measured.
	Added  *Quantiles  `json:"added_median_of_rounds,omitempty"`
	Rounds []OpenRound `json:"rounds"`
	// Processes are the scheduler times of the processes on the way, and
	// Gateway what a gateway row's collector did; absent when no window
	// was measured, and Gateway on the other rows.
	Processes *OpenProcesses    `json:"processes,omitempty"`
	Gateway   *OpenGatewayUsage `json:"gateway,omitempty"`
}

// Quantiles are latency quantiles, or differences between two targets'.
type Quantiles struct {
	P50  Millis `json:"p50_ms"`
	P99  Millis `json:"p99_ms"`
	P999 Millis `json:"p999_ms"`
}

// OpenRound is one target's window in one round.
type OpenRound struct {
	Scheduled int64 `json:"scheduled"`
	Errors    int64 `json:"errors"`
	Late      int64 `json:"late"`
	Quantiles
	// Added is this round's latency minus the baseline's in the same round.
	Added *Quantiles `json:"added,omitempty"`
}

func quantilesOf(h *Histogram) Quantiles {
	return Quantiles{P50: Millis(h.Quantile(0.50)), P99: Millis(h.Quantile(0.99)), P999: Millis(h.Quantile(0.999))}
}

func (q Quantiles) minus(o Quantiles) Quantiles {
	return Quantiles{P50: q.P50 - o.P50, P99: q.P99 - o.P99, P999: q.P999 - o.P999}
}

// medianQuantiles is the median of each quantile over qs, taken
// separately: the middle value, or the mean of the two middle ones.
func medianQuantiles(qs []Quantiles) Quantiles {
	pick := func(f func(Quantiles) Millis) Millis {
		vs := make([]Millis, len(qs))
		for i, q := range qs {
			vs[i] = f(q)
		}
		slices.Sort(vs)
		n := len(vs)
		if n%2 == 1 {
			return vs[n/2]
		}
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return Quantiles{
		P50:  pick(func(q Quantiles) Millis { return q.P50 }),
		P99:  pick(func(q Quantiles) Millis { return q.P99 }),
		P999: pick(func(q Quantiles) Millis { return q.P999 }),
	}
}

// Go runtime metrics of a gateway row, read around each open-loop window
// to see what collecting garbage costs at the fixed rate.
const (
	gcCyclesMetric = "go_gc_duration_seconds_count"
	gcPausesMetric = "go_gc_duration_seconds_sum"
	allocMetric    = "go_memstats_alloc_bytes_total"
	gogcMetric     = "go_gc_gogc_percent"
)

// OpenGatewayUsage is what a gateway row's collector did in the open-loop
// windows.
type OpenGatewayUsage struct {
	// GOGC is the gateway's GC percentage as its runtime reports it.
	GOGC float64 `json:"gogc_percent"`
	// AllocBytes allocated per answered request, which paces the collector.
	AllocBytes float64 `json:"allocated_bytes_per_request"`
	// GCsPerSecond are completed cycles a second of the windows, and
	// PauseMicros each cycle's mean stop-the-world time.
	GCsPerSecond float64 `json:"gc_cycles_per_second"`
	PauseMicros  float64 `json:"gc_pause_us_per_cycle"`
}

// ProcTimes are one process's scheduler times in the open-loop windows,
// in microseconds per answered request: on a CPU, and runnable but
// waiting for one.
type ProcTimes struct {
	CPUMicros  float64 `json:"cpu_us_per_request"`
	WaitMicros float64 `json:"runqueue_wait_us_per_request"`
}

// OpenProcesses are the scheduler times of the processes a target's
// requests pass through: the load generator (this process), the
// upstream, the gateway on a gateway row, and Redis on a row that uses it.
type OpenProcesses struct {
	LoadGenerator ProcTimes  `json:"load_generator"`
	Upstream      ProcTimes  `json:"upstream"`
	Gateway       *ProcTimes `json:"gateway,omitempty"`
	Redis         *ProcTimes `json:"redis,omitempty"`
}

// runtimeSample is one reading of a gateway row's collector counters.
type runtimeSample struct{ cycles, pauses, alloc, gogc float64 }

func sampleRuntime(ctx context.Context, gw *runningGateway) (runtimeSample, error) {
	m, err := scrapeMetrics(ctx, gw.admin+"/metrics", gcCyclesMetric, gcPausesMetric, allocMetric, gogcMetric)
	if err != nil {
		return runtimeSample{}, err
	}
	return runtimeSample{cycles: m[gcCyclesMetric], pauses: m[gcPausesMetric], alloc: m[allocMetric], gogc: m[gogcMetric]}, nil
}

// openSample is one reading of everything a window is measured by.
type openSample struct {
	procs   []schedTimes // of openTarget.pids
	runtime runtimeSample
}

// openTarget accumulates one target's windows.
type openTarget struct {
	name    string
	loader  *loader
	latency *Histogram
	lag     *Histogram
	res     OpenTarget
	// pids are the processes the requests pass through, in the order of
	// OpenProcesses; gw is set on gateway rows, redis on the rows that
	// use it. used sums their counters over the windows.
	pids    []int
	gw      *runningGateway
	redis   bool
	used    openSample
	seconds float64
}

func (t *openTarget) sample(ctx context.Context) (openSample, error) {
	var s openSample
	for _, pid := range t.pids {
		st, err := readSchedTimes(pid)
		if err != nil {
			return s, err
		}
		s.procs = append(s.procs, st)
	}
	if t.gw != nil {
		var err error
		if s.runtime, err = sampleRuntime(ctx, t.gw); err != nil {
			return s, err
		}
	}
	return s, nil
}

// measure runs one window, reading the counters around it.
func (t *openTarget) measure(ctx context.Context, sched openSchedule, window time.Duration) error {
	before, err := t.sample(ctx)
	if err != nil {
		return err
	}
	w := sched.run(ctx, time.Now(), window, t.send)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("open loop interrupted: %w", err)
	}
	t.add(w)
	after, err := t.sample(ctx)
	if err != nil {
		return err
	}
	if t.used.procs == nil {
		t.used.procs = make([]schedTimes, len(t.pids))
	}
	for i := range t.pids {
		d := after.procs[i].minus(before.procs[i])
		t.used.procs[i].run += d.run
		t.used.procs[i].wait += d.wait
	}
	u, a, b := &t.used.runtime, after.runtime, before.runtime
	u.cycles += a.cycles - b.cycles
	u.pauses += a.pauses - b.pauses
	u.alloc += a.alloc - b.alloc
	u.gogc = a.gogc
	t.seconds += window.Seconds()
	return nil
}

func (t *openTarget) add(w *openWindow) {
	t.latency.Merge(w.latency)
	t.lag.Merge(w.lag)
	t.res.Scheduled += w.scheduled
	t.res.Errors += w.errors
	t.res.Late += w.late
	t.res.MaxInFlight = max(t.res.MaxInFlight, w.maxInFlight)
	if t.res.ErrorKinds == nil && len(w.kinds) > 0 {
		t.res.ErrorKinds = map[string]int64{}
	}
	for k, c := range w.kinds {
		t.res.ErrorKinds[k] += c
	}
	t.res.Rounds = append(t.res.Rounds, OpenRound{Scheduled: w.scheduled, Errors: w.errors, Late: w.late, Quantiles: quantilesOf(w.latency)})
}

// finish fills the totals, and the added latencies against base when it
// was measured in the same rounds.
func (t *openTarget) finish(base *openTarget) {
	t.res.ErrorKinds = topKinds(t.res.ErrorKinds, maxErrorKinds)
	t.res.Quantiles = quantilesOf(t.latency)
	t.res.Max = Millis(t.latency.Max())
	t.res.SendLagP99 = Millis(t.lag.Quantile(0.99))
	t.res.SendLagMax = Millis(t.lag.Max())
	if n := float64(t.latency.Count()); n > 0 && t.seconds > 0 {
		per := func(st schedTimes) ProcTimes {
			return ProcTimes{CPUMicros: float64(st.run.Microseconds()) / n, WaitMicros: float64(st.wait.Microseconds()) / n}
		}
		p := &OpenProcesses{LoadGenerator: per(t.used.procs[0]), Upstream: per(t.used.procs[1])}
		if t.gw != nil {
			g := per(t.used.procs[2])
			p.Gateway = &g
			if t.redis {
				rd := per(t.used.procs[3])
				p.Redis = &rd
			}
			rt := t.used.runtime
			u := &OpenGatewayUsage{GOGC: rt.gogc, AllocBytes: rt.alloc / n, GCsPerSecond: rt.cycles / t.seconds}
			if rt.cycles > 0 {
				u.PauseMicros = rt.pauses / rt.cycles * 1e6
			}
			t.res.Gateway = u
		}
		t.res.Processes = p
	}
	if base == nil || base == t || len(base.res.Rounds) != len(t.res.Rounds) {
		return
	}
	added := make([]Quantiles, len(t.res.Rounds))
	for i := range t.res.Rounds {
		a := t.res.Rounds[i].Quantiles.minus(base.res.Rounds[i].Quantiles)
		t.res.Rounds[i].Added = &a
		added[i] = a
	}
	med := medianQuantiles(added)
	t.res.Added = &med
}

// openLoop measures the open-loop targets among lives at the fixed rate,
// alternating them round after round like the closed-loop rounds. It
// returns nil when none of them is measured.
func (r *runner) openLoop(ctx context.Context, lives []*live) (*OpenLoopResult, error) {
	o := r.o
	var ts []*openTarget
	for _, name := range openLoopTargets {
		i := slices.IndexFunc(lives, func(lv *live) bool { return lv.name == name })
		if i < 0 {
			continue
		}
		lv := lives[i]
		l, err := newLoader(r.wire, loadSpec{URL: lv.run.url, Creds: lv.run.creds, Shape: lv.run.shape, Concurrency: o.OpenSenders, Timeout: requestTimeout, IDPrefix: "open"})
		if err != nil {
			return nil, err
		}
		defer l.close()
		t := &openTarget{name: name, loader: l, latency: NewHistogram(), lag: NewHistogram(), res: OpenTarget{Name: name},
			pids: []int{os.Getpid(), r.upstream.Pid()}, gw: lv.run.gw}
		if t.gw != nil {
			t.pids = append(t.pids, t.gw.proc.Pid())
			if t.redis = lv.run.store == storeRedis && r.redis != nil; t.redis {
				t.pids = append(t.pids, r.redis.proc.Pid())
			}
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		return nil, nil
	}
	sched := openSchedule{interval: time.Duration(float64(time.Second) / o.OpenRate), senders: o.OpenSenders}
	window := o.OpenDuration / time.Duration(o.OpenRounds)
	res := &OpenLoopResult{
		Rate: o.OpenRate, Senders: o.OpenSenders, WarmupSeconds: o.Warmup.Seconds(), WindowSeconds: window.Seconds(),
		Rounds: o.OpenRounds, LateAfter: Millis(openLateAfter),
	}
	r.progress("open loop       %d targets at %.0f req/s, %v warm-up, then %d rounds of %v each", len(ts), o.OpenRate, o.Warmup, o.OpenRounds, window)
	for round := range o.OpenRounds {
		var line strings.Builder
		for k := range ts {
			t := ts[(k+round)%len(ts)]
			if round == 0 && o.Warmup > 0 {
				sched.run(ctx, time.Now(), o.Warmup, t.send)
			}
			if err := t.measure(ctx, sched, window); err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			rd := t.res.Rounds[len(t.res.Rounds)-1]
			fmt.Fprintf(&line, "  %s p50 %v p99 %v", t.name, rd.P50, rd.P99)
		}
		r.progress("open round %d/%d:%s", round+1, o.OpenRounds, line.String())
	}
	var base *openTarget
	if ts[0].name == openLoopTargets[0] {
		base = ts[0]
		res.Baseline = base.name
	}
	for _, t := range ts {
		t.finish(base)
		res.Targets = append(res.Targets, t.res)
	}
	return res, nil
}

// send is one open-loop request on sender i, which owns the loader's
// i-th client.
func (t *openTarget) send(ctx context.Context, i int) error {
	wk := t.loader.workers[i]
	wk.seq++
	return wk.exchange(ctx, t.loader.client, t.loader.wire, t.loader.spec, wk.seq, wk.refs(t.loader.spec.Shape, wk.seq))
}

// Target returns the named open-loop target, or nil.
func (o *OpenLoopResult) target(name string) *OpenTarget {
	for i := range o.Targets {
		if o.Targets[i].Name == name {
			return &o.Targets[i]
		}
	}
	return nil
}

// evaluateOpenLoop adds the fixed-rate targets' verdicts: what the full
// policy row adds at p50 and p99, the median of the rounds, and every
// target's errors.
func (r *Report) evaluateOpenLoop() {
	ol := r.OpenLoop
	if ol == nil {
		return
	}
	if t := ol.target(TargetJWTRedis); t != nil && t.Added != nil {
		perRound := func(f func(Quantiles) Millis) string {
			parts := make([]string, len(t.Rounds))
			for i, rd := range t.Rounds {
				parts[i] = fmt.Sprintf("%+.2f", f(*rd.Added).ms())
			}
			return "rounds " + strings.Join(parts, ", ") + " ms"
		}
		p50, p99 := t.Added.P50, t.Added.P99
		r.Verdicts = append(r.Verdicts,
			Verdict{Name: "open loop: full policy adds at p50 (ms)", Value: p50.ms(),
				Limit: fmt.Sprintf("<= %.1f ms", Millis(MaxOpenAddedP50).ms()), Met: time.Duration(p50) <= MaxOpenAddedP50,
				Detail: perRound(func(q Quantiles) Millis { return q.P50 })},
			Verdict{Name: "open loop: full policy adds at p99 (ms)", Value: p99.ms(),
				Limit: fmt.Sprintf("<= %.1f ms", Millis(MaxOpenAddedP99).ms()), Met: time.Duration(p99) <= MaxOpenAddedP99,
				Detail: perRound(func(q Quantiles) Millis { return q.P99 })},
		)
	}
	for _, t := range ol.Targets {
		if t.Errors > 0 {
			r.Verdicts = append(r.Verdicts, Verdict{Name: "open loop " + t.Name + " errors", Value: float64(t.Errors),
				Limit: "0", Detail: formatKinds(t.ErrorKinds)})
		}
	}
}

// writeOpenLoopTable shows every target's latency at the fixed rate, what
// it adds to the baseline, and then each round.
func (r *Report) writeOpenLoopTable(b *strings.Builder) {
	ol := r.OpenLoop
	if ol == nil {
		return
	}
	fmt.Fprintf(b, "\nopen loop: %.0f req/s scheduled per target, latency from each request's scheduled send time; %d senders,\n", ol.Rate, ol.Senders)
	fmt.Fprintf(b, "%gs warm-up + %d alternating rounds of %gs; late = sent more than %v behind schedule\n", ol.WarmupSeconds, ol.Rounds, ol.WindowSeconds, ol.LateAfter)
	added := "added vs " + orNone(ol.Baseline) + " (median of rounds)"
	const row = "%-14s %9s %6s %6s %8s %8s %8s %8s %9s  %s\n"
	fmt.Fprintf(b, row, "target", "scheduled", "errors", "late", "p50", "p99", "p99.9", "max", "lag p99", added)
	for _, t := range ol.Targets {
		add := "-"
		if t.Added != nil {
			add = t.Added.signed()
		}
		fmt.Fprintf(b, row, t.Name, fmt.Sprint(t.Scheduled), fmt.Sprint(t.Errors), fmt.Sprint(t.Late),
			t.P50, t.P99, t.P999, t.Max, t.SendLagP99, add)
	}
	b.WriteString("CPU and run-queue wait (runnable, no CPU free) per answered request, by process; the gateway's collector\n")
	const prow = "  %-14s %17s %17s %17s %15s %6s %10s %7s %11s\n"
	fmt.Fprintf(b, prow, "target", "load gen cpu/wait", "upstream cpu/wait", "gateway cpu/wait", "redis cpu/wait", "GOGC", "allocated", "GCs/s", "pause/cycle")
	times := func(p *ProcTimes) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f/%.0fus", p.CPUMicros, p.WaitMicros)
	}
	for _, t := range ol.Targets {
		p := t.Processes
		if p == nil {
			continue
		}
		gogc, alloc, gcs, pause := "-", "-", "-", "-"
		if g := t.Gateway; g != nil {
			gogc, alloc = fmt.Sprintf("%.0f", g.GOGC), fmt.Sprintf("%.1f KiB", g.AllocBytes/1024)
			gcs, pause = fmt.Sprintf("%.1f", g.GCsPerSecond), fmt.Sprintf("%.0fus", g.PauseMicros)
		}
		fmt.Fprintf(b, prow, t.Name, times(&p.LoadGenerator), times(&p.Upstream), times(p.Gateway), times(p.Redis), gogc, alloc, gcs, pause)
	}
	b.WriteString("per round: p50 / p99 / p99.9, and added to the baseline in the same round\n")
	for i := range ol.Rounds {
		fmt.Fprintf(b, "  round %d:", i+1)
		for _, t := range ol.Targets {
			if i >= len(t.Rounds) {
				continue
			}
			rd := t.Rounds[i]
			fmt.Fprintf(b, "  %s %s", t.Name, rd.Quantiles.plain())
			if rd.Added != nil {
				fmt.Fprintf(b, " (%s)", rd.Added.signed())
			}
		}
		b.WriteByte('\n')
	}
}

func (m Millis) ms() float64 { return float64(m) / float64(time.Millisecond) }

// plain is "0.21/0.45/1.20ms".
func (q Quantiles) plain() string {
	return fmt.Sprintf("%.2f/%.2f/%.2fms", q.P50.ms(), q.P99.ms(), q.P999.ms())
}

// signed shows differences with their sign: "+0.21/+0.45/+1.20ms".
func (q Quantiles) signed() string {
	return fmt.Sprintf("%+.2f/%+.2f/%+.2fms", q.P50.ms(), q.P99.ms(), q.P999.ms())
}
