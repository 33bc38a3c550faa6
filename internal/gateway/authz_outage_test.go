package gateway_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// readyz returns the admin readiness status.
func (w *azWorld) readyz(t *testing.T) int {
	t.Helper()
	resp, err := w.http.Get(w.admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// awaitReady polls /readyz until it answers 200; the bound only keeps a
// broken store from hanging the test.
func (w *azWorld) awaitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(azTimeout)
	for w.readyz(t) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not recover after the store came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outageCalls is every task operation on tk in dialect d, plus sends that
// name no task at all: during an outage none of them may go ahead.
func outageCalls(t *testing.T, w *azWorld, d azDialect, tk azTask) map[string]azCall {
	t.Helper()
	calls := map[string]azCall{
		"get":                w.taskCall(t, d, a2a.MethodGetTask, tk.id),
		"cancel":             w.taskCall(t, d, a2a.MethodCancelTask, tk.id),
		"subscribe":          w.taskCall(t, d, a2a.MethodSubscribe, tk.id),
		"push-config-create": w.pushCall(t, d, a2a.MethodPushConfigSet, tk.id, w.id("cfg")),
		"push-config-get":    w.pushCall(t, d, a2a.MethodPushConfigGet, tk.id, tk.pushConfig),
		"push-config-list":   w.pushCall(t, d, a2a.MethodPushConfigList, tk.id, ""),
		"push-config-delete": w.pushCall(t, d, a2a.MethodPushConfigDelete, tk.id, tk.pushConfig),
		"send-taskId":        w.sendCall(t, d, false, true, azMsg{text: "answer", taskID: tk.id}),
		"stream-taskId":      w.sendCall(t, d, true, true, azMsg{text: "answer", taskID: tk.id}),
		"send-contextId":     w.sendCall(t, d, false, true, azMsg{text: "complete", contextID: tk.ctx}),
		"fresh-send":         w.sendCall(t, d, false, true, azMsg{text: "complete"}),
		"fresh-stream":       w.sendCall(t, d, true, true, azMsg{text: "complete"}),
	}
	if d.rest() {
		calls["subscribe-GET"] = w.restCall(t, d, a2a.MethodSubscribe, tk.id, "", nil)
	}
	if d.version == a2a.V10 {
		calls["list"] = w.listCall(t, d, 10, "", "")
	}
	return calls
}

// Authorization fails closed by itself: deduplication also touches the
// store for sends, but it can be turned off or set to forward when the
// store fails, and a send must still not reach the agent.
func TestStoreOutageFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dedupe func(*config.DedupeOptions)
	}{
		{"dedupe-default", func(*config.DedupeOptions) {}},
		{"dedupe-disabled", func(o *config.DedupeOptions) { o.Disabled = true }},
		{"dedupe-forwards-on-store-error", func(o *config.DedupeOptions) { o.OnStoreError = config.DedupeForward }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storeOutage(t, func(c *config.Config) { tc.dedupe(&c.Dedupe) })
		})
	}
}

func storeOutage(t *testing.T, opt gwtest.Option) {
	redis, useRedis := azRedis(t)
	w := newAzWorld(t, authz.Policy{}, useRedis, opt)
	alice := w.client("tenant-a", "alice")
	before := map[string]azTask{}
	for _, d := range azDialects {
		tk := alice.create(t, d, "wait")
		tk.pushConfig = w.id("cfg")
		alice.mustOK(t, d, w.pushCall(t, d, a2a.MethodPushConfigSet, tk.id, tk.pushConfig))
		before[d.name] = tk
	}
	if code := w.readyz(t); code != http.StatusOK {
		t.Fatalf("/readyz with the store up: HTTP %d", code)
	}

	redis.Stop(t)
	if code := w.readyz(t); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the store down: HTTP %d, want 503", code)
	}
	for _, d := range azDialects {
		for name, call := range outageCalls(t, w, d, before[d.name]) {
			t.Run("down/"+d.name+"/"+name, func(t *testing.T) {
				if r := alice.unreached(t, call); !r.is(d.binding, a2a.ErrUnavailable) {
					t.Errorf("want Unavailable (-32053 / HTTP 503), got %s", r)
				}
			})
		}
	}
	t.Run("down/legacy-send", func(t *testing.T) {
		call := w.sendCall(t, azLegacy, false, false, azMsg{text: "complete", taskID: azUnknown("legacy-task")})
		if r := alice.unreached(t, call); !r.is(azLegacy.binding, a2a.ErrUnavailable) {
			t.Errorf("want Unavailable, got %s", r)
		}
	})
	if got := w.metric(t, "a2agw_authz_denials_total", "agent", "demo", "operation", "get", "reason", "store_unavailable"); got != float64(len(azDialects)) {
		t.Errorf("authz_denials_total{operation=get,reason=store_unavailable} = %v, want %d", got, len(azDialects))
	}

	// Without persistence the restart loses every owner record: the old
	// tasks are now unknown to the gateway, which is the fail-closed answer.
	redis.Restart(t)
	w.awaitReady(t)
	for _, d := range azDialects {
		t.Run("restarted/"+d.name, func(t *testing.T) {
			old := before[d.name]
			if r := alice.unreached(t, w.taskCall(t, d, a2a.MethodGetTask, old.id)); !r.is(d.binding, a2a.ErrTaskNotFound) {
				t.Errorf("task from before the restart: want TaskNotFound, got %s", r)
			}
			tk := alice.create(t, d, "wait")
			alice.mustOK(t, d, w.taskCall(t, d, a2a.MethodGetTask, tk.id))
			alice.mustOK(t, d, w.taskCall(t, d, a2a.MethodCancelTask, tk.id))
		})
	}
}
