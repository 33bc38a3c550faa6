package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Enqueue, then, when the delivery was added and the lease of the holder
// ARGV[12] for ARGV[13] ms can be had, the claim and the head as
// deliveryClaimHeadLua reads them. Reply: {outcome} or {'ok', head}.
var deliveryEnqueueClaimScript = redis.NewScript(deliveryPrelude + deliveryClaim + deliveryHeadReply + deliveryEnqueueFn + `
local out = enqueue()
if out == 'ok' and claim_as(ARGV[12], ARGV[13]) then
  return {out, with_attempts(head())}
end
return {out}
`)

// EnqueueClaim is one script run.
func (r *redisDelivery) EnqueueClaim(ctx context.Context, d Delivery, holder string, ttl time.Duration) (queued, claimed bool, head Delivery, atts []Attempt, err error) {
	keys, args := r.enqueueCall(d, time.Now())
	v, err := deliveryEnqueueClaimScript.Run(ctx, r.conn.client, keys, append(args, holder, millis(ttl))...).Slice()
	if err != nil {
		return false, false, Delivery{}, nil, r.conn.fail("delivery enqueue", err)
	}
	var out string
	if len(v) > 0 {
		out, _ = v[0].(string)
	}
	if !slices.Contains(enqueueOutcomes, out) || len(v) > 2 {
		return false, false, Delivery{}, nil, fmt.Errorf("store: delivery enqueue: endpoint %.64q: unexpected script reply %.32q", d.Endpoint, out)
	}
	if queued, err = enqueueResult(d, out, nil); err != nil || len(v) == 1 {
		return queued, false, Delivery{}, nil, err
	}
	head, atts, found, err := headReply(r.endpointKeys(d.Endpoint), d.Endpoint, "delivery enqueue", v[1])
	if err == nil && !found {
		err = fmt.Errorf("store: delivery enqueue: endpoint %.64q: claimed without a head", d.Endpoint)
	}
	if err != nil {
		return queued, false, Delivery{}, nil, err
	}
	return queued, true, head, atts, nil
}
