package lifecycle_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

const (
	sub      = a2a.StateSubmitted
	working  = a2a.StateWorking
	input    = a2a.StateInputRequired
	auth     = a2a.StateAuthRequired
	done     = a2a.StateCompleted
	failed   = a2a.StateFailed
	canceled = a2a.StateCanceled
	rejected = a2a.StateRejected
	artifact = a2a.StateUnknown // an event without a state
)

// counts are the lifecycle metrics one case must produce, by series.
type counts map[string]float64

func TestMonotonicStatePolicy(t *testing.T) {
	tests := []struct {
		name    string
		version a2a.Version
		events  []a2a.State
		endedBy string // of the last event
		path    string
		endedAs string
		accept  []bool // Accept's answer per event
		want    counts
	}{
		{
			name: "complete", version: a2a.V10, events: []a2a.State{sub, working, artifact, done},
			path: "unknown>submitted>working>completed", endedAs: store.EndedByAgent,
			accept: []bool{true, true, true, true},
			want: counts{
				"transitions": 3, "late": 0, "regressive": 0, "duplicate": 0, "lifetime/completed": 1,
				"left/submitted": 1, "left/working": 1,
			},
		},
		{
			name: "late working after completed", version: a2a.V03, events: []a2a.State{working, done, working},
			path: "unknown>working>completed", endedAs: store.EndedByAgent,
			accept: []bool{true, true, false},
			want:   counts{"transitions": 2, "late": 1, "regressive": 0, "lifetime/completed": 1},
		},
		{
			name: "artifact after canceled", version: a2a.V10, events: []a2a.State{working, canceled, artifact},
			path: "unknown>working>canceled", endedAs: store.EndedByAgent,
			accept: []bool{true, true, false},
			want:   counts{"transitions": 2, "late": 1, "lifetime/canceled": 1},
		},
		{
			name: "a second terminal state is late", version: a2a.V10, events: []a2a.State{working, done, failed},
			path: "unknown>working>completed", endedAs: store.EndedByAgent,
			accept: []bool{true, true, false},
			want:   counts{"transitions": 2, "late": 1, "lifetime/completed": 1, "lifetime/failed": 0},
		},
		{
			name: "working back to submitted is regressive", version: a2a.V10, events: []a2a.State{working, sub, done},
			path: "unknown>working>completed", endedAs: store.EndedByAgent,
			accept: []bool{true, false, true},
			want:   counts{"transitions": 2, "regressive": 1, "late": 0},
		},
		{
			name: "legacy agents know no auth-required", version: a2a.VLegacy, events: []a2a.State{working, auth},
			path: "unknown>working", accept: []bool{true, false},
			want: counts{"transitions": 1, "regressive": 1, "interruptions/auth-required": 0},
		},
		{
			name: "duplicates are counted once", version: a2a.V10, events: []a2a.State{working, working, done, done},
			path: "unknown>working>completed", endedAs: store.EndedByAgent,
			accept: []bool{true, true, true, true},
			want:   counts{"transitions": 2, "duplicate": 2, "late": 0, "lifetime/completed": 1},
		},
		{
			name: "input then resume", version: a2a.V10, events: []a2a.State{working, input, working, done},
			path: "unknown>working>input-required>working>completed", endedAs: store.EndedByAgent,
			accept: []bool{true, true, true, true},
			want: counts{
				"transitions": 4, "interruptions/input-required": 1, "resumes/input-required/resumed": 1,
				"left/input-required": 1, "left/working": 2,
			},
		},
		{
			name: "auth then canceled", version: a2a.V03, events: []a2a.State{working, auth, canceled}, endedBy: store.EndedByCancel,
			path: "unknown>working>auth-required>canceled", endedAs: store.EndedByCancel,
			accept: []bool{true, true, true},
			want: counts{
				"transitions": 3, "interruptions/auth-required": 1, "resumes/auth-required/canceled": 1,
				"resumes/auth-required/resumed": 0, "lifetime/canceled": 1,
			},
		},
		{
			name: "one interruption across input and auth", version: a2a.V10, events: []a2a.State{working, input, auth, working},
			path:   "unknown>working>input-required>auth-required>working",
			accept: []bool{true, true, true, true},
			want: counts{
				"transitions": 4, "interruptions/input-required": 1, "interruptions/auth-required": 0,
				"resumes/input-required/resumed": 1, "resumes/auth-required/resumed": 0,
			},
		},
		{
			name: "first seen terminal", version: a2a.V10, events: []a2a.State{rejected},
			path: "unknown>rejected", endedAs: store.EndedByAgent, accept: []bool{true},
			want: counts{"transitions": 1, "lifetime/rejected": 1},
		},
		{
			name: "first seen interrupted", version: a2a.V10, events: []a2a.State{input, failed},
			path: "unknown>input-required>failed", endedAs: store.EndedByAgent, accept: []bool{true, true},
			want: counts{"interruptions/input-required": 1, "resumes/input-required/failed": 1},
		},
		{
			name: "an artifact alone starts no record", version: a2a.V10, events: []a2a.State{artifact},
			accept: []bool{true}, want: counts{"transitions": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, viaAccept := range []bool{false, true} {
				st := memoryStore(t).Lifecycle()
				k := newTracked(t, st)
				for i, s := range tt.events {
					ev := lifecycle.TaskEvent{Agent: agentName, TaskID: "t1", ContextID: "c1", Tenant: "acme", Version: tt.version, State: s}
					if i == len(tt.events)-1 {
						ev.EndedBy = tt.endedBy
					}
					if !viaAccept {
						k.record(t, ev)
						continue
					}
					if i == 0 {
						// Accept carries no tenant: the first event starts the record.
						k.record(t, ev)
						continue
					}
					ok, err := k.tr.Accept(context.Background(), agentName, "t1", a2a.Event{TaskID: "t1", ContextID: "c1", State: s})
					if err != nil || ok != tt.accept[i] {
						t.Errorf("Accept(event %d, %s) = %v, %v; want %v", i, s, ok, err, tt.accept[i])
					}
				}
				rec, found, err := st.Get(context.Background(), agentName, "t1")
				if err != nil {
					t.Fatal(err)
				}
				if tt.path == "" {
					if found {
						t.Fatalf("want no record, got %+v", rec)
					}
				} else {
					if !found {
						t.Fatal("no record")
					}
					if got := path(rec); got != tt.path {
						t.Errorf("history = %s, want %s", got, tt.path)
					}
					if rec.EndedBy != tt.endedAs && !(viaAccept && tt.endedBy != "") {
						t.Errorf("ended by %q, want %q", rec.EndedBy, tt.endedAs)
					}
				}
				checkCounts(t, k.reg, tt.want)
			}
		})
	}
}

