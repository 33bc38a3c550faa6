package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The targets the project holds itself to.
const (
	// MinThroughputRatio: the gateway serves at least the bare proxy's rate.
	MinThroughputRatio = 1.0
	// MaxP99Ratio: the gateway's p99 latency is within 1.2x the bare proxy's.
	MaxP99Ratio = 1.2
	// MinTunedThroughputRatio: the gateway serves at least 1.2x the rate of
	// the ReverseProxy whose transport keeps enough idle connections.
	MinTunedThroughputRatio = 1.2
	// MaxKiBPerStream bounds the gateway memory an idle stream holds.
	MaxKiBPerStream = 32.0
	// MaxGoroutinesPerStream bounds the gateway goroutines an idle stream
	// holds.
	MaxGoroutinesPerStream = 2.0
	// MinJWTRedisRatio: authenticating JWTs and checking ownership in Redis
	// keeps at least this share of the passthrough run's rate.
	MinJWTRedisRatio = 0.7
	// MaxRoundTripsPerRequest: the hot path makes one Redis round trip per
	// request (pipelined where more commands are needed), counted on the
	// request path of gw-jwt-redis, whose load is the passthrough run's.
	// RoundTripTolerance absorbs rounding of requests that straddle a
	// window's edges.
	MaxRoundTripsPerRequest = 1.0
	RoundTripTolerance      = 0.05
	// MaxDedupeRoundTrips: dedupe adds at most this many request-path
	// round trips to a first-seen request, on the same load.
	MaxDedupeRoundTrips = 1.0
	// MaxFullPolicyCPURatio: the full policy (JWT, Redis, dedupe) costs
	// the gateway at most 1.2x the passthrough run's CPU per request.
	MaxFullPolicyCPURatio = 1.2
	// MaxDedupeRedisCPUMicros bounds the Redis CPU of a deduplicated send,
	// in the full-policy row.
	MaxDedupeRedisCPUMicros = 30.0
	// MaxBridgeCPURatio: bridging a 0.3 JSON-RPC client to a 1.0 JSON-RPC
	// agent adds at most 20% to the gateway's CPU per request of the same
	// row unbridged.
	MaxBridgeCPURatio = 1.2
	// MaxOpenAddedP50 and MaxOpenAddedP99 bound what the full-policy row
	// adds to the bare upstream's latency at a fixed rate.
	MaxOpenAddedP50 = 300 * time.Microsecond
	MaxOpenAddedP99 = time.Millisecond
	// MinPushDeliveriesPerSecond: the paced push-relay run keeps up with
	// most of the 2,400 events/s it is offered.
	MinPushDeliveriesPerSecond = 2000.0
	// MaxPushP99 bounds the paced run's latency from event to webhook.
	MaxPushP99 = 50 * time.Millisecond
	// MaxPushGatewayCPUMicros and MaxPushRedisCPUMicros bound the CPU of
	// one delivered event in the paced run, of the gateway and of Redis.
	MaxPushGatewayCPUMicros = 120.0
	MaxPushRedisCPUMicros   = 50.0
	// MaxPushRoundTrips bounds the gateway's Redis round trips per
	// delivered event in the paced run, all of them counted.
	MaxPushRoundTrips = 1.0
	// MinPushSaturationPerSecond: with every event sent back to back the
	// relay delivers at least this many a second.
	MinPushSaturationPerSecond = 5000.0
)

// bridgeVerdict names the bridging target in the report.
const bridgeVerdict = "bridged / unbridged gateway CPU per request"

// Report is everything one run measured.
type Report struct {
	Machine Machine `json:"machine"`
	// GatewayRevision is the source revision of the measured gateway.
	GatewayRevision string         `json:"gateway_revision"`
	Settings        Settings       `json:"settings"`
	Targets         []TargetResult `json:"targets"`
	// GRPC holds the gRPC rows, nil when none ran.
	GRPC *GRPCResult `json:"grpc,omitempty"`
	// Ratios compare the gateway with the bare proxies; absent when either
	// side was not measured.
	Ratios *Ratios `json:"ratios,omitempty"`
	// GatewayRatios compare the gateway rows with one another; absent when
	// the rows they need were not measured.
	GatewayRatios *GatewayRatios `json:"gateway_ratios,omitempty"`
	// Bridge compares the bridged rows with their unbridged twin; absent
	// when either was not measured.
	Bridge *BridgeRatios `json:"bridge,omitempty"`
	// OpenLoop is the fixed-rate measurement; absent when skipped.
	OpenLoop *OpenLoopResult `json:"open_loop,omitempty"`
	Streams  *StreamResult   `json:"streams,omitempty"`
	// Push is the paced push-relay run, PushSaturation the one with every
	// event sent back to back; each absent when skipped.
	Push           *PushResult `json:"push_relay,omitempty"`
	PushSaturation *PushResult `json:"push_saturation,omitempty"`
	Verdicts       []Verdict   `json:"verdicts"`
}

