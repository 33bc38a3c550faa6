package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// maxWatchdogActions bounds the tasks the watchdog acts on per agent,
// state and sweep: each action is a call to the agent. The oldest go
// first; the rest wait for the next sweep.
const maxWatchdogActions = 20

// Watchdog actions, as counted in a2agw_watchdog_actions_total.
const (
	actionRefreshed      = "refreshed" // the agent's answer showed the task had moved on
	actionCancel         = "cancel"
	actionCancelFailed   = "cancel_failed"
	actionEscalate       = "escalate"
	actionEscalateFailed = "escalate_failed"
)

// budget is how long a task may stay in one state. The working budget
// covers submitted too: each state is timed from when the task entered it.
type budget struct {
	state a2a.State
	limit time.Duration
}

func budgets(w config.WatchdogOptions) []budget {
	var out []budget
	for _, b := range []budget{
		{a2a.StateSubmitted, w.Working.D()},
		{a2a.StateWorking, w.Working.D()},
		{a2a.StateInputRequired, w.InputRequired.D()},
		{a2a.StateAuthRequired, w.AuthRequired.D()},
	} {
		if b.limit > 0 {
			out = append(out, b)
		}
	}
	return out
}

// overBudget reports whether rec has spent longer than its state's budget.
func overBudget(w config.WatchdogOptions, rec store.TaskLifecycle, now time.Time) bool {
	state := a2a.ParseState(rec.State)
	for _, b := range budgets(w) {
		if b.state == state {
			return now.Sub(rec.StateSince) > b.limit
		}
	}
	return false
}

