package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// A resumed stream goes on with the agent's live stream unless its first
// event with data is an error: the one the answer reader read as such, or
// one the gateway wrote before any event was read. Keep-alives decide
// nothing.
func TestResumedWriterDecidesOnTheFirstEvent(t *testing.T) {
	const keepAlive, event = ": keep-alive\n\n", "data: {}\n\n"
	for _, tc := range []struct {
		name string
		// observed is the kind of the first event read, EventNone for none.
		observed a2a.EventKind
		sse      bool
		want     string
	}{
		{"a task goes on", a2a.EventTask, true, keepAlive + event + event},
		{"an agent's error ends it", a2a.EventError, true, keepAlive},
		{"an error the gateway wrote ends it", a2a.EventNone, true, keepAlive},
		{"an answer that is no stream ends it", a2a.EventTask, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			rw := &resumedWriter{w: rec, header: http.Header{}}
			if tc.sse {
				rw.Header().Set("Content-Type", a2a.SSEContentType)
			}
			rw.WriteHeader(http.StatusOK)
			_, _ = rw.Write([]byte(keepAlive))
			if tc.observed != a2a.EventNone {
				_ = rw.observe(context.Background(), nil, a2a.Event{Kind: tc.observed}, nil)
			}
			_, _ = rw.Write([]byte(event))
			_, _ = rw.Write([]byte(event))
			if got := rec.Body.String(); got != tc.want {
				t.Fatalf("caller got %q, want %q", got, tc.want)
			}
			if rw.carried() != (tc.want == keepAlive+event+event) {
				t.Fatalf("carried() = %v", rw.carried())
			}
		})
	}
}
