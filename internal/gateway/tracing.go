package gateway

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

const tracerName = "github.com/a2a-gateway/a2a-gateway/internal/gateway"

// stageSpan is what a traced stage's span needs to know across the call
// into the rest of the pipeline: its parent, so the rest is not counted as
// the stage's work, and whether the stage let the request through.
type stageSpan struct {
	span, parent trace.Span
	passed       bool
}

type stageSpanKey struct{}

// traced gives a stage a span of its own, from when the stage starts until
// it passes the request on or refuses it. What runs after it (the rest of
// the pipeline, the agent's call) is the request span's child again, not
// the stage's.
func traced(name string, stage proxy.Stage) proxy.Stage {
	tracer := otel.Tracer(tracerName)
	return func(next proxy.Handler) proxy.Handler {
		inner := stage(func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			ss, ok := r.Context().Value(stageSpanKey{}).(*stageSpan)
			if !ok {
				return next(w, r, s)
			}
			ss.passed = true
			ss.span.End()
			// The stage's own context values stay; only the current span
			// goes back to the request's.
			return next(w, r.WithContext(trace.ContextWithSpan(r.Context(), ss.parent)), s)
		})
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			parent := trace.SpanFromContext(r.Context())
			if !parent.IsRecording() {
				return inner(w, r, s)
			}
			ctx, span := tracer.Start(r.Context(), name)
			ss := &stageSpan{span: span, parent: parent}
			err := inner(w, r.WithContext(context.WithValue(ctx, stageSpanKey{}, ss)), s)
			if !ss.passed {
				if err != nil {
					span.SetStatus(codes.Error, refusalReason(err))
				}
				span.End()
			}
			return err
		}
	}
}

// refusalReason is the A2A reason of a stage's refusal, "internal" for
// anything else.
func refusalReason(err error) string {
	if ae, ok := errors.AsType[*a2a.Error](err); ok {
		return ae.Reason
	}
	if errors.Is(err, proxy.ErrClientGone) {
		return "client_gone"
	}
	return "internal"
}
