package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// TaskTransition is one change of a task's state.
type TaskTransition struct {
	From, To string // state names as package a2a spells them in logs ("working", "completed"...)
	At       time.Time
}

// TaskLifecycle is the lifecycle record of one task of one agent. Times come
// back from the store in UTC, without a monotonic clock reading.
type TaskLifecycle struct {
	Agent, TaskID              string
	Tenant, Subject, ContextID string
	// Version is the protocol version the task was created with ("1.0",
	// "0.3", "0.1"), or "" when the gateway did not see it created.
	Version string
	// State is the current state name.
	State                             string
	StateSince, Created, LastActivity time.Time
	// History is oldest first, at most MaxLifecycleHistory entries; Save
	// drops the oldest beyond it.
	History []TaskTransition
	// Subscribers counts the streams open on the task through the gateway
	// (best effort).
	Subscribers int
	// EndedBy is "", or who ended the task: EndedByAgent, EndedByCancel or
	// EndedByWatchdog.
	EndedBy string
	// Escalated is set once the watchdog escalated the task.
	Escalated bool
	// LegalHold keeps retention from deleting the record: Delete refuses it
	// and it does not expire.
	LegalHold bool
	// Rev is the revision for compare-and-set; 0 for a record never saved.
	Rev int64
}

// Who ended a task, for TaskLifecycle.EndedBy.
const (
	EndedByAgent    = "agent"
	EndedByCancel   = "cancel"
	EndedByWatchdog = "watchdog"
)

// LifecycleOpen is the LifecycleFilter.State that selects every record whose
// state is not terminal.
const LifecycleOpen = "open"

// LifecycleFilter selects the records List returns.
type LifecycleFilter struct {
	Agent  string // required
	Tenant string // optional
	// State is optional: one state name, or LifecycleOpen for every
	// non-terminal state.
	State string
	// InactiveSince is optional: only records whose LastActivity is before
	// it (orphan candidates).
	InactiveSince time.Time
}

// Lifecycle stores the lifecycle record of every task the gateway has seen,
// for metrics, the watchdog of tasks that never finish and the operations
// API. Package lifecycle decides the transitions; this concern only keeps
// the records and the indexes that find them.
type Lifecycle interface {
	// Get returns the record of the task, and false if there is none.
	Get(ctx context.Context, agent, taskID string) (TaskLifecycle, bool, error)
	// Save stores rec if the stored revision is still rec.Rev (rec.Rev 0: no
	// record may exist yet), sets the record to expire after ttl (0: keep;
	// ignored while rec.LegalHold is set), and returns the new revision; ok
	// is false, and nothing changes, when another writer saved first (the
	// caller re-reads and decides again). Save keeps the indexes that List
	// and CountByState use in step with the record. Should that step fail
	// after the record was stored, Save returns the new revision, ok true
	// and the error: the record is saved, and the indexes catch up at its
	// next Save.
	Save(ctx context.Context, rec TaskLifecycle, ttl time.Duration) (rev int64, ok bool, err error)
	// List returns records matching f ordered by LastActivity, oldest first,
	// limit 1..MaxLifecycleListLimit, with an opaque cursor for the next
	// page ("" at the end). Records whose state or tenant changed between
	// pages may be skipped or repeated once; none is lost from a stable set.
	// A page may hold fewer than limit records while the cursor is not "".
	List(ctx context.Context, f LifecycleFilter, cursor string, limit int) ([]TaskLifecycle, string, error)
	// CountByState counts an agent's records per state name; states without
	// records are left out of the map.
	CountByState(ctx context.Context, agent string) (map[string]int, error)
	// Delete removes a record and its index entries unless it is under legal
	// hold; reports whether it did.
	Delete(ctx context.Context, agent, taskID string) (bool, error)
	// Lease is leadership for work exactly one replica must do (exporting
	// cluster-wide gauges, the watchdog sweep): holder holds name for ttl;
	// calling again renews. Reports whether holder holds it now.
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
}

// Limits on Lifecycle arguments.
const (
	// MaxLifecycleHistory bounds TaskLifecycle.History.
	MaxLifecycleHistory = 64
	// MaxLifecycleListLimit bounds the limit of one List call.
	MaxLifecycleListLimit = 500
	// maxLifecycleCursorBytes bounds a cursor handed back by a caller.
	maxLifecycleCursorBytes = 4 * MaxNameBytes
)

// lifecycleStates is every state a record may be in, by name: the states of
// package a2a and its "unknown" for a task whose state could not be read.
func lifecycleStates() []string {
	names := make([]string, 0, len(a2a.AllStates)+1)
	names = append(names, a2a.StateUnknown.String())
	for _, s := range a2a.AllStates {
		names = append(names, s.String())
	}
	return names
}

