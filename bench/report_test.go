package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEvaluateGateways(t *testing.T) {
	load := func(rps float64, p99 time.Duration) *LoadResult {
		return &LoadResult{Requests: int64(rps * 10), Seconds: 10, RPS: rps, P99: Millis(p99)}
	}
	// A row's background work is kept large throughout: only the request
	// path may decide the round-trip verdicts.
	redisRow := func(name string, rps, requestPath, dedupeWaited float64, jwksMeasured int64) TargetResult {
		const background = 2.0
		return TargetResult{Name: name, Result: load(rps, 20*time.Millisecond), Gateway: &GatewayUsage{
			Store: storeRedis, JWT: true, PerRequest: requestPath + background, DedupeWaited: dedupeWaited, DedupeAfterAnswer: dedupeWaited,
			PerRequestByOp:    map[string]float64{"pipeline": requestPath, "evalsha": background},
			RequestPath:       PathUsage{PerRequest: requestPath, ByOp: map[string]float64{"pipeline": requestPath}},
			Background:        PathUsage{PerRequest: background, ByOp: map[string]float64{"evalsha": background}},
			JWKSFetchesBefore: 1, JWKSFetchesMeasured: jwksMeasured,
		}}
	}
	pass := TargetResult{Name: TargetGateway, Result: load(10000, 10*time.Millisecond), Gateway: &GatewayUsage{Store: storeEmbedded}}
	tests := []struct {
		name    string
		targets []TargetResult
		met     map[string]bool
	}{
		{
			name: "every target met",
			targets: []TargetResult{pass,
				redisRow(TargetJWTRedis, 8000, 1.04, 0, 0),
				redisRow(TargetJWTRedisContext, 5000, 2, 0, 0),
				redisRow(TargetJWTRedisDedupe, 6400, 2.04, 1, 0)},
			met: map[string]bool{
				"gw-jwt-redis vs passthrough throughput": true, "gw-jwt-redis request-path round trips": true,
				"JWKS fetches while measured": true, "dedupe's added request-path round trips": true,
			},
		},
		{
			name: "every target missed",
			targets: []TargetResult{pass,
				redisRow(TargetJWTRedis, 6000, 1.1, 0, 1),
				redisRow(TargetJWTRedisDedupe, 4000, 2.2, 1, 0)},
			met: map[string]bool{
				"gw-jwt-redis vs passthrough throughput": false, "gw-jwt-redis request-path round trips": false,
				"JWKS fetches while measured": false, "dedupe's added request-path round trips": false,
			},
		},
		{
			name:    "without the dedupe row and the passthrough run",
			targets: []TargetResult{redisRow(TargetJWTRedis, 6000, 1, 0, 0)},
			met:     map[string]bool{"gw-jwt-redis request-path round trips": true, "JWKS fetches while measured": true},
		},
		{
			name:    "without Redis",
			targets: []TargetResult{pass, {Name: TargetJWTRedis, Skipped: "redis-server is not on PATH"}},
			met:     map[string]bool{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Targets: tt.targets}
			r.evaluate()
			got := map[string]bool{}
			for _, v := range r.Verdicts {
				got[v.Name] = v.Met
			}
			if len(got) != len(tt.met) {
				t.Fatalf("verdicts %v, want %v", got, tt.met)
			}
			for name, met := range tt.met {
				if m, ok := got[name]; !ok || m != met {
					t.Fatalf("verdict %q: met=%v (present %v), want met=%v; all: %v", name, m, ok, met, got)
				}
			}
			var table strings.Builder
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if len(tt.met) > 0 && !strings.Contains(table.String(), "gateway rows") {
				t.Fatalf("table lacks the gateway rows:\n%s", table.String())
			}
		})
	}
}

// limitFigures are the measured figures that the performance targets
// judge, each set in a test to its limit or just past it.
type limitFigures struct {
	tunedRPS, fullPolicyCPU, dedupeRedisCPU float64
	rssKiB, goroutines                      float64
	pushRate                                float64
	pushP99                                 time.Duration
	pushGatewayCPU, pushRedisCPU, pushRT    float64
	pushMissing, pushDupes                  int64
	saturationRate                          float64
	saturationMissing, saturationDupes      int64
}

