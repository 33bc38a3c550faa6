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
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
)

// forwardGRPC sends a gRPC call to the agent's gRPC service, with ctx
// bounded as forward bounds it (headersLate for a stream), and relays the
// answer. The agent gets the caller's message bytes (as the stages left
// them), the caller's metadata without its credentials, and the deadline
// that is left as its grpc-timeout.
func (g *Gateway) forwardGRPC(w http.ResponseWriter, r *http.Request, s *Scope, clientCtx, ctx context.Context, headersLate *time.Timer) error {
	resp, err := g.grpcRoundTrip(r, s, clientCtx, ctx, headersLate, s.Op.Version, s.Op.Method, s.Body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.Header.Get("Grpc-Status") != "" {
		// Trailers-only: the agent answered with its status alone.
		return g.grpcStatusOnly(w, clientCtx, s, resp.Header)
	}
	if s.Op.Method.Streaming() {
		return g.relayGRPCStream(w, r, s, resp)
	}
	return g.relayGRPCUnary(w, clientCtx, s, resp)
}

// setGRPCVersion makes a call's a2a-version metadata say v, the version
// of the service it calls: 1.0 clients must send it, and an agent reads a
// call without it as 0.3, which is what a 0.3 call then says. Whatever
// the caller sent is replaced: the service path decided the version.
func setGRPCVersion(h http.Header, v a2a.Version) {
	if v == a2a.V10 {
		h.Set(a2a.VersionHeader, v.String())
	} else {
		h.Del(a2a.VersionHeader)
	}
}

// grpcRoundTrip sends the request message msg of m in version v to the
// agent's gRPC service: the caller's end-to-end headers as metadata
// without its credentials, adjust's changes (nil: none), the gateway's
// upstream authorization and forwarding headers, and the deadline that is
// left as its grpc-timeout. A failed exchange is mapped by
// grpcUpstreamError; the body of the answer reports a broken connection
// as errTransport.
func (g *Gateway) grpcRoundTrip(r *http.Request, s *Scope, clientCtx, ctx context.Context, headersLate *time.Timer, v a2a.Version, m a2a.Method, msg []byte, adjust func(http.Header)) (*http.Response, error) {
	up := s.Agent.grpc
	path, ok := grpcwire.Path(v, m)
	if !ok {
		return nil, fmt.Errorf("no gRPC method for %s in %s", m, v)
	}
	base, err := g.grpcBase(ctx, s.Agent)
	if err != nil {
		return nil, &upstreamFailure{err: err, a2aErr: a2a.ErrUpstreamFailed}
	}
	body := grpcwire.AppendMessage(make([]byte, 0, grpcPrefixBytes+len(msg)), msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	req.ContentLength = int64(len(body))
	copyHeaders(req.Header, r.Header)
	for _, h := range credentialHeaders {
		req.Header.Del(h)
	}
	for _, h := range []string{"Grpc-Timeout", "Grpc-Encoding", "Grpc-Accept-Encoding", "Content-Length"} {
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
	req.Header.Set("Content-Type", grpcwire.ContentType)
	req.Header.Set("Te", "trailers")
	setGRPCVersion(req.Header, v)
	// The agent is told the caller's deadline even when the exchange
	// outlives the caller (DetachFromClient), so it stops when its answer
	// is no longer awaited.
	if dl, ok := earliestDeadline(ctx, r.Context()); ok {
		req.Header.Set("Grpc-Timeout", grpcwire.FormatTimeout(time.Until(dl)))
	}
	setForwarded(req, r, g.trusted)

	s.sent = true
	resp, err := up.transport.RoundTrip(req)
	if headersLate != nil && !headersLate.Stop() && err == nil {
		resp.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		return nil, grpcUpstreamError(clientCtx, ctx, err)
	}
	resp.Body = &transportBody{ReadCloser: resp.Body}
	if resp.StatusCode != http.StatusOK || !isGRPCContentType(resp.Header) {
		resp.Body.Close()
		return nil, &upstreamFailure{
			err:    fmt.Errorf("the agent's gRPC service answered HTTP %d with content type %q", resp.StatusCode, clip(resp.Header.Get("Content-Type"))),
			a2aErr: a2a.ErrUpstreamFailed,
		}
	}
	return resp, nil
}

// earliestDeadline is the earlier deadline of a and b, if either has one.
func earliestDeadline(a, b context.Context) (time.Time, bool) {
	da, oka := a.Deadline()
	db, okb := b.Deadline()
	if !oka || (okb && db.Before(da)) {
		return db, okb
	}
	return da, oka
}

// grpcUpstreamError is upstreamError for a call whose caller set a
// deadline: that deadline passing is DEADLINE_EXCEEDED, not a departure.
func grpcUpstreamError(clientCtx, ctx context.Context, err error) error {
	if errors.Is(context.Cause(clientCtx), errCallDeadline) {
		return &upstreamFailure{err: err, a2aErr: a2a.ErrUpstreamTimeout.WithMessage("the call's deadline passed")}
	}
	return upstreamError(clientCtx, ctx, err)
}

// readGRPCStatus reads the agent's status, from the trailers or, for an
// answer of its status alone, the header: failed with the A2A code it
// stands for, or OK.
func readGRPCStatus(h http.Header) (code int, failed bool, err error) {
	if h.Get("Grpc-Status") == "" {
		return 0, false, &upstreamFailure{err: errors.New("the agent's answer ended without a gRPC status"), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	code, failed, err = grpcwire.ReadStatus(h)
	if err != nil {
		return 0, false, &upstreamFailure{err: fmt.Errorf("agent status refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return code, failed, nil
}

// grpcAgentError answers the agent's error status: observed as the
// agent's error event, then answered as the gateway's error for the
// agent's code, in the answer's trailers once it started. The agent's
// message and details may name any task, so they are not relayed.
func (g *Gateway) grpcAgentError(w http.ResponseWriter, ctx context.Context, s *Scope, code int, trailer http.Header, started bool) error {
	if _, err := g.observeParsed(ctx, s, a2a.Event{Kind: a2a.EventError, ErrorCode: code}, nil, nil); err != nil {
		return err
	}
	ae := a2a.AgentError(code)
	if started {
		endGRPC(w, s.Op.Version, trailer, ae)
		return nil
	}
	grpcwire.WriteError(w, s.Op.Version, ae)
	return nil
}

// grpcStatusOnly answers an agent's answer of its status alone: its
// error, or, status OK, an empty stream; a unary call was due an answer.
func (g *Gateway) grpcStatusOnly(w http.ResponseWriter, ctx context.Context, s *Scope, h http.Header) error {
	code, failed, err := readGRPCStatus(h)
	switch {
	case err != nil:
		return err
	case failed:
		return g.grpcAgentError(w, ctx, s, code, h, false)
	case !s.Op.Method.Streaming():
		return &upstreamFailure{err: errors.New("the agent ended the call without an answer"), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	startGRPC(w, h)
	endGRPC(w, s.Op.Version, h, nil)
	return nil
}

// relayGRPCUnary reads the one answer message and the status behind it,
// lets the observers see the answer before the caller does, and writes it:
// the agent's bytes unless a rewriter changed the answer.
func (g *Gateway) relayGRPCUnary(w http.ResponseWriter, ctx context.Context, s *Scope, resp *http.Response) error {
	limit := g.limits.GRPC.MaxAnswerBytes
	msg, err := grpcwire.ReadMessage(resp.Body, limit)
	switch {
	case errors.Is(err, io.EOF):
		msg = nil
	case err != nil:
		return g.grpcReadError(ctx, s, err)
	default:
		if _, err := grpcwire.ReadMessage(resp.Body, limit); !errors.Is(err, io.EOF) {
			if err == nil {
				err = errors.New("a unary answer with more than one message")
			}
			return g.grpcReadError(ctx, s, err)
		}
	}
	code, failed, err := readGRPCStatus(resp.Trailer)
	switch {
	case err != nil:
		return err
	case failed:
		return g.grpcAgentError(w, ctx, s, code, resp.Trailer, false)
	case msg == nil:
		return &upstreamFailure{err: errors.New("the agent ended the call without an answer"), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	out, err := g.observeGRPC(ctx, s, msg, false)
	if err != nil {
		return err
	}
	startGRPC(w, resp.Header)
	_, _ = w.Write(grpcwire.AppendMessage(make([]byte, 0, grpcPrefixBytes+len(out)), out))
	endGRPC(w, s.Op.Version, resp.Trailer, nil)
	return nil
}

// grpcReadError maps a failed read of the agent's answer: the caller
// leaving or a deadline, else an answer that cannot be read.
func (g *Gateway) grpcReadError(ctx context.Context, s *Scope, err error) error {
	if ctx.Err() != nil {
		return grpcUpstreamError(ctx, ctx, err)
	}
	if !errors.Is(err, errTransport) {
		return &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return &upstreamFailure{err: fmt.Errorf("agent answer broke off: %w", err), a2aErr: a2a.ErrUpstreamFailed}
}

// observeGRPC reads one answer message as strictly as the request was
// read, shows its HTTP+JSON form to the observers (as an answer of the
// REST binding of the same version reads; a stream's event is named like
// an SSE event) and returns the message the caller gets: msg itself, or
// the rewrite, re-encoded.
func (g *Gateway) observeGRPC(ctx context.Context, s *Scope, msg []byte, stream bool) ([]byte, error) {
	ev, payload, err := grpcwire.ReadAnswer(s.Op, msg)
	if err != nil {
		return nil, &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	var out []byte
	if stream {
		out, _, err = g.observeEvent(ctx, s, ev, payload, payload)
	} else {
		out, err = g.observeParsed(ctx, s, ev, payload, payload)
	}
	if err != nil {
		return nil, err
	}
	if sameBytes(out, payload) {
		return msg, nil
	}
	if msg, err = grpcwire.EncodeAnswer(s.Op, out); err != nil {
		return nil, fmt.Errorf("re-encode a rewritten answer: %w", err)
	}
	return msg, nil
}

// sameBytes reports whether a rewriter handed the payload back unchanged.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// relayGRPCStream passes a server stream through message by message, like
// relayStream an SSE stream: each observed before the caller sees it,
// written and flushed; the same idle limit, drain and caller departure
// end it. An end the agent did not choose is the caller's error: its
// answer while nothing was written, else the stream's status trailer
// (UNAVAILABLE when the gateway drains, so the caller subscribes again).
func (g *Gateway) relayGRPCStream(w http.ResponseWriter, r *http.Request, s *Scope, resp *http.Response) error {
	watch := g.watchStream(s, resp.Body)
	defer watch.done()
	rc := http.NewResponseController(w)
	started := false
	fail := func(err error) error {
		if started && !errors.Is(err, ErrClientGone) {
			var ae *a2a.Error
			if !errors.As(err, &ae) {
				ae = a2a.ErrInternal
			}
			endGRPC(w, s.Op.Version, nil, ae)
		}
		return err
	}
	for {
		msg, err := grpcwire.ReadMessage(resp.Body, g.limits.GRPC.MaxAnswerBytes)
		if errors.Is(err, io.EOF) {
			code, failed, err := readGRPCStatus(resp.Trailer)
			switch {
			case err != nil:
				return fail(err)
			case failed:
				return g.grpcAgentError(w, r.Context(), s, code, resp.Trailer, started)
			}
			s.Log().Debug("stream ended by the agent")
			if !started {
				startGRPC(w, resp.Header)
			}
			endGRPC(w, s.Op.Version, resp.Trailer, nil)
			return nil
		}
		if err != nil {
			return fail(g.grpcStreamEnd(r, s, err, watch.idledOut()))
		}
		watch.sawData()
		out, err := g.observeGRPC(r.Context(), s, msg, true)
		if err != nil {
			return fail(err)
		}
		if !started {
			startGRPC(w, resp.Header)
			started = true
		}
		if _, err := w.Write(grpcwire.AppendMessage(make([]byte, 0, grpcPrefixBytes+len(out)), out)); err != nil {
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

// grpcStreamEnd says why an agent's stream broke off, like streamEnd: the
// caller leaving is no error to answer; the gateway draining ends the
// stream with UNAVAILABLE, which tells the caller to subscribe again
// (elsewhere); an idle stream is DEADLINE_EXCEEDED; a message that cannot
// be read is INVALID_AGENT_RESPONSE.
func (g *Gateway) grpcStreamEnd(r *http.Request, s *Scope, err error, idled bool) error {
	switch {
	case r.Context().Err() != nil:
		s.Log().Debug("stream ended by the caller")
		return ErrClientGone
	case g.drainCtx.Err() != nil:
		s.Log().Info("stream ended: gateway shutting down")
		return a2a.ErrUnavailable.WithMessage("this gateway replica is shutting down; subscribe again").WithRetryAfter(time.Second)
	case idled:
		return &upstreamFailure{
			err:    fmt.Errorf("stream ended: no message for timeouts.stream_idle (%s)", s.Agent.cfg.Timeouts.StreamIdle.D()),
			a2aErr: a2a.ErrUpstreamTimeout.WithMessage("the agent's stream sent no event in time"),
		}
	case !errors.Is(err, errTransport):
		return &upstreamFailure{err: fmt.Errorf("stream ended: %w", err), a2aErr: a2a.ErrInvalidAgentResponse.WithMessage("a message of the agent's stream cannot be read")}
	}
	return &upstreamFailure{
		err:    fmt.Errorf("stream ended: agent connection dropped: %w", err),
		a2aErr: a2a.ErrUpstreamFailed.WithMessage("the agent's stream broke off"),
	}
}

// errTransport marks a read of the agent's answer that failed below the
// gRPC framing (the connection, the stream reset): the agent's answer
// broke off, rather than being unreadable.
var errTransport = errors.New("the agent's answer broke off")

// transportBody tells the errors of the connection from those of the
// framing read from it.
type transportBody struct{ io.ReadCloser }

func (b *transportBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", errTransport, err)
	}
	return n, err
}
