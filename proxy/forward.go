package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
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
	// What the exchange holds, released when it ends: here, or where a
	// handed-off stream ends (relayStream).
	var own cleanups
	defer own.run()
	if !s.Op.Method.Streaming() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Agent.cfg.Timeouts.Request.D())
		own.add(cancel)
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
		own.add(release)
		// A stream may last as long as its task, but the agent must start
		// it (send its headers) within the request timeout, or within
		// stream_idle when that is shorter.
		var cancelCause context.CancelCauseFunc
		ctx, cancelCause = context.WithCancelCause(ctx)
		own.add(func() { cancelCause(nil) })
		wait := s.Agent.cfg.Timeouts.Request.D()
		if idle := s.Agent.cfg.Timeouts.StreamIdle.D(); idle > 0 {
			wait = min(wait, idle)
		}
		headersLate = time.AfterFunc(wait, func() { cancelCause(context.DeadlineExceeded) })
	}
	if s.bridged() {
		return g.forwardBridged(w, r, s, clientCtx, ctx, headersLate)
	}
	if s.Op.Binding == a2a.BindingGRPC {
		return g.forwardGRPC(w, r, s, clientCtx, ctx, headersLate)
	}
	resp, err := g.roundTrip(r, s, clientCtx, ctx, headersLate, r.Method, s.Agent.upstreamURL(s.relPath, r.URL.RawQuery), s.Body, nil)
	if err != nil {
		return err
	}
	body := resp.Body
	own.add(func() { body.Close() })
	if isEventStream(resp.Header) {
		if !s.Op.Method.Streaming() {
			// The caller asked for one answer; a stream, even of one
			// well-formed event, is not what its client can read.
			return &upstreamFailure{err: errors.New("agent answer refused: an event stream answers a unary call"), a2aErr: a2a.ErrInvalidAgentResponse}
		}
		return g.relayStream(w, r, s, resp, &own)
	}
	return g.relayJSON(w, clientCtx, s, resp)
}

