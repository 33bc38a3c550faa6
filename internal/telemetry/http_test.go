package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestForwardedUserAgent(t *testing.T) {
	if got := ForwardedUserAgent(""); got != "a2a-gateway/dev" {
		t.Fatalf("no client agent: %q", got)
	}
	if got := ForwardedUserAgent("my-client/2.1"); got != "my-client/2.1 a2a-gateway/dev" {
		t.Fatalf("client agent: %q", got)
	}
}

// The transport names the gateway unless the request names itself, and
// leaves the caller's request as it was.
func TestTransportUserAgent(t *testing.T) {
	seen := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r.UserAgent() }))
	defer srv.Close()
	client := &http.Client{Transport: Transport(nil, "test")}
	for _, ua := range []string{"", "own/1"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if ua != "" {
			req.Header.Set("User-Agent", ua)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := ua
		if want == "" {
			want = "a2a-gateway/dev"
		}
		if got := <-seen; got != want {
			t.Fatalf("User-Agent %q, want %q", got, want)
		}
		if req.Header.Get("User-Agent") != ua {
			t.Fatal("the transport changed the caller's request")
		}
	}
}

// Only work under an existing span is traced.
func TestChildrenOnly(t *testing.T) {
	tp := ChildrenOnly(traceRecorder(t))
	ctx, span := tp.Tracer("t").Start(context.Background(), "root")
	if span.SpanContext().IsValid() || ctx != context.Background() {
		t.Fatal("a root span was started")
	}
	parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled}))
	_, child := tp.Tracer("t").Start(parent, "child")
	if child.SpanContext().TraceID() != (trace.TraceID{1}) || !child.IsRecording() {
		t.Fatal("a child span was not started")
	}
	child.End()
}

// BenchmarkHandlerOff is what a request with a traceparent pays when
// tracing is off (no-op provider, W3C propagator installed): bare, with
// Handler, and with the HTTP instrumentation Handler then leaves out.
func BenchmarkHandlerOff(b *testing.B) {
	tr, err := setup(context.Background(), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	tr.Install()
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	req := httptest.NewRequest(http.MethodPost, "/agents/demo/", nil)
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})), propagation.HeaderCarrier(req.Header))
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"handler", Handler(bare, "a2a-gateway")}, {"otelhttp", otelhttp.NewHandler(bare, "a2a-gateway")}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
