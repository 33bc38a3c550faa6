package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Metrics read from a gateway row's admin listener to see what its
// requests cost the store.
const (
	roundTripsMetric = "a2agw_store_round_trip_seconds_count"
	dedupeMetric     = "a2agw_dedupe_total"
	requestsMetric   = "a2agw_requests_total"
	lifecycleDropped = "a2agw_lifecycle_queue_dropped_total"
)

// Dedupe outcomes after which the claim's holder settles the record once
// the answer has been sent: it completes it, or releases it if the agent
// refused the message.
var settledOutcomes = map[string]bool{"first_seen": true, "expired_takeover": true}

// Store kinds of the gateway rows.
const (
	storeEmbedded = "embedded"
	storeRedis    = "redis"
)

// Values of the round-trip metric's path label.
const (
	// pathRequest: a caller waited for the round trip.
	pathRequest = "request"
	// pathBackground: queued bookkeeping, such as lifecycle records and
	// dedupe records settled after the answer has been sent.
	pathBackground = "background"
)

// GatewayUsage is what a gateway row's measured windows cost its store and
// its token issuer, from the gateway's own metrics and the harness's JWKS
// server, read after the warm-up and after the last window.
type GatewayUsage struct {
	// Store is "embedded" or "redis".
	Store string `json:"store"`
	// Answered requests of the measured windows: the denominator.
	Answered int64 `json:"answered"`
	// GatewayRequests is the gateway's own count over the same span, which
	// includes the requests the harness counted as errors.
	GatewayRequests float64 `json:"gateway_requests"`
	// RoundTrips to Redis over the span, in total and by command
	// ("pipeline" for a pipeline, "evalsha" for a script), whoever made
	// them: the request path, and the work queued behind it.
	RoundTrips     float64            `json:"store_round_trips"`
	RoundTripsByOp map[string]float64 `json:"store_round_trips_by_op,omitempty"`
	// PerRequest is RoundTrips per answered request, by op too.
	PerRequest     float64            `json:"store_round_trips_per_request"`
	PerRequestByOp map[string]float64 `json:"store_round_trips_per_request_by_op,omitempty"`
	// RequestPath and Background split PerRequest by the gateway's path
	// label: round trips a caller waited for, and queued bookkeeping.
	RequestPath PathUsage `json:"request_path"`
	Background  PathUsage `json:"background"`
	// Dedupe's own work per answered request, from its decision counter:
	// DedupeWaited are claims, one script call for each decision, which the
	// request waits for; DedupeAfterAnswer are the records their holder
	// completes (or releases) after the answer has been sent, in pipelines
	// that records settled at the same time share, so they cost at most as
	// many round trips.
	DedupeWaited      float64 `json:"dedupe_waited_round_trips_per_request"`
	DedupeAfterAnswer float64 `json:"dedupe_after_answer_round_trips_per_request"`
	// LifecycleDropped are task events per answered request that the
	// lifecycle tracker dropped because its queue was full: work, and
	// round trips, that a slower rate would have caused.
	LifecycleDropped float64 `json:"lifecycle_events_dropped_per_request"`
	// CPU time per answered request inside the measured windows, in
	// microseconds: the gateway process's, and for the rows that use it
	// Redis's. The kernel counts in 10 ms ticks, so short runs read coarsely.
	GatewayCPUMicros float64 `json:"gateway_cpu_us_per_request"`
	RedisCPUMicros   float64 `json:"redis_cpu_us_per_request,omitempty"`
	// JWT rows only: JWKS fetches before the measured span (start-up and
	// warm-up) and during it.
	JWT                 bool  `json:"jwt"`
	JWKSFetchesBefore   int64 `json:"jwks_fetches_before"`
	JWKSFetchesMeasured int64 `json:"jwks_fetches_measured"`
}

// PathUsage is one path's round trips per answered request, in all and by
// command.
type PathUsage struct {
	PerRequest float64            `json:"per_request"`
	ByOp       map[string]float64 `json:"by_op,omitempty"`
}

// opPath identifies one series of the round-trip metric.
type opPath struct{ op, path string }

// gatewaySnapshot is one reading of a gateway row's counters.
type gatewaySnapshot struct {
	roundTrips     map[opPath]float64
	decisions      float64 // dedupe decisions, one claim each
	settled        float64 // of which the holder settles after the answer
	requests       float64
	lifecycleDrops float64
	jwks           int64
}

func (s gatewaySnapshot) totalRoundTrips() float64 {
	var n float64
	for _, v := range s.roundTrips {
		n += v
	}
	return n
}