// limitReport is a run that measured every row and phase the targets
// need: the passthrough run at 10,000 req/s and 100 µs of gateway CPU per
// request, twice the bare proxy's rate at the same p99, and the other
// figures from f.
func limitReport(f limitFigures) *Report {
	load := func(rps float64) *LoadResult {
		return &LoadResult{Requests: int64(rps * 10), Seconds: 10, RPS: rps, P99: Millis(20 * time.Millisecond)}
	}
	push := func(rate float64, missing, dupes int64) *PushResult {
		return &PushResult{Tasks: 10, EventsPerTask: 100, Clients: 2, Streamed: 1000, Delivered: 1000 - missing, Missing: missing, Duplicates: dupes,
			Seconds: 1, DeliveriesPerSecond: rate, P50: Millis(time.Millisecond), P99: Millis(time.Millisecond), Max: Millis(time.Millisecond)}
	}
	paced := push(f.pushRate, f.pushMissing, f.pushDupes)
	paced.Interval, paced.Offered = Millis(10*time.Millisecond), 2400
	paced.P99, paced.Max = Millis(f.pushP99), Millis(f.pushP99)
	paced.GatewayCPUMicros, paced.RedisCPUMicros, paced.RoundTrips = f.pushGatewayCPU, f.pushRedisCPU, f.pushRT
	return &Report{
		Targets: []TargetResult{
			{Name: TargetBare, Result: load(5000)},
			{Name: TargetBareTuned, Result: load(f.tunedRPS)},
			{Name: TargetGateway, Result: load(10000), Gateway: &GatewayUsage{Store: storeEmbedded, GatewayCPUMicros: 100}},
			{Name: TargetJWTRedisDedupe, Result: load(6000), Gateway: &GatewayUsage{Store: storeRedis, JWT: true,
				GatewayCPUMicros: f.fullPolicyCPU, RedisCPUMicros: f.dedupeRedisCPU}},
		},
		Streams:        &StreamResult{Streams: 100, Opened: 100, RSSPerStreamKiB: f.rssKiB, GoroutinesPerStream: f.goroutines},
		Push:           paced,
		PushSaturation: push(f.saturationRate, f.saturationMissing, f.saturationDupes),
	}
}

// verdictsOf evaluates r and returns its verdicts by name.
func verdictsOf(t *testing.T, r *Report) map[string]Verdict {
	t.Helper()
	r.evaluate()
	got := map[string]Verdict{}
	for _, v := range r.Verdicts {
		if _, dup := got[v.Name]; dup {
			t.Fatalf("verdict %q twice", v.Name)
		}
		got[v.Name] = v
	}
	return got
}

// TestEvaluateLimits checks each performance target on both sides of its
// limit: a figure at the limit meets it, one just past it misses it.
func TestEvaluateLimits(t *testing.T) {
	atLimits := limitFigures{
		tunedRPS: 8000, fullPolicyCPU: 120, dedupeRedisCPU: 30, rssKiB: 32, goroutines: 2,
		pushRate: 2000, pushP99: 50 * time.Millisecond, pushGatewayCPU: 120, pushRedisCPU: 50, pushRT: 1,
		saturationRate: 5000,
	}
	pastLimits := limitFigures{
		tunedRPS: 8500, fullPolicyCPU: 121, dedupeRedisCPU: 31, rssKiB: 32.5, goroutines: 2.01,
		pushRate: 1999, pushP99: 51 * time.Millisecond, pushGatewayCPU: 121, pushRedisCPU: 51, pushRT: 1.01, pushMissing: 1, pushDupes: 1,
		saturationRate: 4999, saturationMissing: 1, saturationDupes: 1,
	}
	judged := []string{
		"throughput vs httputil-tuned", "full policy / passthrough gateway CPU", "Redis CPU per deduplicated send (µs)",
		"RSS per idle stream (KiB)", "goroutines per idle stream",
		"push relay deliveries/s", "push relay p99 event to webhook (ms)", "push relay gateway CPU per event (µs)",
		"push relay Redis CPU per event (µs)", "push relay Redis round trips per event", "push relay events missing", "push relay events duplicated",
		"push saturation deliveries/s", "push saturation events missing", "push saturation events duplicated",
	}
	// Met in both reports: the passthrough run has twice the bare proxy's
	// rate at the same p99.
	always := []string{"throughput vs httputil.ReverseProxy", "p99 vs httputil.ReverseProxy"}
	for _, tt := range []struct {
		name string
		f    limitFigures
		met  bool
	}{{"at the limits", atLimits, true}, {"past the limits", pastLimits, false}} {
		t.Run(tt.name, func(t *testing.T) {
			r := limitReport(tt.f)
			got := verdictsOf(t, r)
			if len(got) != len(judged)+len(always) {
				t.Fatalf("%d verdicts, want %d: %v", len(got), len(judged)+len(always), got)
			}
			for _, name := range always {
				if v, ok := got[name]; !ok || !v.Met {
					t.Errorf("%q: %+v (present %v), want met", name, v, ok)
				}
			}
			for _, name := range judged {
				if v, ok := got[name]; !ok || v.Met != tt.met {
					t.Errorf("%q: %+v (present %v), want met=%v", name, v, ok, tt.met)
				}
			}
			if v := got["full policy / passthrough gateway CPU"]; v.Value != tt.f.fullPolicyCPU/100 {
				t.Errorf("full-policy CPU ratio %v, want %v", v.Value, tt.f.fullPolicyCPU/100)
			}
			if v := got["push relay p99 event to webhook (ms)"]; v.Value != float64(tt.f.pushP99)/float64(time.Millisecond) || v.Limit != "<= 50 ms" {
				t.Errorf("push p99 verdict %+v", v)
			}
			var table strings.Builder
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"saturation", "back to back", "round trips", "MISSED"} {
				if want == "MISSED" && tt.met {
					continue
				}
				if !strings.Contains(table.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, table.String())
				}
			}
			raw, err := json.Marshal(r)
			if err != nil || !strings.Contains(string(raw), `"push_saturation":{`) {
				t.Errorf("JSON lacks the saturation run: %v\n%s", err, raw)
			}
		})
	}
}

