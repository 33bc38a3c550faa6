package proxy

import (
	"bytes"
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
// (comments do not count) for stream_idle ends.
func (g *Gateway) CallStream(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any, yield func(ev a2a.Event, result []byte) error) error {
	a, ok := g.agents[agent]
	if !ok {
		return fmt.Errorf("call stream: unknown agent %q", agent)
	}
	if over, err := g.callsOverGRPC(ctx, a); err != nil || over {
		if err != nil {
			return fmt.Errorf("call stream %s %s: %w", agent, m, err)
		}
		return g.callStreamGRPC(ctx, a, v, m, params, yield)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wait := a.cfg.Timeouts.Request.D()
	idle := a.cfg.Timeouts.StreamIdle.D()
	if idle > 0 {
		wait = min(wait, idle)
	}
	late := time.AfterFunc(wait, func() { cancel(context.DeadlineExceeded) })
	body := a2a.RPCRequest(v, m, callID, params)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.upstreamURL(a.cfg.JSONRPCPath, "").String(), bytes.NewReader(body))
	if err != nil {
		late.Stop()
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", a2a.SSEContentType)
	if v == a2a.V10 {
		req.Header.Set(a2a.VersionHeader, v.String())
	}
	if a.upstreamAuth != "" {
		req.Header.Set("Authorization", a.upstreamAuth)
	}
	resp, err := a.streams.RoundTrip(req)
	if !late.Stop() && err == nil {
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		return fmt.Errorf("call stream %s %s: %w", agent, m, err)
	}
	defer resp.Body.Close()
	if !isEventStream(resp.Header) {
		return answerError(agent, m, resp)
	}
	var timer *time.Timer
	if idle > 0 {
		timer = time.AfterFunc(idle, func() { cancel(context.DeadlineExceeded) })
		defer timer.Stop()
	}
	rd := a2a.NewSSEReader(resp.Body, g.limits.MaxEventBytes)
	op := callOp(v, m)
	for {
		sse, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			return fmt.Errorf("%w: %s %s: %w", ErrStreamEnded, agent, m, err)
		}
		if sse.KeepAlive() {
			continue // proves the connection, not the stream, alive
		}
		if timer != nil {
			timer.Reset(idle)
		}
		ev, res, err := a2a.ReadAnswer(op, sse.Data)
		if err != nil {
			return fmt.Errorf("%w: %s %s: an event is not an A2A result: %w", ErrStreamEnded, agent, m, err)
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
// JSON-RPC error, or a description of what came instead.
func answerError(agent string, m a2a.Method, resp *http.Response) error {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCallAnswer))
	if err != nil {
		return fmt.Errorf("call stream %s %s: %w", agent, m, err)
	}
	res, code, err := a2a.UnwrapRPC(raw)
	if err != nil || res != nil {
		return fmt.Errorf("call stream %s %s: HTTP %d, not an event stream", agent, m, resp.StatusCode)
	}
	return a2a.AgentCallError(code, fmt.Sprintf("the agent answered %s with error %d", m, code))
}