// Settings are the run's parameters.
type Settings struct {
	Concurrency     int     `json:"concurrency"`
	WarmupSeconds   float64 `json:"warmup_seconds"`
	DurationSeconds float64 `json:"duration_seconds"`
	Rounds          int     `json:"rounds"`
	ResponseBytes   int     `json:"response_bytes"`
	Streams         int     `json:"streams"`
	WarmupStreams   int     `json:"warmup_streams"`
	Profiled        bool    `json:"profiled,omitempty"`
}

// Ratios are the gateway's numbers divided by a baseline's, zero when that
// baseline was not measured.
type Ratios struct {
	ThroughputVsBare float64 `json:"throughput_vs_httputil,omitempty"`
	P99VsBare        float64 `json:"p99_vs_httputil,omitempty"`
	// Against the ReverseProxy whose transport keeps enough idle
	// connections, which is what the gateway's own transport does.
	ThroughputVsTuned float64 `json:"throughput_vs_httputil_tuned,omitempty"`
	P99VsTuned        float64 `json:"p99_vs_httputil_tuned,omitempty"`
}

// GatewayRatios compare the authorizing gateway rows with the passthrough
// run and with one another.
type GatewayRatios struct {
	// JWTRedis over the passthrough run.
	JWTRedisThroughput float64 `json:"jwt_redis_vs_passthrough_throughput"`
	JWTRedisP99        float64 `json:"jwt_redis_vs_passthrough_p99"`
	// gw-jwt-redis's store round trips per request: in all, on the request
	// path (the target) and in the background.
	JWTRedisRoundTrips  float64 `json:"jwt_redis_round_trips_per_request"`
	JWTRedisRequestPath float64 `json:"jwt_redis_request_path_round_trips_per_request"`
	JWTRedisBackground  float64 `json:"jwt_redis_background_round_trips_per_request"`
	// Dedupe over JWTRedis, when the dedupe row was measured.
	DedupeThroughput float64 `json:"dedupe_vs_jwt_redis_throughput,omitempty"`
	DedupeP99        float64 `json:"dedupe_vs_jwt_redis_p99,omitempty"`
	// Dedupe's own work per request in the dedupe row, from its decision
	// counter: the claim a request waits for, and the records settled after
	// the answer (in pipelines they share).
	DedupeWaited      float64 `json:"dedupe_waited_round_trips,omitempty"`
	DedupeAfterAnswer float64 `json:"dedupe_after_answer_round_trips,omitempty"`
	// How many more round trips per request the dedupe row made than
	// gw-jwt-redis on the same load: on the request path (the target), in
	// the background, and in all.
	DedupeRequestPathAdded float64 `json:"dedupe_added_request_path_round_trips,omitempty"`
	DedupeBackgroundAdded  float64 `json:"dedupe_added_background_round_trips,omitempty"`
	DedupeRowsDiffer       float64 `json:"dedupe_rows_differ_round_trips,omitempty"`
}

// BridgeRatios are the bridged rows' gateway CPU per answered request
// over the full-policy row's, in the same run: the 0.3 client in front of
// the 1.0 agent (the target), and the 1.0 client in front of a 0.3 agent
// when measured (zero otherwise).
type BridgeRatios struct {
	TwinCPUMicros float64 `json:"unbridged_gateway_cpu_us"`
	CPUMicros     float64 `json:"bridged_gateway_cpu_us"`
	CPU           float64 `json:"bridged_vs_unbridged_cpu"`
	Throughput    float64 `json:"bridged_vs_unbridged_throughput"`
	To03CPUMicros float64 `json:"to_03_gateway_cpu_us,omitempty"`
	To03CPU       float64 `json:"to_03_vs_unbridged_cpu,omitempty"`
}

