package bench

import "testing"

// Size of the push-relay run in the toy run.
const (
	tinyPushTasks  = 6
	tinyPushEvents = 10
)

// checkPushRelay checks the toy push-relay run: every event every stream
// carried, each with an SSE id, reached the webhook, was timed, and cost
// round trips that were counted. Nothing about speed.
func checkPushRelay(t *testing.T, p *PushResult, redisErr error) {
	t.Helper()
	if p == nil {
		if redisErr != nil {
			t.Skipf("skipped, redis-server is not on PATH: %v", redisErr)
		}
		t.Fatal("no push-relay run in the report")
	}
	if p.StreamErrors != 0 || p.Streamed != tinyPushTasks*tinyPushEvents {
		t.Fatalf("%d events streamed, want %d; %d stream errors: %v", p.Streamed, tinyPushTasks*tinyPushEvents, p.StreamErrors, p.ErrorKinds)
	}
	if p.Missing != 0 || p.Delivered != p.Streamed || p.Received < p.Delivered {
		t.Fatalf("%d delivered, %d missing, %d received of %d streamed", p.Delivered, p.Missing, p.Received, p.Streamed)
	}
	if p.Seconds <= 0 || p.DeliveriesPerSecond <= 0 || p.P50 <= 0 || p.P99 < p.P50 || p.Max < p.P99 {
		t.Fatalf("deliveries not timed: %+v", p)
	}
	if p.RoundTrips <= 0 || p.RoundTripsByOp["evalsha"] <= 0 || p.Redis != pushRedisPersistence {
		t.Fatalf("round trips not counted, or Redis not persisting: %+v", p)
	}
}
