package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

// With Redis frozen (SIGSTOP: connections stay open, nothing answers), a
// get, a send and a list are each answered UNAVAILABLE once the request's
// store budget is spent, not after the Redis timeouts and retries of every
// store call they make; the log says why. The Redis timeouts here are
// longer than the client's own deadline, which only catches a hang.
func TestStoreBudgetBoundsRequests(t *testing.T) {
	srv := redistest.Start(t)
	logs := &azLog{}
	slow := duration.Duration(10 * time.Second)
	env := gwtest.StartLogged(t, slog.New(slog.NewJSONHandler(logs, nil)), func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Store.Redis.ReadTimeout, c.Store.Redis.WriteTimeout, c.Store.Redis.DialTimeout = slow, slow, slow
		c.Store.RequestBudget = duration.Duration(200 * time.Millisecond)
	})
	c := newCaller(t, env)
	task := c.waitingTask(t)
	c.client.Timeout = 5 * time.Second

	calls := map[string]request{
		"get": {method: http.MethodPost, path: "/", header: v10(), rpc: true,
			body: rpcBody(a2a.MethodGetTask, a2a.V10, "g", `{"id":"`+task+`"}`)},
		"send": {method: http.MethodPost, path: "/", header: v10(), rpc: true,
			body: rpcBody(a2a.MethodSend, a2a.V10, "s", `{"message":`+c.msg10("complete")+`}`)},
		"list": {method: http.MethodGet, path: "/tasks?pageSize=10", header: v10()},
	}
	srv.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume(t)
		}
	}()
	for name, rq := range calls {
		t.Run(name, func(t *testing.T) {
			req := c.newRequest(t, t.Context(), rq)
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatalf("no answer before the client's deadline (the request waited for Redis's timeouts?): %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			unavailable := strings.Contains(string(body), `"code":-32053`)
			if !rq.rpc {
				unavailable = resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), `"UNAVAILABLE"`)
			}
			if !unavailable {
				t.Errorf("HTTP %d %s, want UNAVAILABLE (-32053 / 503)", resp.StatusCode, body)
			}
		})
	}
	if got := strings.Count(logs.String(), "the request's store wait budget ran out"); got != len(calls) {
		t.Errorf("%d log lines say the budget ran out, want %d:\n%s", got, len(calls), logs.String())
	}

	srv.Resume(t)
	resumed = true
	eventually(t, "the gateway answers again once Redis does", func() bool {
		resp, _ := c.do(t, calls["get"])
		return resp.StatusCode == http.StatusOK
	})
	if resp, b := c.do(t, calls["get"]); !strings.Contains(string(b), `"result"`) {
		t.Errorf("after Redis came back: HTTP %d %s", resp.StatusCode, b)
	}
}
