package bench

import (
	"testing"
	"time"
)

// Size of each push-relay run in the toy run.
const (
	tinyPushTasks  = 6
	tinyPushEvents = 10
)

// checkPushRelay checks a toy push-relay run whose agent wrote a task's
// events interval apart: every event every stream carried, each with an
// SSE id, reached the webhook once, no other notification came, each was
// timed, and the round trips were counted. Nothing about speed.
func checkPushRelay(t *testing.T, p *PushResult, interval time.Duration, redisErr error) {
	t.Helper()
	if p == nil {
		if redisErr != nil {
			t.Skipf("skipped, redis-server is not on PATH: %v", redisErr)
		}
		t.Fatal("no such push-relay run in the report")
	}
	if p.Tasks != tinyPushTasks || time.Duration(p.Interval) != interval {
		t.Fatalf("%d tasks, events %v apart; want %d, %v", p.Tasks, p.Interval, tinyPushTasks, interval)
	}
	if p.StreamErrors != 0 || p.Streamed != tinyPushTasks*tinyPushEvents {
		t.Fatalf("%d events streamed, want %d; %d stream errors: %v", p.Streamed, tinyPushTasks*tinyPushEvents, p.StreamErrors, p.ErrorKinds)
	}
	if p.Missing != 0 || p.Delivered != p.Streamed || p.Duplicates != 0 || p.Extra != 0 || p.Received != p.Delivered {
		t.Fatalf("%d delivered, %d missing, %d duplicates, %d extra, %d received of %d streamed",
			p.Delivered, p.Missing, p.Duplicates, p.Extra, p.Received, p.Streamed)
	}
	if p.Seconds <= 0 || p.DeliveriesPerSecond <= 0 || p.P50 <= 0 || p.P99 < p.P50 || p.Max < p.P99 {
		t.Fatalf("deliveries not timed: %+v", p)
	}
	if p.RoundTrips <= 0 || p.RoundTripsByOp["evalsha"] <= 0 || p.Redis != pushRedisPersistence {
		t.Fatalf("round trips not counted, or Redis not persisting: %+v", p)
	}
}
