package lifecycle

import (
	"context"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// maxStreamTasks bounds the tasks one stream counts as subscribed to; a
// stream is about one task, so more is an agent misbehaving.
const maxStreamTasks = 8

var _ proxy.Observer = (*Tracker)(nil)

// Observe queues every answer and stream event that names a task. It never
// withholds an answer: a lost lifecycle event is counted and logged, and
// the caller still gets what the agent said.
func (t *Tracker) Observe(ctx context.Context, s *proxy.Scope, ev a2a.Event, _ []byte) error {
	if ev.TaskID == "" || ev.Kind == a2a.EventError || ev.Kind == a2a.EventNone {
		return nil
	}
	te := TaskEvent{
		Agent: s.Agent.Name, TaskID: ev.TaskID, ContextID: ev.ContextID,
		Version: s.Op.Version, State: ev.State, At: time.Now(),
	}
	if p := s.Principal; p != nil {
		te.Tenant, te.Subject = p.Tenant, p.Subject
	}
	switch s.Op.Method {
	case a2a.MethodSend, a2a.MethodStream:
		if s.Op.TaskID == "" {
			te.Opened = s.Start
		}
	case a2a.MethodCancelTask:
		if ev.State == a2a.StateCanceled {
			te.EndedBy = store.EndedByCancel
		}
	}
	_ = t.Record(ctx, te)
	return nil
}

// Guard is the stage that enforces, where the gateway knows a task's
// state, what the protocol promises: a terminal task takes no more
// messages and cannot be canceled, and a message's task and context belong
// together. It reads the record only for requests naming a task (see
// GuardReads), in authorization's round trip where the store allows;
// unknown tasks pass, and so does everything when the store cannot answer,
// because the agent enforces the same rules. It also counts the streams
// open on each task.
func (t *Tracker) Guard() proxy.Stage {
	return func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			if err := t.guard(r.Context(), s); err != nil {
				return err
			}
			if s.Op.Method.Streaming() {
				return t.countSubscriber(w, r, s, next)
			}
			return next(w, r, s)
		}
	}
}

// GuardReads reports whether the guard reads the record of the task op
// names: for a send to a task and for a cancel. Authorization reads it
// along with the task's owner where it can (authz.AuthorizeReading), which
// spares the guard its own round trip.
func GuardReads(op *a2a.Operation) bool {
	// Legacy agents predate the rule that terminal tasks take no messages
	// (and clients choose task ids for new tasks there).
	send := (op.Method == a2a.MethodSend || op.Method == a2a.MethodStream) && op.Version != a2a.VLegacy
	return op.TaskID != "" && (send || op.Method == a2a.MethodCancelTask)
}

func (t *Tracker) guard(ctx context.Context, s *proxy.Scope) error {
	op := s.Op
	if !GuardReads(op) {
		return nil
	}
	rec, found, err := t.record(ctx, s)
	if err != nil {
		s.Log().Warn("lifecycle: task state unknown, the agent decides", "task_id", op.TaskID, "err", err)
		return nil
	}
	if !found {
		return nil
	}
	state := a2a.ParseState(rec.State)
	if op.Method == a2a.MethodCancelTask {
		if state.Terminal() {
			return a2a.ErrTaskNotCancelable.WithMessage("the task is already " + state.String())
		}
		return nil
	}
	if state.Terminal() {
		return a2a.ErrUnsupportedOperation.WithMessage("the task is " + state.String() +
			" and takes no more messages; send a follow-up as a new task in the same context that references this one with referenceTaskIds")
	}
	if op.ContextID != "" && rec.ContextID != "" && op.ContextID != rec.ContextID {
		return a2a.ErrInvalidParams.WithMessage("the message's contextId is not the context of its taskId")
	}
	return nil
}

// recordReader is a grant that may have read the task's record while it
// checked the task's owner (authz's AuthorizeReading does), saving a
// round trip; ok is false when it read none for taskID.
type recordReader interface {
	TaskRecord(taskID string) (rec store.TaskLifecycle, found, ok bool)
}

// record is the guarded task's record: the one authorization read, or
// else read now.
func (t *Tracker) record(ctx context.Context, s *proxy.Scope) (store.TaskLifecycle, bool, error) {
	if g, ok := s.Grant.(recordReader); ok {
		if rec, found, ok := g.TaskRecord(s.Op.TaskID); ok {
			return rec, found, nil
		}
	}
	return t.st.Get(ctx, s.Agent.Name, s.Op.TaskID)
}

// countSubscriber counts the stream as a subscriber of the task it reveals
// for as long as it is open. Best effort: an event lost on a full queue
// leaves the count off until the record is next corrected.
func (t *Tracker) countSubscriber(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler) error {
	var tasks []string
	s.AddObserver(proxy.ObserverFunc(func(ctx context.Context, s *proxy.Scope, ev a2a.Event, _ []byte) error {
		if ev.TaskID == "" || ev.Kind == a2a.EventError || len(tasks) >= maxStreamTasks {
			return nil
		}
		for _, id := range tasks {
			if id == ev.TaskID {
				return nil
			}
		}
		tasks = append(tasks, ev.TaskID)
		_ = t.Record(ctx, TaskEvent{Agent: s.Agent.Name, TaskID: ev.TaskID, subscribers: 1})
		return nil
	}))
	s.OnEnd(func(error) {
		ctx := context.WithoutCancel(r.Context())
		for _, id := range tasks {
			_ = t.Record(ctx, TaskEvent{Agent: s.Agent.Name, TaskID: id, subscribers: -1})
		}
	})
	return next(w, r, s)
}
