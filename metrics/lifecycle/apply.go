package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// maxSaveAttempts bounds the compare-and-set retries of one change. Each
// conflict means another writer made progress, so running out takes a
// storm of writers on one task.
const maxSaveAttempts = 16

// errContended means a change lost every compare-and-set attempt.
var errContended = errors.New("lifecycle: the record kept changing under concurrent writers")

// apply reads the task's record, decides what ev does to it, and saves the
// result with compare-and-set, deciding again on a conflict. Metrics are
// counted only for the decision that was saved, so a cancel racing a
// completion is counted once, as whichever terminal state won.
//
// The record is read only when this replica does not hold the version it
// saved last (t.recent): a task's events mostly pass through one replica,
// and a new task has no record to read. A guess that turns out stale only
// costs a failed compare-and-set and a read.
func (t *Tracker) apply(ctx context.Context, ev TaskEvent) (bool, error) {
	for attempt := range maxSaveAttempts {
		rec, found, known := t.recent.get(ev.Agent, ev.TaskID)
		if attempt > 0 {
			known = false
		}
		o := decide(rec, found, ev)
		if !known && !(attempt == 0 && o.save) {
			// No saved version to build on, and nothing a blind create can
			// settle: read the record.
			var err error
			if rec, found, err = t.st.Get(ctx, ev.Agent, ev.TaskID); err != nil {
				return false, fmt.Errorf("read the task record: %w", err)
			}
			o = decide(rec, found, ev)
		}
		if o.save {
			rev, ok, err := t.st.Save(ctx, o.rec, 0)
			if !ok {
				t.recent.drop(ev.Agent, ev.TaskID)
				if err != nil {
					return false, fmt.Errorf("save the task record: %w", err)
				}
				continue
			}
			if err != nil {
				// The record is saved; its indexes catch up at the next save.
				t.log.Warn("lifecycle: task record saved, indexes behind", "agent", ev.Agent, "task_id", ev.TaskID, "err", err)
			}
			saved := o.rec
			saved.Rev = rev
			t.recent.put(saved)
		}
		t.count(o, ev, found, rec)
		return o.accepted, nil
	}
	return false, errContended
}

// count turns a saved (or save-free) decision into metrics.
func (t *Tracker) count(o outcome, ev TaskEvent, found bool, old store.TaskLifecycle) {
	switch {
	case o.drop != "":
		t.m.EventDropped(ev.Agent, o.drop)
		t.log.Debug("lifecycle: event dropped", "agent", ev.Agent, "task_id", ev.TaskID, "reason", o.drop,
			"state", old.State, "event_state", ev.State.String())
		return
	case o.duplicate:
		t.m.EventDuplicate(ev.Agent)
		return
	case o.transition == nil:
		return
	}
	tr := o.transition
	tenant := o.rec.Tenant
	agent := ev.Agent
	from, to := tr.from.String(), tr.to.String()
	t.m.Transition(agent, tenant, from, to)
	if found {
		t.m.StateLeft(agent, tenant, from, tr.stayed)
	}
	if tr.to.Interrupted() && !tr.from.Interrupted() {
		t.m.Interrupted(agent, tenant, to)
	}
	if tr.resumeReason != a2a.StateUnknown {
		t.m.InterruptionEnded(agent, tenant, tr.resumeReason.String(), resumeOutcome(tr.to))
	}
	if tr.to.Terminal() {
		t.m.Ended(agent, tenant, to, tr.lifetime)
	}
}

// recentRecords bounds the records a tracker remembers.
const recentRecords = 10000

// recordCache holds the version of each record this replica saved last.
type recordCache struct {
	mu sync.Mutex
	m  map[recordKey]store.TaskLifecycle
	// order holds keys in the order they were added, oldest at next once
	// full: a new key replaces the oldest one. A slot may name a key
	// dropped, or added again, since: evicting it early only costs a read.
	order []recordKey
	next  int
}

type recordKey struct{ agent, task string }

func newRecordCache() *recordCache {
	return &recordCache{m: make(map[recordKey]store.TaskLifecycle)}
}

// get returns the remembered record: (record, found in the store, known).
// An unknown task is returned as not found, the guess for a new task.
func (c *recordCache) get(agent, task string) (store.TaskLifecycle, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.m[recordKey{agent, task}]
	return rec, ok, ok
}

func (c *recordCache) put(rec store.TaskLifecycle) {
	k := recordKey{rec.Agent, rec.TaskID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		if len(c.order) < recentRecords {
			c.order = append(c.order, k)
		} else {
			delete(c.m, c.order[c.next])
			c.order[c.next] = k
			c.next = (c.next + 1) % recentRecords
		}
	}
	c.m[k] = rec
}

func (c *recordCache) drop(agent, task string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, recordKey{agent, task})
}

// errNoRecord means there is no record of the task.
var errNoRecord = errors.New("lifecycle: no record of the task")

// modify changes fields of an existing record that no event decides (the
// legal hold, the escalation mark) with compare-and-set. change returns
// false when there is nothing to save.
func (t *Tracker) modify(ctx context.Context, agent, taskID string, change func(*store.TaskLifecycle) bool) (store.TaskLifecycle, error) {
	for range maxSaveAttempts {
		rec, found, err := t.st.Get(ctx, agent, taskID)
		if err != nil {
			return rec, fmt.Errorf("read the task record: %w", err)
		}
		if !found {
			return rec, errNoRecord
		}
		if !change(&rec) {
			return rec, nil
		}
		rev, ok, err := t.st.Save(ctx, rec, 0)
		if !ok {
			if err != nil {
				return rec, fmt.Errorf("save the task record: %w", err)
			}
			continue
		}
		if err != nil {
			t.log.Warn("lifecycle: task record saved, indexes behind", "agent", agent, "task_id", taskID, "err", err)
		}
		rec.Rev = rev
		return rec, nil
	}
	return store.TaskLifecycle{}, errContended
}
