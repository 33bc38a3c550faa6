package push

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// claimCounter is the Redis delivery store, counting the claims the
// workers make and those the enqueues make for them.
type claimCounter struct {
	store.DeliveryStore
	mu                   sync.Mutex
	workerClaims, handed int
}

func (c *claimCounter) ClaimHead(ctx context.Context, ep, holder string, ttl time.Duration) (bool, store.Delivery, []store.Attempt, bool, error) {
	ok, n, atts, found, err := c.DeliveryStore.ClaimHead(ctx, ep, holder, ttl)
	c.mu.Lock()
	c.workerClaims++
	c.mu.Unlock()
	return ok, n, atts, found, err
}

func (c *claimCounter) EnqueueClaim(ctx context.Context, d store.Delivery, holder string, ttl time.Duration) (bool, bool, store.Delivery, []store.Attempt, error) {
	queued, claimed, n, atts, err := c.DeliveryStore.EnqueueClaim(ctx, d, holder, ttl)
	if claimed {
		c.mu.Lock()
		c.handed++
		c.mu.Unlock()
	}
	return queued, claimed, n, atts, err
}

func (c *claimCounter) counts() (workerClaims, handed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workerClaims, c.handed
}

// Enqueues to idle endpoints hand them to this replica's workers, claimed
// in the enqueue's round trip; an endpoint another replica holds is left
// to it, and delivered once its lease runs out. Every queue arrives whole,
// in order.
func TestDeliverEnqueueHandsTheEndpointOver(t *testing.T) {
	raw := store.NewRedis(redistest.Start(t).Client(t), store.Options{KeyPrefix: "push-test"}).Delivery()
	st := &claimCounter{DeliveryStore: raw}
	rcv := newTestReceiver(t, nil)
	o := fastOptions(10 * time.Millisecond)
	d := NewDeliverer(st, testSender(t), o, nil, nil)
	runDeliverer(t, d)
	ctx := context.Background()
	// Another replica holds "held" for a while.
	if ok, err := raw.ClaimEndpoint(ctx, "held", "other-replica", 300*time.Millisecond); err != nil || !ok {
		t.Fatalf("ClaimEndpoint = %v, %v", ok, err)
	}
	want := map[string][]string{"a": ids("a", 5), "b": ids("b", 5), "held": ids("h", 3)}
	for i := range 5 {
		for _, ep := range []string{"a", "b", "held"} {
			if i < len(want[ep]) {
				enqueue(t, d, rcv.notification(t, ep, want[ep][i]))
			}
		}
		// Let the queues empty between notifications, as a task's do.
		waitUntil(t, "the queues delivered and given back", func() bool {
			got := rcv.delivered()
			d.mu.Lock()
			busy := d.active["a"] != nil || d.active["b"] != nil
			d.mu.Unlock()
			return len(got["a"]) == i+1 && len(got["b"]) == i+1 && !busy
		})
	}
	waitUntil(t, "the held endpoint delivered", func() bool { return len(rcv.delivered()["held"]) == 3 })
	rcv.checkRequests(t)
	for ep, ids := range want {
		if got := rcv.delivered()[ep]; !slices.Equal(got, ids) {
			t.Fatalf("%s: delivered %v, want %v", ep, got, ids)
		}
	}
	workerClaims, handed := st.counts()
	if handed < 10 {
		t.Fatalf("%d endpoints handed over by their enqueue, want one per notification to a and b", handed)
	}
	if workerClaims == 0 {
		t.Fatal("the endpoint held elsewhere was never claimed by a worker")
	}
}
