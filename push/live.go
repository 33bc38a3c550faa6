package push

import (
	"context"
	"errors"
	"time"
)

// A task streamed to a client is followed twice unless told otherwise: the
// client's stream publishes every event (the proxy's observer), and the
// subscriber's holder of the task would subscribe to the same events
// upstream, parse, accept and publish each again. So every event a
// client's stream publishes (Event.Live) renews a short live mark on the
// task, in the same store round trip that logs it (store.EventLog.Record),
// and the holder does not follow the task upstream while the mark is
// fresh: it subscribes, polls or registers only once the mark has lapsed,
// and drops an upstream stream it finds the task marked live again.
//
// Correctness does not depend on the mark: when the client's stream ends
// or breaks mid-task, its events stop, the mark lapses within LiveTTL and
// the holder follows the task from then on. A new upstream stream (or a
// GetTask) starts with the task as the agent shows it, which is reconciled
// with the event log (reconcile.go): what happened in between, artifacts
// and the current status, terminal included, is published then. A store
// that cannot say whether the task is live counts as not live: following
// a task twice is safe, not following it is not.

// DefaultLiveTTL is RelayOptions.LiveTTL's default.
const DefaultLiveTTL = 3 * time.Second

// errLive ends an upstream stream of a task a client's stream publishes.
var errLive = errors.New("push: a client's stream of the task is live")

// Live returns how long the task's live mark has left, zero when no
// client's stream of it published within the relay's LiveTTL.
func (r *Relay) Live(ctx context.Context, agent, taskID string) (time.Duration, error) {
	return r.events.Live(ctx, agent, taskID)
}

// awaitIdle returns once the task has no live mark, false when ctx ends
// first.
func (f *follower) awaitIdle(ctx context.Context) bool {
	for {
		left, err := f.s.o.Relay.Live(ctx, f.ref.Agent, f.ref.TaskID)
		if err != nil || left <= 0 {
			f.liveChecked = time.Now()
			return ctx.Err() == nil
		}
		if !sleep(ctx, left) {
			return false
		}
	}
}

// liveAgain reports whether a client's stream of the task marked it live
// since the follower last looked; it asks the store at most every
// liveCheckEvery, so a followed stream costs few reads.
func (f *follower) liveAgain(ctx context.Context) bool {
	if time.Since(f.liveChecked) < liveCheckEvery {
		return false
	}
	f.liveChecked = time.Now()
	left, err := f.s.o.Relay.Live(ctx, f.ref.Agent, f.ref.TaskID)
	return err == nil && left > 0
}

// liveCheckEvery bounds how often a followed stream's events read the live
// mark.
const liveCheckEvery = 500 * time.Millisecond
