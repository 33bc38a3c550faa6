package push

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// This file reconciles a task as the agent shows it (a resubscription's
// opening Task, a GetTask answer, a 0.3 agent's push of the full Task) with
// what the task's event log holds, so that content the log missed (events
// sent while no replica was subscribed, or while the stream was down) is
// published after all, as a diff that never repeats or reorders what the
// log holds:
//
//   - an artifact whose logged parts begin the agent's is published as its
//     new parts, one artifact update per part (the first of an artifact
//     the log has not seen with append false, the others appended), each
//     named by its place in the artifact, so the same part read twice, by
//     this replica or another, is one event;
//   - an artifact without an artifactId (which the protocol requires), or
//     with the id of an earlier one, is left out: it cannot be told from
//     the logged ones;
//   - an artifact the agent shows behind the log (a read older than a
//     logged event) is left alone; one that differs otherwise is published
//     whole, replacing the logged one;
//   - lastChunk is set only on the last part of a task that ended: before
//     that the agent may still add to any artifact;
//   - a status other than the logged one, and not older, is published as a
//     status update: before the artifacts when the task works (an agent
//     reports working before producing), after them otherwise, so a
//     terminal or interrupted state comes last.
//
// Status updates the agent emitted during the gap are collapsed into the
// current one: an agent that cannot replay shows only where the task is
// now, so consumers see its current status, never a state the gateway made
// up. A task the log holds nothing of is published as it is, as a Task.

// taskView is what the event log holds of one task, folded into one 1.0
// Task snapshot: the log read up to lastID.
type taskView struct {
	mu     sync.Mutex
	lastID string
	// snap is the folded snapshot; nil while the log is empty.
	snap []byte
	// status is the last logged event that set the task's status; nil
	// while there is none.
	status *Event
	// pushed is when the agent last pushed a notification natively, in
	// Unix nanoseconds. It is kept outside mu, so a push never waits behind
	// a read of the task to say it came.
	pushed atomic.Int64
	// readAt is when the last read of the task that was published whole
	// was sent: it shows every event the agent stored before then.
	readAt time.Time

	// The newest logged event the view knows of, for Publish, which needs
	// the latest logged status only, not the task folded (folding a long
	// task's every event again is what a refresh costs): tailID and
	// tailSeq name it, tailStatus is the status object of the newest event
	// up to it that set the task's status (nil: none), tailState its
	// state. Publish moves it on over its own events when they follow it
	// directly (follow); readTail reads what others logged after it.
	tailID     string
	tailSeq    int64
	tailStatus any
	tailState  a2a.State
}

// maxViews bounds the task views a replica keeps; a view dropped to make
// room is read from the log again when needed.
const maxViews = 10000

// views holds a taskView per task; its mutex serialises the publishing of
// one task's events within this replica.
type views struct {
	mu sync.Mutex
	m  map[store.TaskRef]*taskView
}

func newViews() *views { return &views{m: map[store.TaskRef]*taskView{}} }

// lock returns the task's view, locked; the caller unlocks it.
func (vs *views) lock(ref store.TaskRef) *taskView {
	tv := vs.view(ref)
	tv.mu.Lock()
	return tv
}

// view returns the task's view, unlocked.
func (vs *views) view(ref store.TaskRef) *taskView {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	tv, ok := vs.m[ref]
	if !ok {
		if len(vs.m) >= maxViews {
			for k := range vs.m { // an arbitrary victim: a miss costs one log read
				delete(vs.m, k)
				break
			}
		}
		tv = &taskView{}
		vs.m[ref] = tv
	}
	return tv
}

// drop forgets a task whose notifications are over.
func (vs *views) drop(ref store.TaskRef) {
	vs.mu.Lock()
	delete(vs.m, ref)
	vs.mu.Unlock()
}

// refresh folds the events logged since the view was last read; a view
// whose last event fell out of the log is read again from the start.
func (tv *taskView) refresh(ctx context.Context, r *Relay, ref store.TaskRef) error {
	for {
		events, found, err := r.Replay(ctx, ref.Agent, ref.TaskID, tv.lastID, store.MaxEventLogReadLimit)
		if err != nil {
			return fmt.Errorf("read the event log: %w", err)
		}
		if !found && tv.lastID != "" {
			tv.lastID, tv.snap, tv.status = "", nil, nil
			continue
		}
		for _, le := range events {
			ev, err := loggedEvent(ref, le.Payload)
			if err == nil {
				tv.snap, err = a2a.FoldTask(tv.snap, ev.Payload, ev.Version, ev.Kind, ev.TaskID, ev.ContextID)
			}
			if err != nil {
				return fmt.Errorf("fold logged event %s: %w", le.ID, err)
			}
			tv.lastID = le.ID
			if ev.Kind != a2a.EventArtifactUpdate && ev.State != a2a.StateUnknown {
				// Published again, it must be the same event: same id.
				ev.ID, ev.At = le.ID, le.At
				tv.status = &ev
			}
		}
		if len(events) < store.MaxEventLogReadLimit {
			return nil
		}
	}
}

