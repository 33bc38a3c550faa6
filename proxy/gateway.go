// Package proxy is the A2A-aware reverse proxy: it routes each request to
// its agent, classifies it once, runs it through the pipeline of stages and
// forwards it, observing every result and stream event on the way back.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// Options assemble a Gateway. Stages run in the order given, before the
// request is forwarded; observers see every result and event in order.
type Options struct {
	Config    *config.Config
	Stages    []Stage
	Observers []Observer
	Cards     CardServer
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	// StreamEventID, when set, gives every relayed stream event an SSE id.
	StreamEventID StreamEventID
	// OversizedCredential, given a header over limits.max_header_bytes,
	// returns the authenticator's 401 (with its challenge) when the header
	// carries a credential too large to be accepted, else nil: the header
	// is then refused with 431.
	OversizedCredential func(http.Header) *a2a.Error
	// GRPCOnly reports whether the gateway's own calls (Call, CallStream)
	// to an agent with a grpc section go over gRPC: its card offers no
	// JSON-RPC. Nil: never.
	GRPCOnly func(context.Context, *Agent) (bool, error)
	// GRPCUpstream is the host:port of the gRPC interface an agent's own
	// card names, for an agent whose grpc section names no upstream.
	GRPCUpstream func(context.Context, *Agent) (string, error)
}

// CardServer serves an agent's (rewritten) card.
type CardServer interface {
	ServeCard(w http.ResponseWriter, r *http.Request, a *Agent)
}

// Gateway is the public HTTP handler.
type Gateway struct {
	agents    map[string]*Agent
	handler   Handler
	observers []Observer
	cards     CardServer
	metrics   *metrics.Metrics
	log       *slog.Logger
	limits    config.Limits
	eventID   StreamEventID
	trusted   trustedProxies
	// oversizedCredential: see Options.OversizedCredential.
	oversizedCredential func(http.Header) *a2a.Error
	grpcOnly            func(context.Context, *Agent) (bool, error)
	grpcUpstream        func(context.Context, *Agent) (string, error)
	// accessLog is the access log's configuration; tenantOnSpans is
	// tracing.tenant_attribute.
	accessLog     config.AccessLogOptions
	tenantOnSpans bool

	streams atomic.Int64
	// handedOff counts the goroutines of handed-off streams.
	handedOff       goroutines
	callers         callerPoll
	shutdownTimeout time.Duration
	// drainCtx is cancelled when open streams must end (shutdown).
	drainCtx   context.Context
	drainStart context.CancelFunc
}

// New builds the gateway from its configuration and pipeline.
func New(o Options) (*Gateway, error) {
	g := &Gateway{
		agents:    make(map[string]*Agent, len(o.Config.Agents)),
		observers: o.Observers,
		cards:     o.Cards,
		metrics:   o.Metrics,
		log:       o.Logger,
		limits:    o.Config.Limits,

		shutdownTimeout: o.Config.Shutdown.Timeout.D(),
		eventID:         o.StreamEventID,

		oversizedCredential: o.OversizedCredential,
		grpcOnly:            o.GRPCOnly,
		grpcUpstream:        o.GRPCUpstream,
		accessLog:           o.Config.Log.Access,
		tenantOnSpans:       o.Config.Tracing.TenantAttribute,
	}
	trusted, err := o.Config.TrustedPrefixes()
	if err != nil {
		return nil, err
	}
	g.trusted = trusted
	g.drainCtx, g.drainStart = context.WithCancel(context.Background())
	keys := config.RecordKeys(o.Config.Agents)
	for _, ac := range o.Config.Agents {
		a, err := newAgent(ac, o.Config.PublicURL, keys[ac.Name])
		if err != nil {
			return nil, err
		}
		a.grpc = newGRPCUpstream(ac, o.Config.Limits.GRPC)
		g.agents[ac.Name] = a
	}
	// The pipeline, assembled once: stages wrap the forwarder in order.
	h := Handler(g.forward)
	for i := len(o.Stages) - 1; i >= 0; i-- {
		h = o.Stages[i](h)
	}
	g.handler = h
	return g, nil
}

// Agent returns the named agent, for components that call agents themselves.
func (g *Gateway) Agent(name string) (*Agent, bool) {
	a, ok := g.agents[name]
	return a, ok
}

// DrainStreams ends every open stream cleanly and refuses new ones; called
// during shutdown once the stream grace period is over.
func (g *Gateway) DrainStreams() { g.drainStart() }

// StreamsDrained is closed when DrainStreams ends the open streams.
func (g *Gateway) StreamsDrained() <-chan struct{} { return g.drainCtx.Done() }

// Close ends the open streams, waits up to shutdown.timeout for the
// handed-off ones to finish, and releases the upstream connection pools.
func (g *Gateway) Close() {
	g.drainStart()
	ctx, cancel := context.WithTimeout(context.Background(), g.shutdownTimeout)
	defer cancel()
	if err := g.WaitStreams(ctx); err != nil {
		g.log.Warn("closing with streams still finishing", "err", err)
	}
	for _, a := range g.agents {
		a.close()
	}
}

