// Package telemetry sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables. Tracing is off unless they ask for it: then the
// tracer provider is a no-op and costs nothing on the request path.
//
// Read here: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER (otlp or none),
// OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// (http/protobuf or grpc), OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG,
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. The OTLP exporters read
// the rest themselves: OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT,
// _HEADERS, _TIMEOUT, _INSECURE, _CERTIFICATE and their TRACES_ forms; the
// batch processor reads OTEL_BSP_*.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/a2a-gateway/a2a-gateway/internal/version"
)

// ServiceName is the service.name spans carry unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "a2a-gateway"

// Tracing is the process's tracing: a provider, the W3C propagator, and
// what to flush at exit.
type Tracing struct {
	// Provider makes the tracers; a no-op one when tracing is off.
	Provider trace.TracerProvider
	// Propagator reads and writes W3C traceparent, tracestate and baggage.
	Propagator propagation.TextMapPropagator
	// Exporter describes where spans go ("off" when tracing is off), for
	// the startup log line.
	Exporter string
	sdk      *sdktrace.TracerProvider
}

// Install makes t the process-wide provider and propagator, which the
// HTTP and Redis instrumentation use.
func (t *Tracing) Install() {
	otel.SetTracerProvider(t.Provider)
	otel.SetTextMapPropagator(t.Propagator)
}

// ForceFlush exports every span ended so far.
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter; spans ended later are dropped.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Setup reads the process environment and builds the tracing it asks
// for. Values it cannot honour are errors, not silently ignored: a
// misspelt sampler must not quietly trace everything, nor an unknown
// exporter quietly nothing.
func Setup(ctx context.Context) (*Tracing, error) {
	return setup(ctx, os.Getenv)
}

func setup(ctx context.Context, getenv func(string) string) (*Tracing, error) {
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	off := &Tracing{Provider: noop.NewTracerProvider(), Propagator: prop, Exporter: "off"}
	if disabled, err := envBool(getenv, "OTEL_SDK_DISABLED"); err != nil {
		return nil, err
	} else if disabled {
		return off, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return off, nil
	case "":
		// The specification's default is otlp; here tracing stays off
		// until an endpoint is named, so that a gateway never sends spans
		// to a collector nobody configured.
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return off, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: want otlp or none, got %q", exp)
	}
	sampler, err := samplerFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exporter sdktrace.SpanExporter
	switch protocol {
	case "", "http/protobuf":
		protocol = "http/protobuf"
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: want http/protobuf or grpc, got %q", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", ServiceName),
			attribute.String("service.version", version.Version()),
		),
		resource.WithTelemetrySDK(),
		// Last, so the operator's OTEL_SERVICE_NAME and
		// OTEL_RESOURCE_ATTRIBUTES win over the defaults above.
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exporter.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(res),
	)
	return &Tracing{Provider: sdk, Propagator: prop, Exporter: "otlp " + protocol, sdk: sdk}, nil
}

// samplerFromEnv is OTEL_TRACES_SAMPLER with its argument; the default is
// parentbased_always_on, as the specification says.
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))
	ratio := func() (float64, error) {
		arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: want a ratio between 0 and 1, got %q", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: want always_on, always_off, traceidratio or their parentbased_ forms, got %q", name)
}

func envBool(getenv func(string) string, key string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(key))); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s: want true or false, got %q", key, v)
	}
}
