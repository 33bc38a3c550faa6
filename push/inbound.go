package push

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// InboundPath is where the gateway's native webhook is mounted on the
// public listener: agents that push notifications themselves POST each
// task's to InboundPath + "<agent>/<task id>" (both path-escaped).
const InboundPath = "/push/inbound/"

// inboundTimeout bounds the store work of one inbound notification; it
// does not end with the agent's request, so a notification half published
// when the agent gives up is published whole.
const inboundTimeout = 10 * time.Second

// Inbound is the handler of the native webhook. It takes a notification
// only with the secret registered for its task (X-A2A-Notification-Token,
// compared in constant time with the stored digest); an unknown agent or
// task and a wrong secret get the same 401, so the answer does not tell
// which task ids exist. A body over maxBody bytes gets 413. The body is a
// 0.3 Task, which is reconciled with the task's event log, or a 1.0
// StreamResponse, whose status or artifact update is applied to the
// task's lifecycle and published. The answer, 204, comes once the event
// is in the durable queue; a store failure answers 503, so the agent
// sends the notification again, and the task's holder on this replica
// reads the task soon, in case it does not.
//
// Ordering: a push says that the task changed, but not where the change
// falls among what the log holds: the agent may have pushed it before or
// after the holder's last read of the task, which shows it already, and an
// appended chunk carries no position. Publishing it as it is could repeat
// a chunk or put it before the ones it follows. So a status or artifact
// update is answered with a read of the task (GetTask), sent after the push
// arrived, and reconciled with the event log, which publishes only what
// the log misses, in the agent's order (reconcile.go); a push that arrived
// while a read was under way waits for the next, which serves every push
// that waited for it. A status the read would fold away, one newer than
// the logged status and not terminal, is published as it is once this
// replica has read the task (takeStatus). A pushed Task (0.3 agents push the whole task) is
// reconciled as it is. At most maxInboundWaiting pushes of a task wait on
// one replica; more are answered 503, and the agent sends them again. A
// push of a task a client's stream publishes (live.go) is answered
// without a read: the stream carries the same events.
//
// Each notification is published before it is answered, so an agent that
// sends a task's notifications one after the other, each once the
// previous one was answered (as the SDKs and the demo agent do), has them
// published in that order even when they reach different replicas.
func (s *Subscriber) Inbound(maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "notifications are POSTed", http.StatusMethodNotAllowed)
			return
		}
		ref, ok := s.inboundTask(r.URL.EscapedPath())
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), inboundTimeout)
		defer cancel()
		if ok {
			var err error
			if ok, err = s.verifyInbound(ctx, ref, r.Header.Get(a2a.NotificationTokenHeader)); err != nil {
				s.log.Warn("push: inbound notification not checked: the store did not answer", "agent", ref.Agent, "task_id", ref.TaskID, "error", err)
				// The agent may not send it again: if this replica
				// follows the task, it reads it soon instead.
				s.nudge(ref)
				http.Error(w, "try again later", http.StatusServiceUnavailable)
				return
			}
		}
		if !ok {
			http.Error(w, "unknown task or wrong notification token", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "notification too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "notification body unreadable", http.StatusBadRequest)
			return
		}
		ev, v, err := a2a.ParseResultShape(body)
		if err != nil || (ev.TaskID != "" && ev.TaskID != ref.TaskID) ||
			(ev.Kind != a2a.EventTask && ev.Kind != a2a.EventStatusUpdate && ev.Kind != a2a.EventArtifactUpdate) {
			s.log.Info("push: inbound notification refused: not an event of its task", "agent", ref.Agent, "task_id", ref.TaskID, "kind", ev.Kind.String())
			http.Error(w, "not an A2A task event of this task", http.StatusBadRequest)
			return
		}
		arrived := time.Now()
		// Counted before anything can wait on the task's view: the bound
		// on waiting pushes holds while a read of the task is under way.
		if !s.await(ref) {
			s.log.Warn("push: inbound notification refused: too many of the task's pushes wait for a read", "agent", ref.Agent, "task_id", ref.TaskID, "max_waiting", maxInboundWaiting)
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		defer s.awaited(ref)
		s.views.view(ref).pushed.Store(arrived.UnixNano())
		if err := s.take(ctx, ref, ev, v, body, arrived); err != nil {
			s.log.Warn("push: inbound notification not published", "agent", ref.Agent, "task_id", ref.TaskID, "error", err)
			s.nudge(ref)
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// inboundTask reads the task a webhook path names; false for a path that
// names no task of a configured agent.
func (s *Subscriber) inboundTask(escaped string) (store.TaskRef, bool) {
	rest, ok := strings.CutPrefix(escaped, InboundPath)
	if !ok {
		return store.TaskRef{}, false
	}
	a, t, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(t, "/") {
		return store.TaskRef{}, false
	}
	agent, err1 := url.PathUnescape(a)
	task, err2 := url.PathUnescape(t)
	if err1 != nil || err2 != nil || task == "" || len(task) > store.MaxNameBytes {
		return store.TaskRef{}, false
	}
	if _, ok := s.agents[agent]; !ok {
		return store.TaskRef{}, false
	}
	return store.TaskRef{Agent: agent, TaskID: task}, true
}

// verifyInbound reports whether token is the secret registered for the
// task. The digests are compared in constant time, and a task without a
// secret is compared against a digest no token has, so both take the same
// steps.
func (s *Subscriber) verifyInbound(ctx context.Context, ref store.TaskRef, token string) (bool, error) {
	src, found, err := s.o.Sources.Get(ctx, ref.Agent, ref.TaskID)
	if err != nil {
		return false, err
	}
	want := src.SecretHash
	if !found || len(want) != sha256.Size {
		want = make([]byte, sha256.Size)
		found = false
	}
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], want) == 1 && found && token != "", nil
}

// maxInboundWaiting bounds the pushes of one task that wait on a replica
// for a read of the task; an agent that pushes one at a time has one.
const maxInboundWaiting = 8

// await counts a push of ref that waits for a read; false when
// maxInboundWaiting wait already.
func (s *Subscriber) await(ref store.TaskRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[ref] >= maxInboundWaiting {
		return false
	}
	s.waiting[ref]++
	return true
}

func (s *Subscriber) awaited(ref store.TaskRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[ref]--; s.waiting[ref] <= 0 {
		delete(s.waiting, ref)
	}
}

// take publishes what a push that arrived at arrived brings (see
// Inbound): ev read from body, in the shape of version shape.
func (s *Subscriber) take(ctx context.Context, ref store.TaskRef, ev a2a.Event, shape a2a.Version, body []byte, arrived time.Time) error {
	if left, err := s.o.Relay.Live(ctx, ref.Agent, ref.TaskID); err == nil && left > 0 {
		return nil
	}
	if ev.Kind == a2a.EventTask {
		_, _, err := s.apply(ctx, ref, shape, ev, body)
		return err
	}
	if ev.Kind == a2a.EventStatusUpdate {
		if done, err := s.takeStatus(ctx, ref, ev, shape, body); done || err != nil {
			return err
		}
	}
	configs, err := s.o.Configs.List(ctx, ref.Agent, ref.TaskID)
	if err != nil || len(configs) == 0 {
		// No config left: nobody waits for the task's events.
		return err
	}
	a := s.agents[ref.Agent]
	v := a.askIn(configs[0].Version)
	_, _, err = s.read(ctx, ref, v, taskParams(a, v, configs[0].Tenant, ref.TaskID), arrived)
	return err
}

// takeStatus publishes a pushed status update as it is when it is the
// task's next event: this replica has read the task since it began
// following it, so the log holds what came before the agent's pushes (each
// push is answered only once what it brings is published), and the status
// is newer than the logged one. A read would show where the task is now,
// folding away a status the agent has already left. A terminal status is
// left to the read, which publishes what led to it first. done reports
// that the push was published.
func (s *Subscriber) takeStatus(ctx context.Context, ref store.TaskRef, ev a2a.Event, shape a2a.Version, body []byte) (bool, error) {
	if ev.State.Terminal() {
		return false, nil
	}
	obj, err := a2a.EventObject(body, shape, a2a.EventStatusUpdate)
	if err != nil {
		return false, nil
	}
	tv := s.views.lock(ref)
	defer tv.mu.Unlock()
	if tv.readAt.IsZero() {
		return false, nil
	}
	if err := tv.refresh(ctx, s.o.Relay, ref); err != nil {
		return false, err
	}
	var logged map[string]any
	if tv.snap != nil {
		if err := decodeNumbers(tv.snap, &logged); err != nil {
			return false, err
		}
	}
	if !olderStatus(logged["status"], obj["status"]) {
		return false, nil
	}
	_, _, err = s.applyLocked(ctx, tv, ref, shape, ev, body)
	return err == nil, err
}
