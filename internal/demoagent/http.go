package demoagent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// call is one classified request, whatever its binding.
type call struct {
	op *a2a.Operation
	d  dialect
	// params is the JSON-RPC params member or the REST body.
	params []byte
	// query is the REST query string; nil for JSON-RPC.
	query         url.Values
	authorization string
	// plainBlocking marks a 0.3 gRPC send, whose configuration.blocking
	// cannot be told apart from absent when false.
	plainBlocking bool
}

// dialectFor is the dialect to answer about t in. The 0.3 names tasks/get,
// tasks/cancel and tasks/resubscribe are also the legacy ones, so a legacy
// task asked about by a caller that named no version is answered in legacy.
func (c *call) dialectFor(t *task) dialect {
	if c.op.Binding == a2a.BindingJSONRPC && c.op.Version == a2a.V03 && !c.op.VersionExplicit && t.origin.v == a2a.VLegacy {
		return t.origin
	}
	return c.d
}

// reply is what an operation answers: a result, or a stream.
type reply struct {
	result any
	// noContent makes the HTTP+JSON binding answer 204 without a body.
	noContent bool
	stream    *stream
}

// stream is an SSE answer: first is written at once, then the subscriber's
// events until one ends the stream. sub is nil when first is all there is.
type stream struct {
	first any
	t     *task
	sub   *subscriber
	d     dialect
}

type rpcResult struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *a2a.Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, a2a.ErrInvalidRequest.WithMessage("the request body is larger than " + strconv.Itoa(maxBodyBytes) + " bytes")
		}
		return nil, a2a.ErrInvalidRequest.WithMessage("the request body could not be read")
	}
	return body, nil
}

func (a *Agent) serveRPC(w http.ResponseWriter, r *http.Request, body []byte) {
	v, explicit, verr := a2a.NegotiateVersion(r)
	if verr != nil {
		op, _ := a2a.ClassifyRPC(body, a2a.V03, false)
		a.record(r, op, body)
		a2a.WriteRPCError(w, a2a.V10, op.RPCID, verr)
		return
	}
	op, e := a2a.ClassifyRPC(body, v, explicit)
	a.record(r, op, body)
	if e != nil {
		a2a.WriteRPCError(w, op.Version, op.RPCID, e)
		return
	}
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	// ClassifyRPC has checked the body is valid JSON.
	_ = json.Unmarshal(body, &env)
	c := &call{op: op, d: dialect{v: op.Version}, params: env.Params, authorization: r.Header.Get("Authorization")}
	rep, e := a.dispatch(r.Context(), c)
	if e != nil {
		a2a.WriteRPCError(w, op.Version, op.RPCID, e)
		return
	}
	wrap := func(payload any) any { return rpcResult{JSONRPC: "2.0", ID: op.RPCID, Result: payload} }
	if rep.stream != nil {
		a.writeStream(w, r, rep.stream, wrap)
		return
	}
	a.writeJSON(w, http.StatusOK, jsonContentType, wrap(rep.result))
}

func (a *Agent) serveREST(w http.ResponseWriter, r *http.Request, body []byte) {
	v, explicit, verr := a2a.NegotiateVersion(r)
	if verr != nil {
		a.record(r, nil, body)
		a2a.WriteRESTError(w, a2a.V10, verr)
		return
	}
	if !explicit {
		// 0.3 HTTP+JSON lives under /v1/, which the classifier recognises
		// by itself; every other path exists only in 1.0.
		v = a2a.V10
	}
	op, e := a2a.ClassifyREST(r.Method, r.URL.EscapedPath(), r.URL.Query(), body, v, explicit)
	a.record(r, op, body)
	if e != nil {
		a2a.WriteRESTError(w, op.Version, e)
		return
	}
	d := dialect{v: op.Version, proto: op.Version == a2a.V03}
	c := &call{op: op, d: d, params: body, query: r.URL.Query(), authorization: r.Header.Get("Authorization")}
	rep, e := a.dispatch(r.Context(), c)
	switch {
	case e != nil:
		a2a.WriteRESTError(w, op.Version, e)
	case rep.stream != nil:
		a.writeStream(w, r, rep.stream, func(payload any) any { return payload })
	case rep.noContent:
		w.WriteHeader(http.StatusNoContent)
	default:
		a.writeJSON(w, http.StatusOK, d.contentType(), rep.result)
	}
}

func (a *Agent) writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.log.Error("response not encoded", "err", err)
		a2a.WriteRESTError(w, a2a.V10, a2a.ErrInternal)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeStream writes an SSE answer. It returns when the stream ends, the
// client leaves or the agent closes.
func (a *Agent) writeStream(w http.ResponseWriter, r *http.Request, s *stream, wrap func(any) any) {
	h := w.Header()
	h.Set("Content-Type", a2a.SSEContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n := 0
	a.pump(r.Context(), s, func(payload any) bool {
		b, err := json.Marshal(wrap(payload))
		if err != nil {
			a.log.Error("stream event not encoded", "err", err)
			return false
		}
		n++
		if a2a.WriteSSE(w, strconv.Itoa(n), b) != nil {
			return false
		}
		return rc.Flush() == nil
	})
}

// pump hands send the stream's first answer, then each event of the task
// until one ends the stream, send fails, the caller leaves (ctx) or the
// agent closes. It always drops the subscription. Every binding's streams
// go through it, so they end on the same events.
func (a *Agent) pump(ctx context.Context, s *stream, send func(payload any) bool) {
	if s.sub != nil {
		defer a.unsubscribe(s.t, s.sub)
	}
	if !send(s.first) || s.sub == nil {
		return
	}
	for {
		select {
		case ev, ok := <-s.sub.ch:
			if !ok || !send(s.d.event(s.t.id, s.t.contextID, ev)) || ev.closesStream() {
				return
			}
		case <-ctx.Done():
			return
		case <-a.ctx.Done():
			return
		}
	}
}