// Verdict is one target and whether this run met it.
type Verdict struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Limit  string  `json:"limit"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail,omitempty"`
}

// Target returns the named target's result, or nil.
func (r *Report) Target(name string) *TargetResult {
	for i := range r.Targets {
		if r.Targets[i].Name == name {
			return &r.Targets[i]
		}
	}
	return nil
}

func (r *Report) measured(name string) *LoadResult {
	t := r.Target(name)
	if t == nil || t.Result == nil || t.Result.Requests == 0 {
		return nil
	}
	return t.Result
}

// evaluate fills Ratios and Verdicts from the measurements.
func (r *Report) evaluate() {
	r.evaluateProxies()
	r.evaluateGateways()
	r.evaluateRequestCPU()
	r.evaluateBridge()
	r.evaluateOpenLoop()
	r.evaluateStreams()
	r.evaluatePush()
	for _, t := range r.Targets {
		if t.Result != nil && t.Result.Errors > 0 {
			r.Verdicts = append(r.Verdicts, Verdict{Name: t.Name + " errors", Value: float64(t.Result.Errors),
				Limit: "0", Detail: formatKinds(t.Result.ErrorKinds)})
		}
	}
}

// evaluateProxies fills Ratios and compares the passthrough run with the
// bare ReverseProxy and the tuned one, each when measured.
func (r *Report) evaluateProxies() {
	gw, bare, tuned := r.measured(TargetGateway), r.measured(TargetBare), r.measured(TargetBareTuned)
	if gw == nil {
		return
	}
	q := &Ratios{}
	if bare != nil && bare.P99 > 0 {
		q.ThroughputVsBare, q.P99VsBare = gw.RPS/bare.RPS, float64(gw.P99)/float64(bare.P99)
		r.Verdicts = append(r.Verdicts,
			Verdict{Name: "throughput vs httputil.ReverseProxy", Value: q.ThroughputVsBare,
				Limit: fmt.Sprintf(">= %.2fx", MinThroughputRatio), Met: q.ThroughputVsBare >= MinThroughputRatio},
			Verdict{Name: "p99 vs httputil.ReverseProxy", Value: q.P99VsBare,
				Limit: fmt.Sprintf("<= %.2fx", MaxP99Ratio), Met: q.P99VsBare <= MaxP99Ratio},
		)
	}
	if tuned != nil && tuned.P99 > 0 {
		q.ThroughputVsTuned, q.P99VsTuned = gw.RPS/tuned.RPS, float64(gw.P99)/float64(tuned.P99)
		r.Verdicts = append(r.Verdicts, Verdict{Name: "throughput vs httputil-tuned", Value: q.ThroughputVsTuned,
			Limit: fmt.Sprintf(">= %.2fx", MinTunedThroughputRatio), Met: q.ThroughputVsTuned >= MinTunedThroughputRatio})
	}
	if q.P99VsBare > 0 || q.P99VsTuned > 0 {
		r.Ratios = q
	}
}

// evaluateStreams judges what an idle stream holds in the gateway. Streams
// that failed to open or ended early fail both targets: the figures are
// then not those of the idle streams the run asked for.
func (r *Report) evaluateStreams() {
	s := r.Streams
	if s == nil || s.Opened == 0 {
		return
	}
	for _, v := range []Verdict{
		{Name: "RSS per idle stream (KiB)", Value: s.RSSPerStreamKiB,
			Limit: fmt.Sprintf("<= %.0f KiB", MaxKiBPerStream), Met: s.RSSPerStreamKiB <= MaxKiBPerStream},
		{Name: "goroutines per idle stream", Value: s.GoroutinesPerStream,
			Limit: fmt.Sprintf("<= %.0f", MaxGoroutinesPerStream), Met: s.GoroutinesPerStream <= MaxGoroutinesPerStream},
	} {
		if s.Errors > 0 || s.EndedEarly > 0 {
			v.Met = false
			v.Detail = fmt.Sprintf("%d streams failed to open, %d ended early", s.Errors, s.EndedEarly)
		}
		r.Verdicts = append(r.Verdicts, v)
	}
}

