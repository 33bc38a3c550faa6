package lifecycle_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// scripts are the 0.3 event streams of the scripted upstream, by the first
// word of the message; each event is the result member of one SSE event.
var scripts = map[string][]string{
	// A late artifact after canceled.
	"cancel-then-artifact": {
		`{"kind":"task","id":"T1","contextId":"C1","status":{"state":"submitted"}}`,
		`{"kind":"status-update","taskId":"T1","contextId":"C1","status":{"state":"working"},"final":false}`,
		`{"kind":"status-update","taskId":"T1","contextId":"C1","status":{"state":"canceled"},"final":true}`,
		`{"kind":"artifact-update","taskId":"T1","contextId":"C1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"late"}]}}`,
	},
	// A working after completed.
	"complete-then-working": {
		`{"kind":"task","id":"T2","contextId":"C2","status":{"state":"submitted"}}`,
		`{"kind":"status-update","taskId":"T2","contextId":"C2","status":{"state":"working"},"final":false}`,
		`{"kind":"status-update","taskId":"T2","contextId":"C2","status":{"state":"completed"},"final":true}`,
		`{"kind":"status-update","taskId":"T2","contextId":"C2","status":{"state":"working"},"final":false}`,
	},
	// Back from working to submitted, which no version allows.
	"regress": {
		`{"kind":"task","id":"T3","contextId":"C3","status":{"state":"working"}}`,
		`{"kind":"status-update","taskId":"T3","contextId":"C3","status":{"state":"submitted"},"final":false}`,
		`{"kind":"status-update","taskId":"T3","contextId":"C3","status":{"state":"completed"},"final":true}`,
	},
}

// scriptedAgent answers message/stream with the script the message names.
func scriptedAgent(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var script []string
		for word, s := range scripts {
			if strings.Contains(string(body), `"text":"`+word) {
				script = s
			}
		}
		if script == nil {
			http.Error(w, "no script", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", a2a.SSEContentType)
		for _, ev := range script {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s}\n\n", ev)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestLateAndRegressiveEventsFromAnAgent(t *testing.T) {
	tests := []struct {
		script string
		task   string
		path   string
		reason string
	}{
		{"cancel-then-artifact", "T1", "unknown>submitted>working>canceled", "late"},
		{"complete-then-working", "T2", "unknown>submitted>working>completed", "late"},
		{"regress", "T3", "unknown>working>completed", "regressive"},
	}
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, scriptedAgent(t))
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			before := value(t, p.reg, "a2agw_task_events_dropped_total", "agent="+agentName, "reason="+tt.reason)
			got := p.stream03(t, tt.script)
			// Nothing is withheld from the caller: the gateway records, the
			// agent speaks.
			if len(got) != len(scripts[tt.script]) {
				t.Fatalf("caller got %d events, want %d", len(got), len(scripts[tt.script]))
			}
			p.flush(t)
			rec := getRecord(t, st, tt.task)
			if path(rec) != tt.path {
				t.Errorf("history = %s, want %s", path(rec), tt.path)
			}
			if last := tt.path[strings.LastIndex(tt.path, ">")+1:]; rec.State != last {
				t.Errorf("state = %s, want %s", rec.State, last)
			}
			if d := value(t, p.reg, "a2agw_task_events_dropped_total", "agent="+agentName, "reason="+tt.reason) - before; d != 1 {
				t.Errorf("dropped as %s: %v more, want 1", tt.reason, d)
			}
			// A replayed stream changes nothing but the stream count, which
			// is back to zero once it ends.
			p.stream03(t, tt.script)
			p.flush(t)
			again := getRecord(t, st, tt.task)
			if path(again) != tt.path || again.State != rec.State || !again.StateSince.Equal(rec.StateSince) || again.EndedBy != rec.EndedBy {
				t.Errorf("replay changed the record: %+v, was %+v", again, rec)
			}
			if again.Subscribers != 0 {
				t.Errorf("subscribers after the streams ended = %d, want 0", again.Subscribers)
			}
		})
	}
}

// stream03 opens a 0.3 message/stream and reads every event.
func (p *proxied) stream03(t *testing.T, text string) []a2a.Event {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + a2a.RPCMethodName(a2a.MethodStream, a2a.V03) +
		`","params":{"message":{"kind":"message","messageId":"` + newID() + `","role":"user","parts":[{"kind":"text","text":"` + text + `"}]}}}`
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := a2a.NewSSEReader(resp.Body, 1<<20)
	var out []a2a.Event
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		parsed, err := a2a.ParseRPCEvent(ev.Data)
		if err != nil {
			t.Fatalf("unreadable event: %v: %s", err, ev.Data)
		}
		out = append(out, parsed)
	}
}
