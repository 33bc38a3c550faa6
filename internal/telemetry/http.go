package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/a2a-gateway/a2a-gateway/internal/version"
)

// Transport wraps base (http.DefaultTransport when nil) for the gateway's
// outbound requests: each made for a traced request gets a client span
// named name, whose traceparent the request carries, and every request
// the gateway's User-Agent unless it names one. It uses the installed
// provider and propagator.
func Transport(base http.RoundTripper, name string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if !Recording() {
		return userAgent{base}
	}
	return otelhttp.NewTransport(userAgent{base},
		otelhttp.WithTracerProvider(ChildrenOnly(otel.GetTracerProvider())),
		otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return name }))
}

// Handler wraps h with the server span of each request, continuing the
// caller's trace from its traceparent. Handlers below name the span once
// they know what the request is (proxy.serveAgent).
//
// With tracing off it only reads the caller's trace context, so that the
// request's log lines still carry the caller's trace id: the HTTP
// instrumentation costs several microseconds a request even when its spans
// record nothing (BenchmarkHandlerOff).
func Handler(h http.Handler, name string) http.Handler {
	if !Recording() {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Traceparent") != "" {
				r = r.WithContext(otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
			}
			h.ServeHTTP(w, r)
		})
	}
	return otelhttp.NewHandler(h, name, otelhttp.WithSpanNameFormatter(func(op string, r *http.Request) string { return op + " " + r.Method }))
}

// Recording reports whether spans can be recorded: false once Install put
// in the no-op provider of tracing that is off, so that components built
// after it can leave their instrumentation out. Components built before
// any Install use the global provider, which records once one is
// installed.
func Recording() bool {
	_, off := otel.GetTracerProvider().(noop.TracerProvider)
	return !off
}

type userAgent struct{ next http.RoundTripper }

func (u userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("User-Agent") != "" {
		return u.next.RoundTrip(r)
	}
	// A RoundTripper must not modify the caller's request.
	r2 := r.Clone(r.Context())
	r2.Header.Set("User-Agent", version.UserAgent())
	return u.next.RoundTrip(r2)
}

// ForwardedUserAgent is the User-Agent of a request the gateway forwards:
// the caller's product tokens, then the gateway's (RFC 9110 10.1.5).
func ForwardedUserAgent(client string) string {
	if client == "" {
		return version.UserAgent()
	}
	return client + " " + version.UserAgent()
}

// ChildrenOnly makes spans only under a span that exists already: work
// done for a request is traced, background loops (queue polling, sweeps)
// do not start traces of their own on every tick.
func ChildrenOnly(tp trace.TracerProvider) trace.TracerProvider {
	return childrenOnly{tp: tp}
}

type childrenOnly struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (c childrenOnly) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childTracer{t: c.tp.Tracer(name, opts...)}
}

type childTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (c childTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		// The span in ctx: none, so a no-op one that records nothing.
		return ctx, trace.SpanFromContext(ctx)
	}
	return c.t.Start(ctx, name, opts...)
}
