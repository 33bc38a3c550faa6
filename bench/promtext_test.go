package bench

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseSample(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		labels map[string]string
		value  float64
		ok     bool
	}{
		{"unlabelled", " 42", nil, 42, true},
		{"with timestamp", " 1.5e3 1700000000000", nil, 1500, true},
		{"labels", `{op="pipeline",le="+Inf"} 7`, map[string]string{"op": "pipeline", "le": "+Inf"}, 7, true},
		{"escapes", `{reason="a \"b\"\\c\nd"} 1`, map[string]string{"reason": "a \"b\"\\c\nd"}, 1, true},
		{"comma and brace in a value", `{x="a,b}c"} 2`, map[string]string{"x": "a,b}c"}, 2, true},
		{"trailing comma", `{op="get",} 3`, map[string]string{"op": "get"}, 3, true},
		{"no labels in braces", `{} 4`, map[string]string{}, 4, true},
		{"unterminated value", `{op="get} 3`, nil, 0, false},
		{"no value", `{op="get"}`, nil, 0, false},
		{"bad value", ` abc`, nil, 0, false},
		{"unquoted label", `{op=get} 1`, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseSample(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("parseSample(%q) error %v, want ok=%v", tt.in, err, tt.ok)
			}
			if !tt.ok {
				return
			}
			if s.value != tt.value || !maps.Equal(s.labels, tt.labels) {
				t.Fatalf("parseSample(%q) = %v %v, want %v %v", tt.in, s.labels, s.value, tt.labels, tt.value)
			}
		})
	}
}

