package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// TestGuardReadsWithAuthorization checks that a request naming a task
// makes one store round trip before it is forwarded: authorization reads
// the task's lifecycle record with its owner, and the guard decides from
// it. The guard still refuses what it must, and only the owner's requests
// pass.
func TestGuardReadsWithAuthorization(t *testing.T) {
	srv := redistest.Start(t)
	env := gwtest.Start(t, func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Dedupe.Disabled = true
	})
	c := newCaller(t, env)
	send := func(t *testing.T, c *caller, params string) a2a.Event {
		t.Helper()
		_, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSend, a2a.V10, c.nextID("rt"), params)})
		ev, err := a2a.ParseRPCEvent(b)
		if err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
		return ev
	}
	done := send(t, c, `{"message":`+c.msg10("complete hello")+`}`)
	waiting := send(t, c, `{"message":`+c.msg10("input")+`}`)
	if done.State != a2a.StateCompleted || waiting.State != a2a.StateInputRequired {
		t.Fatalf("setup: tasks are %s and %s", done.State, waiting.State)
	}
	lcFlush(t, env)
	other := newCaller(t, env)
	other.token = env.Token(t, "globex", "bob")

	for _, tt := range []struct {
		name   string
		caller *caller
		method a2a.Method
		params string
		code   int
	}{
		{"send to a terminal task", c, a2a.MethodSend, follow(done, "more"), a2a.ErrUnsupportedOperation.Code},
		{"cancel of a terminal task", c, a2a.MethodCancelTask, `{"id":"` + done.TaskID + `"}`, a2a.ErrTaskNotCancelable.Code},
		{"task and context that do not belong together", c, a2a.MethodSend,
			strings.Replace(follow(waiting, "yes"), waiting.ContextID, done.ContextID, 1), a2a.ErrInvalidParams.Code},
		{"another tenant's terminal task", other, a2a.MethodSend, follow(done, "more"), a2a.ErrTaskNotFound.Code},
		{"the answer to an interrupted task", c, a2a.MethodSend, follow(waiting, "yes"), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := requestRoundTrips(t, env)
			_, b := tt.caller.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(tt.method, a2a.V10, c.nextID("rt"), tt.params)})
			ev, err := a2a.ParseRPCEvent(b)
			if err != nil || ev.ErrorCode != tt.code {
				t.Fatalf("answer %s (%v), want error code %d", b, err, tt.code)
			}
			// The answer to the interrupted task names the task and context
			// the request was authorized for: nothing new to record.
			if n := requestRoundTrips(t, env) - before; n != 1 {
				t.Errorf("%v request-path round trips, want 1", n)
			}
		})
	}
}

// follow is the params of a 1.0 message to ev's task, in its context.
func follow(ev a2a.Event, text string) string {
	return `{"message":{"messageId":"` + ev.TaskID + `-` + text + `","role":"ROLE_USER","taskId":"` + ev.TaskID +
		`","contextId":"` + ev.ContextID + `","parts":[{"text":"` + text + `"}]}}`
}

// requestRoundTrips is the store round trips requests have waited for.
func requestRoundTrips(t *testing.T, env *gwtest.Env) float64 {
	t.Helper()
	var n float64
	mf := scrape(t, env.Admin)[metrics.Namespace+"_store_round_trip_seconds"]
	if mf == nil {
		return 0
	}
	for _, m := range mf.GetMetric() {
		if label(m, "path") == "request" {
			n += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return n
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
