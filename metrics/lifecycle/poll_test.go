package lifecycle_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

// quietAgent is a 1.0 agent on loopback whose tasks stay in the state the
// test sets, and which tells nobody when it changes: only GetTask shows it.
type quietAgent struct {
	mu    sync.Mutex
	state a2a.State
	calls map[a2a.Method]int
}

func startQuiet(t *testing.T) (*quietAgent, string) {
	t.Helper()
	q := &quietAgent{state: a2a.StateSubmitted, calls: map[a2a.Method]int{}}
	srv := httptest.NewServer(q)
	t.Cleanup(srv.Close)
	return q, srv.URL
}

func (q *quietAgent) set(s a2a.State) {
	q.mu.Lock()
	q.state = s
	q.mu.Unlock()
}

func (q *quietAgent) count(m a2a.Method) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.calls[m]
}

func (q *quietAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ID string `json:"id"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	id := req.Params.ID
	var m a2a.Method
	switch req.Method {
	case a2a.RPCMethodName(a2a.MethodSend, a2a.V10):
		m, id = a2a.MethodSend, "quiet-"+newID()
	case a2a.RPCMethodName(a2a.MethodGetTask, a2a.V10):
		m = a2a.MethodGetTask
	case a2a.RPCMethodName(a2a.MethodCancelTask, a2a.V10):
		m = a2a.MethodCancelTask
		q.state = a2a.StateCanceled
	default:
		http.Error(w, "unexpected method "+req.Method, http.StatusBadRequest)
		return
	}
	q.calls[m]++
	task := map[string]any{"id": id, "contextId": "ctx-quiet", "status": map[string]any{"state": q.state.Wire(a2a.V10)}}
	var result any = task
	if m == a2a.MethodSend {
		result = map[string]any{"task": task}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

// pollEvery makes every open task due for a read at once.
func pollEvery(d time.Duration) trackerSetup {
	return withConfig(func(c *config.LifecycleOptions) {
		p := duration.Duration(d)
		c.PollAfter = &p
	})
}

// A returnImmediately send whose agent never tells anyone how the task
// moves on: the sweep reads it, and the gateway's record follows the
// agent to the end without any client asking.
func TestPollFollowsAQuietTask(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	agent, url := startQuiet(t)
	st := redisStores(t, 1)[0]
	p := startProxy(t, st, url, pollEvery(time.Millisecond))
	task := p.send10(t, "hello", "", true)
	p.flush(t)
	if rec := getRecord(t, st, task.TaskID); rec.State != "submitted" {
		t.Fatalf("after the send: %s", path(rec))
	}
	for _, s := range []a2a.State{a2a.StateWorking, a2a.StateCompleted} {
		agent.set(s)
		eventually(t, "the record shows "+s.String(), func() bool {
			p.sweep(t)
			p.flush(t)
			return getRecord(t, st, task.TaskID).State == s.String()
		})
	}
	if rec := getRecord(t, st, task.TaskID); rec.EndedBy != store.EndedByAgent {
		t.Fatalf("the task ended by %q", rec.EndedBy)
	}
	if got := value(t, p.reg, "a2agw_lifecycle_polls_total", "agent="+agentName, "outcome=changed"); got != 2 {
		t.Fatalf("changed polls = %v, want 2", got)
	}
	// An ended task is not read again.
	before := agent.count(a2a.MethodGetTask)
	p.sweep(t)
	if n := agent.count(a2a.MethodGetTask); n != before {
		t.Fatalf("an ended task was read again: %d reads, %d before", n, before)
	}
}

// A read that finds nothing new is no activity of the agent's (an orphan
// stays one), and the task waits longer for the next read.
func TestPollBacksOffAnUnchangedTask(t *testing.T) {
	agent, url := startQuiet(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url, pollEvery(time.Minute))
	quiet := time.Now().Add(-2 * time.Minute)
	p.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: "t1", Tenant: "acme", Version: a2a.V10, State: a2a.StateSubmitted, At: quiet})
	p.sweep(t)
	p.sweep(t)
	if n := agent.count(a2a.MethodGetTask); n != 1 {
		t.Fatalf("%d reads in two sweeps, want 1: the second waits", n)
	}
	if got := value(t, p.reg, "a2agw_lifecycle_polls_total", "outcome=unchanged"); got != 1 {
		t.Fatalf("unchanged polls = %v, want 1", got)
	}
	if rec := getRecord(t, st, "t1"); !rec.LastActivity.Equal(quiet) {
		t.Fatalf("an unchanged read moved the last activity from %s to %s", quiet, rec.LastActivity)
	}
}

// Reads per sweep are bounded, the quietest first; tasks a push source
// follows, and polling switched off, are not read.
func TestPollBounds(t *testing.T) {
	quiet := time.Now().Add(-time.Hour)
	start := func(t *testing.T, setups ...trackerSetup) (*quietAgent, *proxied) {
		agent, url := startQuiet(t)
		p := startProxy(t, memoryStore(t).Lifecycle(), url, setups...)
		for i, id := range []string{"t1", "t2", "t3"} {
			p.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: id, Tenant: "acme", Version: a2a.V10, State: a2a.StateSubmitted, At: quiet.Add(time.Duration(i) * time.Second)})
		}
		p.sweep(t)
		return agent, p
	}
	t.Run("max per sweep", func(t *testing.T) {
		agent, _ := start(t, pollEvery(time.Millisecond), withConfig(func(c *config.LifecycleOptions) { c.MaxPollsPerSweep = 2 }))
		if n := agent.count(a2a.MethodGetTask); n != 2 {
			t.Fatalf("%d reads, want 2", n)
		}
	})
	t.Run("followed by a push source", func(t *testing.T) {
		agent, _ := start(t, pollEvery(time.Millisecond), func(o *lifecycle.Options) {
			o.Followed = func(_ context.Context, _, taskID string) (bool, error) { return taskID != "t2", nil }
		})
		if n := agent.count(a2a.MethodGetTask); n != 1 {
			t.Fatalf("%d reads, want 1", n)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		agent, _ := start(t, pollEvery(0))
		if n := agent.count(a2a.MethodGetTask); n != 0 {
			t.Fatalf("%d reads with polling disabled", n)
		}
	})
}

// The working budget covers submitted: a task that never leaves it is
// acted on once over budget.
func TestWatchdogActsOnASubmittedTask(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	agent, url := startQuiet(t)
	st := redisStores(t, 1)[0]
	p := startProxy(t, st, url, pollEvery(0), withWatchdog(config.WatchdogOptions{Working: budget, Action: config.WatchdogCancel}))
	task := p.send10(t, "hello", "", true)
	p.flush(t)
	eventually(t, "the task has been submitted longer than the budget", func() bool {
		return time.Since(getRecord(t, st, task.TaskID).StateSince) > budget.D()
	})
	p.sweep(t)
	p.flush(t)
	rec := getRecord(t, st, task.TaskID)
	if rec.State != "canceled" || rec.EndedBy != store.EndedByWatchdog || agent.count(a2a.MethodCancelTask) != 1 {
		t.Fatalf("after the sweep: %s, ended by %q, %d cancels\n%s", path(rec), rec.EndedBy, agent.count(a2a.MethodCancelTask), p.logs.String())
	}
	if got := value(t, p.reg, "a2agw_watchdog_actions_total", "action=cancel", "state=submitted"); got != 1 {
		t.Fatalf("watchdog cancels of submitted tasks = %v, want 1", got)
	}
}