func TestScrapeFamiliesAndSnapshot(t *testing.T) {
	const exposition = `# HELP a2agw_store_round_trip_seconds Round trips.
# TYPE a2agw_store_round_trip_seconds histogram
a2agw_store_round_trip_seconds_bucket{op="pipeline",path="request",le="+Inf"} 10
a2agw_store_round_trip_seconds_sum{op="pipeline",path="request"} 0.01
a2agw_store_round_trip_seconds_count{op="pipeline",path="request"} 10
a2agw_store_round_trip_seconds_count{op="evalsha",path="request"} 1
a2agw_store_round_trip_seconds_count{op="evalsha",path="background"} 3
a2agw_dedupe_total{agent="bench",outcome="first_seen"} 3
a2agw_dedupe_total{agent="bench",outcome="replayed"} 5
a2agw_dedupe_total{agent="other",outcome="expired_takeover"} 1
a2agw_requests_total{agent="bench",operation="send",result="ok"} 6
a2agw_requests_total{agent="bench",operation="send",result="unavailable"} 1
a2agw_lifecycle_queue_dropped_total 2
go_goroutines 12
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(exposition))
	}))
	defer srv.Close()
	ctx := context.Background()

	got, err := scrapeMetrics(ctx, srv.URL+"/metrics", "go_goroutines")
	if err != nil || got["go_goroutines"] != 12 {
		t.Fatalf("scrapeMetrics = %v, %v", got, err)
	}
	if _, err := scrapeMetrics(ctx, srv.URL+"/metrics", "a2agw_dedupe_total"); err == nil {
		t.Fatal("a labelled family was read as an unlabelled sample")
	}

	s, err := snapshotGateway(ctx, &runningGateway{admin: srv.URL}, func() int64 { return 2 })
	if err != nil {
		t.Fatal(err)
	}
	want := gatewaySnapshot{roundTrips: map[opPath]float64{
		{"pipeline", pathRequest}: 10, {"evalsha", pathRequest}: 1, {"evalsha", pathBackground}: 3,
	}, decisions: 9, settled: 4, requests: 7, lifecycleDrops: 2, jwks: 2}
	if !maps.Equal(s.roundTrips, want.roundTrips) || s.decisions != want.decisions || s.settled != want.settled ||
		s.requests != want.requests || s.lifecycleDrops != want.lifecycleDrops || s.jwks != want.jwks {
		t.Fatalf("snapshot = %+v, want %+v", s, want)
	}
	if s.totalRoundTrips() != 14 {
		t.Fatalf("total round trips %v, want 14", s.totalRoundTrips())
	}
}

// TestSnapshotWantsPaths refuses a gateway whose round trips do not say
// whether a caller waited for them: the request-path target cannot be
// judged on it.
func TestSnapshotWantsPaths(t *testing.T) {
	tests := []struct {
		name, sample string
	}{
		{"no path label", `a2agw_store_round_trip_seconds_count{op="pipeline"} 10`},
		{"unknown path", `a2agw_store_round_trip_seconds_count{op="pipeline",path="elsewhere"} 10`},
		{"no op label", `a2agw_store_round_trip_seconds_count{path="request"} 10`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(tt.sample + "\n"))
			}))
			defer srv.Close()
			if s, err := snapshotGateway(context.Background(), &runningGateway{admin: srv.URL}, nil); err == nil {
				t.Fatalf("snapshot accepted %q: %+v", tt.sample, s)
			}
		})
	}
}

func TestUsageBetween(t *testing.T) {
	before := gatewaySnapshot{roundTrips: map[opPath]float64{
		{"pipeline", pathRequest}: 100, {"evalsha", pathRequest}: 30, {"evalsha", pathBackground}: 10,
	}, decisions: 30, settled: 20, requests: 60, lifecycleDrops: 5, jwks: 1}
	tests := []struct {
		name     string
		jwt      bool
		answered int64
		after    gatewaySnapshot
		want     GatewayUsage
	}{
		{
			name: "dedupe row", jwt: true, answered: 100,
			after: gatewaySnapshot{roundTrips: map[opPath]float64{
				{"pipeline", pathRequest}: 300, {"evalsha", pathRequest}: 130, {"evalsha", pathBackground}: 110,
			}, decisions: 130, settled: 120, requests: 160, lifecycleDrops: 15, jwks: 1},
			want: GatewayUsage{Store: storeRedis, Answered: 100, GatewayRequests: 100, RoundTrips: 400, PerRequest: 4,
				PerRequestByOp: map[string]float64{"pipeline": 2, "evalsha": 2},
				RequestPath:    PathUsage{PerRequest: 3, ByOp: map[string]float64{"pipeline": 2, "evalsha": 1}},
				Background:     PathUsage{PerRequest: 1, ByOp: map[string]float64{"evalsha": 1}},
				DedupeWaited:   1, DedupeAfterAnswer: 1, LifecycleDropped: 0.1,
				JWT: true, JWKSFetchesBefore: 1},
		},
		{
			name: "a new op and a JWKS fetch while measured", jwt: true, answered: 50,
			after: gatewaySnapshot{roundTrips: map[opPath]float64{
				{"pipeline", pathRequest}: 150, {"evalsha", pathRequest}: 30, {"evalsha", pathBackground}: 10, {"ping", pathBackground}: 1,
			}, decisions: 30, settled: 20, requests: 110, lifecycleDrops: 5, jwks: 3},
			want: GatewayUsage{Store: storeRedis, Answered: 50, GatewayRequests: 50, RoundTrips: 51, PerRequest: 1.02,
				PerRequestByOp: map[string]float64{"pipeline": 1, "ping": 0.02},
				RequestPath:    PathUsage{PerRequest: 1, ByOp: map[string]float64{"pipeline": 1}},
				Background:     PathUsage{PerRequest: 0.02, ByOp: map[string]float64{"ping": 0.02}},
				JWT:            true, JWKSFetchesBefore: 1, JWKSFetchesMeasured: 2},
		},
		{
			name: "nothing answered", answered: 0, after: before,
			want: GatewayUsage{Store: storeRedis},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := usageBetween(storeRedis, tt.jwt, tt.answered, before, tt.after)
			w := tt.want
			if u.Store != w.Store || u.Answered != w.Answered || u.GatewayRequests != w.GatewayRequests || u.RoundTrips != w.RoundTrips ||
				!near(u.PerRequest, w.PerRequest) || !near(u.DedupeWaited, w.DedupeWaited) || !near(u.DedupeAfterAnswer, w.DedupeAfterAnswer) ||
				!near(u.LifecycleDropped, w.LifecycleDropped) ||
				u.JWT != w.JWT || u.JWKSFetchesBefore != w.JWKSFetchesBefore || u.JWKSFetchesMeasured != w.JWKSFetchesMeasured {
				t.Fatalf("usage = %+v\nwant    %+v", *u, w)
			}
			checkByOp(t, "in all", u.PerRequestByOp, w.PerRequestByOp)
			checkByOp(t, "request path", u.RequestPath.ByOp, w.RequestPath.ByOp)
			checkByOp(t, "background", u.Background.ByOp, w.Background.ByOp)
			if !near(u.RequestPath.PerRequest, w.RequestPath.PerRequest) || !near(u.Background.PerRequest, w.Background.PerRequest) {
				t.Fatalf("request path %v, background %v; want %v, %v", u.RequestPath, u.Background, w.RequestPath, w.Background)
			}
		})
	}
}

func checkByOp(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s by op = %v, want %v", what, got, want)
	}
	for op, v := range want {
		if !near(got[op], v) {
			t.Fatalf("%s by op = %v, want %v", what, got, want)
		}
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
