package push

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	run := d.reserve(n.Endpoint)
	if run == nil {
		return false, nil
	}
	queued, claimed, head, atts, err := d.st.EnqueueClaim(ctx, n, d.o.Holder, d.o.LeaseTTL)
	return true, d.claimed(run, n, store.Enqueued{Queued: queued, Claimed: claimed, Head: head, Attempts: atts}, err)
}

// enqueueVia enqueues n, the lone notification of an event, with send,
// which the relay makes log the event too (store.RecordEnqueuer): send
// claims the endpoint for holder when that is not "", as enqueueClaim
// does. stale means send enqueued nothing.
func (d *Deliverer) enqueueVia(n store.Delivery, send func(holder string, ttl time.Duration) (store.Enqueued, error)) (stale bool, err error) {
	run := d.reserve(n.Endpoint)
	holder := ""
	if run != nil {
		holder = d.o.Holder
	}
	e, err := send(holder, d.o.LeaseTTL)
	if run == nil {
		switch {
		case err != nil || e.Stale:
			return e.Stale, err
		case e.Err != nil:
			return false, fmt.Errorf("push: enqueue notification %s: %w", n.ID, e.Err)
		}
		d.enqueued(n.Endpoint, e.Queued)
		return false, nil
	}
	if err == nil && e.Stale {
		d.unreserve(n.Endpoint, run)
		return true, nil
	}
	if err == nil {
		err = e.Err
	}
	return false, d.claimed(run, n, e, err)
}

// reserve takes a worker's place for ep, counted while Run's workers are
// (Run waits for it), unless Run is not running, a worker here has ep
// already or none is free: then it returns nil.
func (d *Deliverer) reserve(ep string) *runState {
	d.mu.Lock()
	defer d.mu.Unlock()
	run := d.run
	if run == nil || run.ctx.Err() != nil || d.active[ep] != nil || len(d.active) >= d.o.Workers {
		return nil
	}
	d.active[ep] = &endpointRun{}
	run.wg.Add(1)
	return run
}

// unreserve gives back the place reserve took.
func (d *Deliverer) unreserve(ep string, run *runState) {
	d.mu.Lock()
	delete(d.active, ep)
	d.mu.Unlock()
	run.wg.Done()
}

// claimed hands the head e read to a worker in the place reserve took for
// n's endpoint, or gives the place back when the enqueue claimed nothing
// or failed with err.
func (d *Deliverer) claimed(run *runState, n store.Delivery, e store.Enqueued, err error) error {
	ep := n.Endpoint
	if err != nil || !e.Claimed {
		d.unreserve(ep, run)
		if err != nil {
			return fmt.Errorf("push: enqueue notification %s: %w", n.ID, err)
		}
		// Another replica has the endpoint, or n was queued already: the
		// scheduler looks at it as after any enqueue.
		d.enqueued(ep, e.Queued)
		return nil
	}
	if e.Queued {
		d.m.Queued()
	}
	first := &queueHead{heads: []store.Queued{{Delivery: e.Head, Attempts: e.Attempts}}, read: true}
	d.dispatch(run.ctx, run.wg, func() {
		defer run.wg.Done()
		d.work(run.ctx, ep, first)
	})
	return nil
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
