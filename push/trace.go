package push

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

const tracerName = "github.com/a2a-gateway/a2a-gateway/push"

// originOf is the W3C trace context of ctx, the request an event came
// from, as it is kept with the event's notifications. Baggage is left
// out: it is the caller's, not the notification's.
func originOf(ctx context.Context) (traceParent, traceState string) {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// startAttempt starts the span of one delivery attempt, a child of the
// request the event came from (a root of its own when there was none).
// The webhook URL is not an attribute beyond its receiver: paths and
// queries may carry secrets.
func startAttempt(ctx context.Context, n store.Delivery, r Request, receiver string) (context.Context, trace.Span) {
	if r.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": r.TraceParent, "tracestate": r.TraceState})
	}
	return otel.Tracer(tracerName).Start(ctx, "push deliver",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("a2a.task.id", n.TaskID),
			attribute.String("a2a.push.notification.id", n.ID),
			attribute.String("a2a.push.receiver", receiver),
		))
}

// endAttempt records the attempt's outcome on its span and returns err.
func endAttempt(span trace.Span, status int, err error) error {
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case status != 0:
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status < 200 || status >= 300 {
			span.SetStatus(codes.Error, strconv.Itoa(status)+" "+http.StatusText(status))
		}
	}
	return err
}
