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
// do (upstream_auth_env) and is bounded by the agent's request timeout.
func (g *Gateway) Call(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error) {
	a, ok := g.agents[agent]
	if !ok {
		return nil, fmt.Errorf("call: unknown agent %q", agent)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeouts.Request.D())
	defer cancel()
	if over, err := g.callsOverGRPC(ctx, a); err != nil || over {
		if err != nil {
			return nil, fmt.Errorf("call %s %s: %w", agent, m, err)
		}
		return g.callGRPC(ctx, a, v, m, params)
	}
	body := a2a.RPCRequest(v, m, callID, params)
	u := a.upstreamURL(a.cfg.JSONRPCPath, "")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if v == a2a.V10 {
		req.Header.Set(a2a.VersionHeader, v.String())
	}
	if a.upstreamAuth != "" {
		req.Header.Set("Authorization", a.upstreamAuth)
	}
	resp, err := a.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("call %s %s: %w", agent, m, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCallAnswer))
	if err != nil {
		return nil, fmt.Errorf("call %s %s: %w", agent, m, err)
	}
	ev, res, err := a2a.ReadAnswer(callOp(v, m), raw)
	if err != nil {
		return nil, fmt.Errorf("call %s %s: HTTP %d: %w", agent, m, resp.StatusCode, err)
	}
	if ev.Kind == a2a.EventError {
		return nil, a2a.AgentCallError(ev.ErrorCode, fmt.Sprintf("the agent answered %s with error %d", m, ev.ErrorCode))
	}
	return res, nil
}

// callID is the JSON-RPC id of the gateway's own calls.
var callID = []byte(`"a2a-gateway"`)

// callOp is the operation of one of the gateway's own calls, against which
// the agent's answers are read as strictly as forwarded ones.
func callOp(v a2a.Version, m a2a.Method) *a2a.Operation {
	return &a2a.Operation{Method: m, Version: v, Binding: a2a.BindingJSONRPC, RPCID: callID}
}
