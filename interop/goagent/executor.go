package goagent

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

const maxChunks = 20

// executor runs the scenario the first word of the user's text names; the
// JavaScript agent (interop/js/lib/executor.mjs) implements the same words.
type executor struct {
	st *state
}

var _ a2asrv.AgentExecutor = (*executor)(nil)

// emitter writes one execution's events.
type emitter struct {
	ctx context.Context
	q   eventqueue.Queue
	rc  *a2asrv.RequestContext
}

func (e emitter) write(ev a2a.Event) error {
	if err := e.q.Write(e.ctx, ev); err != nil {
		return fmt.Errorf("write %T: %w", ev, err)
	}
	return nil
}

func (e emitter) status(state a2a.TaskState, text string) error {
	var msg *a2a.Message
	if text != "" {
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, e.rc, a2a.TextPart{Text: text})
	}
	ev := a2a.NewStatusUpdateEvent(e.rc, state, msg)
	// 0.3 ends a stream with the final flag on the last status event; an
	// interrupted state ends this execution too.
	ev.Final = state.Terminal() || state == a2a.TaskStateInputRequired
	return e.write(ev)
}

func (e emitter) artifact(text string) error {
	return e.write(a2a.NewArtifactEvent(e.rc, a2a.TextPart{Text: text}))
}

// seq writes events in order and stops at the first failure.
func seq(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	for _, p := range m.Parts {
		if t, ok := p.(a2a.TextPart); ok {
			return strings.TrimSpace(t.Text)
		}
	}
	return ""
}

func (x *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if rc.Message != nil {
		x.st.countExecution(rc.Message.ID)
	}
	words := strings.Fields(textOf(rc.Message))
	e := emitter{ctx: ctx, q: q, rc: rc}
	working := func() error { return e.status(a2a.TaskStateWorking, "") }
	completed := func() error { return e.status(a2a.TaskStateCompleted, "") }

	if rc.StoredTask != nil && rc.StoredTask.Status.State == a2a.TaskStateInputRequired {
		if len(words) > 0 && words[0] == "stream" {
			return x.stream(e, words)
		}
		return seq(working, func() error { return e.artifact("resumed: " + strings.Join(words, " ")) }, completed)
	}
	if err := e.write(a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
		return err
	}
	first := ""
	if len(words) > 0 {
		first = words[0]
	}
	switch first {
	case "input":
		return e.status(a2a.TaskStateInputRequired, "need more input")
	case "stream":
		return x.stream(e, words)
	case "hold":
		return x.hold(e)
	default:
		echo := "echo: " + strings.Join(words[min(1, len(words)):], " ")
		return seq(working, func() error { return e.artifact(echo) }, completed)
	}
}

// stream sends N chunks of one artifact between "working" and "completed".
func (x *executor) stream(e emitter, words []string) error {
	n := 1
	if len(words) > 1 {
		if v, err := strconv.Atoi(words[1]); err == nil {
			n = min(max(v, 1), maxChunks)
		}
	}
	if err := e.status(a2a.TaskStateWorking, ""); err != nil {
		return err
	}
	var id a2a.ArtifactID
	for i := 1; i <= n; i++ {
		part := a2a.TextPart{Text: fmt.Sprintf("chunk %d", i)}
		var ev *a2a.TaskArtifactUpdateEvent
		if i == 1 {
			ev = a2a.NewArtifactEvent(e.rc, part)
			id = ev.Artifact.ID
		} else {
			ev = a2a.NewArtifactUpdateEvent(e.rc, id, part)
		}
		ev.LastChunk = i == n
		if err := e.write(ev); err != nil {
			return err
		}
	}
	return e.status(a2a.TaskStateCompleted, "")
}

// hold works until a case releases the task through the probe, or cancels it.
func (x *executor) hold(e emitter) error {
	// Registered before "working" is written: a client that has seen
	// "working" can always release the task.
	done := x.st.hold(e.rc.TaskID)
	if err := e.status(a2a.TaskStateWorking, ""); err != nil {
		return err
	}
	select {
	case o := <-done:
		if o == canceled {
			return nil // Cancel writes the canceled status
		}
		return seq(func() error { return e.artifact("released") }, func() error { return e.status(a2a.TaskStateCompleted, "") })
	case <-e.ctx.Done():
		return nil // the execution was canceled
	}
}

func (x *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	x.st.settle(rc.TaskID, canceled)
	return emitter{ctx: ctx, q: q, rc: rc}.status(a2a.TaskStateCanceled, "canceled")
}
