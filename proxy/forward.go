package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/a2a"
	"github.com/a2a-gateway/a2a-gateway/store"
)

// hopHeaders are connection-scoped and never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// credentialHeaders carry the caller's credentials for the gateway. They
// are never passed to a third-party agent.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Cookie"}

// forward sends the request upstream and relays the answer, observing every
// result and event on the way. It is the last handler of the pipeline.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, s *Scope) error {
	clientCtx := r.Context()
	if s.DetachFromClient {
		clientCtx = context.WithoutCancel(clientCtx)
	}
	ctx := clientCtx
	var headersLate *time.Timer
	if !s.Op.Method.Streaming() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Agent.cfg.Timeouts.Request.D())
		defer cancel()
	} else {
		// The stream cap is taken before the agent is asked, so a refused
		// stream never reaches it.
		if g.drainCtx.Err() != nil {
			return a2a.ErrUnavailable.WithMessage("this gateway replica is shutting down; retry").WithRetryAfter(time.Second)
		}
		release, ok := g.acquireStream()
		if !ok {
			return a2a.ErrRateLimited.WithMessage("the gateway holds its maximum number of open streams").WithRetryAfter(time.Second)
		}
		defer release()
		// A stream may last as long as its task, but the agent must start
		// it (send its headers) within the request timeout, or within
		// stream_idle when that is shorter.
		var cancelCause context.CancelCauseFunc
		ctx, cancelCause = context.WithCancelCause(ctx)
		defer cancelCause(nil)
		wait := s.Agent.cfg.Timeouts.Request.D()
		if idle := s.Agent.cfg.Timeouts.StreamIdle.D(); idle > 0 {
			wait = min(wait, idle)
		}
		headersLate = time.AfterFunc(wait, func() { cancelCause(context.DeadlineExceeded) })
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, s.Agent.upstreamURL(s.relPath, r.URL.RawQuery).String(), bytes.NewReader(s.Body))
	if err != nil {
		return fmt.Errorf("build upstream request: %w", err)
	}
	req.ContentLength = int64(len(s.Body))
	copyHeaders(req.Header, r.Header)
	for _, h := range credentialHeaders {
		req.Header.Del(h)
	}
	if s.Agent.upstreamAuth != "" {
		req.Header.Set("Authorization", s.Agent.upstreamAuth)
	}
	setUpstreamHeaders(req, r.Context())
	req.Header.Del("Accept-Encoding")
	setForwarded(req, r, g.trusted)

	pool := s.Agent.transport
	if s.Op.Method.Streaming() {
		pool = s.Agent.streams
	}
	s.sent = true
	resp, err := pool.RoundTrip(req)
	if headersLate != nil && !headersLate.Stop() && err == nil {
		// The deadline fired as the headers arrived: the stream is already
		// cancelled, so it is a timeout after all.
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		return upstreamError(clientCtx, ctx, err)
	}
	defer resp.Body.Close()
	if isEventStream(resp.Header) {
		return g.relayStream(w, r, s, resp)
	}
	return g.relayJSON(w, clientCtx, s, resp)
}

// upstreamError maps a failed exchange: the caller leaving is not an error
// to answer (there is no one to answer), a deadline is a 504, anything else
// a 502.
func upstreamError(clientCtx, ctx context.Context, err error) error {
	if clientCtx.Err() != nil {
		return ErrClientGone
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return &upstreamFailure{err: err, a2aErr: a2a.ErrUpstreamTimeout}
	}
	return &upstreamFailure{err: err, a2aErr: a2a.ErrUpstreamFailed}
}

// ErrClientGone means the caller disconnected; nothing is written. Stages
// that wait return it when the caller leaves.
var ErrClientGone = errors.New("client disconnected")

// upstreamFailure keeps the transport error for the log and the protocol
// error for the caller.
type upstreamFailure struct {
	err    error
	a2aErr *a2a.Error
}

func (u *upstreamFailure) Error() string { return u.err.Error() }
func (u *upstreamFailure) Unwrap() error { return u.a2aErr }

// NotSent reports whether err means the request provably never reached the
// agent: the connection could not be made. Anything else (a timeout, a
// dropped answer) may have been processed.
func NotSent(err error) bool {
	var uf *upstreamFailure
	if !errors.As(err, &uf) {
		return false
	}
	var op *net.OpError
	return errors.As(uf.err, &op) && op.Op == "dial"
}