// roundTrip sends one HTTP request to the agent: the caller's end-to-end
// headers without its credentials, with the gateway's upstream
// authorization and forwarding headers, and adjust's changes (nil: none).
// A failed exchange is mapped by upstreamError.
func (g *Gateway) roundTrip(r *http.Request, s *Scope, clientCtx, ctx context.Context, headersLate *time.Timer, method string, u *url.URL, body []byte, adjust func(http.Header)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	req.ContentLength = int64(len(body))
	copyHeaders(req.Header, r.Header)
	for _, h := range credentialHeaders {
		req.Header.Del(h)
	}
	if adjust != nil {
		adjust(req.Header)
	}
	if s.Agent.upstreamAuth != "" {
		req.Header.Set("Authorization", s.Agent.upstreamAuth)
	}
	setUpstreamHeaders(req, r.Context())
	req.Header.Set("User-Agent", telemetry.ForwardedUserAgent(r.Header.Get("User-Agent")))
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
		// A gRPC caller's deadline is no departure (grpcUpstreamError),
		// whatever binding the bridge reaches the agent in.
		return nil, grpcUpstreamError(clientCtx, ctx, err)
	}
	return resp, nil
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
	body, err := g.readAnswerBody(ctx, s, resp)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 && s.Op.Binding == a2a.BindingREST {
		// The agent's details and message may name any task: the caller
		// gets the gateway's error for the agent's code instead.
		ev, err := a2a.ReadRESTError(s.Op.Version, body)
		if err != nil {
			return &upstreamFailure{err: fmt.Errorf("agent error answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
		}
		a2a.WriteRESTError(w, s.Op.Version, a2a.AgentError(ev.ErrorCode))
		return nil
	}
	ev, result, err := parsePayload(s, body)
	if err != nil {
		return err
	}
	if body, err = g.observeParsed(ctx, s, ev, body, result); err != nil {
		return err
	}
	if s.Op.Binding == a2a.BindingJSONRPC && s.Op.Method.Streaming() {
		// A streaming method's caller reads the answer as a stream (a2a-go's
		// client reads any 200 as one, and would see an empty stream): an
		// agent that answered with one JSON object, often its error, has
		// it delivered as the stream's only event.
		if ev.Kind == a2a.EventError {
			a2a.WriteRPCStreamError(w, s.Op.Version, s.Op.RPCID, a2a.AgentError(ev.ErrorCode))
			return nil
		}
		// One data line: only the whitespace between tokens changes.
		var line bytes.Buffer
		if err := json.Compact(&line, body); err != nil {
			return &upstreamFailure{err: err, a2aErr: a2a.ErrInvalidAgentResponse}
		}
		h := w.Header()
		h.Set("Content-Type", a2a.SSEContentType)
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_ = a2a.WriteSSE(w, "", line.Bytes())
		return nil
	}
	if ev.Kind == a2a.EventError {
		a2a.WriteRPCError(w, s.Op.Version, s.Op.RPCID, a2a.AgentError(ev.ErrorCode))
		return nil
	}
	h := w.Header()
	copyAnswerHeaders(h, resp.Header)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return nil
}

// readAnswerBody reads a non-streaming answer's body, within
// limits.max_response_bytes.
func (g *Gateway) readAnswerBody(ctx context.Context, s *Scope, resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, g.limits.MaxResponseBytes+1))
	if err != nil {
		return nil, upstreamError(ctx, ctx, err)
	}
	if int64(len(body)) > g.limits.MaxResponseBytes {
		s.Log().Warn("agent response over the size limit", "limit_bytes", g.limits.MaxResponseBytes)
		return nil, &upstreamFailure{err: errors.New("response too large"), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return body, nil
}

// observeParsed hands one parsed event to every observer, then to the
// rewriters. Each answer and each stream event is observed within a store
// budget of its own (request.RenewBudget): a long stream's many small waits
// add up to no limit.
//
// result is the payload without its JSON-RPC envelope, which observers read
// with Scope.Result instead of unwrapping the payload again.
func (g *Gateway) observeParsed(ctx context.Context, s *Scope, ev a2a.Event, payload, result []byte) ([]byte, error) {
	ctx = request.RenewBudget(ctx)
	s.result = result
	defer func() { s.result = nil }()
	s.saw(ev)
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
// after StreamIdle without an event carrying data: keep-alive comments show
// the connection is up, not that the task is, so they do not count. An end
// the agent did not choose (idle, an event over the size limit, a broken
// connection) or an event that cannot be recorded is the caller's error:
// its answer while nothing was written, else the stream's last event.
func (g *Gateway) relayStream(w http.ResponseWriter, r *http.Request, s *Scope, resp *http.Response, own *cleanups) error {
	x := &sseRelay{g: g, w: w, r: r, s: s, resp: resp, rc: http.NewResponseController(w)}
	// The body is closed when the stream must stop for a reason the reader
	// cannot see (draining, idle timeout): that unblocks Next.
	x.watch = g.watchStream(s, resp.Body)
	own.add(x.done)
	x.rd = a2a.NewSSEReader(resp.Body, g.limits.MaxEventBytes)
	return x.relay(own)
}

// sseRelay is one relayed SSE stream.
type sseRelay struct {
	g     *Gateway
	w     http.ResponseWriter
	r     *http.Request
	s     *Scope
	resp  *http.Response
	rc    *http.ResponseController
	rd    *a2a.SSEReader
	watch *streamWatch
	// started: the status line was written (or an error answered).
	started bool
}

// start writes the status line and the answer's headers. It waits for the
// first event: if that event cannot be recorded, the caller still gets a
// proper error instead of an empty stream.
func (x *sseRelay) start() {
	h := x.w.Header()
	copyAnswerHeaders(h, x.resp.Header)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if x.s.life.handoff != nil {
		h.Set("Connection", "close")
	}
	x.w.WriteHeader(x.resp.StatusCode)
	x.started = true
	// Of the exchange, the stream needs only the body from now on; the
	// body refers to the response, which would keep the request sent to
	// the agent and both headers for as long as the stream lasts.
	x.resp.Header, x.resp.Request = nil, nil
}

// done releases the watch and answers a stream the agent ended without an
// event.
func (x *sseRelay) done() {
	x.watch.done()
	if !x.started {
		x.start()
	}
}

// fail ends the stream with err: the caller's answer while nothing was
// written, else the stream's last event, in the caller's binding and
// version (writeError logs and counts it).
func (x *sseRelay) fail(err error) error {
	if !x.started {
		x.started = true // the error is the answer
		return err
	}
	var ae *a2a.Error
	if !errors.As(err, &ae) {
		ae = a2a.ErrInternal
	}
	s := x.s
	if _, werr := x.w.Write(ae.StreamErrorEvent(s.Op.Binding, s.Op.Version, s.Op.RPCID)); werr == nil {
		_ = x.rc.Flush()
	}
	return err
}

// relay relays events until the stream ends. Once the first event is out,
// the rest of the stream is handed off when it can be (handoff.go); own is
// what the forwarder releases when the stream ends.
func (x *sseRelay) relay(own *cleanups) error {
	g, r, s := x.g, x.r, x.s
	for {
		ev, err := x.rd.Next()
		if err == nil && s.callerLeft() {
			err = ErrClientGone
		}
		if err != nil {
			if err := g.streamEnd(r, s, err, x.watch.idledOut()); err != nil {
				return x.fail(err)
			}
			return nil
		}
		if !ev.KeepAlive() {
			x.watch.sawData()
		}
		var id string
		if !ev.KeepAlive() {
			var data []byte
			data, id, err = g.observeStream(r.Context(), s, ev.Data)
			if err != nil {
				return x.fail(err)
			}
			ev.Raw = reframe(ev.Raw, ev.Data, data)
		}
		if !x.started {
			x.start()
		}
		write := true
		if s.streamGate != nil && !ev.KeepAlive() {
			if write, err = s.streamGate(x.w, id); err != nil {
				return nil
			}
		}
		if write {
			if err := writeEvent(x.w, s, ev.Raw, id); err != nil {
				return nil
			}
		}
		if err := x.rc.Flush(); err != nil {
			return nil
		}
		if own != nil && s.life.handoff != nil && g.handOff(s, func() error { return x.relay(nil) }, own) {
			return nil
		}
	}
}

// streamEnd says why the agent's stream ended: nil, after a log line, when
// the agent ended it, the caller left or the gateway drains (the caller
// resubscribes); otherwise the caller's error, which writeError logs and
// counts.
func (g *Gateway) streamEnd(r *http.Request, s *Scope, err error, idled bool) error {
	switch {
	case errors.Is(err, io.EOF):
		s.Log().Debug("stream ended by the agent")
	case r.Context().Err() != nil:
		s.Log().Debug("stream ended by the caller")
	case g.drainCtx.Err() != nil:
		s.Log().Info("stream ended: gateway shutting down")
	case idled:
		return &upstreamFailure{
			err:    fmt.Errorf("stream ended: no event for timeouts.stream_idle (%s); comments do not count", s.Agent.cfg.Timeouts.StreamIdle.D()),
			a2aErr: a2a.ErrUpstreamTimeout.WithMessage("the agent's stream sent no event in time"),
		}
	case errors.Is(err, a2a.ErrSSEEventTooLarge):
		return &upstreamFailure{
			err:    fmt.Errorf("stream ended: agent event over limits.max_event_bytes (%d)", g.limits.MaxEventBytes),
			a2aErr: a2a.ErrInvalidAgentResponse.WithMessage("an event of the agent's stream exceeds the size limit"),
		}
	case errors.Is(err, a2a.ErrSSEMalformed):
		return &upstreamFailure{err: fmt.Errorf("stream ended: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	default:
		return &upstreamFailure{
			err:    fmt.Errorf("stream ended: agent connection dropped: %w", err),
			a2aErr: a2a.ErrUpstreamFailed.WithMessage("the agent's stream broke off"),
		}
	}
	return nil
}

func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), a2a.SSEContentType)
}

// answerHeaders are the agent's response headers a caller receives: those
// that describe the body, how to cache it and when to retry, and the
// protocol's own. Any other header could carry anything, another tenant's
// task id included: like an answer's members, they are allowed by name.
var answerHeaders = []string{
	"Content-Type", "Content-Language", "Cache-Control", "Expires", "Last-Modified", "Etag", "Vary", "Retry-After",
	a2a.VersionHeader, "A2a-Extensions", "X-A2a-Extensions",
}

// copyAnswerHeaders copies the allowed answer headers.
func copyAnswerHeaders(dst, src http.Header) {
	for _, k := range answerHeaders {
		if vs := src.Values(k); len(vs) > 0 {
			dst[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
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
