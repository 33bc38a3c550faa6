package store

import (
	"context"
	"time"
)

// ActiveTasks counts each tenant's tasks that have not reached a terminal
// state, for the per-tenant cap on open tasks. A task that shows no
// activity for the window given to Count stops counting, so a task its
// agent abandoned does not hold the tenant's budget forever.
type ActiveTasks interface {
	// Track marks the task of agent as active (its latest state is not
	// terminal) or not, as of now.
	Track(ctx context.Context, tenant, agent, taskID string, active bool) error
	// Count returns how many of the tenant's tasks were marked active within
	// the last window, forgetting older marks.
	Count(ctx context.Context, tenant string, window time.Duration) (int, error)
}

// checkedActiveTasks is the ActiveTasks a Store hands out; see gate.
type checkedActiveTasks struct {
	gate *gate
	b    ActiveTasks
}

func (w checkedActiveTasks) Track(ctx context.Context, tenant, agent, taskID string, active bool) error {
	if err := w.gate.check(checkName("tenant", tenant), checkTaskRef(agent, taskID)); err != nil {
		return err
	}
	return w.b.Track(ctx, tenant, agent, taskID, active)
}

func (w checkedActiveTasks) Count(ctx context.Context, tenant string, window time.Duration) (int, error) {
	if err := w.gate.check(checkName("tenant", tenant), checkPositive("activity window", window)); err != nil {
		return 0, err
	}
	return w.b.Count(ctx, tenant, window)
}
