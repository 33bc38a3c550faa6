package proxy

import (
	"bytes"
	"context"
	"net/http"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Rewriter is an Observer that may also change what the caller sees of an
// answer or stream event: the auth flow adds its challenge to the metadata
// of an auth-required task. Every observer sees the agent's own bytes
// first; rewriters then run in the order of the observers list, each on the
// previous one's result. Returning payload unchanged (the same slice) costs
// nothing; an error withholds the answer like an observer's.
type Rewriter interface {
	Observer
	Rewrite(ctx context.Context, s *Scope, ev a2a.Event, payload []byte) ([]byte, error)
}

// rewrite runs the gateway's rewriters on one observed payload.
func (g *Gateway) rewrite(ctx context.Context, s *Scope, ev a2a.Event, payload []byte) ([]byte, error) {
	for _, o := range g.observers {
		rw, ok := o.(Rewriter)
		if !ok {
			continue
		}
		var err error
		if payload, err = rw.Rewrite(ctx, s, ev, payload); err != nil {
			return nil, err
		}
	}
	return payload, nil
}

// reframe returns the SSE event raw with its data replaced by data, when a
// rewriter changed it: data, spliced into the agent's bytes, keeps their
// line breaks, so it is written as one data line per line of it where the
// first data line stood (a reader joins them back with "\n"); every other
// line (id, event, retry, comments) is kept as received.
func reframe(raw, old, data []byte) []byte {
	if len(data) == len(old) && (len(data) == 0 || &data[0] == &old[0]) {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(data))
	wrote := false
	for pos := 0; pos < len(raw); {
		end := len(raw)
		if i := bytes.IndexByte(raw[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		line := raw[pos:end]
		field := bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(field, ':'); i >= 0 {
			field = field[:i]
		}
		switch {
		case string(field) != "data":
			out = append(out, line...)
		case !wrote:
			for l := range bytes.Lines(data) {
				out = append(out, "data: "...)
				out = append(out, bytes.TrimSuffix(l, []byte("\n"))...)
				out = append(out, '\n')
			}
			wrote = true
		}
		pos = end
	}
	return out
}

type upstreamHeaderKey struct{}

// WithUpstreamHeader returns a context under which the request forwarded
// to the agent carries header name set to value, after the gateway's own
// upstream authorization (which it replaces for "Authorization"). Stages
// use it to hand an agent a credential for one request.
func WithUpstreamHeader(ctx context.Context, name, value string) context.Context {
	h, _ := ctx.Value(upstreamHeaderKey{}).(http.Header)
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(name, value)
	return context.WithValue(ctx, upstreamHeaderKey{}, h)
}

// setUpstreamHeaders applies the headers WithUpstreamHeader put in ctx.
func setUpstreamHeaders(req *http.Request, ctx context.Context) {
	h, _ := ctx.Value(upstreamHeaderKey{}).(http.Header)
	for k, vs := range h {
		req.Header[k] = vs
	}
}