// OpenStreams is the number of streams being relayed.
func (g *Gateway) OpenStreams() int64 { return g.streams.Load() }

func (g *Gateway) acquireStream() (release func(), ok bool) {
	if g.streams.Add(1) > int64(g.limits.MaxStreams) {
		g.streams.Add(-1)
		return nil, false
	}
	return func() { g.streams.Add(-1) }, true
}

const agentsPrefix = "/agents/"

// ServeHTTP routes /agents/{name}/... to the named agent, within the
// listener's request limits (see Guard).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.guard(w, r, g.route)
}

func (g *Gateway) route(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	if !strings.HasPrefix(path, agentsPrefix) {
		closeUnread(w, r)
		a2a.WriteRESTError(w, a2a.RESTVersion(r), a2a.ErrMethodNotFound.WithMessage("not found; agents are served under /agents/{name}/"))
		return
	}
	a, rel := g.mount(r)
	if a == nil {
		name, _, _ := strings.Cut(path[len(agentsPrefix):], "/")
		g.log.Info("request for an unknown agent", "path", clip(path))
		closeUnread(w, r)
		a2a.WriteRESTError(w, a2a.RESTVersion(r), a2a.ErrMethodNotFound.WithMessage("no agent is mounted at "+agentsPrefix+clip(name)))
		return
	}
	g.serveAgent(w, r, a, rel, 0)
}

// mount is the agent a request is for and the path below its mount; nil
// when the path names no mounted agent.
func (g *Gateway) mount(r *http.Request) (*Agent, string) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), agentsPrefix)
	if !ok {
		return nil, ""
	}
	name, rel, _ := strings.Cut(rest, "/")
	return g.agents[name], "/" + rel
}

// serveAgent classifies the request, runs the pipeline and accounts for it.
// binding is the listener's when it serves one binding only (gRPC), else 0.
func (g *Gateway) serveAgent(w http.ResponseWriter, r *http.Request, a *Agent, rel string, binding a2a.Binding) {
	if binding == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead) && isCardPath(rel) && g.checkHeader(r) == nil {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		nameSpan(r, "card "+a.Name)
		g.cards.ServeCard(rec, r, a)
		g.accessCard(r, a, rec, start)
		return
	}
	r = r.WithContext(request.OnPath(r.Context()))
	s := &Scope{Agent: a, Start: time.Now(), relPath: rel, Op: &a2a.Operation{Binding: binding}}
	s.life = &s.own
	rec := &statusRecorder{ResponseWriter: w}
	err := g.classify(rec, r, s)
	if err == nil {
		s.base = g.log
		s.logAttrs = append(traceAttrs(r), "agent", a.Name, "op", s.Op.Method.String(), "version", s.Op.Version.String(), "binding", s.Op.Binding.String())
		g.startSpan(r, s)
		if err = refuseUnoffered(a, s.Op); err == nil {
			r = g.prepareHandOff(r, s, rec)
			h := s.life.handoff
			if h != nil {
				s.life.finish = func(err error) { g.finish(rec, r, s, err) }
			}
			err = g.handler(rec, r, s)
			if s.life.handedOff {
				return // the stream's goroutine finishes the request
			}
			if h != nil {
				defer h.release()
			}
		}
	}
	g.finish(rec, r, s, err)
}

// finish ends a request: the stages' ends, then its error answer (if it
// failed before anything was written), metric, span and access line.
func (g *Gateway) finish(rec *statusRecorder, r *http.Request, s *Scope, err error) {
	s.life.end(err)
	a := s.Agent
	if s.base == nil {
		s.base, s.logAttrs = g.log, append(traceAttrs(r), "agent", a.Name)
	}
	if waited, spent := request.StoreWait(r.Context()); spent {
		s.Log().Warn("the request's store wait budget ran out", "waited", waited.String())
	}
	result := "ok"
	if err != nil {
		result = g.writeError(rec, r, s, err)
	} else if rec.status >= 400 {
		result = fmt.Sprintf("upstream_%dxx", rec.status/100)
	} else if code := grpcAnswerStatus(rec.Header()); code != "" {
		result = "upstream_grpc_" + code
	}
	op := s.Op.Method.String()
	took := time.Since(s.Start)
	g.metrics.Requests.WithLabelValues(a.Name, op, result).Inc()
	g.metrics.RequestDuration.WithLabelValues(a.Name, op).Observe(took.Seconds())
	reason := ""
	if err != nil {
		reason = result
	}
	g.endSpan(r, s, reason)
	g.access(r, s, rec, reason, took)
}

