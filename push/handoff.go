package push

import (
	"context"
	"fmt"
	"sync"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// An endpoint whose queue is idle is usually enqueued to by the replica
// that relays its task, and that replica's workers would then claim it in
// a round trip of their own. With EnqueueClaim the enqueue claims it in
// the same round trip, when the lease is free and a worker here is free to
// take it, and hands the head it read to that worker: a notification to an
// idle endpoint costs one store round trip less, and reaches its receiver
// one round trip sooner. The claim is the worker's as if it had made it:
// other replicas see the endpoint claimed, and the worker delivers the
// queue from its head, acknowledges, and gives the endpoint back when it
// is empty.

// runState is what a running Run lends Enqueue to start workers with.
type runState struct {
	ctx context.Context
	wg  *sync.WaitGroup
}

// setRun records Run's context and workers; nil when Run ends, before it
// waits for them.
func (d *Deliverer) setRun(r *runState) {
	d.mu.Lock()
	d.run = r
	d.mu.Unlock()
}

// enqueueClaim enqueues n, claiming its endpoint for a worker of this
// replica when it can. handled is false when it does not apply (Run is
// not running, the endpoint has a worker here, or no worker is free): the
// caller enqueues as usual.
func (d *Deliverer) enqueueClaim(ctx context.Context, n store.Delivery) (handled bool, err error) {
	ep := n.Endpoint
	d.mu.Lock()
	run := d.run
	if run == nil || run.ctx.Err() != nil || d.active[ep] != nil || len(d.active) >= d.o.Workers {
		d.mu.Unlock()
		return false, nil
	}
	// The worker's place is taken now, and counted while Run's workers
	// are: Run waits for it.
	d.active[ep] = &endpointRun{}
	run.wg.Add(1)
	d.mu.Unlock()
	queued, claimed, head, atts, err := d.st.EnqueueClaim(ctx, n, d.o.Holder, d.o.LeaseTTL)
	if err != nil || !claimed {
		d.mu.Lock()
		delete(d.active, ep)
		d.mu.Unlock()
		run.wg.Done()
		if err != nil {
			return true, fmt.Errorf("push: enqueue notification %s: %w", n.ID, err)
		}
		// Another replica has the endpoint, or n was queued already: the
		// scheduler looks at it as after any enqueue.
		d.enqueued(ep, queued)
		return true, nil
	}
	if queued {
		d.m.Queued()
	}
	first := &queueHead{heads: []store.Queued{{Delivery: head, Attempts: atts}}, read: true}
	go func() {
		defer run.wg.Done()
		d.work(run.ctx, ep, first)
	}()
	return true, nil
}

// claimOr returns the head *first, claimed already, and clears it; once it
// is nil, it claims ep.
func (d *Deliverer) claimOr(ctx context.Context, ep string, first **queueHead) (bool, queueHead, error) {
	if h := *first; h != nil {
		*first = nil
		return true, *h, nil
	}
	return d.claim(ctx, ep)
}
