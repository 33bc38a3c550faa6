package push

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// installTracing makes the process's provider record into the returned
// recorder for the test's duration.
func installTracing(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	return rec
}

// The trace context the event's request had is kept in the queued
// notification, and the attempt made from it, later and elsewhere, is a
// child span whose traceparent the webhook receives.
func TestDeliveryAttemptContinuesTheOriginTrace(t *testing.T) {
	rec := installTracing(t)
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()

	ctx, origin := otel.Tracer("test").Start(context.Background(), "request")
	tp, ts := originOf(ctx)
	origin.End()
	if !strings.HasPrefix(tp, "00-"+origin.SpanContext().TraceID().String()+"-") {
		t.Fatalf("origin traceparent %q", tp)
	}
	payload, err := EncodePayload(Request{URL: srv.URL + "/hook?k=secret", ContentType: "application/json", Body: []byte(`{}`), TraceParent: tp, TraceState: ts})
	if err != nil {
		t.Fatal(err)
	}
	status, _, err := testSender(t).Send(context.Background(), store.Delivery{ID: "n1", Endpoint: "e", TaskID: "t1", Payload: payload})
	if err != nil || status != http.StatusOK {
		t.Fatalf("send: %d, %v", status, err)
	}
	h := <-got
	sc := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h))
	remote := trace.SpanContextFromContext(sc)
	if remote.TraceID() != origin.SpanContext().TraceID() || remote.SpanID() == origin.SpanContext().SpanID() {
		t.Fatalf("webhook traceparent %q, origin %s", h.Get("Traceparent"), origin.SpanContext().SpanID())
	}
	if ua := h.Get("User-Agent"); ua != "a2a-gateway/dev" {
		t.Fatalf("User-Agent %q", ua)
	}
	var attempt sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "push deliver" {
			attempt = s
		}
	}
	if attempt == nil || attempt.Parent().SpanID() != origin.SpanContext().SpanID() || attempt.SpanContext().SpanID() != remote.SpanID() ||
		attempt.SpanKind() != trace.SpanKindClient {
		t.Fatalf("attempt span %+v", attempt)
	}
	for _, a := range attempt.Attributes() {
		if strings.Contains(a.Value.String(), "secret") {
			t.Fatalf("attribute %s carries the webhook's query", a.Key)
		}
	}
}

// Without an origin the attempt is a trace of its own.
func TestDeliveryAttemptWithoutOrigin(t *testing.T) {
	rec := installTracing(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer srv.Close()
	payload, err := EncodePayload(Request{URL: srv.URL, ContentType: "application/json", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, err := testSender(t).Send(context.Background(), store.Delivery{ID: "n1", Endpoint: "e", TaskID: "t1", Payload: payload}); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("send: %d, %v", status, err)
	}
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Parent().IsValid() || ended[0].Status().Code.String() != "Error" {
		t.Fatalf("spans %+v", ended)
	}
}