// gatewayRow is a measured gateway row with its usage, or nil.
func (r *Report) gatewayRow(name string) (*LoadResult, *GatewayUsage) {
	res := r.measured(name)
	t := r.Target(name)
	if res == nil || t.Gateway == nil {
		return nil, nil
	}
	return res, t.Gateway
}

// evaluateGateways fills GatewayRatios and their verdicts.
func (r *Report) evaluateGateways() {
	pass := r.measured(TargetGateway)
	jr, ju := r.gatewayRow(TargetJWTRedis)
	if jr == nil {
		return
	}
	q := &GatewayRatios{
		JWTRedisRoundTrips:  ju.PerRequest,
		JWTRedisRequestPath: ju.RequestPath.PerRequest,
		JWTRedisBackground:  ju.Background.PerRequest,
	}
	if pass != nil && pass.P99 > 0 {
		q.JWTRedisThroughput = jr.RPS / pass.RPS
		q.JWTRedisP99 = float64(jr.P99) / float64(pass.P99)
		r.Verdicts = append(r.Verdicts, Verdict{Name: "gw-jwt-redis vs passthrough throughput", Value: q.JWTRedisThroughput,
			Limit: fmt.Sprintf(">= %.2fx", MinJWTRedisRatio), Met: q.JWTRedisThroughput >= MinJWTRedisRatio})
	}
	rtLimit := MaxRoundTripsPerRequest + RoundTripTolerance
	r.Verdicts = append(r.Verdicts, Verdict{Name: "gw-jwt-redis request-path round trips", Value: ju.RequestPath.PerRequest,
		Limit: fmt.Sprintf("<= %.2f", rtLimit), Met: ju.RequestPath.PerRequest <= rtLimit,
		Detail: fmt.Sprintf("%s; %.2f more in the background: %s",
			orNone(formatOps(ju.RequestPath.ByOp)), ju.Background.PerRequest, orNone(formatOps(ju.Background.ByOp)))})

	var fetches int64
	var rows []string
	for _, t := range r.Targets {
		if t.Gateway != nil && t.Gateway.JWT {
			fetches += t.Gateway.JWKSFetchesMeasured
			rows = append(rows, t.Name)
		}
	}
	r.Verdicts = append(r.Verdicts, Verdict{Name: "JWKS fetches while measured", Value: float64(fetches),
		Limit: "== 0", Met: fetches == 0, Detail: "summed over " + strings.Join(rows, ", ")})

	if dr, du := r.gatewayRow(TargetJWTRedisDedupe); dr != nil && jr.P99 > 0 {
		q.DedupeThroughput = dr.RPS / jr.RPS
		q.DedupeP99 = float64(dr.P99) / float64(jr.P99)
		q.DedupeWaited = du.DedupeWaited
		q.DedupeAfterAnswer = du.DedupeAfterAnswer
		q.DedupeRequestPathAdded = du.RequestPath.PerRequest - ju.RequestPath.PerRequest
		q.DedupeBackgroundAdded = du.Background.PerRequest - ju.Background.PerRequest
		q.DedupeRowsDiffer = du.PerRequest - ju.PerRequest
		limit := MaxDedupeRoundTrips + RoundTripTolerance
		r.Verdicts = append(r.Verdicts, Verdict{Name: "dedupe's added request-path round trips", Value: q.DedupeRequestPathAdded,
			Limit: fmt.Sprintf("<= %.2f", limit), Met: q.DedupeRequestPathAdded <= limit,
			Detail: fmt.Sprintf("claims %.2f; %+.2f in the background, where %.2f records are settled", q.DedupeWaited, q.DedupeBackgroundAdded, q.DedupeAfterAnswer)})
	}
	r.GatewayRatios = q
}

