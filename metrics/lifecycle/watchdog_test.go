package lifecycle_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// budget is a watchdog budget any task exceeds by the time a sweep runs.
const budget = duration.Duration(time.Millisecond)

// startWorking starts a demo task with text through the gateway and polls
// it through the gateway until the gateway has seen it working.
func (p *proxied) startWorking(t *testing.T, text string) a2a.Event {
	t.Helper()
	ev := p.send10(t, text, "", true)
	eventually(t, "the gateway sees the task working", func() bool {
		got, _ := p.rpc(t, a2a.V10, a2a.MethodGetTask, `{"id":"`+ev.TaskID+`"}`)
		return got.State == a2a.StateWorking
	})
	p.flush(t)
	eventually(t, "the task has been working longer than the watchdog budget", func() bool {
		rec, found, err := p.st.Get(context.Background(), agentName, ev.TaskID)
		return err == nil && found && time.Since(rec.StateSince) > budget.D()
	})
	return ev
}

func cancels(agent *demoagent.Agent, taskID string) int {
	n := 0
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodCancelTask && r.Op.TaskID == taskID {
			n++
		}
	}
	return n
}

func TestWatchdogCancelsATaskOverBudget(t *testing.T) {
	agent, url := startDemo(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url, withWatchdog(config.WatchdogOptions{Working: budget, Action: config.WatchdogCancel}))
	task := p.startWorking(t, "never")

	p.sweep(t)
	p.flush(t)
	rec := getRecord(t, st, task.TaskID)
	if rec.State != "canceled" || rec.EndedBy != store.EndedByWatchdog {
		t.Fatalf("after the sweep: %s, ended by %q; want canceled by the watchdog\n%s", path(rec), rec.EndedBy, p.logs.String())
	}
	if n := cancels(agent, task.TaskID); n != 1 {
		t.Errorf("the agent saw %d CancelTask calls, want 1", n)
	}
	if got := value(t, p.reg, "a2agw_watchdog_actions_total", "agent="+agentName, "action=cancel", "state=working"); got != 1 {
		t.Errorf("watchdog cancels = %v, want 1", got)
	}
	p.sweep(t)
	if n := cancels(agent, task.TaskID); n != 1 {
		t.Errorf("a canceled task was canceled again: %d calls", n)
	}
}

// After a partition the gateway's record may be stale: the watchdog asks
// the agent first, and acts only on what is still true.
func TestWatchdogRereadsBeforeActing(t *testing.T) {
	agent, url := startDemo(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url, withWatchdog(config.WatchdogOptions{Working: budget, Action: config.WatchdogCancel}))
	task := p.startWorking(t, "slow 100ms")
	// The agent finishes the task without the gateway seeing it.
	eventually(t, "the agent completes the task", func() bool {
		return directState(t, url, task.TaskID) == a2a.StateCompleted
	})

	p.sweep(t)
	p.flush(t)
	rec := getRecord(t, st, task.TaskID)
	if rec.State != "completed" || rec.EndedBy != store.EndedByAgent {
		t.Errorf("after the sweep: %s, ended by %q; want completed by the agent", path(rec), rec.EndedBy)
	}
	if n := cancels(agent, task.TaskID); n != 0 {
		t.Errorf("a finished task was canceled (%d calls)", n)
	}
	if got := value(t, p.reg, "a2agw_watchdog_actions_total", "action=refreshed", "state=working"); got != 1 {
		t.Errorf("refreshed = %v, want 1", got)
	}
}

// directState asks the demo agent itself, bypassing the gateway.
func directState(t *testing.T, url, taskID string) a2a.State {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + a2a.RPCMethodName(a2a.MethodGetTask, a2a.V10) + `","params":{"id":"` + taskID + `"}}`
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(a2a.VersionHeader, "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ev, err := a2a.ParseRPCEvent(b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return ev.State
}

// opsHook is an operations webhook that records what it is sent and
// fails the first failures calls.
type opsHook struct {
	mu       sync.Mutex
	failures int
	calls    int
	docs     []map[string]any
}

func (h *opsHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.calls <= h.failures {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	var doc map[string]any
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&doc) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.docs = append(h.docs, doc)
}

func (h *opsHook) delivered() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.docs...)
}