// canonicalState reports whether name is a state's one name in logs, so a
// state cannot be indexed under two spellings.
func canonicalState(name string) bool {
	return name != "" && a2a.ParseState(name).String() == name
}

// stateName returns package a2a's own copy of a canonical state name (or
// ""), so a stored record never pins a caller's buffer.
func stateName(name string) string {
	if name == "" {
		return ""
	}
	return a2a.ParseState(name).String()
}

// openState reports whether a record in state name belongs to the "open"
// index.
func openState(name string) bool {
	return !a2a.ParseState(name).Terminal()
}

// The values a record's Version and EndedBy may take besides "".
var (
	lifecycleVersions = []string{a2a.VLegacy.String(), a2a.V03.String(), a2a.V10.String()}
	endedByValues     = []string{EndedByAgent, EndedByCancel, EndedByWatchdog}
)

// oneOf returns the one of known that v equals, or "" for "".
func oneOf(what, v string, known []string) (string, error) {
	if i := slices.Index(known, v); i >= 0 {
		return known[i], nil
	}
	if v == "" {
		return "", nil
	}
	return "", fmt.Errorf("%w: %s %.32q is not one of %q", ErrInvalidArgument, what, v, known)
}

// normalizeLifecycle checks rec and returns the copy a store keeps: history
// trimmed to its newest MaxLifecycleHistory entries, times in UTC. rec's own
// slices are left alone.
func normalizeLifecycle(rec TaskLifecycle) (TaskLifecycle, error) {
	if err := cmp.Or(checkName("agent name", rec.Agent), checkName("task id", rec.TaskID), checkName("tenant", rec.Tenant),
		checkOptionalName("subject", rec.Subject), checkOptionalName("context id", rec.ContextID)); err != nil {
		return TaskLifecycle{}, err
	}
	// Known values are replaced by the package's own strings, so a stored
	// record never pins a caller's buffer.
	var err error
	if rec.Version, err = oneOf("protocol version", rec.Version, lifecycleVersions); err != nil {
		return TaskLifecycle{}, err
	}
	if !canonicalState(rec.State) {
		return TaskLifecycle{}, fmt.Errorf("%w: state %.32q is not a state name", ErrInvalidArgument, rec.State)
	}
	rec.State = stateName(rec.State)
	if rec.EndedBy, err = oneOf("ended by", rec.EndedBy, endedByValues); err != nil {
		return TaskLifecycle{}, err
	}
	if rec.Subscribers < 0 {
		return TaskLifecycle{}, fmt.Errorf("%w: subscribers %d is negative", ErrInvalidArgument, rec.Subscribers)
	}
	if rec.Rev < 0 {
		return TaskLifecycle{}, fmt.Errorf("%w: revision %d is negative", ErrInvalidArgument, rec.Rev)
	}
	for _, t := range []struct {
		what string
		at   *time.Time
	}{{"state since", &rec.StateSince}, {"created", &rec.Created}, {"last activity", &rec.LastActivity}} {
		if !storableYear(*t.at) {
			return TaskLifecycle{}, yearError(t.what, *t.at)
		}
		*t.at = t.at.UTC()
	}
	history := rec.History[max(0, len(rec.History)-MaxLifecycleHistory):]
	rec.History = nil
	if len(history) > 0 {
		rec.History = make([]TaskTransition, len(history))
	}
	for i, tr := range history {
		if tr.From != "" && !canonicalState(tr.From) || !canonicalState(tr.To) {
			return TaskLifecycle{}, fmt.Errorf("%w: history %d: transition from %.32q to %.32q names no state", ErrInvalidArgument, i, tr.From, tr.To)
		}
		// The message is built only on failure: this runs per entry on
		// every save.
		if !storableYear(tr.At) {
			return TaskLifecycle{}, yearError(fmt.Sprintf("history %d time", i), tr.At)
		}
		rec.History[i] = TaskTransition{From: stateName(tr.From), To: stateName(tr.To), At: tr.At.UTC()}
	}
	return rec, nil
}

// storableYear reports whether RFC 3339 can write t's year.
func storableYear(t time.Time) bool {
	y := t.Year()
	return 0 <= y && y <= 9999
}

func yearError(what string, t time.Time) error {
	return fmt.Errorf("%w: %s is in year %d, outside 0 to 9999", ErrInvalidArgument, what, t.Year())
}

func checkLifecycleTTL(ttl time.Duration) error {
	if ttl < 0 {
		return fmt.Errorf("%w: ttl %s is negative", ErrInvalidArgument, ttl)
	}
	return nil
}

