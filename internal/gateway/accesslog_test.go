package gateway_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// logLines decodes the JSON lines of a log.
func logLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func accessLines(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["log"] == "access" {
			out = append(out, l)
		}
	}
	return out
}

// One access line per request, with the trace id, the caller and the
// task, and never the credential; every other line of the request
// carries the same trace id.
func TestAccessLog(t *testing.T) {
	_, tr := startTracing(t)
	var buf syncBuffer
	env := gwtest.StartLogged(t, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	c := newCaller(t, env)

	span, h := clientSpan(t, tr, "client send")
	body := rpcBody(a2a.MethodSend, a2a.V10, c.nextID("s"), `{"message":`+c.msg10("complete")+`}`)
	resp, answer := c.do(t, request{method: http.MethodPost, path: "/", header: h, body: body})
	span.End()
	ev, err := a2a.ParseRPCEvent(answer)
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("send: HTTP %d %v", resp.StatusCode, err)
	}
	traceID := span.SpanContext().TraceID().String()

	refused, h := clientSpan(t, tr, "client refused")
	resp, _ = c.do(t, request{method: http.MethodPost, path: "/", header: h, anonymous: true, body: body})
	refused.End()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous send: HTTP %d", resp.StatusCode)
	}

	log := buf.String()
	if strings.Contains(log, c.token) {
		t.Fatal("the log carries the caller's token")
	}
	lines := logLines(t, log)
	access := accessLines(lines)
	if len(access) != 2 {
		t.Fatalf("%d access lines, want 2: %s", len(access), log)
	}
	want := map[string]any{
		"agent": "demo", "op": "send", "version": "1.0", "binding": "jsonrpc", "tenant": "acme", "subject": "alice",
		"task_id": ev.TaskID, "status": float64(200), "reason": "", "bytes_in": float64(len(body)), "bytes_out": float64(len(answer)),
		"trace_id": traceID,
	}
	for k, v := range want {
		if access[0][k] != v {
			t.Errorf("access line: %s = %v, want %v", k, access[0][k], v)
		}
	}
	if d, ok := access[0]["duration"].(float64); !ok || d <= 0 {
		t.Errorf("access line: duration %v", access[0]["duration"])
	}
	refusedID := refused.SpanContext().TraceID().String()
	if a := access[1]; a["status"] != float64(401) || a["reason"] != "UNAUTHENTICATED" || a["trace_id"] != refusedID || a["tenant"] != "" {
		t.Errorf("refusal's access line: %v", a)
	}
	// The refusal's own lines (authentication failed, request refused)
	// carry its trace id.
	var refusalLines int
	for _, l := range lines {
		if l["log"] != "access" && l["trace_id"] == refusedID {
			refusalLines++
		}
	}
	if refusalLines == 0 {
		t.Fatalf("no line of the refused request carries its trace id: %s", log)
	}
}

func TestAccessLogOff(t *testing.T) {
	var buf syncBuffer
	off := false
	env := gwtest.StartLogged(t, slog.New(slog.NewJSONHandler(&buf, nil)), func(c *config.Config) { c.Log.Access.Enabled = &off })
	c := newCaller(t, env)
	resp, _ := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSend, a2a.V10, c.nextID("s"), `{"message":`+c.msg10("complete")+`}`)})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("send: HTTP %d", resp.StatusCode)
	}
	if n := len(accessLines(logLines(t, buf.String()))); n != 0 {
		t.Fatalf("%d access lines with the access log off", n)
	}
}