func TestWatchdogEscalatesOnce(t *testing.T) {
	agent, url := startDemo(t)
	hook := &opsHook{failures: 1}
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url,
		withWatchdog(config.WatchdogOptions{Working: budget, Action: config.WatchdogEscalate}),
		withConfig(func(o *config.LifecycleOptions) { o.OpsWebhook = hookSrv.URL + "/hooks/secret-path" }))
	task := p.startWorking(t, "never")

	// The first POST fails: nothing is marked, the next sweep tries again.
	p.sweep(t)
	if got := value(t, p.reg, "a2agw_watchdog_actions_total", "action=escalate_failed", "state=working"); got != 1 {
		t.Errorf("failed escalations = %v, want 1", got)
	}
	if getRecord(t, st, task.TaskID).Escalated {
		t.Error("marked escalated although the webhook failed")
	}
	if strings.Contains(p.logs.String(), "secret-path") {
		t.Error("the webhook URL, which may hold a credential, was logged")
	}
	for range 3 {
		p.sweep(t)
	}
	docs := hook.delivered()
	if len(docs) != 1 {
		t.Fatalf("the webhook got %d escalations, want 1", len(docs))
	}
	doc := docs[0]
	if doc["task_id"] != task.TaskID || doc["agent"] != agentName || doc["state"] != "working" || doc["tenant"] != "acme" {
		t.Errorf("escalation = %v", doc)
	}
	if b, _ := doc["budget_seconds"].(float64); b != budget.D().Seconds() {
		t.Errorf("budget_seconds = %v", doc["budget_seconds"])
	}
	rec := getRecord(t, st, task.TaskID)
	if !rec.Escalated || rec.State != "working" {
		t.Errorf("record: escalated %v, state %s; want escalated and still working", rec.Escalated, rec.State)
	}
	if n := cancels(agent, task.TaskID); n != 0 {
		t.Errorf("escalate mode canceled the task (%d calls)", n)
	}
	if got := value(t, p.reg, "a2agw_watchdog_actions_total", "action=escalate"); got != 1 {
		t.Errorf("escalations = %v, want 1", got)
	}
	if !strings.Contains(p.logs.String(), "escalating") {
		t.Error("no log line for the escalation")
	}
}

func TestOrphansAreCountedOnce(t *testing.T) {
	_, url := startDemo(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url, withConfig(func(o *config.LifecycleOptions) { o.OrphanAfter = duration.Duration(time.Second) }))
	task := p.startWorking(t, "never")
	p.send10(t, "complete done", "", false) // a finished task is never an orphan
	p.flush(t)
	p.sweep(t)

	orphans := func() float64 { return value(t, p.reg, "a2agw_task_orphans", "agent="+agentName) }
	eventually(t, "the task is an orphan", func() bool {
		p.sweep(t)
		return orphans() == 1
	})
	for range 3 {
		p.sweep(t)
	}
	if got := orphans(); got != 1 {
		t.Errorf("orphans = %v, want 1", got)
	}
	if got := value(t, p.reg, "a2agw_task_orphans_detected_total", "agent="+agentName); got != 1 {
		t.Errorf("orphans detected = %v, want 1 (each task counted once)", got)
	}
	if logs := p.logs.String(); strings.Count(logs, "task orphaned") != 1 || !strings.Contains(logs, task.TaskID) {
		t.Errorf("want one orphan log line naming the task; logs:\n%s", logs)
	}
	// Activity ends the orphanhood; a later silence starts a new one.
	if got, _ := p.rpc(t, a2a.V10, a2a.MethodCancelTask, `{"id":"`+task.TaskID+`"}`); got.State != a2a.StateCanceled {
		t.Fatalf("cancel: %+v", got)
	}
	p.flush(t)
	p.sweep(t)
	if got := orphans(); got != 0 {
		t.Errorf("orphans after the cancel = %v, want 0", got)
	}
	if rec := getRecord(t, st, task.TaskID); rec.EndedBy != store.EndedByCancel {
		t.Errorf("ended by %q, want %q", rec.EndedBy, store.EndedByCancel)
	}
}
