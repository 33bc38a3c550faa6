package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestLogHandlerAddsTraceID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("log", "audit")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	log.InfoContext(trace.ContextWithSpanContext(context.Background(), sc), "with a span")
	log.Info("without")
	dec := json.NewDecoder(&buf)
	var with, without map[string]any
	if err := dec.Decode(&with); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&without); err != nil {
		t.Fatal(err)
	}
	if with["trace_id"] != sc.TraceID().String() || with["log"] != "audit" {
		t.Fatalf("line with a span: %v", with)
	}
	if _, ok := without["trace_id"]; ok {
		t.Fatalf("line without a span: %v", without)
	}
}
