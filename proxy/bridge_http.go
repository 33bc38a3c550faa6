package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The HTTP sides of the bridge: JSON-RPC and HTTP+JSON agents and callers,
// in both versions.

// extensionHeaders name the activated extensions: 1.0's header, then
// 0.3's.
var extensionHeaders = [...]string{"A2a-Extensions", "X-A2a-Extensions"}

// moveExtensions puts the activated extensions a caller named under
// either version's header under version v's.
func moveExtensions(h http.Header, v a2a.Version) {
	var ext []string
	for _, k := range extensionHeaders {
		ext = append(ext, h.Values(k)...)
		h.Del(k)
	}
	if len(ext) > 0 {
		name := extensionHeaders[1]
		if v == a2a.V10 {
			name = extensionHeaders[0]
		}
		h[name] = ext
	}
}

// httpAgent reaches a JSON-RPC agent at its jsonrpc_path, an HTTP+JSON one
// below its rest_path.
type httpAgent struct{}

func (httpAgent) send(c *bridgeCall, up a2a.UpstreamRequest) (agentAnswer, error) {
	s, cfg := c.s, &c.s.Agent.cfg
	method, u := http.MethodPost, s.Agent.upstreamURL(cfg.JSONRPCPath, "")
	if c.to.Binding == a2a.BindingREST {
		method, u = up.HTTPMethod, s.Agent.upstreamURL(strings.TrimSuffix(cfg.RESTPath, "/")+up.Path, up.Query.Encode())
	}
	resp, err := c.g.roundTrip(c.r, s, c.clientCtx, c.ctx, c.headersLate, method, u, up.Body, func(h http.Header) {
		// What describes the caller's body and version describes it no
		// more; the ids a resuming caller names are the gateway's.
		h.Del("Content-Type")
		if up.Body != nil {
			h.Set("Content-Type", "application/json")
		}
		h.Del(a2a.LastEventIDHeader)
		h.Del(a2a.VersionHeader)
		if c.to.Version == a2a.V10 {
			h.Set(a2a.VersionHeader, "1.0")
		}
		accept := "application/json"
		if s.Op.Method.Streaming() {
			accept = a2a.SSEContentType
		}
		h.Set("Accept", accept)
		if c.from.Binding == a2a.BindingGRPC {
			dropGRPCHeaders(h)
		}
		moveExtensions(h, c.to.Version)
	})
	if err != nil {
		return nil, err
	}
	if isEventStream(resp.Header) {
		if !s.Op.Method.Streaming() {
			// A stream is no answer to a unary call: the caller's form
			// (a gRPC unary call above all) has no way to carry one.
			resp.Body.Close()
			return nil, &upstreamFailure{err: errors.New("agent answer refused: an event stream answers a unary call"), a2aErr: a2a.ErrInvalidAgentResponse}
		}
		return &sseAnswer{c: c, body: resp.Body, rd: a2a.NewSSEReader(resp.Body, c.g.limits.MaxEventBytes)}, nil
	}
	defer resp.Body.Close()
	body, err := c.g.readAnswerBody(c.clientCtx, s, resp)
	if err != nil {
		return nil, err
	}
	return &unaryAnswer{c: c, status: resp.StatusCode, body: body}, nil
}

// unaryAnswer is an agent's one JSON answer, read on the first next.
type unaryAnswer struct {
	c      *bridgeCall
	status int
	body   []byte
	read   bool
}

func (*unaryAnswer) stream() bool { return false }
func (*unaryAnswer) Close() error { return nil }

func (a *unaryAnswer) next() (a2a.Event, []byte, bool, error) {
	if a.read {
		return a2a.Event{}, nil, false, io.EOF
	}
	a.read = true
	if a.status >= 300 && a.c.to.Binding == a2a.BindingREST {
		ev, err := a2a.ReadRESTError(a.c.to.Version, a.body)
		if err != nil {
			return a2a.Event{}, nil, false, &upstreamFailure{err: fmt.Errorf("agent error answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
		}
		return ev, nil, false, nil
	}
	ev, result, err := a2a.ReadAnswer(&a.c.agentOp, a.body)
	if err != nil {
		return a2a.Event{}, nil, false, &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return ev, result, false, nil
}

// sseAnswer is an agent's event stream.
type sseAnswer struct {
	c    *bridgeCall
	body io.Closer
	rd   *a2a.SSEReader
}

func (*sseAnswer) stream() bool   { return true }
func (a *sseAnswer) Close() error { return a.body.Close() }

func (a *sseAnswer) next() (a2a.Event, []byte, bool, error) {
	ev, err := a.rd.Next()
	switch {
	case err != nil:
		return a2a.Event{}, nil, false, err
	case ev.KeepAlive():
		return a2a.Event{}, nil, true, nil
	case ev.Event == "error" && a.c.to.Binding == a2a.BindingREST:
		// An HTTP+JSON stream's error event holds the binding's error.
		got, err := a2a.ReadRESTError(a.c.to.Version, ev.Data)
		if err != nil {
			return a2a.Event{}, nil, false, &upstreamFailure{err: fmt.Errorf("agent stream error refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
		}
		return got, nil, false, nil
	}
	got, result, err := a2a.ReadAnswer(&a.c.agentOp, ev.Data)
	if err != nil {
		return a2a.Event{}, nil, false, &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return got, result, false, nil
}

// httpCaller answers JSON-RPC and HTTP+JSON callers.
type httpCaller struct{}

func (httpCaller) request(r *http.Request, s *Scope) (url.Values, []byte, error) {
	if s.Op.Binding == a2a.BindingREST {
		return r.URL.Query(), s.Body, nil
	}
	return nil, s.Body, nil
}

func (httpCaller) payload(s *Scope, result []byte) []byte {
	if s.Op.Binding == a2a.BindingJSONRPC {
		return a2a.RPCResultFrame(s.Op.RPCID, result)
	}
	return result
}

func (h httpCaller) unary(w http.ResponseWriter, s *Scope, payload []byte) error {
	if s.Op.Binding == a2a.BindingJSONRPC && s.Op.Method.Streaming() {
		// As relayJSON: a streaming method's caller reads a stream.
		h.start(w)
		return h.event(w, s, payload, "")
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
	return nil
}

func (httpCaller) refuse(w http.ResponseWriter, s *Scope, ae *a2a.Error) { writeHTTPError(w, s, ae) }

func (httpCaller) start(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", a2a.SSEContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// event writes payload as one SSE event: one data line per line of it
// (a result the agent's form shares with the caller's is its bytes, line
// breaks and all), after the id.
func (httpCaller) event(w http.ResponseWriter, _ *Scope, payload []byte, id string) error {
	out := make([]byte, 0, len(payload)+len(id)+16)
	if id != "" && a2a.ValidSSEID(id) {
		out = append(append(append(out, "id: "...), id...), '\n')
	}
	for l := range bytes.Lines(payload) {
		out = append(append(append(out, "data: "...), bytes.TrimRight(l, "\r\n")...), '\n')
	}
	_, err := w.Write(append(out, '\n'))
	return err
}

func (httpCaller) keepAlive(w http.ResponseWriter) error {
	_, err := io.WriteString(w, ":\n\n")
	return err
}

func (httpCaller) end(w http.ResponseWriter, s *Scope, ae *a2a.Error) {
	if ae != nil {
		_, _ = w.Write(ae.StreamErrorEvent(s.Op.Binding, s.Op.Version, s.Op.RPCID))
	}
}
