package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// ErrNoRecord means the tracker has no record of the task.
var ErrNoRecord = errNoRecord

// ErrUnknownAgent means the agent named is not a configured one.
var ErrUnknownAgent = errors.New("lifecycle: no such agent")

// Agents are the configured agents' names, sorted.
func (t *Tracker) Agents() []string { return append([]string(nil), t.names...) }

// Orphan reports whether rec counts as an orphan at now: open, and without
// activity for longer than orphan_after.
func (t *Tracker) Orphan(rec store.TaskLifecycle, now time.Time) bool { return t.orphan(rec, now) }

// OverBudget reports whether rec has spent longer than its agent's
// watchdog budget for its state.
func (t *Tracker) OverBudget(rec store.TaskLifecycle, now time.Time) bool {
	return overBudget(t.agents[rec.Agent].Watchdog, rec, now)
}

// OrphanAfter is the lifecycle.orphan_after in force.
func (t *Tracker) OrphanAfter() time.Duration { return t.o.OrphanAfter.D() }

// SetLegalHold sets or clears a record's legal hold; the ops API and the
// console both change it through here. by names who asked, for the log.
func (t *Tracker) SetLegalHold(ctx context.Context, agent, taskID string, hold bool, by string) (store.TaskLifecycle, error) {
	if _, ok := t.agents[agent]; !ok {
		return store.TaskLifecycle{}, ErrUnknownAgent
	}
	rec, err := t.modify(ctx, agent, taskID, func(rec *store.TaskLifecycle) bool {
		if rec.LegalHold == hold {
			return false
		}
		rec.LegalHold = hold
		return true
	})
	if err != nil {
		return rec, err
	}
	t.log.Info("lifecycle: legal hold changed", "agent", agent, "task_id", taskID, "legal_hold", hold, "by", by)
	return rec, nil
}

// Cancel asks the agent to cancel the task, as the watchdog does: the
// agent's answer, not the gateway, decides the state recorded. It returns
// the state the agent answered with.
func (t *Tracker) Cancel(ctx context.Context, agent, taskID, by string) (a2a.State, error) {
	a, ok := t.agents[agent]
	if !ok {
		return a2a.StateUnknown, ErrUnknownAgent
	}
	if t.caller == nil {
		return a2a.StateUnknown, errors.New("lifecycle: no caller to reach the agent")
	}
	rec, found, err := t.st.Get(ctx, agent, taskID)
	if err != nil {
		return a2a.StateUnknown, fmt.Errorf("read the task record: %w", err)
	}
	if !found {
		return a2a.StateUnknown, errNoRecord
	}
	state, notCancelable, err := t.cancelAtAgent(ctx, a, rec, versionOf(rec.Version, 0), store.EndedByCancel)
	t.log.Warn("lifecycle: cancel requested by an operator", "agent", agent, "task_id", taskID, "tenant", rec.Tenant,
		"state", rec.State, "by", by, "not_cancelable", notCancelable, "agent_says", state.String(), "err", err)
	return state, err
}