// evaluateRequestCPU judges what the full-policy row costs per request:
// the gateway's CPU against the passthrough run's, and Redis's CPU, each
// send being deduplicated.
func (r *Report) evaluateRequestCPU() {
	fr, fu := r.gatewayRow(TargetJWTRedisDedupe)
	if fr == nil {
		return
	}
	if pr, pu := r.gatewayRow(TargetGateway); pr != nil && pu.GatewayCPUMicros > 0 && fu.GatewayCPUMicros > 0 {
		ratio := fu.GatewayCPUMicros / pu.GatewayCPUMicros
		r.Verdicts = append(r.Verdicts, answeredWrongly(Verdict{Name: "full policy / passthrough gateway CPU", Value: ratio,
			Limit: fmt.Sprintf("<= %.2fx", MaxFullPolicyCPURatio), Met: ratio <= MaxFullPolicyCPURatio,
			Detail: fmt.Sprintf("%.0f / %.0f µs per request, %s / %s", fu.GatewayCPUMicros, pu.GatewayCPUMicros, TargetJWTRedisDedupe, TargetGateway)}, fr, pr))
	}
	if fu.RedisCPUMicros > 0 {
		r.Verdicts = append(r.Verdicts, answeredWrongly(Verdict{Name: "Redis CPU per deduplicated send (µs)", Value: fu.RedisCPUMicros,
			Limit: fmt.Sprintf("<= %.0f µs", MaxDedupeRedisCPUMicros), Met: fu.RedisCPUMicros <= MaxDedupeRedisCPUMicros,
			Detail: TargetJWTRedisDedupe}, fr))
	}
}

// answeredWrongly fails a verdict on CPU per request when any of its rows
// answered a request wrongly: an error can be cheaper than an answer.
func answeredWrongly(v Verdict, rows ...*LoadResult) Verdict {
	var n int64
	for _, x := range rows {
		n += x.Errors
	}
	if n > 0 {
		v.Met = false
		v.Detail += fmt.Sprintf("; %d requests answered wrongly", n)
	}
	return v
}

// evaluateBridge compares the bridged rows with the full-policy row they
// are twins of.
func (r *Report) evaluateBridge() {
	tr, tu := r.gatewayRow(TargetJWTRedisDedupe)
	br, bu := r.gatewayRow(TargetBridge)
	if tr == nil || br == nil || tu.GatewayCPUMicros <= 0 {
		return
	}
	b := &BridgeRatios{
		TwinCPUMicros: tu.GatewayCPUMicros, CPUMicros: bu.GatewayCPUMicros,
		CPU: bu.GatewayCPUMicros / tu.GatewayCPUMicros, Throughput: br.RPS / tr.RPS,
	}
	if xr, xu := r.gatewayRow(TargetBridgeTo03); xr != nil {
		b.To03CPUMicros, b.To03CPU = xu.GatewayCPUMicros, xu.GatewayCPUMicros/tu.GatewayCPUMicros
	}
	r.Verdicts = append(r.Verdicts, answeredWrongly(Verdict{Name: bridgeVerdict, Value: b.CPU,
		Limit: fmt.Sprintf("<= %.2fx", MaxBridgeCPURatio), Met: b.CPU <= MaxBridgeCPURatio,
		Detail: fmt.Sprintf("%.0f / %.0f µs, %s / %s", b.CPUMicros, b.TwinCPUMicros, TargetBridge, TargetJWTRedisDedupe)}, br, tr))
	r.Bridge = b
}

// formatOps lists round trips per request by op: "pipeline 2.00, evalsha 1.00".
func formatOps(by map[string]float64) string {
	if len(by) == 0 {
		return ""
	}
	parts := make([]string, 0, len(by))
	for _, op := range sortedOps(by) {
		parts = append(parts, fmt.Sprintf("%s %.2f", op, by[op]))
	}
	return strings.Join(parts, ", ")
}

