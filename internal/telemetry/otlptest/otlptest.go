// Package otlptest is an OTLP trace receiver on loopback, for tests: it
// decodes what the exporters send, over HTTP (protobuf on /v1/traces) or
// gRPC, and keeps the spans.
package otlptest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name                   string
	TraceID, SpanID        string
	ParentSpanID           string
	Kind                   tracepb.Span_SpanKind
	Attrs                  map[string]string
	Service                string
	Links                  []string // trace-id/span-id of each link
	StatusError            bool
	ResourceServiceVersion string
}

// Receiver collects spans.
type Receiver struct {
	mu    sync.Mutex
	spans []Span
	// changed is closed and replaced whenever spans arrive.
	changed chan struct{}
}

func newReceiver() *Receiver { return &Receiver{changed: make(chan struct{})} }

// NewHTTP starts an OTLP/HTTP receiver; its URL is the value for
// OTEL_EXPORTER_OTLP_ENDPOINT.
func NewHTTP(t testing.TB) (*Receiver, string) {
	t.Helper()
	rc := newReceiver()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.add(&req)
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

// NewGRPC starts an OTLP/gRPC receiver; the value for
// OTEL_EXPORTER_OTLP_ENDPOINT is http://<addr> (plaintext).
func NewGRPC(t testing.TB) (*Receiver, string) {
	t.Helper()
	rc := newReceiver()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(s, &grpcService{rc: rc})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return rc, "http://" + l.Addr().String()
}

type grpcService struct {
	collectorpb.UnimplementedTraceServiceServer
	rc *Receiver
}

func (g *grpcService) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	g.rc.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func (rc *Receiver) add(req *collectorpb.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{
					Name:                   sp.GetName(),
					TraceID:                hex.EncodeToString(sp.GetTraceId()),
					SpanID:                 hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID:           hex.EncodeToString(sp.GetParentSpanId()),
					Kind:                   sp.GetKind(),
					Attrs:                  attrs(sp.GetAttributes()),
					Service:                res["service.name"],
					ResourceServiceVersion: res["service.version"],
					StatusError:            sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
				}
				for _, l := range sp.GetLinks() {
					s.Links = append(s.Links, hex.EncodeToString(l.GetTraceId())+"/"+hex.EncodeToString(l.GetSpanId()))
				}
				rc.spans = append(rc.spans, s)
			}
		}
	}
	close(rc.changed)
	rc.changed = make(chan struct{})
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		default:
			// Numbers and booleans compare as their protobuf text.
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans returns every span received so far.
func (rc *Receiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Span(nil), rc.spans...)
}

// Wait returns the spans once ok accepts them, or fails the test when ctx
// ends first.
func (rc *Receiver) Wait(ctx context.Context, t testing.TB, ok func([]Span) bool) []Span {
	t.Helper()
	for {
		rc.mu.Lock()
		spans, changed := append([]Span(nil), rc.spans...), rc.changed
		rc.mu.Unlock()
		if ok(spans) {
			return spans
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("spans not received: %v; have %d: %v", ctx.Err(), len(spans), Names(spans))
			return nil
		}
	}
}

// Names lists the span names, for failure messages.
func Names(spans []Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}
