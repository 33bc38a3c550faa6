package push

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// This file keeps the events whose publication failed on this replica
// (the store did not answer) and publishes them again, in their order,
// until they are in the queue. Reconciling a task with the agent finds
// what never reached the event log, but not an event that was logged and
// then not enqueued: only publishing that very event again enqueues it,
// under its own notification id, which the queue deduplicates.

// maxRetries and maxRetryBytes (of payloads) bound the events a replica
// keeps to publish again. Beyond them an event is dropped, and logged: the
// follower's next reconciliation still publishes what the event log
// missed.
const (
	maxRetries    = 10000
	maxRetryBytes = 64 << 20
)

// retryTimeout bounds the store work of publishing one task's kept events.
const retryTimeout = 10 * time.Second

// retry is one kept event; n identifies it, so that two publishers that
// both published it drop it once.
type retry struct {
	n  uint64
	ev Event
	// letGo takes the task out of the watched index once the event is
	// published: a watchdog's orphan notice.
	letGo bool
}

// retries holds the kept events per task, oldest first.
type retries struct {
	mu           sync.Mutex
	m            map[store.TaskRef][]retry
	count, bytes int
	next         uint64
}

func newRetries() *retries { return &retries{m: map[store.TaskRef][]retry{}} }

// add keeps ev after the task's other kept events; false when full.
func (r *retries) add(ev Event, letGo bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count >= maxRetries || r.bytes+len(ev.Payload) > maxRetryBytes {
		return false
	}
	r.next++
	ref := store.TaskRef{Agent: ev.Agent, TaskID: ev.TaskID}
	r.m[ref] = append(r.m[ref], retry{n: r.next, ev: ev, letGo: letGo})
	r.count++
	r.bytes += len(ev.Payload)
	return true
}

// first returns the task's oldest kept event.
func (r *retries) first(ref store.TaskRef) (retry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.m[ref]
	if len(q) == 0 {
		return retry{}, false
	}
	return q[0], true
}

// done drops the task's oldest kept event if it is still event n.
func (r *retries) done(ref store.TaskRef, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.m[ref]
	if len(q) == 0 || q[0].n != n {
		return
	}
	if len(q) == 1 {
		delete(r.m, ref)
	} else {
		r.m[ref] = q[1:]
	}
	r.count--
	r.bytes -= len(q[0].ev.Payload)
}

// refs lists the tasks with kept events.
func (r *retries) refs() []store.TaskRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]store.TaskRef, 0, len(r.m))
	for ref := range r.m {
		out = append(out, ref)
	}
	return out
}

