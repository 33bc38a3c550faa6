package lifecycle

import (
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// activityResolution is how far apart two events without a state change
// must be for the second to move LastActivity: orphans are measured in
// minutes, so saving every artifact chunk would only cost round trips.
const activityResolution = time.Second

// Reasons an event is dropped.
const (
	dropLate       = "late"
	dropRegressive = "regressive"
)

// outcome is what one event does to a task's record.
type outcome struct {
	rec  store.TaskLifecycle // the record to save when save is set
	save bool
	// accepted is false for a dropped event.
	accepted  bool
	drop      string // dropLate, dropRegressive or ""
	duplicate bool
	// transition is set when the state changed (or was first seen).
	transition *transition
}

// transition is a state change, with what its metrics need.
type transition struct {
	from, to a2a.State
	// stayed is the time spent in from; meaningless when from is unknown.
	stayed time.Duration
	// lifetime is the time from creation, for a terminal to.
	lifetime time.Duration
	// resumeReason is the state that began an interruption this change
	// ends; StateUnknown when it ends none.
	resumeReason a2a.State
}

// decide applies ev to rec (found says whether there is one) under the
// monotonic state policy: terminal states are final, transitions must be
// allowed by the task's protocol version, a repeated state is a duplicate.
// It is pure, so a compare-and-set conflict simply decides again on the
// fresh record.
func decide(rec store.TaskLifecycle, found bool, ev TaskEvent) outcome {
	if ev.subscribers != 0 {
		if !found {
			return outcome{accepted: true}
		}
		rec.Subscribers = max(0, rec.Subscribers+ev.subscribers)
		return outcome{rec: rec, save: true, accepted: true}
	}
	if !found {
		return create(ev)
	}
	cur := a2a.ParseState(rec.State)
	switch {
	case cur.Terminal() && ev.State == cur:
		o := outcome{rec: rec, accepted: true, duplicate: true}
		// The agent's own canceled event often arrives before the answer
		// to the cancel that caused it: the answer says who ended it.
		if cur == a2a.StateCanceled && ev.EndedBy != "" && ev.EndedBy != store.EndedByAgent && rec.EndedBy != ev.EndedBy &&
			(rec.EndedBy == "" || rec.EndedBy == store.EndedByAgent) {
			o.rec.EndedBy = ev.EndedBy
			o.save = true
		}
		return o
	case cur.Terminal():
		return outcome{drop: dropLate}
	case ev.State == a2a.StateUnknown:
		return touch(rec, ev, outcome{accepted: true})
	case ev.State == cur:
		return touch(rec, ev, outcome{accepted: true, duplicate: true})
	case !a2a.CanTransition(versionOf(rec.Version, ev.Version), cur, ev.State):
		return outcome{drop: dropRegressive}
	}
	tr := &transition{from: cur, to: ev.State, stayed: ev.At.Sub(rec.StateSince)}
	if cur.Interrupted() && !ev.State.Interrupted() {
		tr.resumeReason = interruptionReason(rec.History, cur)
	}
	rec.History = append(append([]store.TaskTransition(nil), rec.History...), store.TaskTransition{From: cur.String(), To: ev.State.String(), At: ev.At})
	rec.State, rec.StateSince = ev.State.String(), ev.At
	rec.LastActivity = latest(rec.LastActivity, ev.At)
	if rec.ContextID == "" {
		rec.ContextID = ev.ContextID
	}
	if ev.State.Terminal() {
		rec.EndedBy = endedBy(ev)
		tr.lifetime = ev.At.Sub(rec.Created)
	}
	return outcome{rec: rec, save: true, accepted: true, transition: tr}
}

// create starts the record of a task seen for the first time. An event
// without a state or a tenant cannot start one.
func create(ev TaskEvent) outcome {
	if ev.State == a2a.StateUnknown || ev.Tenant == "" {
		return outcome{accepted: true}
	}
	created := ev.At
	if !ev.Opened.IsZero() && ev.Opened.Before(created) {
		created = ev.Opened
	}
	rec := store.TaskLifecycle{
		Agent: ev.Agent, TaskID: ev.TaskID,
		Tenant: ev.Tenant, Subject: ev.Subject, ContextID: ev.ContextID,
		State: ev.State.String(), StateSince: ev.At, Created: created, LastActivity: ev.At,
		History: []store.TaskTransition{{From: a2a.StateUnknown.String(), To: ev.State.String(), At: ev.At}},
	}
	if ev.Version != 0 {
		rec.Version = ev.Version.String()
	}
	tr := &transition{from: a2a.StateUnknown, to: ev.State}
	if ev.State.Terminal() {
		rec.EndedBy = endedBy(ev)
		tr.lifetime = ev.At.Sub(created)
	}
	return outcome{rec: rec, save: true, accepted: true, transition: tr}
}

// touch records activity without a state change: saved only when it moves
// LastActivity by at least activityResolution or brings the context id.
func touch(rec store.TaskLifecycle, ev TaskEvent, o outcome) outcome {
	if rec.ContextID == "" && ev.ContextID != "" {
		rec.ContextID = ev.ContextID
		o.save = true
	}
	if ev.At.Sub(rec.LastActivity) >= activityResolution {
		rec.LastActivity = ev.At
		o.save = true
	}
	o.rec = rec
	return o
}

// interruptionReason is the state that began the interruption the task is
// in: the first of the interrupted states it has been in since it last was
// in any other (a task may move from input-required to auth-required and
// back without being resumed). cur is the answer when history is too short
// to tell.
func interruptionReason(history []store.TaskTransition, cur a2a.State) a2a.State {
	reason := cur
	for i := len(history) - 1; i >= 0; i-- {
		to := a2a.ParseState(history[i].To)
		if !to.Interrupted() {
			break
		}
		reason = to
	}
	return reason
}

// resumeOutcome labels how an interruption ended.
func resumeOutcome(to a2a.State) string {
	if to == a2a.StateWorking || to == a2a.StateSubmitted {
		return "resumed"
	}
	return to.String()
}

func endedBy(ev TaskEvent) string {
	if ev.EndedBy != "" && ev.State == a2a.StateCanceled {
		return ev.EndedBy
	}
	return store.EndedByAgent
}

// versionOf is the version whose transition table applies: the one the
// task was created with, else the event's, else 0.3 (what a request
// without a version means).
func versionOf(recorded string, fallback a2a.Version) a2a.Version {
	if v, ok := parseVersion(recorded); ok {
		return v
	}
	if fallback != 0 {
		return fallback
	}
	return a2a.V03
}

func parseVersion(s string) (a2a.Version, bool) {
	for _, v := range []a2a.Version{a2a.V10, a2a.V03, a2a.VLegacy} {
		if v.String() == s {
			return v, true
		}
	}
	return 0, false
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
