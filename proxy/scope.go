package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

// Scope is everything the gateway knows about one request, built once and
// handed to every stage: the agent, the classified operation, the body
// (read once, forwarded as the same bytes, except where a stage splices in
// a change: the routing tenant, a ListTasks page, a push config taken out,
// a credential) and, once authenticated, the caller. Stages add to it; none
// of them re-reads the body.
type Scope struct {
	Agent     *Agent
	Op        *a2a.Operation
	Body      []byte
	Principal *request.Principal
	// Grant is the authorization decision for this request; it records
	// the ids the answer reveals.
	Grant request.Recorder
	Start time.Time
	// base, logAttrs and logger make Log: the logger is built only when a
	// request logs, which most never do.
	base     *slog.Logger
	logAttrs []any
	logger   *slog.Logger
	// DetachFromClient keeps a non-streaming exchange with the agent going
	// when the caller disconnects, so its answer can still be recorded.
	DetachFromClient bool
	// relPath is the escaped request path below the agent's mount.
	relPath string
	// observers are this request's own observers, after the gateway's.
	observers []Observer
	// streamGate, when set, decides which relayed events are written.
	streamGate StreamGate
	// eventID is the id of the stream event being observed (streamid.go).
	eventID string
	// result is the bare result of the answer or event being observed.
	result []byte
	// sent is set when the request is handed to the agent's transport.
	sent bool
	// seenTask and seenState are the task id and state the answer or the
	// stream said last, for the span and the access line.
	seenTask  string
	seenState a2a.State
	// life is what the request does when it ends (handoff.go): own for
	// the request's scope, shared by the scopes derived from it.
	life *life
	own  life
}

// Sent reports whether the request was handed to the agent: from then on
// the agent may have processed it, whatever the caller is answered (an
// answer that cannot be recorded is withheld, but the work was done).
func (s *Scope) Sent() bool { return s.sent }

// Log is the request's logger, carrying its agent, operation and, once
// known, its caller.
func (s *Scope) Log() *slog.Logger {
	if s.logger == nil {
		s.logger = s.base.With(s.logAttrs...)
	}
	return s.logger
}

// AddLogAttrs adds attributes to every later line of the request's log.
func (s *Scope) AddLogAttrs(args ...any) {
	s.logAttrs = append(s.logAttrs, args...)
	s.logger = nil
}

// AddObserver adds an observer for this request only.
func (s *Scope) AddObserver(o Observer) { s.observers = append(s.observers, o) }

// Derive makes the request and scope for another operation on the same
// agent, binding and version, as the gateway's own call on the caller's
// behalf (a duplicate send turned into a subscribe, for example). body is
// the JSON-RPC request, from whose params a gRPC request is encoded; REST
// operations are built from op alone.
func (s *Scope) Derive(r *http.Request, op *a2a.Operation, body []byte) (*http.Request, *Scope) {
	d := *s
	d.Op = op
	d.observers = nil
	d.streamGate = nil
	r2 := r.Clone(r.Context())
	switch op.Binding {
	case a2a.BindingGRPC:
		d.Body = deriveGRPC(op, body)
	case a2a.BindingJSONRPC:
		r2.Method = http.MethodPost
		d.relPath = s.Agent.cfg.JSONRPCPath
		d.Body = body
	default:
		method, path := a2a.RESTPath(op.Method, op.Version, op.TaskID, op.PushConfigID)
		r2.Method = method
		d.relPath = strings.TrimSuffix(s.Agent.cfg.RESTPath, "/") + path
		d.Body = nil
	}
	r2.URL.RawQuery = ""
	r2.ContentLength = int64(len(d.Body))
	return r2, &d
}

// SetTenant makes the upstream request carry tenant as its A2A 1.0 routing
// tenant: the path prefix on REST, params.tenant on JSON-RPC, the request
// message's tenant field on gRPC. It replaces whatever tenant the caller
// named. On JSON-RPC and gRPC the new value is spliced into the body as
// sent: every other member (field), and the order, escapes and white space
// around it, keep their bytes.
func (s *Scope) SetTenant(tenant string) error {
	if s.Op.Binding == a2a.BindingREST {
		base := strings.TrimSuffix(s.Agent.cfg.RESTPath, "/")
		rest := strings.TrimPrefix(s.relPath, base)
		if s.Op.Tenant != "" {
			// Drop the caller's /{tenant} segment.
			_, rest, _ = strings.Cut(strings.TrimPrefix(rest, "/"), "/")
			rest = "/" + rest
		}
		s.relPath = base + "/" + url.PathEscape(tenant) + rest
		s.Op.Tenant = tenant
		return nil
	}
	if s.Op.Binding == a2a.BindingGRPC {
		body, err := grpcwire.SetTenant(s.Op.Version, s.Op.Method, s.Body, tenant)
		if err != nil {
			return err
		}
		s.Body, s.Op.Tenant = body, tenant
		return nil
	}
	value, err := json.Marshal(tenant)
	if err != nil {
		return err
	}
	body, err := a2a.SetRPCParam(s.Body, "tenant", value)
	if err != nil {
		return err
	}
	s.Body = body
	s.Op.Tenant = tenant
	return nil
}

// Handler serves one classified request. A returned *a2a.Error is written to
// the caller in the shape of its version and binding; any other error is
// logged and answered as an internal error. A handler that has already
// written a response returns nil.
type Handler func(w http.ResponseWriter, r *http.Request, s *Scope) error

// Stage is one step of the pipeline, wrapping the rest of it.
type Stage func(next Handler) Handler

// Observer sees every result and stream event before the client does:
// ownership recording, lifecycle tracking, dedupe completion and push relay
// subscribe here rather than each parsing the stream again. payload is the
// JSON-RPC response or REST body of the event. An error stops delivery to
// the client: what could not be recorded must not be shown.
type Observer interface {
	Observe(ctx context.Context, s *Scope, ev a2a.Event, payload []byte) error
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, s *Scope, ev a2a.Event, payload []byte) error

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, s *Scope, ev a2a.Event, payload []byte) error {
	return f(ctx, s, ev, payload)
}
