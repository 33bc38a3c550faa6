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

	"github.com/a2a-gateway/a2a-gateway/a2a"
	"github.com/a2a-gateway/a2a-gateway/store"
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
// Ordering: each notification is published before it is answered, so an
// agent that sends a task's notifications one after the other, each once
// the previous one was answered (as the SDKs and the demo agent do), has
// them published in that order even when they reach different replicas.
// On one replica, a task's notifications and its holder's reads of the
// task are published one at a time.
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
		ev, err := a2a.ParseResult(body)
		if err != nil || (ev.TaskID != "" && ev.TaskID != ref.TaskID) ||
			(ev.Kind != a2a.EventTask && ev.Kind != a2a.EventStatusUpdate && ev.Kind != a2a.EventArtifactUpdate) {
			s.log.Info("push: inbound notification refused: not an event of its task", "agent", ref.Agent, "task_id", ref.TaskID, "kind", ev.Kind.String())
			http.Error(w, "not an A2A task event of this task", http.StatusBadRequest)
			return
		}
		tv := s.views.lock(ref)
		tv.pushed = time.Now()
		tv.mu.Unlock()
		if _, _, err := s.apply(ctx, ref, payloadVersion(body), ev, body); err != nil {
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
