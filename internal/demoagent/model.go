package demoagent

import (
	"context"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The agent keeps one version-neutral model of its tasks and renders it in
// the dialect of whoever asks (render.go), so a task created over 0.3
// JSON-RPC can be read over 1.0 REST.

type role uint8

const (
	roleUser role = iota + 1
	roleAgent
)

// part is a text part, or a structured data part when isData is set. File
// parts are not kept: no scenario reads them.
type part struct {
	text   string
	data   any
	isData bool
}

type message struct {
	id        string
	contextID string
	taskID    string
	role      role
	parts     []part
}

type artifact struct {
	id    string
	name  string
	parts []part
}

type status struct {
	state a2a.State
	msg   *message
	at    time.Time
}

// taskView is an immutable copy of a task, safe to render without the lock.
type taskView struct {
	id        string
	contextID string
	status    status
	// artifacts is nil when the caller asked for none.
	artifacts []artifact
	history   []message
}

type eventKind uint8

const (
	eventStatus eventKind = iota + 1
	eventArtifact
)

// event is one change of a task, fanned out to streams and push configs.
type event struct {
	kind     eventKind
	status   status
	artifact artifact // the chunk just produced, not the accumulated artifact
	append   bool
	last     bool
}

// closesStream reports whether a stream ends after this event: 1.0 closes
// after the terminal or interrupted status, 0.3 marks that event final.
func (e event) closesStream() bool {
	return e.kind == eventStatus && endsStream(e.status.state)
}

func endsStream(s a2a.State) bool { return s.Terminal() || s.Interrupted() }

// resumeInput is what a follow-up message hands to a waiting runner.
type resumeInput struct {
	text       string
	credential string
}

// subscriber is one open stream on a task. Its channel is buffered so the
// runner never waits on a slow client; a client that falls that far behind
// is dropped (its channel closed) and may resubscribe.
type subscriber struct {
	ch chan event
}

const subscriberBuffer = 256

// task is one task. The fields up to resume are fixed at creation; the
// rest are guarded by Agent.mu.
type task struct {
	id        string
	contextID string
	seq       uint64
	origin    dialect
	ctx       context.Context
	cancel    context.CancelFunc
	resume    chan resumeInput

	status      status
	artifacts   []artifact
	history     []message
	subs        map[*subscriber]struct{}
	changed     chan struct{} // closed and replaced on every change
	push        []*pushConfig
	pushQueue   []delivery
	pushRunning bool
	credentials []string
}

// view copies the task. historyLength < 0 means the whole history.
func (t *task) view(historyLength int, withArtifacts bool) taskView {
	v := taskView{id: t.id, contextID: t.contextID, status: t.status}
	if withArtifacts {
		v.artifacts = make([]artifact, len(t.artifacts))
		for i, a := range t.artifacts {
			a.parts = append([]part(nil), a.parts...)
			v.artifacts[i] = a
		}
	}
	h := t.history
	if historyLength >= 0 && len(h) > historyLength {
		h = h[len(h)-historyLength:]
	}
	v.history = append([]message(nil), h...)
	return v
}

// addArtifactChunk merges a chunk into the accumulated artifact of the same id.
func (t *task) addArtifactChunk(chunk artifact, appendParts bool) {
	for i := range t.artifacts {
		if t.artifacts[i].id != chunk.id {
			continue
		}
		if appendParts {
			t.artifacts[i].parts = append(t.artifacts[i].parts, chunk.parts...)
		} else {
			chunk.parts = append([]part(nil), chunk.parts...)
			t.artifacts[i] = chunk
		}
		return
	}
	// Copied so later appends never write into the event's backing array.
	chunk.parts = append([]part(nil), chunk.parts...)
	t.artifacts = append(t.artifacts, chunk)
}