// TestEvaluateWithoutData checks that a target whose row or phase was not
// measured gets no verdict, rather than a passing one, and that a cost
// measured on wrong answers fails.
func TestEvaluateWithoutData(t *testing.T) {
	within := limitFigures{tunedRPS: 8000, fullPolicyCPU: 110, dedupeRedisCPU: 20, rssKiB: 20, goroutines: 1,
		pushRate: 2400, pushP99: 10 * time.Millisecond, pushGatewayCPU: 100, pushRedisCPU: 40, pushRT: 0.9, saturationRate: 6000}
	skip := func(name string) func(r *Report) {
		return func(r *Report) {
			t := r.Target(name)
			t.Result, t.Gateway, t.Skipped = nil, nil, "not among -targets"
		}
	}
	for _, tt := range []struct {
		name   string
		change func(r *Report)
		absent []string
		// missed are verdicts that must be present and missed.
		missed []string
	}{
		{name: "tuned proxy skipped", change: skip(TargetBareTuned), absent: []string{"throughput vs httputil-tuned"}},
		{name: "bare proxy skipped", change: skip(TargetBare), absent: []string{"throughput vs httputil.ReverseProxy", "p99 vs httputil.ReverseProxy"}},
		{name: "passthrough skipped", change: skip(TargetGateway),
			absent: []string{"throughput vs httputil.ReverseProxy", "throughput vs httputil-tuned", "full policy / passthrough gateway CPU"}},
		{name: "full-policy row skipped", change: skip(TargetJWTRedisDedupe),
			absent: []string{"full policy / passthrough gateway CPU", "Redis CPU per deduplicated send (µs)"}},
		{name: "passthrough CPU not read", change: func(r *Report) { r.Target(TargetGateway).Gateway.GatewayCPUMicros = 0 },
			absent: []string{"full policy / passthrough gateway CPU"}},
		{name: "full-policy row answered wrongly", change: func(r *Report) { r.Target(TargetJWTRedisDedupe).Result.Errors = 2 },
			missed: []string{"full policy / passthrough gateway CPU", "Redis CPU per deduplicated send (µs)", TargetJWTRedisDedupe + " errors"}},
		{name: "no streams", change: func(r *Report) { r.Streams = nil }, absent: []string{"RSS per idle stream (KiB)", "goroutines per idle stream"}},
		{name: "streams ended early", change: func(r *Report) { r.Streams.EndedEarly = 1 },
			missed: []string{"RSS per idle stream (KiB)", "goroutines per idle stream"}},
		{name: "no paced push run", change: func(r *Report) { r.Push = nil },
			absent: []string{"push relay deliveries/s", "push relay p99 event to webhook (ms)", "push relay gateway CPU per event (µs)",
				"push relay Redis CPU per event (µs)", "push relay Redis round trips per event", "push relay events missing", "push relay events duplicated"}},
		{name: "paced push run delivered nothing", change: func(r *Report) {
			p := r.Push
			p.Delivered, p.Missing, p.DeliveriesPerSecond, p.P99, p.GatewayCPUMicros, p.RedisCPUMicros, p.RoundTrips = 0, p.Streamed, 0, 0, 0, 0, 0
		},
			absent: []string{"push relay p99 event to webhook (ms)", "push relay gateway CPU per event (µs)", "push relay Redis CPU per event (µs)",
				"push relay Redis round trips per event"},
			missed: []string{"push relay deliveries/s", "push relay events missing"}},
		{name: "no saturation run", change: func(r *Report) { r.PushSaturation = nil },
			absent: []string{"push saturation deliveries/s", "push saturation events missing", "push saturation events duplicated"}},
		{name: "saturation run streamed nothing", change: func(r *Report) { r.PushSaturation = &PushResult{Tasks: 10, EventsPerTask: 100} },
			absent: []string{"push saturation deliveries/s", "push saturation events missing", "push saturation events duplicated"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := limitReport(within)
			tt.change(r)
			got := verdictsOf(t, r)
			for _, name := range tt.absent {
				if v, ok := got[name]; ok {
					t.Errorf("verdict %q without its data: %+v", name, v)
				}
			}
			for _, name := range tt.missed {
				if v, ok := got[name]; !ok || v.Met {
					t.Errorf("verdict %q: %+v (present %v), want missed", name, v, ok)
				}
			}
			for name, v := range got {
				if !v.Met && !slices.Contains(tt.missed, name) {
					t.Errorf("verdict %q missed: %+v", name, v)
				}
			}
		})
	}
}