// readTail moves the view's tail over the events logged after it, reading
// only what sets the task's status; a tail that fell out of the log is
// read again from the start.
func (tv *taskView) readTail(ctx context.Context, r *Relay, ref store.TaskRef) error {
	for {
		events, found, err := r.Replay(ctx, ref.Agent, ref.TaskID, tv.tailID, store.MaxEventLogReadLimit)
		if err != nil {
			return fmt.Errorf("read the event log: %w", err)
		}
		if !found && tv.tailID != "" {
			tv.tailID, tv.tailSeq, tv.tailStatus, tv.tailState = "", 0, nil, a2a.StateUnknown
			continue
		}
		for _, le := range events {
			ev, err := loggedEvent(ref, le.Payload)
			if err != nil {
				return fmt.Errorf("read logged event %s: %w", le.ID, err)
			}
			if err := tv.follow(le.Seq, le.ID, ev); err != nil {
				return fmt.Errorf("read logged event %s: %w", le.ID, err)
			}
		}
		if len(events) < store.MaxEventLogReadLimit {
			return nil
		}
	}
}

// follow moves the view's tail to ev, logged as seq under id.
func (tv *taskView) follow(seq int64, id string, ev Event) error {
	if ev.Kind != a2a.EventArtifactUpdate && ev.State != a2a.StateUnknown {
		obj, err := a2a.EventObject(ev.Payload, ev.Version, ev.Kind)
		if err != nil {
			return err
		}
		tv.tailStatus, tv.tailState = obj["status"], ev.State
	}
	tv.tailID, tv.tailSeq = id, seq
	return nil
}

// loggedEvent reads a logged payload back into an Event.
func loggedEvent(ref store.TaskRef, payload []byte) (Event, error) {
	ev, v, err := a2a.ParseResultShape(payload)
	if err != nil {
		return Event{}, err
	}
	return Event{
		Agent: ref.Agent, TaskID: ref.TaskID, ContextID: ev.ContextID,
		Version: v, Kind: ev.Kind, State: ev.State, Payload: payload,
	}, nil
}

// update is one event that brings the log up to the agent's task; id, when
// set, names it instead of EventID(payload).
type update struct {
	kind    a2a.EventKind
	state   a2a.State
	payload []byte
	id      string
}

// missed lists the events that bring the log, as snap folds it (nil: an
// empty log), up to the agent's task, the payload of a Task of version v;
// every event is rendered in v.
func missed(snap, task []byte, v a2a.Version) ([]update, error) {
	cur, err := a2a.EventObject(task, v, a2a.EventTask)
	if err != nil {
		return nil, fmt.Errorf("read the agent's task: %w", err)
	}
	state := stateOfStatus(cur["status"])
	if snap == nil {
		return []update{{kind: a2a.EventTask, state: state, payload: task}}, nil
	}
	var logged map[string]any
	if err := decodeNumbers(snap, &logged); err != nil {
		return nil, fmt.Errorf("read the task snapshot: %w", err)
	}
	d := diff{v: v, taskID: cur["id"], contextID: cur["contextId"], ended: state.Terminal()}
	var arts []update
	seen := artifactsByID(logged["artifacts"])
	list, _ := cur["artifacts"].([]any)
	shown := map[string]bool{}
	for _, a := range list {
		// An artifact without its required id, or with one an earlier
		// artifact has, cannot be told from the logged ones: published on
		// every read, it would repeat.
		art, ok := a.(map[string]any)
		id, _ := art["artifactId"].(string)
		if !ok || id == "" || shown[id] {
			continue
		}
		shown[id] = true
		us, err := d.artifact(seen[id], art)
		if err != nil {
			return nil, err
		}
		arts = append(arts, us...)
	}
	var status []update
	if st, ok := cur["status"]; ok && !sameJSON(logged["status"], st) && !olderStatus(st, logged["status"]) {
		p, err := renderEvent(v, a2a.EventStatusUpdate, map[string]any{"taskId": d.taskID, "contextId": d.contextID, "status": st})
		if err != nil {
			return nil, err
		}
		status = []update{{kind: a2a.EventStatusUpdate, state: state, payload: p}}
	}
	if state.Terminal() || state.Interrupted() {
		return append(arts, status...), nil
	}
	return append(status, arts...), nil
}

