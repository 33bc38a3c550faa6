package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// maxCallAnswer bounds an answer to a call the gateway makes itself.
const maxCallAnswer = 4 << 20

// Call sends one JSON-RPC request of the gateway's own (the watchdog's
// cancel, a re-read before acting) to the named agent, in protocol version
// v, and returns the JSON-RPC result, or the agent's error as an *a2a.Error
// carrying its code. It authenticates to the agent like forwarded requests
// do (upstream_auth_env) and is bounded by the agent's request timeout. A
// bridged agent is called in its own form (bridge_call.go), and its answer
// comes back as v's JSON-RPC result all the same.
func (g *Gateway) Call(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error) {
	a, ok := g.agents[agent]
	if !ok {
		return nil, fmt.Errorf("call: unknown agent %q", agent)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeouts.Request.D())
	defer cancel()
	if to, bridged := a.ownCallForm(v); bridged {
		c, err := newOwnCall(v, m, params, to)
		if err != nil {
			return nil, fmt.Errorf("call %s %s: %w", agent, m, err)
		}
		_, res, err := g.callBridged(ctx, a, c)
		return res, err
	}
	if over, err := g.callsOverGRPC(ctx, a); err != nil || over {
		if err != nil {
			return nil, fmt.Errorf("call %s %s: %w", agent, m, err)
		}
		msg, err := encodeCall(v, m, params)
		if err != nil {
			return nil, fmt.Errorf("call %s %s: %w", agent, m, err)
		}
		return g.callGRPC(ctx, a, v, m, msg)
	}
	req, err := a.rpcCallRequest(ctx, v, a2a.RPCRequest(v, m, callID, params), false)
	if err != nil {
		return nil, err
	}
	_, res, err := g.callHTTP(a, req, callOp(v, m))
	return res, err
}

// rpcCallRequest is a JSON-RPC request of the gateway's own to a, of
// version v; stream asks for an event stream.
func (a *Agent) rpcCallRequest(ctx context.Context, v a2a.Version, body []byte, stream bool) (*http.Request, error) {
	return a.callRequest(ctx, v, http.MethodPost, a.upstreamURL(a.cfg.JSONRPCPath, "").String(), body, stream)
}

// callRequest is a request of the gateway's own to a in version v: body
// (nil for none), the version header of 1.0, the agent's credentials.
func (a *Agent) callRequest(ctx context.Context, v a2a.Version, method, url string, body []byte, stream bool) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if stream {
		req.Header.Set("Accept", a2a.SSEContentType)
	}
	if v == a2a.V10 {
		req.Header.Set(a2a.VersionHeader, v.String())
	}
	if a.upstreamAuth != "" {
		req.Header.Set("Authorization", a.upstreamAuth)
	}
	return req, nil
}

// callHTTP sends one unary call of the gateway's own and reads the answer
// to op (JSON-RPC or HTTP+JSON) as strictly as a forwarded one: the event
// and the bare result, or the agent's error with its code.
func (g *Gateway) callHTTP(a *Agent, req *http.Request, op *a2a.Operation) (a2a.Event, []byte, error) {
	resp, err := a.transport.RoundTrip(req)
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("call %s %s: %w", a.Name, op.Method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCallAnswer))
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("call %s %s: %w", a.Name, op.Method, err)
	}
	var ev a2a.Event
	var res []byte
	if op.Binding == a2a.BindingREST && resp.StatusCode >= 300 {
		ev, err = a2a.ReadRESTError(op.Version, raw)
	} else {
		ev, res, err = a2a.ReadAnswer(op, raw)
	}
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("call %s %s: HTTP %d: %w", a.Name, op.Method, resp.StatusCode, err)
	}
	if ev.Kind == a2a.EventError {
		return a2a.Event{}, nil, a2a.AgentCallError(ev.ErrorCode, fmt.Sprintf("the agent answered %s with error %d", op.Method, ev.ErrorCode))
	}
	return ev, res, nil
}

// callID is the JSON-RPC id of the gateway's own calls.
var callID = []byte(`"a2a-gateway"`)

// callOp is the operation of one of the gateway's own calls, against which
// the agent's answers are read as strictly as forwarded ones.
func callOp(v a2a.Version, m a2a.Method) *a2a.Operation {
	return &a2a.Operation{Method: m, Version: v, Binding: a2a.BindingJSONRPC, RPCID: callID}
}
