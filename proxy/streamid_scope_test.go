package proxy_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// scopeIDs records what observers read from Scope.StreamEventID.
type scopeIDs struct {
	mu  sync.Mutex
	ids []string
}

func (s *scopeIDs) stage(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, sc *proxy.Scope) error {
		sc.AddObserver(proxy.ObserverFunc(func(_ context.Context, sc *proxy.Scope, _ a2a.Event, _ []byte) error {
			s.mu.Lock()
			s.ids = append(s.ids, sc.StreamEventID())
			s.mu.Unlock()
			return nil
		}))
		sc.OnEnd(func(error) {
			// Outside an event's observation there is no id.
			if id := sc.StreamEventID(); id != "" {
				s.mu.Lock()
				s.ids = append(s.ids, "after the stream: "+id)
				s.mu.Unlock()
			}
		})
		return next(w, r, sc)
	}
}

// TestStreamEventIDInScope: observers read each stream event's id, the one
// the caller receives, from the scope, computed once; an event without an
// id shows them none.
func TestStreamEventIDInScope(t *testing.T) {
	status := `{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`
	rpcErr := `{"jsonrpc":"2.0","id":"s-1","error":{"code":-32603,"message":"boom"}}`
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":"+status+"}\n\nevent: error\ndata: "+rpcErr+"\n\n")
	})
	names := &namedEvents{}
	seen := &scopeIDs{}
	e := start(t, up.url, withEventID(names.id), withStage(seen.stage))
	resp, body := e.do(t, streamRequest())
	want := "status_update-" + itoa(len(status))
	if resp.StatusCode != http.StatusOK || !slices.Contains(sseIDs(string(body)), want) {
		t.Fatalf("HTTP %d: %q; want an event with id %s", resp.StatusCode, body, want)
	}
	if !slices.Equal(seen.ids, []string{want, ""}) {
		t.Fatalf("observers read ids %q, want %q then none", seen.ids, want)
	}
	if len(names.seen) != 2 {
		t.Fatalf("the id hook ran %d times for 2 events", len(names.seen))
	}
}

// sseIDs lists the id fields of an SSE body.
func sseIDs(body string) []string {
	var out []string
	rd := a2a.NewSSEReader(strings.NewReader(body), 1<<20)
	for {
		ev, err := rd.Next()
		if err != nil {
			return out
		}
		if ev.ID != "" {
			out = append(out, ev.ID)
		}
	}
}