// snapshotGateway reads the gateway's counters, and the JWKS fetches
// when jwks is not nil.
func snapshotGateway(ctx context.Context, gw *runningGateway, jwks func() int64) (gatewaySnapshot, error) {
	// Read the issuer first: a fetch between the two reads then shows in
	// the next snapshot rather than in neither.
	s := gatewaySnapshot{roundTrips: map[opPath]float64{}}
	if jwks != nil {
		s.jwks = jwks()
	}
	fams, err := scrapeFamilies(ctx, gw.admin+"/metrics", roundTripsMetric, dedupeMetric, requestsMetric, lifecycleDropped)
	if err != nil {
		return s, err
	}
	for _, x := range fams[roundTripsMetric] {
		k := opPath{op: x.labels["op"], path: x.labels["path"]}
		if k.op == "" {
			return s, fmt.Errorf("%s: a sample without an op label", roundTripsMetric)
		}
		if k.path != pathRequest && k.path != pathBackground {
			return s, fmt.Errorf("%s: path label %q, want %q or %q", roundTripsMetric, k.path, pathRequest, pathBackground)
		}
		s.roundTrips[k] += x.value
	}
	for _, x := range fams[dedupeMetric] {
		s.decisions += x.value
		if settledOutcomes[x.labels["outcome"]] {
			s.settled += x.value
		}
	}
	for _, x := range fams[requestsMetric] {
		s.requests += x.value
	}
	for _, x := range fams[lifecycleDropped] {
		s.lifecycleDrops += x.value
	}
	return s, nil
}

// settledSnapshot waits until the gateway's round-trip count stops moving,
// so that the records settled after the last answers are counted, and
// returns that reading. It gives up waiting after a few seconds: a gateway
// whose count never rests is reported as it stands.
func settledSnapshot(ctx context.Context, gw *runningGateway, jwks func() int64) (gatewaySnapshot, error) {
	const (
		pause    = 100 * time.Millisecond
		attempts = 30
	)
	prev, err := snapshotGateway(ctx, gw, jwks)
	if err != nil {
		return prev, err
	}
	for range attempts {
		select {
		case <-ctx.Done():
			return prev, ctx.Err()
		case <-time.After(pause):
		}
		cur, err := snapshotGateway(ctx, gw, jwks)
		if err != nil {
			return cur, err
		}
		if cur.totalRoundTrips() == prev.totalRoundTrips() {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

// usageBetween is what happened between two snapshots, per answered request.
func usageBetween(store string, jwt bool, answered int64, before, after gatewaySnapshot) *GatewayUsage {
	u := &GatewayUsage{
		Store: store, Answered: answered, GatewayRequests: after.requests - before.requests,
		RoundTripsByOp: map[string]float64{}, PerRequestByOp: map[string]float64{},
		JWT: jwt,
	}
	if jwt {
		u.JWKSFetchesBefore = before.jwks
		u.JWKSFetchesMeasured = after.jwks - before.jwks
	}
	byPath := map[string]map[string]float64{pathRequest: {}, pathBackground: {}}
	for k, v := range after.roundTrips {
		if d := v - before.roundTrips[k]; d > 0 {
			u.RoundTripsByOp[k.op] += d
			u.RoundTrips += d
			byPath[k.path][k.op] += d
		}
	}
	if answered > 0 {
		n := float64(answered)
		u.PerRequest = u.RoundTrips / n
		for op, d := range u.RoundTripsByOp {
			u.PerRequestByOp[op] = d / n
		}
		u.RequestPath = perRequest(byPath[pathRequest], n)
		u.Background = perRequest(byPath[pathBackground], n)
		u.DedupeWaited = (after.decisions - before.decisions) / n
		u.DedupeAfterAnswer = (after.settled - before.settled) / n
		u.LifecycleDropped = (after.lifecycleDrops - before.lifecycleDrops) / n
	}
	if len(u.RoundTripsByOp) == 0 {
		u.RoundTripsByOp, u.PerRequestByOp = nil, nil
	}
	return u
}

// perRequest divides one path's round trips by op by the answered requests.
func perRequest(byOp map[string]float64, answered float64) PathUsage {
	var p PathUsage
	for op, d := range byOp {
		if p.ByOp == nil {
			p.ByOp = make(map[string]float64, len(byOp))
		}
		p.ByOp[op] = d / answered
		p.PerRequest += d / answered
	}
	return p
}

// sortedOps lists the ops of by in a stable order for the report.
func sortedOps(by map[string]float64) []string {
	return slices.Sorted(maps.Keys(by))
}