// checkCounts compares the lifecycle metrics of agentName with want.
func checkCounts(t *testing.T, reg prometheus.Gatherer, want counts) {
	t.Helper()
	for series, w := range want {
		var got float64
		kind, rest, _ := cut(series)
		a := "agent=" + agentName
		switch kind {
		case "transitions":
			got = value(t, reg, "a2agw_task_transitions_total", a)
		case "late", "regressive":
			got = value(t, reg, "a2agw_task_events_dropped_total", a, "reason="+kind)
		case "duplicate":
			got = value(t, reg, "a2agw_task_events_duplicate_total", a)
		case "lifetime":
			got = value(t, reg, "a2agw_task_lifetime_seconds", a, "state="+rest)
		case "left":
			got = value(t, reg, "a2agw_task_state_duration_seconds", a, "state="+rest)
		case "interruptions":
			got = value(t, reg, "a2agw_task_interruptions_total", a, "reason="+rest)
		case "resumes":
			reason, outcome, _ := cut(rest)
			got = value(t, reg, "a2agw_task_resumes_total", a, "reason="+reason, "outcome="+outcome)
		default:
			t.Fatalf("unknown series %q", series)
		}
		if got != w {
			t.Errorf("%s = %v, want %v", series, got, w)
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// A caller's cancel and the agent's completion racing on many tasks, from
// two replicas sharing one store: each task ends in exactly one terminal
// state, counted once across both.
func TestCancelRacingCompletionEndsOnce(t *testing.T) {
	st := memoryStore(t).Lifecycle()
	raceTerminal(t, st, newTracked(t, st), newTracked(t, st))
}

func raceTerminal(t *testing.T, st store.Lifecycle, a, b *tracked) {
	t.Helper()
	const tasks, repeats = 40, 5
	for i := range tasks {
		a.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: "race-" + strconv.Itoa(i), Tenant: "acme", Version: a2a.V10, State: working})
	}
	var wg sync.WaitGroup
	for _, side := range []struct {
		k     *tracked
		state a2a.State
		by    string
	}{{a, canceled, store.EndedByCancel}, {b, done, ""}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range repeats {
				for i := range tasks {
					id := "race-" + strconv.Itoa((i+r)%tasks)
					if err := side.k.tr.Record(context.Background(), lifecycle.TaskEvent{Agent: agentName, TaskID: id, Version: a2a.V10, State: side.state, EndedBy: side.by}); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	a.flush(t)
	b.flush(t)
	for i := range tasks {
		rec := getRecord(t, st, "race-"+strconv.Itoa(i))
		terminal := 0
		for _, h := range rec.History {
			if a2a.ParseState(h.To).Terminal() {
				terminal++
			}
		}
		if terminal != 1 || !a2a.ParseState(rec.State).Terminal() {
			t.Errorf("task %d: history %s has %d terminal states", i, path(rec), terminal)
		}
		if (rec.State == "canceled") != (rec.EndedBy == store.EndedByCancel) {
			t.Errorf("task %d ended %s by %q", i, rec.State, rec.EndedBy)
		}
	}
	sum := func(name string, labels ...string) float64 {
		return value(t, a.reg, name, labels...) + value(t, b.reg, name, labels...)
	}
	if got := sum("a2agw_task_lifetime_seconds"); got != tasks {
		t.Errorf("lifetimes observed = %v, want %d", got, tasks)
	}
	if got := sum("a2agw_task_transitions_total", "from=working"); got != tasks {
		t.Errorf("transitions out of working = %v, want %d", got, tasks)
	}
	// Every other terminal event repeated the winner or contradicted it.
	if got := sum("a2agw_task_events_dropped_total", "reason=late") + sum("a2agw_task_events_duplicate_total"); got != 2*tasks*repeats-tasks {
		t.Errorf("late + duplicate = %v, want %d", got, 2*tasks*repeats-tasks)
	}
}

// blockingStore holds every Get until released, so a queue can be filled.
type blockingStore struct {
	store.Lifecycle
	release chan struct{}
}

func (b *blockingStore) Get(ctx context.Context, agent, taskID string) (store.TaskLifecycle, bool, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return store.TaskLifecycle{}, false, ctx.Err()
	}
	return b.Lifecycle.Get(ctx, agent, taskID)
}

// Save blocks too: a new task's first event is saved without a read.
func (b *blockingStore) Save(ctx context.Context, rec store.TaskLifecycle, ttl time.Duration) (int64, bool, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	return b.Lifecycle.Save(ctx, rec, ttl)
}

func TestQueueFullDropsAndCounts(t *testing.T) {
	bs := &blockingStore{Lifecycle: memoryStore(t).Lifecycle(), release: make(chan struct{})}
	k := newTracked(t, bs, withConfig(func(o *config.LifecycleOptions) { o.Workers, o.QueueSize = 1, 1 }))
	ev := func(id string) lifecycle.TaskEvent {
		return lifecycle.TaskEvent{Agent: agentName, TaskID: id, Tenant: "acme", State: working}
	}
	// The worker takes the first event and blocks in the store; the second fills
	// the one slot; the third finds the queue full.
	if err := k.tr.Record(context.Background(), ev("a")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker holds the first event", func() bool {
		return k.tr.Record(context.Background(), ev("b")) == nil
	})
	err := k.tr.Record(context.Background(), ev("c"))
	if !errors.Is(err, lifecycle.ErrQueueFull) {
		t.Fatalf("Record on a full queue = %v, want ErrQueueFull", err)
	}
	if got := value(t, k.reg, "a2agw_lifecycle_queue_dropped_total"); got < 1 {
		t.Errorf("queue drops = %v, want at least 1", got)
	}
	close(bs.release)
	k.flush(t)
	for _, id := range []string{"a", "b"} {
		getRecord(t, bs, id)
	}
	if _, found, _ := bs.Get(context.Background(), agentName, "c"); found {
		t.Error("the dropped event was applied")
	}
	k.tr.Close()
	if err := k.tr.Record(context.Background(), ev("d")); !errors.Is(err, lifecycle.ErrClosed) {
		t.Errorf("Record after Close = %v, want ErrClosed", err)
	}
	if err := k.tr.Flush(context.Background()); !errors.Is(err, lifecycle.ErrClosed) {
		t.Errorf("Flush after Close = %v, want ErrClosed", err)
	}
}

func TestTenantLabelIsCapped(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, metrics.WithTenantLabel(2))
	st := memoryStore(t).Lifecycle()
	o := lifecycle.Options{Store: st, Agents: []lifecycle.Agent{{Name: agentName}}, Metrics: m.Lifecycle}
	o.Config.ApplyDefaults()
	o.Config.Workers = 1 // tenants take label values in the order recorded
	tr, err := lifecycle.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	for i, tenant := range []string{"t1", "t2", "t3", "t4", "t1"} {
		if err := tr.Record(context.Background(), lifecycle.TaskEvent{Agent: agentName, TaskID: "x" + strconv.Itoa(i), Tenant: tenant, State: working, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string]float64{"t1": 2, "t2": 1, "t3": 0, "t4": 0, metrics.OtherTenant: 2} {
		if got := value(t, reg, "a2agw_task_transitions_total", "tenant="+tenant); got != want {
			t.Errorf("transitions of tenant %s = %v, want %v", tenant, got, want)
		}
	}
}
