package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

// hold sets (hold=1) or clears the legal hold, through the tracker as the
// ops API does.
func (c *Console) hold(q *request) {
	agent, id, ok := c.taskRef(q)
	if !ok {
		return
	}
	hold := q.r.PostFormValue("hold") == "1"
	_, err := c.o.Tasks.SetLegalHold(q.r.Context(), agent, id, hold, q.s.Operator)
	c.audit(q, "legal_hold", err, "agent", agent, "task_id", id, "legal_hold", hold)
	if err != nil {
		c.taskError(q, err)
		return
	}
	done := "hold-cleared"
	if hold {
		done = "hold-set"
	}
	c.back(q, Prefix+"tasks/"+url.PathEscape(agent)+"/"+url.PathEscape(id), done)
}

// cancel asks the agent to cancel the task through the watchdog's path:
// the state recorded is the one the agent answers with.
func (c *Console) cancel(q *request) {
	agent, id, ok := c.taskRef(q)
	if !ok {
		return
	}
	state, err := c.o.Tasks.Cancel(q.r.Context(), agent, id, q.s.Operator)
	c.audit(q, "cancel", err, "agent", agent, "task_id", id, "agent_says", state.String())
	if err != nil && !errors.Is(err, lifecycle.ErrNoRecord) && !errors.Is(err, store.ErrUnavailable) {
		c.refuse(q.w, http.StatusBadGateway, "the agent did not cancel the task: it did not answer with the task (see the gateway's log)")
		return
	}
	if err != nil {
		c.taskError(q, err)
		return
	}
	c.back(q, Prefix+"tasks/"+url.PathEscape(agent)+"/"+url.PathEscape(id), "cancel-asked")
}

// maxSelected bounds the dead letters one form may act on: one page.
const maxSelected = store.MaxDeadLetterListLimit

// actOnDeadLetters redelivers or discards the selected dead letters, each
// named "<endpoint> <id>" (ids are visible ASCII, endpoints path-escaped:
// neither holds a space).
func (c *Console) actOnDeadLetters(q *request) {
	if c.o.Deliveries == nil {
		c.refuse(q.w, http.StatusNotFound, "push notifications are off (push.enabled)")
		return
	}
	action := q.r.PostFormValue("action")
	if action != "redeliver" && action != "discard" {
		c.refuse(q.w, http.StatusBadRequest, "action must be redeliver or discard")
		return
	}
	sel := q.r.PostForm["sel"]
	if len(sel) > maxSelected {
		c.refuse(q.w, http.StatusBadRequest, "select at most one page of dead letters")
		return
	}
	back := q.r.PostFormValue("back")
	if !strings.HasPrefix(back, Prefix) || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		back = Prefix + "dead-letters"
	}
	if len(sel) == 0 {
		c.back(q, back, "none-selected")
		return
	}
	var failed []string
	for _, s := range sel {
		ep, id, ok := strings.Cut(s, " ")
		if !ok || ep == "" || id == "" {
			c.refuse(q.w, http.StatusBadRequest, "a selection is not a dead letter")
			return
		}
		var err error
		if action == "redeliver" {
			err = c.o.Deliveries.Redeliver(q.r.Context(), ep, id)
		} else {
			var found bool
			if found, err = c.o.Deliveries.Discard(q.r.Context(), ep, id); err == nil && !found {
				err = store.ErrNotFound
			}
		}
		c.audit(q, "dead_letter_"+action, err, "endpoint", ep, "id", id)
		if err != nil {
			failed = append(failed, deadLetterFailure(err))
		}
	}
	if len(failed) > 0 {
		c.refuse(q.w, http.StatusConflict, strings.Join(failed, "; "))
		return
	}
	done := "redelivered"
	if action == "discard" {
		done = "discarded"
	}
	c.back(q, back, done)
}

// deadLetterFailure says what went wrong with one dead letter.
func deadLetterFailure(err error) string {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "no such dead letter (redelivered or discarded already?)"
	case errors.Is(err, store.ErrQueueFull):
		return "the endpoint's queue is full; try again once it has drained"
	case errors.Is(err, store.ErrUnavailable):
		return "the store is temporarily unavailable"
	case errors.Is(err, store.ErrInvalidArgument):
		return "not a dead letter's name"
	}
	return "internal error (see the gateway's log)"
}

// audit writes one line per action to the audit log: who, what, on what,
// and whether it worked.
func (c *Console) audit(q *request, action string, err error, attrs ...any) {
	attrs = append([]any{"operator", q.s.Operator, "action", action}, attrs...)
	if err != nil {
		c.o.Audit.Warn("console: action failed", append(attrs, "err", err)...)
		return
	}
	c.o.Audit.Info("console: action", attrs...)
}

func (c *Console) taskError(q *request, err error) {
	switch {
	case errors.Is(err, lifecycle.ErrNoRecord):
		c.refuse(q.w, http.StatusNotFound, "no record of this task")
	case errors.Is(err, lifecycle.ErrUnknownAgent):
		c.refuse(q.w, http.StatusNotFound, "no such agent")
	default:
		c.storeError(q, err)
	}
}

// back redirects after an action (Post/Redirect/Get), saying what was done.
func (c *Console) back(q *request, to, done string) {
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	http.Redirect(q.w, q.r, to+sep+"done="+done, http.StatusSeeOther)
}
