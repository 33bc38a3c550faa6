package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// ErrStreamEnded means the agent closed a stream the gateway opened itself
// before its task reached a final event, or the stream broke.
var ErrStreamEnded = errors.New("the agent's stream ended")

// CallStream opens an event stream of the gateway's own at the named agent
// (SubscribeToTask / tasks/resubscribe for the push relay) and calls yield
// with each event's JSON-RPC result as it arrives; an error from yield ends
// the stream and is returned. It returns nil when the agent ends the
// stream cleanly, and an error wrapping ErrStreamEnded when it breaks. An
// agent that answers with a JSON-RPC error instead of a stream gets its
// error back as an *a2a.Error carrying its code. Like Call, it
// authenticates as forwarded requests do; the agent must start the stream
// within its request timeout, and a stream without an event carrying data
// (comments do not count) for stream_idle ends. A bridged agent is called
// in its own form, its events handed over in v's JSON-RPC form.
func (g *Gateway) CallStream(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any, yield func(ev a2a.Event, result []byte) error) error {
	a, ok := g.agents[agent]
	if !ok {
		return fmt.Errorf("call stream: unknown agent %q", agent)
	}
	if to, bridged := a.ownCallForm(v); bridged {
		c, err := newOwnCall(v, m, params, to)
		if err != nil {
			return fmt.Errorf("call stream %s %s: %w", agent, m, err)
		}
		return g.callStreamBridged(ctx, a, c, yield)
	}
	if over, err := g.callsOverGRPC(ctx, a); err != nil || over {
		if err != nil {
			return fmt.Errorf("call stream %s %s: %w", agent, m, err)
		}
		msg, err := encodeCall(v, m, params)
		if err != nil {
			return fmt.Errorf("call stream %s %s: %w", agent, m, err)
		}
		return g.callStreamGRPC(ctx, a, v, m, msg, yield)
	}
	req, err := a.rpcCallRequest(context.Background(), v, a2a.RPCRequest(v, m, callID, params), true)
	if err != nil {
		return err
	}
	return g.callStreamHTTP(ctx, a, req, callOp(v, m), yield)
}

// callStreamHTTP sends req, a streaming call of the gateway's own, within
// ctx and the agent's bounds, and hands each event, read as an answer to
// op (JSON-RPC or HTTP+JSON), to yield.
func (g *Gateway) callStreamHTTP(ctx context.Context, a *Agent, req *http.Request, op *a2a.Operation, yield func(ev a2a.Event, result []byte) error) error {
	m := op.Method
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wait := a.cfg.Timeouts.Request.D()
	idle := a.cfg.Timeouts.StreamIdle.D()
	if idle > 0 {
		wait = min(wait, idle)
	}
	late := time.AfterFunc(wait, func() { cancel(context.DeadlineExceeded) })
	resp, err := a.streams.RoundTrip(req.WithContext(ctx))
	if !late.Stop() && err == nil {
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		return fmt.Errorf("call stream %s %s: %w", a.Name, m, err)
	}
	defer resp.Body.Close()
	if !isEventStream(resp.Header) {
		return answerError(a.Name, op, resp)
	}
	var timer *time.Timer
	if idle > 0 {
		timer = time.AfterFunc(idle, func() { cancel(context.DeadlineExceeded) })
		defer timer.Stop()
	}
	rd := a2a.NewSSEReader(resp.Body, g.limits.MaxEventBytes)
	for {
		sse, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			return fmt.Errorf("%w: %s %s: %w", ErrStreamEnded, a.Name, m, err)
		}
		if sse.KeepAlive() {
			continue // proves the connection, not the stream, alive
		}
		if timer != nil {
			timer.Reset(idle)
		}
		var ev a2a.Event
		var res []byte
		if op.Binding == a2a.BindingREST && sse.Event == "error" {
			// The HTTP+JSON binding ends a failing stream with its error body.
			ev, err = a2a.ReadRESTError(op.Version, sse.Data)
		} else {
			ev, res, err = a2a.ReadAnswer(op, sse.Data)
		}
		if err != nil {
			return fmt.Errorf("%w: %s %s: an event is not an A2A result: %w", ErrStreamEnded, a.Name, m, err)
		}
		if ev.Kind == a2a.EventError {
			return a2a.AgentCallError(ev.ErrorCode, fmt.Sprintf("the agent ended %s with error %d", m, ev.ErrorCode))
		}
		if err := yield(ev, res); err != nil {
			return err
		}
	}
}

// answerError reads a JSON answer where a stream was expected: the agent's
// error in op's binding, or a description of what came instead.
func answerError(agent string, op *a2a.Operation, resp *http.Response) error {
	m := op.Method
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCallAnswer))
	if err != nil {
		return fmt.Errorf("call stream %s %s: %w", agent, m, err)
	}
	var code int
	if op.Binding == a2a.BindingREST {
		ev, err := a2a.ReadRESTError(op.Version, raw)
		if err != nil || resp.StatusCode < 300 {
			return fmt.Errorf("call stream %s %s: HTTP %d, not an event stream", agent, m, resp.StatusCode)
		}
		code = ev.ErrorCode
	} else {
		res, c, err := a2a.UnwrapRPC(raw)
		if err != nil || res != nil {
			return fmt.Errorf("call stream %s %s: HTTP %d, not an event stream", agent, m, resp.StatusCode)
		}
		code = c
	}
	return a2a.AgentCallError(code, fmt.Sprintf("the agent answered %s with error %d", m, code))
}
