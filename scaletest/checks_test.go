package scaletest

import (
	"sync"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// attack is one operation a caller tries on another tenant's task.
type attack struct {
	name   string
	method a2a.Method
	params func(v task) any
}

// attacks is the tenant matrix's subset per operation: read, cancel,
// subscribe, continue the task, use its context or reference it, and read
// its push configs.
var attacks = []attack{
	{"get", a2a.MethodGetTask, func(v task) any { return map[string]any{"id": v.id} }},
	{"cancel", a2a.MethodCancelTask, func(v task) any { return map[string]any{"id": v.id} }},
	{"subscribe", a2a.MethodSubscribe, func(v task) any { return map[string]any{"id": v.id} }},
	{"send-taskId", a2a.MethodSend, func(v task) any { return sendParams(newID("atk"), "answer", v.id, v.contextID) }},
	{"send-contextId", a2a.MethodSend, func(v task) any { return sendParams(newID("atk"), "complete", "", v.contextID) }},
	{"send-referenceTaskIds", a2a.MethodSend, func(v task) any {
		p := sendParams(newID("atk"), "complete", "", "")
		p["message"].(map[string]any)["referenceTaskIds"] = []string{v.id}
		return p
	}},
	{"push-config-get", a2a.MethodPushConfigGet, func(v task) any { return map[string]any{"taskId": v.id, "id": "cfg-1"} }},
	{"push-config-list", a2a.MethodPushConfigList, func(v task) any { return map[string]any{"taskId": v.id} }},
}

// checkIsolation runs the tenant matrix: through a replica other than the
// one that created each victim task, the attacker gets TaskNotFound for
// every operation, none of which reaches the agent, and ListTasks on every
// replica shows none of the victims; the owner, through yet another
// replica, reads each task.
func (w *world) checkIsolation(t *testing.T, attacker caller, victims []task) {
	t.Helper()
	for _, v := range victims {
		before := w.requestsNaming(v.id)
		via := w.other(v.via, 0)
		for _, a := range attacks {
			if r := w.call(via, attacker, a.method, a.params(v)); !r.is(a2a.ErrTaskNotFound) {
				t.Errorf("LEAK? %s/%s %s on %s's task %s (created via %s) via %s: %s; want TaskNotFound",
					attacker.tenant, attacker.subject, a.name, v.owner.tenant, v.id, v.via.name, via.name, r)
			}
		}
		if after := w.requestsNaming(v.id); after != before {
			t.Errorf("%d of the attacker's requests on task %s reached the agent", after-before, v.id)
		}
		owner := w.other(v.via, 1)
		if r := w.call(owner, v.owner, a2a.MethodGetTask, map[string]any{"id": v.id}); !r.ok() || r.ev.TaskID != v.id {
			t.Errorf("the owner reads task %s (created via %s) via %s: %s", v.id, v.via.name, owner.name, r)
		}
	}
	for _, g := range w.live() {
		listed := w.listIDs(t, g, attacker)
		for _, v := range victims {
			if listed[v.id] {
				t.Errorf("LEAK: ListTasks on %s as %s shows %s's task %s", g.name, attacker.tenant, v.owner.tenant, v.id)
			}
		}
	}
}

// createVictims makes, through every live replica, one task that waits
// for input (so cancel and subscribe apply) and one completed task.
func (w *world) createVictims(t *testing.T, owner caller) []task {
	t.Helper()
	var out []task
	for _, g := range w.live() {
		out = append(out, w.create(t, g, owner, "input"), w.create(t, g, owner, "complete hello"))
	}
	return out
}

// dedupeCase is one message sent by a caller and the task it created.
type dedupeCase struct {
	messageID string
	text      string
	owner     caller
	taskID    string
}

// checkDedupeRetries sends a message through one replica and retries it
// through each of the others: every retry is a replay of the one task,
// and the agent sees the message once.
func (w *world) checkDedupeRetries(t *testing.T, c caller) dedupeCase {
	t.Helper()
	d := dedupeCase{messageID: newID("dd"), text: "complete once", owner: c}
	first := w.next()
	r := w.call(first, c, a2a.MethodSend, sendParams(d.messageID, d.text, "", ""))
	if !r.ok() || r.ev.TaskID == "" {
		t.Fatalf("first send via %s: %s", first.name, r)
	}
	d.taskID = r.ev.TaskID
	w.checkReplay(t, d, first)
	return d
}

// checkReplay retries d through every live replica other than skip.
func (w *world) checkReplay(t *testing.T, d dedupeCase, skip *gateway) {
	t.Helper()
	for _, g := range w.live() {
		if g == skip {
			continue
		}
		r := w.call(g, d.owner, a2a.MethodSend, sendParams(d.messageID, d.text, "", ""))
		if !r.ok() || !r.replayed || r.ev.TaskID != d.taskID {
			t.Errorf("retry of %s via %s: %s (replayed %v); want a replay of task %s", d.messageID, g.name, r, r.replayed, d.taskID)
		}
	}
	if n := w.sendsReaching(d.messageID); n != 1 {
		t.Errorf("message %s reached the agent %d times; want once", d.messageID, n)
	}
}

// checkConcurrentRetries sends one slow message through every live
// replica at once, twice each: the agent sees it once, and every caller
// that gets a task gets the same one (the others wait, then are told the
// first is still in progress).
func (w *world) checkConcurrentRetries(t *testing.T, c caller) {
	t.Helper()
	id, text := newID("cc"), "slow 1s"
	var mu sync.Mutex
	tasks := map[string]int{}
	var wg sync.WaitGroup
	for _, g := range w.live() {
		for range 2 {
			wg.Go(func() {
				r := w.call(g, c, a2a.MethodSend, sendParams(id, text, "", ""))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case r.ok() && r.ev.TaskID != "":
					tasks[r.ev.TaskID]++
				case r.is(a2a.ErrInProgress):
				default:
					t.Errorf("concurrent send of %s via %s: %s", id, g.name, r)
				}
			})
		}
	}
	wg.Wait()
	if len(tasks) != 1 {
		t.Errorf("concurrent sends of %s created tasks %v; want exactly one", id, tasks)
	}
	if n := w.sendsReaching(id); n != 1 {
		t.Errorf("message %s, sent concurrently through every replica, reached the agent %d times; want once", id, n)
	}
}
