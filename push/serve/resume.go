package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// Resumable streams. Every stream the gateway relays names each event in
// its SSE id field with push.EventID of the event's result, the key the
// push relay's event log keeps it under. A client whose stream dropped
// subscribes again (SubscribeToTask, tasks/resubscribe, REST :subscribe)
// with the last id it received as Last-Event-ID, and is sent:
//
//  1. the events logged after that one, with their ids, in the caller's
//     version and binding (the JSON-RPC envelope carries the request's id);
//     when the last of them ends the task, the stream ends there;
//  2. then the agent's live stream, which starts with a snapshot of the
//     task. Just before its first event, the events logged since step 1
//     (by other streams of the task or the relay's own subscription) are
//     sent too, up to that event; live events whose id was sent already
//     are dropped, and so is everything after a task's end was sent.
//
// An id the log does not hold (never logged, or past the event log's
// retention or length: push.event_log) resumes nothing: the stream is the
// agent's, whose first event is the task as it is now. The same holds
// when the event log cannot be read. Either way the client can re-read the
// task with GetTask.
//
// The log holds each event as the agent sent it; a caller of another
// version gets it converted. An event seen by streams of two versions is
// logged once per version, under two ids.

// replayPage is how many logged events one read of the log returns.
const replayPage = 256

// StreamEventID names each relayed stream event by its event-log key.
func StreamEventID(_ *proxy.Scope, ev a2a.Event, result []byte) string {
	if result == nil || ev.Kind == a2a.EventError || string(result) == "null" {
		return ""
	}
	return push.EventID(result)
}

// ResumeStreams is the stage that serves subscriptions that carry
// Last-Event-ID, after authorization: the caller owns the task, so its log
// may be read.
func (p *Relay) ResumeStreams(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		last := r.Header.Get(a2a.LastEventIDHeader)
		// gRPC streams carry no event ids to resume from.
		if s.Op.Method != a2a.MethodSubscribe || s.Op.TaskID == "" || last == "" || s.Op.Binding == a2a.BindingGRPC {
			return next(w, r, s)
		}
		rs := &resumption{relay: p.relay, s: s, last: last, sent: map[string]bool{}}
		return rs.serve(w, r, next)
	}
}

// resumption is one resumed stream.
type resumption struct {
	relay *push.Relay
	s     *proxy.Scope
	// last is the id of the last logged event the caller has.
	last string
	// sent holds the ids of the events replayed: the live stream must not
	// repeat them.
	sent     map[string]bool
	caughtUp bool
	// ended: an event that ends the task was sent.
	ended bool
}

