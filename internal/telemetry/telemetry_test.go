package telemetry

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/a2a-gateway/a2a-gateway/internal/telemetry/otlptest"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestOffUnlessConfigured(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
		// A sampler alone is not a destination.
		{"OTEL_TRACES_SAMPLER": "always_on"},
	} {
		tr, err := setup(context.Background(), envMap(env))
		if err != nil {
			t.Fatalf("%v: %v", env, err)
		}
		if (tr.sdk != nil) || tr.Exporter != "off" {
			t.Fatalf("%v: tracing on (%s)", env, tr.Exporter)
		}
	}
}

func TestRefusesWhatItCannotHonour(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "always"}, "OTEL_TRACES_SAMPLER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"},
		{map[string]string{"OTEL_SDK_DISABLED": "yes"}, "OTEL_SDK_DISABLED"},
	} {
		_, err := setup(context.Background(), envMap(tt.env))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("%v: err = %v, want one naming %s", tt.env, err, tt.want)
		}
	}
}

func TestSamplerFromEnv(t *testing.T) {
	for _, tt := range []struct{ name, arg, want string }{
		{"", "", "ParentBased{root:AlwaysOnSampler"},
		{"always_off", "", "AlwaysOffSampler"},
		{"traceidratio", "0.25", "TraceIDRatioBased{0.25}"},
		{"parentbased_traceidratio", "0.5", "ParentBased{root:TraceIDRatioBased{0.5}"},
		{"parentbased_always_off", "", "ParentBased{root:AlwaysOffSampler"},
	} {
		s, err := samplerFromEnv(envMap(map[string]string{"OTEL_TRACES_SAMPLER": tt.name, "OTEL_TRACES_SAMPLER_ARG": tt.arg}))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s.Description(), tt.want) {
			t.Fatalf("%s %s: sampler %s, want %s", tt.name, tt.arg, s.Description(), tt.want)
		}
	}
}

// Both protocols reach a real receiver, with the resource the
// environment names.
func TestExportsOverHTTPAndGRPC(t *testing.T) {
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			var rc *otlptest.Receiver
			var endpoint string
			if proto == "grpc" {
				rc, endpoint = otlptest.NewGRPC(t)
			} else {
				rc, endpoint = otlptest.NewHTTP(t)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_SERVICE_NAME", "gw-test")
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr, err := Setup(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Shutdown(ctx)
			if !(tr.sdk != nil) || tr.Exporter != "otlp "+proto {
				t.Fatalf("exporter %q", tr.Exporter)
			}
			_, span := tr.Provider.Tracer("test").Start(ctx, "probe")
			span.End()
			if err := tr.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			spans := rc.Wait(ctx, t, func(s []otlptest.Span) bool { return len(s) > 0 })
			got := spans[0]
			if got.Name != "probe" || got.Service != "gw-test" || got.ResourceServiceVersion != "dev" || got.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
				t.Fatalf("span %+v", got)
			}
		})
	}
}

// traceRecorder is an SDK provider that keeps its spans in memory.
func traceRecorder(t *testing.T) *sdktrace.TracerProvider {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}
