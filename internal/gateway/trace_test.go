package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry/otlptest"
)

// startTracing exports the process's spans over OTLP/HTTP to a receiver
// on loopback, for the test's duration.
func startTracing(t *testing.T) (*otlptest.Receiver, *telemetry.Tracing) {
	t.Helper()
	rc, endpoint := otlptest.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	// Spans ended after a flush arrive with the next scheduled export.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	tr, err := telemetry.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr.Install()
	t.Cleanup(func() {
		_ = tr.Shutdown(context.Background())
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	return rc, tr
}

// clientSpan is the caller's own span, and its traceparent header.
func clientSpan(t *testing.T, tr *telemetry.Tracing, name string) (trace.Span, http.Header) {
	t.Helper()
	ctx, span := tr.Provider.Tracer("client").Start(context.Background(), name, trace.WithSpanKind(trace.SpanKindClient))
	h := v10()
	tr.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
	return span, h
}

// spanTree indexes received spans by id.
type spanTree map[string]otlptest.Span

func treeOf(spans []otlptest.Span) spanTree {
	tree := spanTree{}
	for _, s := range spans {
		tree[s.SpanID] = s
	}
	return tree
}

// children are the spans whose parent is id.
func (tree spanTree) children(id string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range tree {
		if s.ParentSpanID == id {
			out = append(out, s)
		}
	}
	return out
}

// child is the one child of id named name.
func (tree spanTree) child(t *testing.T, id, name string) otlptest.Span {
	t.Helper()
	for _, s := range tree.children(id) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("span %s (%s) has no child %q; children: %v", tree[id].Name, id, name, otlptest.Names(tree.children(id)))
	return otlptest.Span{}
}

// under reports whether a span named name (and kind) lies anywhere below id.
func (tree spanTree) under(id string, ok func(otlptest.Span) bool) bool {
	for _, c := range tree.children(id) {
		if ok(c) || tree.under(c.SpanID, ok) {
			return true
		}
	}
	return false
}

func wantAttrs(t *testing.T, s otlptest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if s.Attrs[k] != v {
			t.Errorf("span %s: %s = %q, want %q (attributes %v)", s.Name, k, s.Attrs[k], v, s.Attrs)
		}
	}
}

// A send, and a streamed task with a push config, each followed from the
// caller's span through the gateway's stages and Redis to the agent, and
// for the stream on to the webhook's request.
func TestTraceOfSendStreamAndPush(t *testing.T) {
	rc, tr := startTracing(t)
	env := startPush(t, func(c *config.Config) { c.Tracing.TenantAttribute = true })
	c := env.acme
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	// A send.
	sendSpan, h := clientSpan(t, tr, "client send")
	env.Agent.ResetRequests()
	resp, body := c.do(t, request{method: http.MethodPost, path: "/", header: h,
		body: rpcBody(a2a.MethodSend, a2a.V10, c.nextID("s"), `{"message":`+c.msg10("complete")+`}`)})
	sendSpan.End()
	ev, err := a2a.ParseRPCEvent(body)
	if resp.StatusCode != http.StatusOK || err != nil || ev.TaskID == "" {
		t.Fatalf("send: HTTP %d %v: %s", resp.StatusCode, err, body)
	}
	agentSaw := env.Agent.Requests()[0].Header.Get("Traceparent")
	// The caller's User-Agent, then the gateway's.
	if ua := env.Agent.Requests()[0].Header.Get("User-Agent"); ua != "Go-http-client/1.1 a2a-gateway/dev" {
		t.Fatalf("the agent saw User-Agent %q", ua)
	}

	// A read of that task: authorization asks the store who owns it.
	getSpan, h := clientSpan(t, tr, "client get")
	resp, body = c.do(t, request{method: http.MethodPost, path: "/", header: h,
		body: rpcBody(a2a.MethodGetTask, a2a.V10, c.nextID("g"), `{"id":"`+ev.TaskID+`"}`)})
	getSpan.End()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("get: HTTP %d: %s", resp.StatusCode, body)
	}

	// A streamed task with a push config inline.
	rcv := newWebhook(t)
	send := inlineSends(c, "stream 3", rcv.url())[0]
	streamSpan, h := clientSpan(t, tr, "client stream")
	events := streamResults(t, c.open(t, ctx, request{method: http.MethodPost, path: "/", header: h, body: []byte(send.body), rpc: true}))
	streamSpan.End()
	notified := waitNotified(t, rcv, events, a2a.V10)
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}

	streamTrace := streamSpan.SpanContext().TraceID().String()
	for i, n := range notified {
		tp := n.header.Get("Traceparent")
		if !strings.HasPrefix(tp, "00-"+streamTrace+"-") {
			t.Fatalf("notification %d: traceparent %q, want one of trace %s", i, tp, streamTrace)
		}
		if ua := n.header.Get("User-Agent"); ua != "a2a-gateway/dev" {
			t.Fatalf("notification %d: User-Agent %q", i, ua)
		}
	}
	// Every attempt's span is exported once the webhook has answered.
	spans := rc.Wait(ctx, t, func(spans []otlptest.Span) bool {
		n := 0
		for _, s := range spans {
			if s.Name == "push deliver" && s.TraceID == streamTrace {
				n++
			}
		}
		if n < len(notified) {
			_ = tr.ForceFlush(ctx)
			return false
		}
		return true
	})
	tree := treeOf(spans)

	// The send: the client's span, the gateway's server span, its stages,
	// the call to the agent carrying traceparent.
	server := tree.child(t, sendSpan.SpanContext().SpanID().String(), "send demo")
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || server.Service != telemetry.ServiceName {
		t.Fatalf("server span %+v", server)
	}
	wantAttrs(t, server, map[string]string{
		"a2a.agent": "demo", "a2a.operation": "send", "a2a.version": "1.0", "a2a.binding": "jsonrpc",
		"a2a.tenant": "acme", "a2a.task.id": ev.TaskID, "a2a.task.state": "completed",
	})
	for _, stage := range []string{"authenticate", "authorize", "dedupe"} {
		tree.child(t, server.SpanID, stage)
	}
	call := tree.child(t, server.SpanID, "call demo")
	if call.Kind != tracepb.Span_SPAN_KIND_CLIENT || agentSaw != "00-"+call.TraceID+"-"+call.SpanID+"-01" {
		t.Fatalf("agent call span %s/%s (kind %v); the agent saw traceparent %q", call.TraceID, call.SpanID, call.Kind, agentSaw)
	}
	isRedis := func(s otlptest.Span) bool {
		return s.Attrs["db.system"] == "redis" || s.Attrs["db.system.name"] == "redis"
	}
	if !tree.under(server.SpanID, isRedis) {
		t.Fatalf("no Redis span under the send; spans: %v", otlptest.Names(spans))
	}
	for _, s := range spans {
		if isRedis(s) && (s.Attrs["db.statement"] != "" || s.Attrs["db.query.text"] != "") {
			t.Fatalf("Redis span %s carries the command text", s.Name)
		}
	}

	get := tree.child(t, getSpan.SpanContext().SpanID().String(), "get demo")
	wantAttrs(t, get, map[string]string{"a2a.operation": "get", "a2a.task.id": ev.TaskID})
	if authz := tree.child(t, get.SpanID, "authorize"); !tree.under(authz.SpanID, isRedis) {
		t.Fatalf("no Redis span under the get's authorization; its children: %v", otlptest.Names(tree.children(authz.SpanID)))
	}

	// The stream: the same tree, and every delivery attempt a child of
	// the stream's server span, with the webhook's traceparent its own.
	stream := tree.child(t, streamSpan.SpanContext().SpanID().String(), "stream demo")
	wantAttrs(t, stream, map[string]string{"a2a.operation": "stream", "a2a.task.state": "completed"})
	tree.child(t, stream.SpanID, "call demo")
	attempts := map[string]bool{}
	for _, s := range tree.children(stream.SpanID) {
		if s.Name == "push deliver" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			attempts["00-"+s.TraceID+"-"+s.SpanID+"-01"] = true
		}
	}
	for i, n := range notified {
		if !attempts[n.header.Get("Traceparent")] {
			t.Fatalf("notification %d: traceparent %q is not a delivery attempt span under the stream", i, n.header.Get("Traceparent"))
		}
	}
}