// diff renders the artifact updates of one task's reconciliation.
type diff struct {
	v                 a2a.Version
	taskID, contextID any
	// ended: the task is terminal, so its artifacts are complete.
	ended bool
}

// artifact lists the updates that bring logged (nil: not in the log) up
// to the agent's art.
func (d diff) artifact(logged any, art map[string]any) ([]update, error) {
	parts, _ := art["parts"].([]any)
	from := 0
	if old, ok := logged.(map[string]any); ok {
		if sameJSON(old, art) {
			return nil, nil
		}
		oldParts, _ := old["parts"].([]any)
		switch {
		case !sameJSON(withoutParts(old), withoutParts(art)):
			return d.whole(art)
		case prefixOf(parts, oldParts):
			return nil, nil // a read older than the log
		case prefixOf(oldParts, parts):
			from = len(oldParts)
		default:
			return d.whole(art)
		}
	}
	if len(parts) == 0 {
		return d.whole(art)
	}
	out := make([]update, 0, len(parts)-from)
	for i := from; i < len(parts); i++ {
		chunk := withoutParts(art)
		chunk["parts"] = []any{parts[i]}
		p, err := renderEvent(d.v, a2a.EventArtifactUpdate, map[string]any{
			"taskId": d.taskID, "contextId": d.contextID, "artifact": chunk,
			"append": i > 0, "lastChunk": d.ended && i == len(parts)-1,
		})
		if err != nil {
			return nil, err
		}
		id, err := partEventID(d.taskID, art["artifactId"], i, parts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, update{kind: a2a.EventArtifactUpdate, payload: p, id: id})
	}
	return out, nil
}

// whole replaces the logged artifact with art.
func (d diff) whole(art map[string]any) ([]update, error) {
	p, err := renderEvent(d.v, a2a.EventArtifactUpdate, map[string]any{
		"taskId": d.taskID, "contextId": d.contextID, "artifact": art, "append": false, "lastChunk": d.ended,
	})
	if err != nil {
		return nil, err
	}
	return []update{{kind: a2a.EventArtifactUpdate, payload: p}}, nil
}

// partEventID names the artifact update that carries the part at index of
// an artifact: by its place, not its payload, so that a part repeated
// later in the artifact is an event of its own, and its lastChunk flag,
// set once the task ended, does not make the same part a second event.
func partEventID(taskID, artifactID any, index int, part any) (string, error) {
	b, err := json.Marshal([]any{"artifact-part", taskID, artifactID, index, part})
	if err != nil {
		return "", err
	}
	return EventID(b), nil
}

func withoutParts(art map[string]any) map[string]any {
	out := make(map[string]any, len(art))
	for k, v := range art {
		if k != "parts" {
			out[k] = v
		}
	}
	return out
}

// prefixOf reports whether the parts in head begin all.
func prefixOf(head, all []any) bool {
	return len(head) <= len(all) && sameJSON(head, all[:len(head)])
}

// olderStatus reports whether status st carries a timestamp before the
// logged one's: a read older than the log.
func olderStatus(st, logged any) bool {
	at := func(s any) (time.Time, bool) {
		m, _ := s.(map[string]any)
		ts, _ := m["timestamp"].(string)
		t, err := time.Parse(time.RFC3339Nano, ts)
		return t, err == nil
	}
	a, ok1 := at(st)
	b, ok2 := at(logged)
	return ok1 && ok2 && a.Before(b)
}

// renderEvent renders a 1.0 event object of kind as a result of version v.
func renderEvent(v a2a.Version, kind a2a.EventKind, obj map[string]any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return a2a.ConvertEvent(raw, a2a.V10, kind, v)
}

// artifactsByID indexes a snapshot's artifacts by artifactId.
func artifactsByID(list any) map[string]any {
	arts, _ := list.([]any)
	out := make(map[string]any, len(arts))
	for _, a := range arts {
		if art, ok := a.(map[string]any); ok {
			if id, _ := art["artifactId"].(string); id != "" {
				out[id] = art
			}
		}
	}
	return out
}

// sameJSON compares two decoded JSON values; maps encode with sorted keys,
// so equal values encode alike whatever the member order they came in.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func stateOfStatus(status any) a2a.State {
	s, _ := status.(map[string]any)
	name, _ := s["state"].(string)
	return a2a.ParseState(name)
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
