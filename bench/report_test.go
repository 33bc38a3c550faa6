package bench

import (
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
				"JWKS fetches while measured": true, "dedupe vs gw-jwt-redis throughput": true, "dedupe's added request-path round trips": true,
			},
		},
		{
			name: "every target missed",
			targets: []TargetResult{pass,
				redisRow(TargetJWTRedis, 6000, 1.1, 0, 1),
				redisRow(TargetJWTRedisDedupe, 4000, 2.2, 1, 0)},
			met: map[string]bool{
				"gw-jwt-redis vs passthrough throughput": false, "gw-jwt-redis request-path round trips": false,
				"JWKS fetches while measured": false, "dedupe vs gw-jwt-redis throughput": false, "dedupe's added request-path round trips": false,
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
