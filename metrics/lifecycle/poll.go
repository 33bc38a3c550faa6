package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Poll outcomes, as counted in a2agw_lifecycle_polls_total.
const (
	pollChanged   = "changed"
	pollUnchanged = "unchanged"
	pollFailed    = "failed"
)

// pollBackoff is when a task without news may be read again, and how many
// reads in a row found nothing.
type pollBackoff struct {
	next time.Time
	n    int
}

// errPollsDone stops a listing once the sweep's reads are used up.
var errPollsDone = errors.New("lifecycle: the sweep's polls are used up")

// poll reads from the agent, on the sweeping replica, the open tasks it
// has had no news of for PollAfter and that nothing else follows: no
// client's stream through the gateway (Subscribers), no push source
// (Options.Followed). Without these reads a task whose agent went quiet,
// a returnImmediately send that never left submitted say, would stay as
// the gateway last saw it until a client asked. An answer with a new
// state is applied like any answer the gateway observes; one that repeats
// the recorded state is no activity of the agent's, so it is not applied
// (it would hide an orphan), and the task waits twice as long for its next
// read, up to OrphanAfter. At most MaxPollsPerSweep reads per agent and
// sweep, the longest quiet first, as the inactivity index lists them.
func (t *Tracker) poll(ctx context.Context, a Agent, now time.Time) error {
	after := t.o.Polling()
	if after <= 0 || t.caller == nil {
		return nil
	}
	// The reads are bounded in time as in number: an agent that hangs
	// must not hold the sweep (and its lease) past one interval.
	ctx, cancel := context.WithTimeout(ctx, t.o.SweepInterval.D())
	defer cancel()
	backoff := t.sweep.polls[a.Name]
	kept := make(map[string]pollBackoff, len(backoff))
	polls := 0
	var errs []error
	wait := func(b pollBackoff) pollBackoff {
		b.n++
		b.next = now.Add(pollWait(after, b.n, t.o.OrphanAfter.D()))
		return b
	}
	f := store.LifecycleFilter{Agent: a.Name, State: store.LifecycleOpen, InactiveSince: now.Add(-after)}
	_, err := t.each(ctx, f, "", func(rec store.TaskLifecycle) error {
		b := backoff[rec.TaskID]
		if now.Before(b.next) {
			kept[rec.TaskID] = b
			return nil
		}
		if rec.Subscribers > 0 {
			return nil
		}
		// Asking whether a push source follows the task costs a store
		// call too: it counts against the bound, and a followed task
		// waits like an unchanged one before it is asked about again.
		if polls >= t.o.MaxPollsPerSweep {
			return errPollsDone
		}
		polls++
		if t.followed != nil {
			followed, err := t.followed(ctx, a.Name, rec.TaskID)
			if err != nil {
				return err
			}
			if followed {
				kept[rec.TaskID] = wait(b)
				return nil
			}
		}
		changed, err := t.pollOne(ctx, a, rec)
		if changed {
			return nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("task %s: %w", rec.TaskID, err))
		}
		kept[rec.TaskID] = wait(b)
		return nil
	})
	if err != nil {
		// The listing stopped early: the tasks it did not reach keep
		// their counts, so their next waits still double.
		for id, b := range backoff {
			if _, ok := kept[id]; !ok {
				kept[id] = b
			}
		}
	}
	// Tasks not listed any more have news, or ended: they start afresh.
	t.sweep.polls[a.Name] = kept
	if err != nil && !errors.Is(err, errPollsDone) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// pollWait is the wait after n reads in a row without news: after, doubled
// each time, at most limit.
func pollWait(after time.Duration, n int, limit time.Duration) time.Duration {
	d := after
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// pollOne reads one task from its agent and applies a new state; changed
// reports that there was one.
func (t *Tracker) pollOne(ctx context.Context, a Agent, rec store.TaskLifecycle) (bool, error) {
	v := versionOf(rec.Version, 0)
	res, err := t.caller.Call(ctx, a.Name, v, a2a.MethodGetTask, params(a, rec, v))
	if err == nil {
		var ev a2a.Event
		ev, err = a2a.ParseResult(res)
		if err == nil && (ev.Kind != a2a.EventTask || ev.TaskID != rec.TaskID) {
			err = fmt.Errorf("the agent did not answer with task %s", rec.TaskID)
		}
		if err == nil && ev.State.String() == rec.State {
			t.m.Polled(a.Name, pollUnchanged)
			return false, nil
		}
	}
	if err == nil {
		_, err = t.applyAnswer(ctx, rec, v, res, "")
	}
	if err != nil {
		t.m.Polled(a.Name, pollFailed)
		t.log.Debug("lifecycle: poll of a quiet task failed", "agent", a.Name, "task_id", rec.TaskID, "err", err)
		return false, err
	}
	t.m.Polled(a.Name, pollChanged)
	return true, nil
}
