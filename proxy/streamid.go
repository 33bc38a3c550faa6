package proxy

import (
	"context"
	"io"

	"github.com/a2a-gateway/a2a-gateway/a2a"
	"github.com/a2a-gateway/a2a-gateway/store"
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

// parsePayload reads one payload as the caller's binding frames it and
// returns the bare result with it. What cannot be read is an EventNone.
func parsePayload(s *Scope, payload []byte) (a2a.Event, []byte) {
	var ev a2a.Event
	var result []byte
	var err error
	if s.Op.Binding == a2a.BindingJSONRPC {
		ev, result, err = a2a.ParseRPCEventResult(payload)
	} else {
		ev, err = a2a.ParseResult(payload)
		result = payload
	}
	if err != nil {
		// What cannot be read cannot be recorded; observers decide whether
		// an unreadable answer may still reach the caller.
		s.Log().Debug("agent payload not recognised", "err", err)
		return a2a.Event{Kind: a2a.EventNone}, result
	}
	return ev, result
}

// observeStream observes one stream event like observe and names it. The
// id is taken from the agent's bytes, as the observers see them, not from
// what a rewriter made of them for the caller; observers read it with
// Scope.StreamEventID instead of computing it again.
func (g *Gateway) observeStream(ctx context.Context, s *Scope, data []byte) (out []byte, id string, err error) {
	// Each event is observed within a store budget of its own.
	ctx = store.RenewBudget(ctx)
	if g.eventID == nil {
		out, err = g.observe(ctx, s, data)
		return out, "", err
	}
	ev, result := parsePayload(s, data)
	id = g.eventID(s, ev, result)
	s.eventID = id
	out, err = g.observeParsed(ctx, s, ev, data)
	s.eventID = ""
	if err != nil {
		return nil, "", err
	}
	return out, id, nil
}

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