func checkLifecycleFilter(f LifecycleFilter, limit int) error {
	if err := cmp.Or(checkName("agent name", f.Agent), checkOptionalName("tenant", f.Tenant)); err != nil {
		return err
	}
	if f.State != "" && f.State != LifecycleOpen && !canonicalState(f.State) {
		return fmt.Errorf("%w: state filter %.32q is neither a state name nor %q", ErrInvalidArgument, f.State, LifecycleOpen)
	}
	return checkLimit(limit, MaxLifecycleListLimit)
}

// matches reports whether rec, as stored now, passes f. The Redis store
// applies it to what an index names, which may be stale.
func (f LifecycleFilter) matches(rec *TaskLifecycle) bool {
	switch {
	case f.Tenant != "" && rec.Tenant != f.Tenant:
		return false
	case f.State == LifecycleOpen && !openState(rec.State):
		return false
	case f.State != "" && f.State != LifecycleOpen && rec.State != f.State:
		return false
	case !f.InactiveSince.IsZero() && !rec.LastActivity.Before(f.InactiveSince):
		return false
	}
	return true
}

// activityScore is the position of a record in List's order: LastActivity
// in Unix microseconds, as the float64 a Redis sorted set scores it with.
// Microseconds stay exact in a float64 for every year from 1685 to 2255.
func activityScore(t time.Time) float64 {
	return float64(t.UnixMicro())
}

// lifecyclePos is a place in List's order: records sort by score, then by
// member, the escaped task id, byte by byte (the order Redis gives members
// of equal score).
type lifecyclePos struct {
	score  float64
	member string
}

func (p lifecyclePos) compare(q lifecyclePos) int {
	return cmp.Or(cmp.Compare(p.score, q.score), strings.Compare(p.member, q.member))
}

func (p lifecyclePos) before(q lifecyclePos) bool { return p.compare(q) < 0 }

// encodeLifecycleCursor renders the position of the last record a page
// looked at. The score is written in the shortest form that parses back to
// the same float64, so Redis compares it exactly.
func encodeLifecycleCursor(p lifecyclePos) string {
	return encodeCursor(strconv.FormatFloat(p.score, 'g', -1, 64) + "|" + p.member)
}

// decodeLifecycleCursor reads a cursor; ok is false for "", the first page.
func decodeLifecycleCursor(c string) (p lifecyclePos, ok bool, err error) {
	body, err := decodeCursor(c, maxLifecycleCursorBytes)
	if err != nil || c == "" {
		return lifecyclePos{}, false, err
	}
	score, member, found := strings.Cut(body, "|")
	p.score, err = strconv.ParseFloat(score, 64)
	if !found || err != nil || math.IsNaN(p.score) || math.IsInf(p.score, 0) {
		return lifecyclePos{}, false, errMalformedCursor
	}
	if id, err := unescape(member); err != nil || id == "" {
		return lifecyclePos{}, false, errMalformedCursor
	}
	p.member = member
	return p, true, nil
}

// checkedLifecycle is the Lifecycle a Store hands out; see gate.
type checkedLifecycle struct {
	gate *gate
	b    Lifecycle
}

func (w checkedLifecycle) Get(ctx context.Context, agent, taskID string) (TaskLifecycle, bool, error) {
	if err := w.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return TaskLifecycle{}, false, err
	}
	return w.b.Get(ctx, agent, taskID)
}

// Save hands the back end the record normalized.
func (w checkedLifecycle) Save(ctx context.Context, rec TaskLifecycle, ttl time.Duration) (int64, bool, error) {
	stored, err := normalizeLifecycle(rec)
	if err := w.gate.check(err, checkLifecycleTTL(ttl)); err != nil {
		return 0, false, err
	}
	return w.b.Save(ctx, stored, ttl)
}

func (w checkedLifecycle) List(ctx context.Context, f LifecycleFilter, cursor string, limit int) ([]TaskLifecycle, string, error) {
	if err := w.gate.check(checkLifecycleFilter(f, limit)); err != nil {
		return nil, "", err
	}
	return w.b.List(ctx, f, cursor, limit)
}

func (w checkedLifecycle) CountByState(ctx context.Context, agent string) (map[string]int, error) {
	if err := w.gate.check(checkName("agent name", agent)); err != nil {
		return nil, err
	}
	return w.b.CountByState(ctx, agent)
}

func (w checkedLifecycle) Delete(ctx context.Context, agent, taskID string) (bool, error) {
	if err := w.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return false, err
	}
	return w.b.Delete(ctx, agent, taskID)
}

func (w checkedLifecycle) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if err := w.gate.check(checkName("lease name", name), checkName("lease holder", holder), checkPositive("lease ttl", ttl)); err != nil {
		return false, err
	}
	return w.b.Lease(ctx, name, holder, ttl)
}
