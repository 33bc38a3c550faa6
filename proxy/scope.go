package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/a2a"
	"github.com/a2a-gateway/a2a-gateway/authz"
)

// Scope is everything the gateway knows about one request, built once and
// handed to every stage: the agent, the classified operation, the body
// (read once, forwarded as the same bytes) and, once authenticated, the
// caller. Stages add to it; none of them re-reads the body.
type Scope struct {
	Agent     *Agent
	Op        *a2a.Operation
	Body      []byte
	Principal *authz.Principal
	// Grant is the authorization decision for this request; it records
	// the ids the answer reveals.
	Grant *authz.Grant
	Start time.Time
	Log   *slog.Logger
	// Header holds extra headers the forwarder sends upstream (set by stages).
	Header http.Header
	// relPath is the escaped request path below the agent's mount.
	relPath string
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
