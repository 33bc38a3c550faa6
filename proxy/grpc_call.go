package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
)

// callsOverGRPC reports whether the gateway's own calls to a go over gRPC
// (Options.GRPCOnly): a gRPC-only agent has no JSON-RPC to call. A
// bridged agent speaks the one form its bridge names, whatever its card.
func (g *Gateway) callsOverGRPC(ctx context.Context, a *Agent) (bool, error) {
	if a.grpc == nil || g.grpcOnly == nil || a.Bridge != nil {
		return false, nil
	}
	return g.grpcOnly(ctx, a)
}

// encodeCall is the request message of a call of the gateway's own to a
// gRPC agent, built from the JSON-RPC params the call would send over
// JSON-RPC.
func encodeCall(v a2a.Version, m a2a.Method, params any) ([]byte, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return grpcwire.EncodeRequest(v, m, raw)
}

// openGRPCCall sends one call of the gateway's own, the request message
// msg of m in version v, to a's gRPC service, its a2a-version metadata
// saying v (setGRPCVersion). A trailers-only error answer is returned as
// the agent's error, with its code.
func (g *Gateway) openGRPCCall(ctx context.Context, a *Agent, v a2a.Version, m a2a.Method, msg []byte) (*http.Response, error) {
	path, ok := grpcwire.Path(v, m)
	if !ok {
		return nil, fmt.Errorf("no gRPC method for %s in %s", m, v)
	}
	base, err := g.grpcBase(ctx, a)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(grpcwire.AppendMessage(nil, msg)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", grpcwire.ContentType)
	req.Header.Set("Te", "trailers")
	setGRPCVersion(req.Header, v)
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", grpcwire.FormatTimeout(time.Until(dl)))
	}
	if a.upstreamAuth != "" {
		req.Header.Set("Authorization", a.upstreamAuth)
	}
	resp, err := a.grpc.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !isGRPCContentType(resp.Header) {
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %d, not a gRPC answer", resp.StatusCode)
	}
	if resp.Header.Get("Grpc-Status") != "" {
		resp.Body.Close()
		return nil, callStatusError(resp.Header, m)
	}
	return resp, nil
}

// callStatusError is the agent's status as the error of a call of the
// gateway's own, nil for OK.
func callStatusError(h http.Header, m a2a.Method) error {
	code, failed, err := grpcwire.ReadStatus(h)
	switch {
	case err != nil:
		return err
	case failed:
		return a2a.AgentCallError(code, fmt.Sprintf("the agent answered %s with error %d", m, code))
	}
	return nil
}

// callGRPC is Call over gRPC, of the request message request; the result
// is the HTTP+JSON form of the answer, which a2a.ParseResult reads like
// the JSON-RPC result.
func (g *Gateway) callGRPC(ctx context.Context, a *Agent, v a2a.Version, m a2a.Method, request []byte) ([]byte, error) {
	resp, err := g.openGRPCCall(ctx, a, v, m, request)
	if err != nil {
		return nil, fmt.Errorf("call %s %s: %w", a.Name, m, err)
	}
	defer resp.Body.Close()
	msg, err := grpcwire.ReadMessage(resp.Body, maxCallAnswer)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("call %s %s: %w", a.Name, m, err)
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxCallAnswer)); err != nil {
		return nil, fmt.Errorf("call %s %s: %w", a.Name, m, err)
	}
	if err := callStatusError(resp.Trailer, m); err != nil {
		return nil, err
	}
	if msg == nil {
		return nil, fmt.Errorf("call %s %s: the agent ended the call without an answer", a.Name, m)
	}
	_, res, err := grpcwire.ReadAnswer(&a2a.Operation{Method: m, Version: v, Binding: a2a.BindingGRPC}, msg)
	if err != nil {
		return nil, fmt.Errorf("call %s %s: %w", a.Name, m, err)
	}
	return res, nil
}

// callStreamGRPC is CallStream over gRPC, within the same bounds: the
// agent starts the stream within wait, and a stream without a message
// for idle (when set) ends.
func (g *Gateway) callStreamGRPC(ctx context.Context, a *Agent, v a2a.Version, m a2a.Method, request []byte, yield func(ev a2a.Event, result []byte) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wait, idle := a.cfg.Timeouts.Request.D(), a.cfg.Timeouts.StreamIdle.D()
	if idle > 0 {
		wait = min(wait, idle)
	}
	late := time.AfterFunc(wait, func() { cancel(context.DeadlineExceeded) })
	resp, err := g.openGRPCCall(ctx, a, v, m, request)
	if !late.Stop() && err == nil {
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		var ae *a2a.Error
		if errors.As(err, &ae) {
			return ae
		}
		return fmt.Errorf("call stream %s %s: %w", a.Name, m, err)
	}
	defer resp.Body.Close()
	var timer *time.Timer
	if idle > 0 {
		timer = time.AfterFunc(idle, func() { cancel(context.DeadlineExceeded) })
		defer timer.Stop()
	}
	op := &a2a.Operation{Method: m, Version: v, Binding: a2a.BindingGRPC}
	for {
		msg, err := grpcwire.ReadMessage(resp.Body, g.limits.GRPC.MaxAnswerBytes)
		if errors.Is(err, io.EOF) {
			if err := callStatusError(resp.Trailer, m); err != nil {
				var ae *a2a.Error
				if errors.As(err, &ae) {
					return ae
				}
				return fmt.Errorf("%w: %s %s: %w", ErrStreamEnded, a.Name, m, err)
			}
			return nil
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			return fmt.Errorf("%w: %s %s: %w", ErrStreamEnded, a.Name, m, err)
		}
		if timer != nil {
			timer.Reset(idle)
		}
		ev, res, err := grpcwire.ReadAnswer(op, msg)
		if err != nil {
			return fmt.Errorf("%w: %s %s: a message is not an A2A result: %w", ErrStreamEnded, a.Name, m, err)
		}
		if err := yield(ev, res); err != nil {
			return err
		}
	}
}