// watch finds the agent's tasks over budget and acts on them.
func (t *Tracker) watch(ctx context.Context, a Agent, now time.Time) error {
	var errs []error
	for _, b := range budgets(a.Watchdog) {
		var over []store.TaskLifecycle
		_, err := t.each(ctx, store.LifecycleFilter{Agent: a.Name, State: b.state.String()}, "", func(rec store.TaskLifecycle) error {
			if now.Sub(rec.StateSince) > b.limit && !(rec.Escalated && a.Watchdog.Action == config.WatchdogEscalate) {
				over = append(over, rec)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sort.Slice(over, func(i, j int) bool { return over[i].StateSince.Before(over[j].StateSince) })
		for _, rec := range over[:min(len(over), maxWatchdogActions)] {
			if err := t.act(ctx, a, rec, b); err != nil {
				errs = append(errs, fmt.Errorf("task %s: %w", rec.TaskID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// act first asks the agent where the task stands, since the last event the
// gateway saw may be stale (a partition, a lost stream), and acts only if
// the task is still over budget. It never decides a task failed: that is
// the agent's to say.
func (t *Tracker) act(ctx context.Context, a Agent, rec store.TaskLifecycle, b budget) error {
	v := versionOf(rec.Version, 0)
	if err := t.reread(ctx, a, rec, v); err != nil {
		t.log.Warn("watchdog: the agent did not say where the task stands; acting on the last event seen",
			"agent", a.Name, "task_id", rec.TaskID, "err", err)
	} else {
		fresh, found, err := t.st.Get(ctx, a.Name, rec.TaskID)
		if err != nil {
			return err
		}
		if !found || fresh.State != rec.State || time.Since(fresh.StateSince) <= b.limit {
			t.m.WatchdogAction(a.Name, actionRefreshed, b.state.String())
			return nil
		}
		rec = fresh
	}
	if a.Watchdog.Action == config.WatchdogCancel {
		return t.cancelUpstream(ctx, a, rec, v, b)
	}
	return t.escalate(ctx, a, rec, b)
}

// params are the params of the watchdog's calls: the task id, and the
// routing tenant for agents that need it.
func params(a Agent, rec store.TaskLifecycle, v a2a.Version) a2a.TaskParams {
	p := a2a.TaskParams{ID: rec.TaskID}
	if a.TenantRouting && v == a2a.V10 {
		p.Tenant = rec.Tenant
	}
	return p
}

// reread asks the agent for the task and applies what it says.
func (t *Tracker) reread(ctx context.Context, a Agent, rec store.TaskLifecycle, v a2a.Version) error {
	res, err := t.caller.Call(ctx, a.Name, v, a2a.MethodGetTask, params(a, rec, v))
	if err != nil {
		return err
	}
	_, err = t.applyAnswer(ctx, rec, v, res, "")
	return err
}

// applyAnswer applies a Task the agent answered with, in order with the
// task's other events.
func (t *Tracker) applyAnswer(ctx context.Context, rec store.TaskLifecycle, v a2a.Version, res []byte, endedBy string) (a2a.State, error) {
	ev, err := a2a.ParseResult(res)
	if err != nil || ev.Kind != a2a.EventTask || ev.TaskID != rec.TaskID {
		return a2a.StateUnknown, fmt.Errorf("the agent did not answer with task %s", rec.TaskID)
	}
	_, err = t.accept(ctx, TaskEvent{
		Agent: rec.Agent, TaskID: rec.TaskID, ContextID: ev.ContextID, Tenant: rec.Tenant, Subject: rec.Subject,
		Version: v, State: ev.State, EndedBy: endedBy,
	})
	return ev.State, err
}

// cancelUpstream cancels the task at the agent.
func (t *Tracker) cancelUpstream(ctx context.Context, a Agent, rec store.TaskLifecycle, v a2a.Version, b budget) error {
	state, notCancelable, err := t.cancelAtAgent(ctx, a, rec, v, store.EndedByWatchdog)
	switch {
	case notCancelable:
		t.m.WatchdogAction(a.Name, actionRefreshed, b.state.String())
		return err
	case errors.Is(err, errCancelCall):
		t.m.WatchdogAction(a.Name, actionCancelFailed, b.state.String())
		t.log.Warn("watchdog: cancel of a task over its budget failed", "agent", a.Name, "task_id", rec.TaskID,
			"tenant", rec.Tenant, "state", rec.State, "err", err)
		return nil
	}
	t.m.WatchdogAction(a.Name, actionCancel, b.state.String())
	t.log.Warn("watchdog: canceled a task over its budget", "agent", a.Name, "task_id", rec.TaskID, "tenant", rec.Tenant,
		"state", rec.State, "state_since", rec.StateSince, "budget", b.limit.String(), "agent_says", state.String())
	return err
}

// errCancelCall wraps the error of a CancelTask call the agent did not
// answer with a task.
var errCancelCall = errors.New("cancel call failed")

// cancelAtAgent calls CancelTask and applies the answer, ended by endedBy.
// An agent that says the task is not cancelable has ended it meanwhile:
// the task is read again to learn how (notCancelable). A failed call
// wraps errCancelCall.
func (t *Tracker) cancelAtAgent(ctx context.Context, a Agent, rec store.TaskLifecycle, v a2a.Version, endedBy string) (state a2a.State, notCancelable bool, err error) {
	res, err := t.caller.Call(ctx, a.Name, v, a2a.MethodCancelTask, params(a, rec, v))
	var ae *a2a.Error
	if errors.As(err, &ae) && ae.Code == a2a.ErrTaskNotCancelable.Code {
		return a2a.StateUnknown, true, t.reread(ctx, a, rec, v)
	}
	if err != nil {
		return a2a.StateUnknown, false, fmt.Errorf("%w: %w", errCancelCall, err)
	}
	state, err = t.applyAnswer(ctx, rec, v, res, endedBy)
	return state, false, err
}

// escalation is the document POSTed to the operations webhook.
type escalation struct {
	Event             string    `json:"event"`
	Agent             string    `json:"agent"`
	TaskID            string    `json:"task_id"`
	Tenant            string    `json:"tenant"`
	ContextID         string    `json:"context_id,omitempty"`
	State             string    `json:"state"`
	StateSince        time.Time `json:"state_since"`
	BudgetSeconds     float64   `json:"budget_seconds"`
	OverBudgetSeconds float64   `json:"over_budget_seconds"`
	Gateway           string    `json:"gateway"`
}

// escalate tells operations once: a log line, the metric, the webhook.
// A webhook that fails is tried again at the next sweep.
func (t *Tracker) escalate(ctx context.Context, a Agent, rec store.TaskLifecycle, b budget) error {
	if rec.Escalated {
		return nil
	}
	now := time.Now()
	t.log.Warn("watchdog: task over its budget; escalating", "agent", a.Name, "task_id", rec.TaskID, "tenant", rec.Tenant,
		"state", rec.State, "state_since", rec.StateSince, "budget", b.limit.String())
	if t.o.OpsWebhook != "" {
		doc := escalation{
			Event: "task_over_budget", Agent: a.Name, TaskID: rec.TaskID, Tenant: rec.Tenant, ContextID: rec.ContextID,
			State: rec.State, StateSince: rec.StateSince, BudgetSeconds: b.limit.Seconds(),
			OverBudgetSeconds: (now.Sub(rec.StateSince) - b.limit).Seconds(), Gateway: t.holder,
		}
		if err := t.post(ctx, doc); err != nil {
			t.m.WatchdogAction(a.Name, actionEscalateFailed, b.state.String())
			t.log.Warn("watchdog: escalation not delivered; retried at the next sweep", "agent", a.Name, "task_id", rec.TaskID, "err", err)
			return nil
		}
	}
	t.m.WatchdogAction(a.Name, actionEscalate, b.state.String())
	_, err := t.modify(ctx, a.Name, rec.TaskID, func(r *store.TaskLifecycle) bool {
		if r.Escalated {
			return false
		}
		r.Escalated = true
		return true
	})
	if errors.Is(err, errNoRecord) {
		return nil
	}
	if err == nil {
		t.onWatchdog(ctx, a.Name, rec.TaskID, WatchdogEscalated, a2a.ParseState(rec.State))
	}
	return err
}

// post sends one escalation to the operations webhook.
func (t *Tracker) post(ctx context.Context, doc escalation) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.OpsWebhook, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.webhook.Do(req)
	if err != nil {
		// The URL may carry a credential (many webhook services put one in
		// the path): keep it out of the error, and so out of the log.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("ops webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("ops webhook answered HTTP %d", resp.StatusCode)
	}
	return nil
}
