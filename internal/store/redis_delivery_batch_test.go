package store_test

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// TestDeliveryRedisEnqueueAllAfterScriptFlush: EnqueueAll runs its scripts
// by hash in a pipeline; after Redis lost them (a restart, a failover) it
// still enqueues every delivery.
func TestDeliveryRedisEnqueueAllAfterScriptFlush(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{}).Delivery()
	mustEnqueue(t, s, delivery("ep-a", "e1"))
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	queued, errs := s.EnqueueAll(ctx, []store.Delivery{delivery("ep-a", "e2"), delivery("ep-c", "e2")})
	for i := range errs {
		if errs[i] != nil || !queued[i] {
			t.Fatalf("delivery %d: %v, %v; want queued", i, queued[i], errs[i])
		}
	}
	for ep, want := range map[string]int{"ep-a": 2, "ep-c": 1} {
		if n, _, err := s.Depth(ctx, ep); err != nil || n != want {
			t.Fatalf("%s holds %d, %v; want %d", ep, n, err, want)
		}
	}
}
