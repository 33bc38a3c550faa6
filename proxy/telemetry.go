package proxy

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Span attributes of a request. The tenant is set only with
// tracing.tenant_attribute.
const (
	attrAgent     = attribute.Key("a2a.agent")
	attrOperation = attribute.Key("a2a.operation")
	attrVersion   = attribute.Key("a2a.version")
	attrBinding   = attribute.Key("a2a.binding")
	attrTenant    = attribute.Key("a2a.tenant")
	attrTaskID    = attribute.Key("a2a.task.id")
	attrState     = attribute.Key("a2a.task.state")
	attrReason    = attribute.Key("a2a.error.reason")
)

// saw keeps the task id and state the answer or an event says, so the
// span and the access line name the task a send created.
func (s *Scope) saw(ev a2a.Event) {
	if ev.TaskID != "" {
		s.seenTask = ev.TaskID
	}
	if ev.State != a2a.StateUnknown {
		s.seenState = ev.State
	}
}

// taskID is the task the request is about: the one it names, else the
// one its answer revealed.
func (s *Scope) taskID() string {
	if s.seenTask != "" {
		return s.seenTask
	}
	return s.Op.TaskID
}

// traceAttrs start a request's log attributes with its trace id, so every
// line of the request can be found from its trace and back.
func traceAttrs(r *http.Request) []any {
	id := traceID(r)
	if id == "" {
		return make([]any, 0, 8)
	}
	return append(make([]any, 0, 10), "trace_id", id)
}

// nameSpan names the request's server span by what the request is, not
// by its path, which carries ids.
func nameSpan(r *http.Request, name string) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
		span.SetName(name)
	}
}

// startSpan names the server span once the request is classified.
func (g *Gateway) startSpan(r *http.Request, s *Scope) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	op := s.Op.Method.String()
	span.SetName(op + " " + s.Agent.Name)
	span.SetAttributes(
		attrAgent.String(s.Agent.Name), attrOperation.String(op),
		attrVersion.String(s.Op.Version.String()), attrBinding.String(s.Op.Binding.String()),
	)
}

// endSpan adds what only the end of the request knows: the caller, the
// task and its state, the refusal.
func (g *Gateway) endSpan(r *http.Request, s *Scope, reason string) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	if g.tenantOnSpans && s.Principal != nil {
		span.SetAttributes(attrTenant.String(s.Principal.Tenant))
	}
	if id := s.taskID(); id != "" {
		span.SetAttributes(attrTaskID.String(id))
	}
	if s.seenState != a2a.StateUnknown {
		span.SetAttributes(attrState.String(s.seenState.String()))
	}
	if reason != "" {
		span.SetAttributes(attrReason.String(reason))
		span.SetStatus(codes.Error, reason)
	}
}

// access writes the request's access line, unless the access log is off
// or the request is not sampled. It never names a credential: the caller
// is its tenant and subject.
func (g *Gateway) access(r *http.Request, s *Scope, rec *statusRecorder, reason string, took time.Duration) {
	if !g.sampled() {
		return
	}
	var tenant, subject string
	if s.Principal != nil {
		tenant, subject = s.Principal.Tenant, s.Principal.Subject
	}
	attrs := []slog.Attr{
		slog.String("log", "access"),
		slog.String("agent", s.Agent.Name),
		slog.String("op", s.Op.Method.String()),
		slog.String("version", s.Op.Version.String()),
		slog.String("binding", s.Op.Binding.String()),
		slog.String("tenant", tenant),
		slog.String("subject", subject),
		slog.String("task_id", s.taskID()),
		slog.Int("status", rec.status),
		slog.String("reason", reason),
		slog.Duration("duration", took),
		slog.Int("bytes_in", len(s.Body)),
		slog.Int64("bytes_out", rec.bytes),
	}
	g.logAccess(r, attrs)
}

// accessCard is the access line of an agent card request.
func (g *Gateway) accessCard(r *http.Request, a *Agent, rec *statusRecorder, start time.Time) {
	if !g.sampled() {
		return
	}
	attrs := []slog.Attr{
		slog.String("log", "access"),
		slog.String("agent", a.Name),
		slog.String("op", "card"),
		slog.Int("status", rec.status),
		slog.Duration("duration", time.Since(start)),
		slog.Int64("bytes_out", rec.bytes),
	}
	g.logAccess(r, attrs)
}

func (g *Gateway) sampled() bool {
	if !g.accessLog.On() {
		return false
	}
	return g.accessLog.SampleRate >= 1 || rand.Float64() < g.accessLog.SampleRate
}

// logAccess writes one access line, with the trace id when there is one.
func (g *Gateway) logAccess(r *http.Request, attrs []slog.Attr) {
	if id := traceID(r); id != "" {
		attrs = append(attrs, slog.String("trace_id", id))
	}
	g.log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// traceID is the request's trace id, "" when it has none.
func traceID(r *http.Request) string {
	sc := trace.SpanContextFromContext(r.Context())
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}
