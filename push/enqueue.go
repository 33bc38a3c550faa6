package push

import (
	"context"
	"fmt"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// BatchEnqueuer is an Enqueuer that writes several notifications in one
// store round trip; *Deliverer is one. The relay enqueues an event's
// notifications for all of the task's push configs with it.
type BatchEnqueuer interface {
	Enqueuer
	// EnqueueAll enqueues each of ns as Enqueue does; errs[i] is the
	// outcome of ns[i].
	EnqueueAll(ctx context.Context, ns []store.Delivery) (errs []error)
}

// enqueueAll enqueues ns with q, at once when q can; errs[i] is the
// outcome of ns[i].
func enqueueAll(ctx context.Context, q Enqueuer, ns []store.Delivery) []error {
	if b, ok := q.(BatchEnqueuer); ok && len(ns) > 1 {
		return b.EnqueueAll(ctx, ns)
	}
	errs := make([]error, len(ns))
	for i, n := range ns {
		errs[i] = q.Enqueue(ctx, n)
	}
	return errs
}

// EnqueueAll enqueues each of ns as Enqueue does, in one store round trip;
// errs[i] is the outcome of ns[i], each on its own. A lone notification is
// enqueued with its endpoint's claim when it can be (handoff.go).
func (d *Deliverer) EnqueueAll(ctx context.Context, ns []store.Delivery) []error {
	errs := make([]error, len(ns))
	// Ids Enqueue refuses never reach the store.
	var idx []int
	var valid []store.Delivery
	for i, n := range ns {
		switch {
		case d.st == nil:
			errs[i] = fmt.Errorf("push: enqueue: %w: the deliverer has no store", store.ErrUnavailable)
		case !validID(n.ID):
			errs[i] = fmt.Errorf("push: enqueue: %w: notification id must be 1-%d visible ASCII characters without '.'", store.ErrInvalidArgument, maxIDBytes)
		default:
			idx, valid = append(idx, i), append(valid, n)
		}
	}
	if len(valid) == 1 {
		if handled, err := d.enqueueClaim(ctx, valid[0]); handled {
			errs[idx[0]] = err
			return errs
		}
	}
	if len(valid) == 0 {
		return errs
	}
	queued, serrs := d.st.EnqueueAll(ctx, valid)
	for j, i := range idx {
		if serrs[j] != nil {
			errs[i] = fmt.Errorf("push: enqueue notification %s: %w", ns[i].ID, serrs[j])
			continue
		}
		d.enqueued(ns[i].Endpoint, queued[j])
	}
	return errs
}

// enqueued counts a notification queued (not a repeat of one queued
// already) and hints its endpoint to the scheduler.
func (d *Deliverer) enqueued(endpoint string, queued bool) {
	if queued {
		d.m.Queued()
	}
	select {
	case d.hints <- endpoint:
	default: // the scheduler is busy; its next poll finds the endpoint
	}
}