func (rs *resumption) serve(w http.ResponseWriter, r *http.Request, next proxy.Handler) error {
	ctx, s := r.Context(), rs.s
	page, found, err := rs.read(ctx)
	switch {
	case err != nil:
		s.Log().Warn("stream resume: the event log cannot be read; the stream starts from the task as it is now", "task_id", s.Op.TaskID, "err", err)
		return next(w, r, s)
	case !found:
		s.Log().Info("stream resume: Last-Event-ID is not in the retained event log; the stream starts from the task as it is now", "task_id", s.Op.TaskID)
		return next(w, r, s)
	}
	s.SetStreamGate(func(w io.Writer, id string) (bool, error) { return rs.gate(ctx, w, id) })
	if len(page) == 0 {
		return next(w, r, s)
	}
	h := w.Header()
	h.Set("Content-Type", a2a.SSEContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rs.replay(ctx, w, page, ""); err != nil {
		s.Log().Debug("stream resume: replay ended", "task_id", s.Op.TaskID, "err", err)
		return nil
	}
	if err := http.NewResponseController(w).Flush(); err != nil || rs.ended {
		// The task is over: the agent has no stream left to give.
		return nil
	}
	live := &resumedWriter{w: w, header: http.Header{}}
	s.AddObserver(proxy.ObserverFunc(live.observe))
	s.OnEnd(func(err error) {
		if err == nil && !live.carried() {
			s.Log().Info("stream resume: the agent did not stream the task on; the stream ends after the replayed events", "task_id", s.Op.TaskID)
		}
	})
	return next(live, r, s)
}

// read returns the first page of events logged after rs.last.
func (rs *resumption) read(ctx context.Context) ([]store.LoggedEvent, bool, error) {
	return rs.relay.Replay(ctx, rs.s.Agent.Name, rs.s.Op.TaskID, rs.last, replayPage)
}

// gate runs before each live event: before the first, it sends what was
// logged since the replay, up to that event; then it drops the live events
// the caller was sent already.
func (rs *resumption) gate(ctx context.Context, w io.Writer, id string) (bool, error) {
	if !rs.caughtUp {
		rs.caughtUp = true
		page, found, err := rs.read(ctx)
		if err != nil {
			rs.s.Log().Warn("stream resume: the event log cannot be read; going on live", "task_id", rs.s.Op.TaskID, "err", err)
		} else if found {
			if err := rs.replay(ctx, w, page, id); err != nil {
				return false, err
			}
		}
	}
	return !rs.sent[id] && !rs.ended, nil
}

// replay writes the events of page and of the pages after it, stopping
// before the event stopAt ("" for none).
func (rs *resumption) replay(ctx context.Context, w io.Writer, page []store.LoggedEvent, stopAt string) error {
	for {
		for _, ev := range page {
			if ev.ID == stopAt {
				return nil
			}
			rs.last = ev.ID
			if rs.sent[ev.ID] {
				continue
			}
			rs.sent[ev.ID] = true
			if err := rs.write(w, ev); err != nil {
				return err
			}
		}
		if len(page) < replayPage {
			return nil
		}
		next, found, err := rs.read(ctx)
		if err != nil || !found {
			// The log moved past rs.last while it was read (trimmed to
			// its length): what is left comes live.
			return err
		}
		page = next
	}
}

// write sends one logged event framed for the caller, noting whether it
// ends the task.
func (rs *resumption) write(w io.Writer, ev store.LoggedEvent) error {
	parsed, shape, perr := a2a.ParseResultShape(ev.Payload)
	body := rs.render(ev.Payload, parsed.Kind, shape)
	if rs.s.Op.Binding == a2a.BindingJSONRPC {
		body = a2a.RPCResult(rs.s.Op.RPCID, body)
	}
	if err := a2a.WriteSSE(w, ev.ID, body); err != nil {
		return err
	}
	rs.ended = rs.ended || (perr == nil && parsed.Kind != a2a.EventArtifactUpdate && parsed.State.Terminal())
	return nil
}

// render gives a logged payload the shape the caller's version expects:
// 1.0 a StreamResponse, 0.3 over JSON-RPC a kind-tagged object. Anything
// else (0.3 HTTP+JSON, legacy) is sent as logged. Data lines hold one line
// each, so line breaks between JSON tokens go.
func (rs *resumption) render(payload []byte, kind a2a.EventKind, shape a2a.Version) []byte {
	v := rs.s.Op.Version
	if v == a2a.V10 || (v == a2a.V03 && rs.s.Op.Binding == a2a.BindingJSONRPC) {
		if out, err := a2a.ConvertEvent(payload, shape, kind, v); err == nil {
			payload = out
		}
	}
	if bytes.ContainsAny(payload, "\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, payload) == nil {
			payload = b.Bytes()
		}
	}
	return payload
}

// resumedWriter carries the agent's live stream on after replayed events.
// The status line is out already, so the agent's is dropped; an answer
// that is not a stream, or a stream that opens with an error (the agent
// refused the subscription, answered as a refused stream is), is dropped
// too, and the resumed stream ends cleanly with what was replayed.
//
// The first event with data decides. The proxy shows every event it
// relays to the observers before writing it, so observe hears of it
// first, as the answer reader read it; anything else written before then,
// other than a keep-alive, is an error the gateway wrote in the stream.
type resumedWriter struct {
	w         http.ResponseWriter
	header    http.Header
	streaming bool
	// opened is set once the first event with data was seen; refused when
	// that event was an error.
	opened, refused bool
}

// observe is the resumed request's observer: the first event decides.
func (rw *resumedWriter) observe(_ context.Context, _ *proxy.Scope, ev a2a.Event, _ []byte) error {
	if !rw.opened {
		rw.opened, rw.refused = true, ev.Kind == a2a.EventError
	}
	return nil
}

// carried reports whether the agent's stream was carried on.
func (rw *resumedWriter) carried() bool { return rw.streaming && !rw.refused }

func (rw *resumedWriter) Header() http.Header { return rw.header }

func (rw *resumedWriter) WriteHeader(code int) {
	ct := strings.ToLower(rw.header.Get("Content-Type"))
	rw.streaming = code == http.StatusOK && strings.HasPrefix(ct, a2a.SSEContentType)
}

func (rw *resumedWriter) Write(b []byte) (int, error) {
	if rw.streaming && !rw.opened && !keepAlive(b) {
		rw.opened, rw.refused = true, true
	}
	if !rw.carried() {
		return len(b), nil
	}
	return rw.w.Write(b)
}

// keepAlive reports whether b is a keep-alive comment, which decides
// nothing.
func keepAlive(b []byte) bool {
	ev, err := a2a.NewSSEReader(bytes.NewReader(b), len(b)+1).Next()
	return err == nil && ev.KeepAlive()
}

// Unwrap lets http.ResponseController reach Flush.
func (rw *resumedWriter) Unwrap() http.ResponseWriter { return rw.w }
