package proxy

import (
	"errors"
	"io"
	"net/http"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// relayStream relays the agent's stream like Gateway.relayStream: each
// event read, translated and observed before the caller sees it, the
// status line held back until the first event, the same idle limit, drain
// and caller departure ending it. An agent error ends the stream with the
// gateway's error for its code. When the agent ends a stream whose last
// event did not end it in the caller's version (a 1.0 stream ends with the
// task's last state; a 0.3 one with a status update marked final), the
// caller is sent the status update that does (finalEvent).
func (c *bridgeCall) relayStream(w http.ResponseWriter, ans agentAnswer) error {
	s := c.s
	watch := c.g.watchStream(s, ans)
	defer watch.done()
	rc := http.NewResponseController(w)
	started := false
	begin := func() {
		if !started {
			c.caller.start(w)
			started = true
		}
	}
	fail := func(err error) error {
		if !started {
			return err // the error is the answer
		}
		var ae *a2a.Error
		if !errors.As(err, &ae) {
			ae = a2a.ErrInternal
		}
		c.caller.end(w, s, ae)
		_ = rc.Flush()
		return err
	}
	var last streamTail
	for {
		ev, result, keepAlive, err := ans.next()
		if errors.Is(err, io.EOF) {
			s.Log().Debug("stream ended by the agent")
			begin()
			if final := c.finalEvent(last); final != nil {
				_ = c.caller.event(w, s, c.caller.payload(s, final), "")
			}
			c.caller.end(w, s, nil)
			return nil
		}
		if err != nil {
			var uf *upstreamFailure
			if !errors.As(err, &uf) {
				if err = c.g.streamEnd(c.r, s, err, watch.idledOut()); err == nil {
					begin()
					c.caller.end(w, s, nil)
					return nil
				}
			}
			return fail(err)
		}
		if keepAlive {
			if started {
				if c.caller.keepAlive(w) != nil || rc.Flush() != nil {
					return nil
				}
			}
			continue
		}
		watch.sawData()
		if ev.Kind == a2a.EventError {
			ae, err := c.agentError(c.r.Context(), ev.ErrorCode, true)
			switch {
			case err != nil:
				return fail(err)
			case !started:
				started = true
				c.caller.refuse(w, s, ae)
			default:
				c.caller.end(w, s, ae)
			}
			return nil
		}
		payload, id, err := c.translate(c.r.Context(), ev, result, true)
		if err != nil {
			return fail(err)
		}
		begin()
		last.saw(ev, c.to.Version == a2a.V03 && c.from.Version == a2a.V03)
		write := true
		if s.streamGate != nil {
			if write, err = s.streamGate(w, id); err != nil {
				return nil
			}
		}
		if write {
			if err := c.caller.event(w, s, payload, id); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

// streamTail is what a relayed stream said last: the task, its state, and
// whether the last event marked the stream's end in a 0.3 reader's terms.
type streamTail struct {
	taskID, contextID string
	state             a2a.State
	final             bool
}

// saw notes ev, an event of the agent's as the caller got it; kept says
// the agent's own final flag reached the caller (between the 0.3 forms).
func (t *streamTail) saw(ev a2a.Event, kept bool) {
	if ev.TaskID != "" {
		t.taskID, t.contextID = ev.TaskID, ev.ContextID
	}
	if ev.State != a2a.StateUnknown && ev.Kind != a2a.EventArtifactUpdate {
		t.state = ev.State
	}
	// From 1.0, a2a.TranslateResult marks a status update final by its
	// state; between the 0.3 forms the caller got the agent's flag, which
	// may leave a terminal state unmarked.
	final := ev.State.Terminal() || ev.State.Interrupted()
	if kept {
		final = ev.Final
	}
	t.final = ev.Kind == a2a.EventStatusUpdate && final
}

// finalEvent is the result the caller's stream must still end with, nil
// when none: a status update marked final, for a 0.3 caller whose stream
// left its task in a state that ends it without saying so.
func (c *bridgeCall) finalEvent(t streamTail) []byte {
	if c.from.Version != a2a.V03 || t.final || t.taskID == "" || !(t.state.Terminal() || t.state.Interrupted()) {
		return nil
	}
	out, err := a2a.StreamEndEvent(c.s.Op.Method, c.from, t.taskID, t.contextID, t.state)
	if err != nil {
		c.s.Log().Warn("the stream's final status update could not be spelled", "err", err)
		return nil
	}
	return out
}