// classify works out the binding and version, reads the bounded body and
// classifies the operation into s.Op. Errors before the body is read take
// the binding and version the path and header say.
func (g *Gateway) classify(w http.ResponseWriter, r *http.Request, s *Scope) error {
	if s.Op.Binding == a2a.BindingGRPC {
		return g.classifyGRPC(w, r, s)
	}
	cfg := s.Agent.cfg
	isRPC := r.Method == http.MethodPost && strings.TrimSuffix(s.relPath, "/") == strings.TrimSuffix(cfg.JSONRPCPath, "/")
	if isRPC {
		s.Op.Binding = a2a.BindingJSONRPC
	} else {
		s.Op.Binding = a2a.BindingREST
	}
	restRel, underREST := strings.CutPrefix(s.relPath, strings.TrimSuffix(cfg.RESTPath, "/"))
	v, explicit, verr := a2a.NegotiateVersion(r)
	switch {
	case verr != nil:
		// VersionNotSupportedError exists only in 1.0: answer in its shape.
		s.Op.Version = a2a.V10
	case isRPC:
		s.Op.Version = v
	default:
		s.Op.Version = a2a.RESTPathVersion(restRel, v, explicit)
	}
	if e := g.checkHeader(r); e != nil {
		return e
	}
	body, err := readBody(w, r, g.limits.MaxBodyBytes)
	if err != nil {
		return err
	}
	s.Body = body
	if verr == nil {
		verr = a2a.CheckRequestContentType(r.Header, len(body) > 0)
	}
	if verr != nil {
		if isRPC {
			s.Op.RPCID = a2a.PeekRPCID(body)
		}
		return verr
	}
	var op *a2a.Operation
	var cerr *a2a.Error
	if isRPC {
		op, cerr = a2a.ClassifyRPC(body, v, explicit)
	} else {
		if !underREST || (restRel != "" && restRel[0] != '/') {
			return a2a.ErrMethodNotFound.WithMessage("no A2A operation at this path")
		}
		op, cerr = a2a.ClassifyREST(r.Method, restRel, r.URL.Query(), body, v, explicit)
	}
	s.Op = op
	if cerr != nil {
		return cerr
	}
	return nil
}

// readBody reads the whole request body, up to limit bytes and within the
// deadline the guard set (limits.body_timeout).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, a2a.ErrPayloadTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return nil, a2a.ErrPayloadTooLarge
		case errors.Is(err, os.ErrDeadlineExceeded):
			// Checked first: a failed read also cancels the request's context.
			return nil, a2a.ErrRequestTimeout.WithMessage("the request body did not arrive within limits.body_timeout")
		case r.Context().Err() != nil:
			return nil, ErrClientGone
		}
		return nil, a2a.ErrInvalidRequest.WithMessage("the request body could not be read")
	}
	return body, nil
}

// writeError answers err in the caller's binding and version, logs it once,
// and returns the metric result label.
func (g *Gateway) writeError(w *statusRecorder, r *http.Request, s *Scope, err error) string {
	if errors.Is(err, ErrClientGone) {
		s.Log().Debug("caller disconnected")
		return "client_gone"
	}
	var uf *upstreamFailure
	if errors.As(err, &uf) {
		reason := "unreachable"
		// By code: the error may be a copy with a more specific message.
		switch uf.a2aErr.Code {
		case a2a.ErrUpstreamTimeout.Code:
			reason = "timeout"
		case a2a.ErrInvalidAgentResponse.Code:
			reason = "invalid_response"
		}
		g.metrics.UpstreamErrors.WithLabelValues(s.Agent.Name, reason).Inc()
		s.Log().Warn("agent exchange failed", "reason", reason, "err", uf.err)
	}
	var ae *a2a.Error
	if !errors.As(err, &ae) {
		s.Log().Error("internal error", "err", err)
		ae = a2a.ErrInternal
	} else if uf == nil {
		s.Log().Info("request refused", "code", ae.Code, "reason", ae.Reason, "detail", ae.Message)
	}
	if w.wrote {
		// A stream already started: relayStream ended it with the error as
		// its last event.
		return ae.Reason
	}
	if s.Op.Binding == a2a.BindingGRPC {
		// Not closeUnread: the connection carries other calls, and an
		// unread body of this one is reset with its stream.
		grpcwire.WriteError(w, s.Op.Version, ae)
		return ae.Reason
	}
	closeUnread(w, r)
	writeHTTPError(w, s, ae)
	return ae.Reason
}

// writeHTTPError writes ae as the whole answer to an HTTP caller, in its
// version and binding.
func writeHTTPError(w http.ResponseWriter, s *Scope, ae *a2a.Error) {
	switch {
	case s.Op.Binding != a2a.BindingJSONRPC:
		// REST streaming clients check the status before reading a stream,
		// as the SDK servers answer a refused stream: no stream to fake.
		a2a.WriteRESTError(w, s.Op.Version, ae)
	case s.Op.Method.Streaming():
		// Known to be a streaming method: its caller reads the answer as a
		// stream.
		a2a.WriteRPCStreamError(w, s.Op.Version, s.Op.RPCID, ae)
	default:
		a2a.WriteRPCError(w, s.Op.Version, s.Op.RPCID, ae)
	}
}

func isCardPath(rel string) bool {
	return rel == "/.well-known/agent-card.json" || rel == "/.well-known/agent.json"
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// statusRecorder remembers the status written, for metrics and for
// knowing whether an error can still be sent.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	// bytes is what the body written so far came to, for the access log.
	bytes int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
