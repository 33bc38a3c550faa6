package proxy

import (
	"context"
	"fmt"
	"io"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// StreamEventID names one event of a relayed stream for its SSE id field,
// which a caller that reconnects sends back as Last-Event-ID. ev is the
// event as read; result is the bare result object (the payload without its
// JSON-RPC envelope; nil for an error response). An empty id leaves the
// event without one.
type StreamEventID func(s *Scope, ev a2a.Event, result []byte) string

// StreamGate sees the id of each relayed stream event just before the event
// is written, after the status line: it may write events of its own to w
// first (a resumed stream catching up) and reports whether the event itself
// is written. A write error ends the stream.
type StreamGate func(w io.Writer, id string) (write bool, err error)

// SetStreamGate installs g for this request's stream.
func (s *Scope) SetStreamGate(g StreamGate) { s.streamGate = g }

// parsePayload reads one payload as strictly as the request was read (see
// a2a.ReadAnswer) and returns the bare result with it. What cannot be read
// unambiguously never reaches the caller: it is INVALID_AGENT_RESPONSE.
func parsePayload(s *Scope, payload []byte) (a2a.Event, []byte, error) {
	ev, result, err := a2a.ReadAnswer(s.Op, payload)
	if err != nil {
		return a2a.Event{}, nil, &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return ev, result, nil
}

// observeStream reads one stream event, observes it like observeParsed
// and names it. The id is taken from the agent's bytes, as the observers
// see them, not from what a rewriter made of them for the caller; observers
// read it with Scope.StreamEventID instead of computing it again.
func (g *Gateway) observeStream(ctx context.Context, s *Scope, data []byte) (out []byte, id string, err error) {
	ev, result, err := parsePayload(s, data)
	if err != nil {
		return nil, "", err
	}
	if out, id, err = g.observeEvent(ctx, s, ev, data, result); err != nil {
		return nil, "", err
	}
	if ev.Kind == a2a.EventError {
		out = a2a.AgentError(ev.ErrorCode).RPCErrorBody(s.Op.Version, s.Op.RPCID)
	}
	return out, id, nil
}

// observeEvent names one parsed stream event and observes it.
func (g *Gateway) observeEvent(ctx context.Context, s *Scope, ev a2a.Event, payload, result []byte) (out []byte, id string, err error) {
	if g.eventID != nil {
		id = g.eventID(s, ev, result)
	}
	s.eventID = id
	out, err = g.observeParsed(ctx, s, ev, payload, result)
	s.eventID = ""
	return out, id, err
}

// Result is the answer or stream event being observed without its
// JSON-RPC envelope: the payload itself on HTTP+JSON; nil outside an
// observation.
func (s *Scope) Result() []byte { return s.result }

// StreamEventID is the id of the stream event being observed, as the
// gateway's StreamEventID hook named it; empty outside a stream event's
// observation or when the event has none.
func (s *Scope) StreamEventID() string { return s.eventID }

// writeEvent writes one relayed event, with id as its only id field when
// there is one.
func writeEvent(w io.Writer, s *Scope, raw []byte, id string) error {
	if id == "" {
		_, err := w.Write(raw)
		return err
	}
	err := a2a.WriteSSEWithID(w, raw, id)
	if err == a2a.ErrSSEID {
		// Nothing was written: the event goes out as received rather
		// than with a forged field.
		s.Log().Warn("stream event id unusable; event relayed without it")
		_, err = w.Write(raw)
	}
	return err
}