func (r *retries) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Publish publishes an event the subscriber did not see itself (a client's
// stream, a send's answer), after the task's events whose publication
// failed on this replica before, so that their order holds. The task's
// view is held throughout, so a follower's read on this replica publishes
// before or after it, never between; and the event is taken as the log
// stands then (current), since the follower may have published a later
// view of the task since the agent sent it. An event that cannot be
// published now is kept and published again every ScanInterval until it
// is, and the task's follower on this replica, if any, reads the task
// again soon. The error says why it was not published now, for the
// caller's log.
func (s *Subscriber) Publish(ctx context.Context, ev Event) error {
	if err := checkEvent(ev); err != nil {
		return err
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	ref := store.TaskRef{Agent: ev.Agent, TaskID: ev.TaskID}
	tv := s.views.lock(ref)
	defer tv.mu.Unlock()
	if err := s.republish(ctx, ref); err != nil {
		s.keep(ev, false)
		return err
	}
	evs, err := s.current(ctx, tv, ref, ev)
	if errors.Is(err, store.ErrInvalidArgument) {
		return err // no retry reads it
	}
	if err != nil {
		s.keep(ev, false)
		return err
	}
	for i, e := range evs {
		p, err := s.o.Relay.Publish(ctx, e)
		if err != nil {
			for _, k := range evs[i:] {
				s.keep(k, false)
			}
			return err
		}
		if !p.Duplicate && p.Seq == tv.tailSeq+1 {
			// Nothing else was logged in between: the tail is still known.
			_ = tv.follow(p.Seq, p.ID, e)
		}
	}
	return nil
}

// current lists what ev, sent by the agent before the log took what it
// holds now, still brings: a Task is reconciled with the log, as a read
// of the task is (a send's answer showing submitted after the follower
// published working brings nothing); a status update the logged status
// is newer than, or cannot move to, is dropped; an artifact update goes as
// it is, as reconciling it needs its place, which it does not carry. The
// caller holds tv.
func (s *Subscriber) current(ctx context.Context, tv *taskView, ref store.TaskRef, ev Event) ([]Event, error) {
	switch ev.Kind {
	case a2a.EventArtifactUpdate:
		return []Event{ev}, nil
	case a2a.EventStatusUpdate:
		if err := tv.readTail(ctx, s.o.Relay, ref); err != nil {
			return nil, err
		}
		if tv.tailStatus == nil {
			return []Event{ev}, nil
		}
		obj, err := a2a.EventObject(ev.Payload, ev.Version, a2a.EventStatusUpdate)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", store.ErrInvalidArgument, err)
		}
		if olderStatus(obj["status"], tv.tailStatus) || !a2a.CanTransition(ev.Version, tv.tailState, ev.State) {
			return nil, nil
		}
		return []Event{ev}, nil
	}
	if err := tv.refresh(ctx, s.o.Relay, ref); err != nil {
		return nil, err
	}
	if tv.snap == nil {
		return []Event{ev}, nil
	}
	updates, err := missed(tv.snap, ev.Payload, ev.Version)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrInvalidArgument, err)
	}
	out := make([]Event, 0, len(updates))
	for _, u := range updates {
		e := ev
		e.Kind, e.State, e.Payload, e.ID = u.kind, u.state, u.payload, u.id
		out = append(out, e)
	}
	return out, nil
}

// keep holds ev to publish again, and asks the task's follower on this
// replica to read the task soon.
func (s *Subscriber) keep(ev Event, letGo bool) {
	ref := store.TaskRef{Agent: ev.Agent, TaskID: ev.TaskID}
	// Published later, it says nothing of a client's stream being live.
	ev.Live = false
	if !s.retries.add(ev, letGo) {
		s.log.Warn("push: too many events wait to be published again; event dropped, the task's next reconciliation publishes what the log misses",
			"agent", ev.Agent, "task_id", ev.TaskID, "max_events", maxRetries, "max_bytes", maxRetryBytes)
	}
	s.nudge(ref)
}

// republish publishes the task's kept events, oldest first, and stops at
// the first that fails. The caller holds the task's view.
func (s *Subscriber) republish(ctx context.Context, ref store.TaskRef) error {
	for {
		r, ok := s.retries.first(ref)
		if !ok {
			return nil
		}
		p, err := s.o.Relay.Publish(ctx, r.ev)
		switch {
		case errors.Is(err, store.ErrInvalidArgument):
			s.log.Warn("push: kept event cannot be published; dropped", "agent", ref.Agent, "task_id", ref.TaskID, "error", err)
		case err != nil:
			return err
		case p.Terminal:
			s.forget(ctx, ref)
		case r.letGo:
			if err := s.finish(ctx, ref); err != nil {
				return err
			}
		}
		s.retries.done(ref, r.n)
	}
}

// retryLoop publishes the kept events every ScanInterval until ctx ends.
func (s *Subscriber) retryLoop(ctx context.Context) {
	tick := time.NewTicker(s.o.ScanInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if n := s.retries.len(); n > 0 {
				s.log.Warn("push: stopping with events not yet published; the tasks' followers reconcile them with their agents", "events", n)
			}
			return
		case <-tick.C:
		}
		for _, ref := range s.retries.refs() {
			if ctx.Err() != nil {
				break
			}
			rctx, cancel := context.WithTimeout(ctx, retryTimeout)
			tv := s.views.lock(ref)
			err := s.republish(rctx, ref)
			tv.mu.Unlock()
			cancel()
			if err != nil {
				s.log.Debug("push: kept events not published yet", "agent", ref.Agent, "task_id", ref.TaskID, "error", err)
			}
		}
	}
}