// relayJSON reads a bounded non-streaming answer, lets the observers see it
// before the caller does, and writes it unchanged.
func (g *Gateway) relayJSON(w http.ResponseWriter, ctx context.Context, s *Scope, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, g.limits.MaxResponseBytes+1))
	if err != nil {
		return upstreamError(ctx, ctx, err)
	}
	if int64(len(body)) > g.limits.MaxResponseBytes {
		s.Log().Warn("agent response over the size limit", "limit_bytes", g.limits.MaxResponseBytes)
		return &upstreamFailure{err: errors.New("response too large"), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	if resp.StatusCode < 300 || s.Op.Binding == a2a.BindingJSONRPC {
		if body, err = g.observe(ctx, s, body); err != nil {
			return err
		}
	}
	h := w.Header()
	copyHeaders(h, resp.Header)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return nil
}

// observe parses one payload as the caller's binding frames it, hands
// the event to every observer and returns the payload the caller is to
// see (see Rewriter).
func (g *Gateway) observe(ctx context.Context, s *Scope, payload []byte) ([]byte, error) {
	// The answer is observed within a store budget of its own.
	ctx = store.RenewBudget(ctx)
	if len(g.observers) == 0 && len(s.observers) == 0 {
		return payload, nil
	}
	ev, _ := parsePayload(s, payload)
	return g.observeParsed(ctx, s, ev, payload)
}

// observeParsed hands one parsed event to every observer, then to the
// rewriters.
func (g *Gateway) observeParsed(ctx context.Context, s *Scope, ev a2a.Event, payload []byte) ([]byte, error) {
	for _, list := range [][]Observer{g.observers, s.observers} {
		for _, o := range list {
			if err := o.Observe(ctx, s, ev, payload); err != nil {
				return nil, err
			}
		}
	}
	return g.rewrite(ctx, s, ev, payload)
}

// relayStream passes an SSE stream through event by event, flushing each
// one, observing each before the caller sees it. The stream ends when the
// agent ends it, when the caller leaves (which releases the upstream
// connection through the request context), when the gateway drains, or
// after StreamIdle without a byte from the agent.
func (g *Gateway) relayStream(w http.ResponseWriter, r *http.Request, s *Scope, resp *http.Response) error {
	open := g.metrics.OpenStreams.WithLabelValues(s.Agent.Name)
	open.Inc()
	defer open.Dec()

	// The body is closed when the stream must stop for a reason the reader
	// cannot see (draining, idle timeout): that unblocks Next.
	stop := context.AfterFunc(g.drainCtx, func() { resp.Body.Close() })
	defer stop()
	var idle *time.Timer
	if d := s.Agent.cfg.Timeouts.StreamIdle.D(); d > 0 {
		idle = time.AfterFunc(d, func() { resp.Body.Close() })
		defer idle.Stop()
	}

	// The status line waits for the first event: if that event cannot be
	// recorded, the caller still gets a proper error instead of an empty
	// stream.
	rc := http.NewResponseController(w)
	started := false
	start := func() {
		h := w.Header()
		copyHeaders(h, resp.Header)
		h.Del("Content-Length")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(resp.StatusCode)
		started = true
	}
	defer func() {
		if !started {
			start() // the agent ended the stream without an event
		}
	}()

	rd := a2a.NewSSEReader(resp.Body, g.limits.MaxEventBytes)
	for {
		ev, err := rd.Next()
		if err != nil {
			g.logStreamEnd(r, s, err)
			return nil
		}
		if idle != nil {
			idle.Reset(s.Agent.cfg.Timeouts.StreamIdle.D())
		}
		var id string
		if len(ev.Data) > 0 {
			var data []byte
			data, id, err = g.observeStream(r.Context(), s, ev.Data)
			if err != nil {
				if !started {
					started = true // the error below is the answer
					return err
				}
				// Headers are gone: the only honest answer is to end the stream.
				s.Log().Warn("stream ended: an event could not be recorded", "err", err)
				return nil
			}
			ev.Raw = reframe(ev.Raw, ev.Data, data)
		}
		if !started {
			start()
		}
		write := true
		if s.streamGate != nil && len(ev.Data) > 0 {
			if write, err = s.streamGate(w, id); err != nil {
				return nil
			}
		}
		if write {
			if err := writeEvent(w, s, ev.Raw, id); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

func (g *Gateway) logStreamEnd(r *http.Request, s *Scope, err error) {
	switch {
	case errors.Is(err, io.EOF):
		s.Log().Debug("stream ended by the agent")
	case r.Context().Err() != nil:
		s.Log().Debug("stream ended by the caller")
	case g.drainCtx.Err() != nil:
		s.Log().Info("stream ended: gateway shutting down")
	case errors.Is(err, a2a.ErrSSEEventTooLarge):
		s.Log().Warn("stream ended: agent event over the size limit", "limit_bytes", g.limits.MaxEventBytes)
	default:
		s.Log().Warn("stream ended: agent connection dropped", "err", err)
	}
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), a2a.SSEContentType)
}

// copyHeaders copies end-to-end headers.
func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, f := range dst.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			dst.Del(strings.TrimSpace(name))
		}
	}
	for _, hh := range hopHeaders {
		dst.Del(hh)
	}
}