// WriteTable writes the report as plain text tables.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	s := r.Settings
	var b strings.Builder
	fmt.Fprintf(&b, "machine: %d CPUs, %s, %s, Linux %s, %s", m.CPUs, orUnknown(m.CPUModel), m.GoVersion, orUnknown(m.Kernel), m.OS)
	if m.Nginx != "" {
		fmt.Fprintf(&b, ", nginx %s", m.Nginx)
	}
	if m.Redis != "" {
		fmt.Fprintf(&b, ", redis %s", m.Redis)
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "gateway: revision %s\n", r.GatewayRevision)
	// A push-relay run alone measured no targets.
	if len(r.Targets) > 0 {
		fmt.Fprintf(&b, "load:    A2A 1.0 SendMessage over JSON-RPC, %d B answers, %d keep-alive clients, %gs warm-up + %gs per target in %d alternating rounds\n\n",
			s.ResponseBytes, s.Concurrency, s.WarmupSeconds, s.DurationSeconds, s.Rounds)

		const row = "%-21s %8s %13s %9s %9s %9s %9s %7s  %s\n"
		fmt.Fprintf(&b, row, "target", "req/s", "rounds min-max", "p50", "p90", "p99", "max", "errors", "setup")
		for _, t := range r.Targets {
			if t.Result == nil {
				fmt.Fprintf(&b, row, t.Name, "-", "-", "-", "-", "-", "-", "-", "skipped: "+t.Skipped)
				continue
			}
			x := t.Result
			lo, hi := spread(x.RoundRPS)
			fmt.Fprintf(&b, row, t.Name, fmt.Sprintf("%.0f", x.RPS), fmt.Sprintf("%.0f-%.0f", lo, hi),
				x.P50, x.P90, x.P99, x.Max, strconv.FormatInt(x.Errors, 10), t.Label)
		}
	}
	if q := r.Ratios; q != nil {
		b.WriteByte('\n')
		if q.P99VsBare > 0 {
			fmt.Fprintf(&b, "gateway / httputil:        throughput %.2fx, p99 %.2fx\n", q.ThroughputVsBare, q.P99VsBare)
		}
		if q.P99VsTuned > 0 {
			fmt.Fprintf(&b, "gateway / httputil-tuned:  throughput %.2fx, p99 %.2fx\n", q.ThroughputVsTuned, q.P99VsTuned)
		}
	}
	r.writeGatewayTable(&b)
	r.writeOpenLoopTable(&b)
	if st := r.Streams; st != nil {
		fmt.Fprintf(&b, "\nidle SSE streams: %d opened through the gateway in %.1fs (%d failed, %d ended early), after %d warm-up streams\n",
			st.Opened, st.OpenSeconds, st.Errors, st.EndedEarly, st.WarmupStreams)
		const mrow = "  %-15s %10s %10s %12s\n"
		fmt.Fprintf(&b, mrow, "gateway", "before", "after", "per stream")
		fmt.Fprintf(&b, mrow, "RSS (VmRSS)", kib(float64(st.RSSBeforeKiB)), kib(float64(st.RSSAfterKiB)), fmt.Sprintf("%.1f KiB", st.RSSPerStreamKiB))
		fmt.Fprintf(&b, mrow, "Go heap in use", kib(st.HeapBeforeBytes/1024), kib(st.HeapAfterBytes/1024), fmt.Sprintf("%.1f KiB", st.HeapPerStreamKiB))
		fmt.Fprintf(&b, mrow, "stacks in use", kib(st.StackBeforeBytes/1024), kib(st.StackAfterBytes/1024), fmt.Sprintf("%.1f KiB", st.StackPerStreamKiB))
		fmt.Fprintf(&b, mrow, "goroutines", fmt.Sprintf("%.0f", st.GoroutinesBefore), fmt.Sprintf("%.0f", st.GoroutinesAfter), fmt.Sprintf("%.2f", st.GoroutinesPerStream))
	}
	r.GRPC.writeTable(&b)
	r.writePushTable(&b)
	if len(r.Verdicts) > 0 {
		b.WriteString("\ntargets:\n")
		for _, v := range r.Verdicts {
			state := "met"
			if !v.Met {
				state = "MISSED"
			}
			fmt.Fprintf(&b, "  %-40s %8.2f  (want %s)  %s", v.Name, v.Value, v.Limit, state)
			if v.Detail != "" {
				fmt.Fprintf(&b, ": %s", v.Detail)
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeGatewayTable shows what each gateway row cost: its rate and CPU
// against the passthrough run, its JWKS fetches, and its Redis round trips.
func (r *Report) writeGatewayTable(b *strings.Builder) {
	pass := r.measured(TargetGateway)
	var rows []TargetResult
	for _, t := range r.Targets {
		if t.Gateway != nil && t.Result != nil {
			rows = append(rows, t)
		}
	}
	if len(rows) == 0 {
		return
	}
	const row = "%-21s %8s %8s %9s %8s %9s %9s  %s\n"
	b.WriteString("\ngateway rows: CPU per answered request in microseconds, of the gateway and of Redis\n")
	fmt.Fprintf(b, row, "row", "req/s", "vs pass", "p99", "p99 vs", "gw CPU", "redis CPU", "JWKS fetches")
	for _, t := range rows {
		g, x := t.Gateway, t.Result
		vs, p99 := "-", "-"
		if pass != nil && pass.P99 > 0 {
			vs = fmt.Sprintf("%.2fx", x.RPS/pass.RPS)
			p99 = fmt.Sprintf("%.2fx", float64(x.P99)/float64(pass.P99))
		}
		redis, jwks := "-", "-"
		if g.Store == storeRedis {
			redis = fmt.Sprintf("%.0f", g.RedisCPUMicros)
		}
		if g.JWT {
			jwks = fmt.Sprintf("%d measured, %d before", g.JWKSFetchesMeasured, g.JWKSFetchesBefore)
		}
		fmt.Fprintf(b, row, t.Name, fmt.Sprintf("%.0f", x.RPS), vs, x.P99, p99, fmt.Sprintf("%.0f", g.GatewayCPUMicros), redis, jwks)
	}

	const rtRow = "%-21s %8s %10s %7s %14s %13s %11s\n"
	b.WriteString("\nRedis round trips per answered request, by path: request (the caller waited for them) and\n")
	b.WriteString("background (queued bookkeeping); dedupe's own from its decisions (claims waited for, records\n")
	b.WriteString("settled after the answer); lifecycle events dropped on a full queue\n")
	fmt.Fprintf(b, rtRow, "row", "request", "background", "in all", "dedupe claims", "dedupe after", "lc dropped")
	for _, t := range rows {
		g := t.Gateway
		if g.Store != storeRedis {
			fmt.Fprintf(b, "%-21s %s\n", t.Name, "embedded store, no round trips")
			continue
		}
		fmt.Fprintf(b, rtRow, t.Name, fmt.Sprintf("%.2f", g.RequestPath.PerRequest), fmt.Sprintf("%.2f", g.Background.PerRequest),
			fmt.Sprintf("%.2f", g.PerRequest), fmt.Sprintf("%.2f", g.DedupeWaited), fmt.Sprintf("%.2f", g.DedupeAfterAnswer),
			fmt.Sprintf("%.3f", g.LifecycleDropped))
	}
	const opRow = "%-21s %-34s %s\n"
	b.WriteString("\nthe same by command, per answered request\n")
	fmt.Fprintf(b, opRow, "row", "request path", "background")
	for _, t := range rows {
		if g := t.Gateway; g.Store == storeRedis {
			fmt.Fprintf(b, opRow, t.Name, orNone(formatOps(g.RequestPath.ByOp)), orNone(formatOps(g.Background.ByOp)))
		}
	}
	if q := r.GatewayRatios; q != nil && q.DedupeThroughput > 0 {
		fmt.Fprintf(b, "\ndedupe / gw-jwt-redis:     throughput %.2fx, p99 %.2fx; dedupe adds %+.2f request-path and %+.2f background round trips (%+.2f in all);\n",
			q.DedupeThroughput, q.DedupeP99, q.DedupeRequestPathAdded, q.DedupeBackgroundAdded, q.DedupeRowsDiffer)
		fmt.Fprintf(b, "                           its own: %.2f claims waited for + %.2f records settled after the answer, in shared pipelines\n",
			q.DedupeWaited, q.DedupeAfterAnswer)
	}
	if x := r.Bridge; x != nil {
		fmt.Fprintf(b, "\nbridge / gw-jwt-redis-dedupe: gateway CPU per request %.2fx (%.0f / %.0f µs), throughput %.2fx; 0.3 client, 1.0 agent\n",
			x.CPU, x.CPUMicros, x.TwinCPUMicros, x.Throughput)
		if x.To03CPU > 0 {
			fmt.Fprintf(b, "                              gateway CPU per request %.2fx (%.0f µs) with a 1.0 client and a 0.3 agent\n", x.To03CPU, x.To03CPUMicros)
		}
	}
}

// WriteJSON writes the report as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// spread is the lowest and highest of vs.
func spread(vs []float64) (lo, hi float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	return slices.Min(vs), slices.Max(vs)
}

func kib(v float64) string {
	if v >= 10*1024 {
		return fmt.Sprintf("%.1f MiB", v/1024)
	}
	return fmt.Sprintf("%.0f KiB", v)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func formatKinds(kinds map[string]int64) string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return kinds[names[i]] > kinds[names[j]] })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s (%d)", k, kinds[k])
	}
	return strings.Join(parts, "; ")
}
