package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// enqueueOutcomes are the replies of deliveryEnqueueLua.
var enqueueOutcomes = []string{"ok", "dup", "disabled", "full"}

// enqueueCall is the keys and arguments of deliveryEnqueueLua for d,
// checked, at now.
func (r *redisDelivery) enqueueCall(d Delivery, now time.Time) ([]string, []any) {
	enq, _ := nanoTime("enqueued", d.Enqueued)
	if enq.IsZero() {
		enq = now
	}
	k := r.endpointKeys(d.Endpoint)
	return k.keys, k.args(now, d.ID, d.TaskID, enq.UnixNano(), d.Payload, MaxQueueLength, millis(DeliveryIDRetention))
}

// enqueueResult is Enqueue's result for the script's reply out.
func enqueueResult(d Delivery, out string, err error) (bool, error) {
	switch {
	case err != nil:
		return false, err
	case out == "disabled":
		return false, fmt.Errorf("%w: %.64q", ErrEndpointDisabled, d.Endpoint)
	case out == "full":
		return false, fmt.Errorf("%w: endpoint %.64q holds %d deliveries", ErrQueueFull, d.Endpoint, MaxQueueLength)
	}
	return out == "ok", nil
}

// EnqueueAll is one pipeline: one round trip (one per node on Cluster,
// where the endpoints' buckets may live on several).
func (r *redisDelivery) EnqueueAll(ctx context.Context, ds []Delivery) (queued []bool, errs []error) {
	queued, errs = make([]bool, len(ds)), make([]error, len(ds))
	now := time.Now()
	cmds := make([]*redis.Cmd, len(ds))
	pipe := r.conn.client.Pipeline()
	for i := range ds {
		keys, args := r.enqueueCall(ds[i], now)
		cmds[i] = r.enqueue.EvalSha(ctx, pipe, keys, args...)
	}
	// Exec reports the first failed command; each one is examined below.
	_, _ = pipe.Exec(ctx)
	for i, cmd := range cmds {
		out, err := cmd.Text()
		switch {
		case redis.HasErrorPrefix(err, "NOSCRIPT"):
			// Redis lost its scripts (a restart, a failover): Enqueue
			// loads it again.
			queued[i], errs[i] = r.Enqueue(ctx, ds[i])
			continue
		case err != nil:
			err = r.conn.fail("delivery enqueue", err)
		case !slices.Contains(enqueueOutcomes, out):
			err = fmt.Errorf("store: delivery enqueue: endpoint %.64q: unexpected script reply %.32q", ds[i].Endpoint, out)
		}
		queued[i], errs[i] = enqueueResult(ds[i], out, err)
	}
	return queued, errs
}
