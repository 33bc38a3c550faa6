package proxy

import (
	"context"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

// The tenant goes on spans only when the configuration allows it.
func TestSpanTenantOnlyWhenAllowed(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		ctx, span := tp.Tracer("test").Start(context.Background(), "request")
		r := httptest.NewRequest("POST", "/agents/a/", nil).WithContext(ctx)
		g := &Gateway{tenantOnSpans: allowed}
		s := &Scope{Agent: &Agent{Name: "a"}, Op: &a2a.Operation{Method: a2a.MethodSend, TaskID: "t1"}, Principal: &request.Principal{Tenant: "acme", Subject: "alice"}}
		s.saw(a2a.Event{TaskID: "t2", State: a2a.StateWorking})
		g.startSpan(r, s)
		g.endSpan(r, s, "")
		span.End()
		got := map[string]string{}
		for _, kv := range rec.Ended()[0].Attributes() {
			got[string(kv.Key)] = kv.Value.AsString()
		}
		if _, has := got["a2a.tenant"]; has != allowed {
			t.Fatalf("tenant_attribute %v: attributes %v", allowed, got)
		}
		if got["a2a.task.id"] != "t2" || got["a2a.task.state"] != "working" || got["a2a.operation"] != "send" || rec.Ended()[0].Name() != "send a" {
			t.Fatalf("attributes %v, name %q", got, rec.Ended()[0].Name())
		}
	}
}

// A sample rate below 1 logs some requests and not others; 1 logs all;
// off logs none.
func TestAccessSampling(t *testing.T) {
	off := false
	for _, tt := range []struct {
		opts      config.AccessLogOptions
		some, all bool
	}{
		{config.AccessLogOptions{SampleRate: 1}, true, true},
		{config.AccessLogOptions{SampleRate: 0.5}, true, false},
		{config.AccessLogOptions{SampleRate: 1, Enabled: &off}, false, false},
	} {
		g := &Gateway{accessLog: tt.opts}
		n := 0
		// At 0.5, all or none of 200 happens once in 2^199 runs.
		for range 200 {
			if g.sampled() {
				n++
			}
		}
		if (n > 0) != tt.some || (n == 200) != tt.all {
			t.Fatalf("%+v: %d of 200 sampled", tt.opts, n)
		}
	}
}
