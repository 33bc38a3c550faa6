package flow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// sweepLease names the lease of the replica that sweeps.
const sweepLease = "authflow-sweep"

// sweepBatch bounds the challenges one Due call returns.
const sweepBatch = 200

// Run sweeps expired challenges every sweep interval until ctx ends; one
// replica at a time does (a lease in the store).
func (f *Flow) Run(ctx context.Context) {
	if len(f.agents) == 0 {
		return
	}
	t := time.NewTicker(f.o.SweepInterval.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := f.Sweep(ctx); err != nil && ctx.Err() == nil {
				f.log.Warn("auth flow: sweep failed", "err", err)
			}
		}
	}
}

// Sweep marks every challenge past its expiry expired, if this replica
// holds the sweep lease: each is counted once, its credential deleted, and
// the task's push consumers told. The task stays auth-required: only the
// agent ends it.
func (f *Flow) Sweep(ctx context.Context) error {
	held, err := f.lc.Lease(ctx, sweepLease, f.holder, 3*f.o.SweepInterval.D())
	if err != nil || !held {
		return err
	}
	now := f.now()
	for _, agent := range f.names {
		for {
			due, err := f.st.Due(ctx, agent, now, sweepBatch)
			if err != nil {
				return err
			}
			for _, ref := range due {
				c := store.Challenge{Agent: ref.Agent, TaskID: ref.TaskID, ID: ref.ID}
				if f.expire(ctx, c, now) {
					f.notifyExpired(ctx, ref, now)
				}
			}
			if len(due) < sweepBatch {
				break
			}
		}
	}
	return nil
}

// notifyExpired publishes a status update that repeats the task's
// auth-required state with the expired challenge in its metadata, for the
// task's push consumers.
func (f *Flow) notifyExpired(ctx context.Context, ref store.ChallengeRef, now time.Time) {
	if f.notifier == nil {
		return
	}
	c, found, err := f.st.Current(ctx, ref.Agent, ref.TaskID)
	if err != nil || !found || c.ID != ref.ID {
		return
	}
	v := a2a.V03
	if c.Version == a2a.V10.String() {
		v = a2a.V10
	}
	payload, err := expiredEvent(c, f.view(c, now), v, now)
	if err == nil {
		_, err = f.notifier.Publish(ctx, push.Event{
			Agent: c.Agent, TaskID: c.TaskID, ContextID: c.ContextID, Version: v,
			Kind: a2a.EventStatusUpdate, State: a2a.StateAuthRequired, Payload: payload, At: now,
		})
	}
	if err != nil {
		f.log.Warn("auth flow: expiry not announced to push consumers", "agent", c.Agent, "task_id", c.TaskID, "err", err)
	}
}

// expiredEvent is the status update announcing an expired challenge, as a
// result object of version v.
func expiredEvent(c store.Challenge, view challengeView, v a2a.Version, now time.Time) ([]byte, error) {
	update := map[string]any{
		"taskId":    c.TaskID,
		"contextId": c.ContextID,
		"status":    map[string]any{"state": a2a.StateAuthRequired.Wire(a2a.V10), "timestamp": now.UTC().Format(time.RFC3339Nano)},
		"metadata":  map[string]any{ChallengeMetadataKey: view},
	}
	b, err := json.Marshal(map[string]any{"statusUpdate": update})
	if err != nil || v == a2a.V10 {
		return b, err
	}
	return a2a.ConvertEvent(b, a2a.V10, a2a.EventStatusUpdate, v)
}
