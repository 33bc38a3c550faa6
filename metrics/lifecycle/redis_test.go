package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

// redisStores opens n stores on one real redis-server, as n replicas would.
func redisStores(t *testing.T, n int) []store.Lifecycle {
	t.Helper()
	srv := redistest.Start(t)
	out := make([]store.Lifecycle, n)
	for i := range out {
		st, err := store.Open(context.Background(), store.Options{Redis: store.RedisOptions{Addrs: []string{srv.Addr()}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		out[i] = st.Lifecycle()
	}
	return out
}

// exports reports whether a replica exports the cluster-wide gauges.
func (k *tracked) exports(t *testing.T) bool {
	t.Helper()
	orphans := family(t, k.reg, "a2agw_task_orphans") != nil
	tasks := family(t, k.reg, "a2agw_tasks") != nil
	if orphans != tasks {
		t.Fatalf("a2agw_task_orphans exported %v, a2agw_tasks %v: both or neither", orphans, tasks)
	}
	return orphans
}

func TestOneReplicaExportsTheClusterGauges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	stores := redisStores(t, 2)
	a, b := newTracked(t, stores[0]), newTracked(t, stores[1])
	long := time.Now().Add(-2 * time.Hour) // past the default orphan_after of 1h
	a.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: "stuck", Tenant: "acme", State: a2a.StateWorking, At: long})
	a.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: "done", Tenant: "acme", State: a2a.StateCompleted})

	a.sweep(t)
	b.sweep(t)
	if !a.exports(t) || b.exports(t) {
		t.Fatalf("exports: first replica %v, second %v; want only the first", a.exports(t), b.exports(t))
	}
	if got := value(t, a.reg, "a2agw_task_orphans", "agent="+agentName); got != 1 {
		t.Errorf("orphans = %v, want 1", got)
	}
	for state, want := range map[string]float64{"working": 1, "completed": 1, "failed": 0} {
		if got := value(t, a.reg, "a2agw_tasks", "agent="+agentName, "state="+state); got != want {
			t.Errorf("tasks %s = %v, want %v", state, got, want)
		}
	}
	// Counters stay per replica: both export them.
	if family(t, b.reg, "a2agw_lifecycle_queue_dropped_total") == nil {
		t.Error("the second replica exports no per-replica counters")
	}

	// The first replica stops sweeping: once its lease has run out, the
	// second takes over, and still only one exports.
	eventually(t, "the second replica takes the lease over", func() bool {
		b.sweep(t)
		return b.exports(t) && !a.exports(t)
	})
	if got := value(t, b.reg, "a2agw_task_orphans", "agent="+agentName); got != 1 {
		t.Errorf("orphans on the new holder = %v, want 1", got)
	}
}

func TestCancelRacingCompletionOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	stores := redisStores(t, 2)
	raceTerminal(t, stores[0], newTracked(t, stores[0]), newTracked(t, stores[1]))
}
