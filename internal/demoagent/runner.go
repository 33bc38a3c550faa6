package demoagent

import (
	"strconv"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// run drives one task through its scenario. It returns when the task ends,
// is canceled, or the agent closes.
func (a *Agent) run(t *task, sc scenario) {
	defer a.wg.Done()
	defer t.cancel()
	if sc.invalid != "" {
		_ = a.setState(t, a2a.StateWorking) && a.setState(t, a2a.StateFailed, part{text: sc.invalid})
		return
	}
	switch sc.kind {
	case scReject:
		a.setState(t, a2a.StateRejected, part{text: "The demo agent declines this task, as asked."})
	case scFail:
		_ = a.working(t) && a.setState(t, a2a.StateFailed, part{text: "The task failed, as asked."})
	case scWait:
		if a.setState(t, a2a.StateWorking) {
			<-t.ctx.Done()
		}
	case scNever:
		if a.working(t) && a.setState(t, a2a.StateWorking, part{text: "Still working; this task never finishes."}) {
			<-t.ctx.Done()
		}
	case scStream:
		a.chunks(t, sc.count, a.stepDelay)
	case scPush:
		a.chunks(t, sc.count, 4*a.stepDelay)
	case scParts:
		delay := sc.delay
		if delay == 0 {
			delay = a.stepDelay
		}
		a.parts(t, sc.count, delay)
	case scSlow:
		_ = a.setState(t, a2a.StateWorking) && a.sleep(t, sc.delay) && a.complete(t, "echo", sc.text)
	case scInput:
		a.input(t)
	case scAuth:
		a.auth(t)
	case scMessage:
		// Only legacy sends get here: that dialect has no message results.
		_ = a.working(t) && a.setState(t, a2a.StateCompleted, part{text: "Hello from the demo agent. You said: " + sc.text})
	default:
		_ = a.working(t) && a.complete(t, "echo", sc.text)
	}
}

// working moves the task to working and pauses one step.
func (a *Agent) working(t *task) bool {
	return a.setState(t, a2a.StateWorking) && a.sleep(t, a.stepDelay)
}

func (a *Agent) complete(t *task, name, text string) bool {
	art := artifact{id: newID(), name: name, parts: []part{{text: text}}}
	return a.addArtifact(t, art, false, true) && a.setState(t, a2a.StateCompleted)
}

func (a *Agent) chunks(t *task, n int, delay time.Duration) {
	if !a.setState(t, a2a.StateWorking) {
		return
	}
	id := newID()
	for i := 1; i <= n; i++ {
		if !a.sleep(t, delay) {
			return
		}
		chunk := artifact{id: id, name: "stream", parts: []part{{text: "chunk " + strconv.Itoa(i) + " of " + strconv.Itoa(n)}}}
		if !a.addArtifact(t, chunk, i > 1, i == n) {
			return
		}
	}
	_ = a.sleep(t, delay) && a.setState(t, a2a.StateCompleted)
}

// parts produces n whole artifacts with the ids part-1 .. part-n, each
// followed by a working status that says how far the task got, so a
// consumer can count every event and tell which one it missed.
func (a *Agent) parts(t *task, n int, delay time.Duration) {
	if !a.setState(t, a2a.StateWorking) {
		return
	}
	for i := 1; i <= n; i++ {
		if !a.sleep(t, delay) {
			return
		}
		of := strconv.Itoa(i) + " of " + strconv.Itoa(n)
		art := artifact{id: "part-" + strconv.Itoa(i), name: "part", parts: []part{{text: "part " + of}}}
		if !a.addArtifact(t, art, false, true) || !a.setState(t, a2a.StateWorking, part{text: "done " + of}) {
			return
		}
	}
	_ = a.sleep(t, delay) && a.setState(t, a2a.StateCompleted)
}

func (a *Agent) input(t *task) {
	if !a.working(t) || !a.setState(t, a2a.StateInputRequired, part{text: "What is your answer? Reply to this task with it."}) {
		return
	}
	in, ok := a.waitResume(t)
	if !ok {
		return
	}
	_ = a.sleep(t, a.stepDelay) && a.complete(t, "answer", "You answered: "+in.text)
}

// auth asks for a credential until a message brings one. The credential is
// recorded by the request handler and never echoed.
func (a *Agent) auth(t *task) {
	if !a.working(t) {
		return
	}
	for {
		if !a.setState(t, a2a.StateAuthRequired, authRequest()...) {
			return
		}
		in, ok := a.waitResume(t)
		if !ok {
			return
		}
		if in.credential != "" {
			break
		}
		if !a.sleep(t, a.stepDelay) {
			return
		}
	}
	_ = a.sleep(t, a.stepDelay) && a.complete(t, "calendar", "Authorized: the calendar has 3 events today.")
}

func (a *Agent) waitResume(t *task) (resumeInput, bool) {
	select {
	case in := <-t.resume:
		return in, true
	case <-t.ctx.Done():
		return resumeInput{}, false
	}
}

// sleep pauses; false means the task was canceled or the agent closed.
func (a *Agent) sleep(t *task, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// setState moves the task to st with an optional agent message; false
// means the task had already ended (it was canceled meanwhile).
func (a *Agent) setState(t *task, st a2a.State, parts ...part) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.status.state.Terminal() || t.ctx.Err() != nil {
		return false
	}
	s := status{state: st, at: time.Now()}
	if len(parts) > 0 {
		s.msg = t.agentMessage(parts...)
	}
	a.setStatusLocked(t, s)
	return true
}

func (a *Agent) addArtifact(t *task, chunk artifact, appendParts, last bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.status.state.Terminal() || t.ctx.Err() != nil {
		return false
	}
	t.addArtifactChunk(chunk, appendParts)
	a.emitLocked(t, event{kind: eventArtifact, artifact: chunk, append: appendParts, last: last})
	return true
}

func (t *task) agentMessage(parts ...part) *message {
	return &message{id: newID(), contextID: t.contextID, taskID: t.id, role: roleAgent, parts: parts}
}

func (a *Agent) setStatusLocked(t *task, s status) {
	t.status = s
	if s.msg != nil {
		t.history = append(t.history, *s.msg)
	}
	a.log.Debug("task state", "task", t.id, "state", s.state.String())
	a.emitLocked(t, event{kind: eventStatus, status: s})
}

// emitLocked fans one change out to streams, blocking waiters and push
// configs. It never blocks: a stream that cannot keep up is dropped.
func (a *Agent) emitLocked(t *task, ev event) {
	for s := range t.subs {
		select {
		case s.ch <- ev:
		default:
			close(s.ch)
			delete(t.subs, s)
			a.log.Warn("stream dropped: client too slow", "task", t.id)
		}
	}
	close(t.changed)
	t.changed = make(chan struct{})
	a.enqueuePushLocked(t, ev)
}
