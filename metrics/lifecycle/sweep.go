package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// Leases: the replica holding leaseGauges exports the cluster-wide gauges,
// the one holding leaseSweep runs the watchdog, orphan detection and
// retention. Usually one replica holds both.
const (
	leaseGauges = "lifecycle-gauges"
	leaseSweep  = "lifecycle-sweep"
)

const (
	// pageSize is the page of every listing the sweep makes.
	pageSize = store.MaxLifecycleListLimit
	// maxPages bounds one listing per agent and sweep; a longer one goes
	// on where it stopped at the next sweep (retention) or is reported as
	// truncated (counts).
	maxPages = 100
	// maxFreshOrphanLogs bounds the orphan log lines of one sweep.
	maxFreshOrphanLogs = 50
)

// clusterState is what this replica exports as cluster-wide gauges, until
// its lease may have passed to another replica.
type clusterState struct {
	g     metrics.ClusterGauges
	until time.Time
}

// sweepState is what the sweeping replica remembers between sweeps.
type sweepState struct {
	// orphanCutoff is, per agent, the inactivity cutoff of the last sweep
	// that detected orphans: tasks whose last activity falls between it and
	// the current cutoff became orphans since, and are counted once.
	orphanCutoff map[string]time.Time
	// retainCursor is, per agent and retention pass, where the pass stopped.
	retainCursor map[string]string
	// polls is, per agent and task id, when a quiet task may be read again
	// (poll.go).
	polls map[string]map[string]pollBackoff
}

func newSweepState() sweepState {
	return sweepState{orphanCutoff: map[string]time.Time{}, retainCursor: map[string]string{}, polls: map[string]map[string]pollBackoff{}}
}

// leaseTTL outlives two missed sweeps, so a slow sweep does not lose the
// lease, while a dead holder is replaced within three intervals.
func (t *Tracker) leaseTTL() time.Duration { return 3 * t.o.SweepInterval.D() }

// clusterGauges is the metrics' source of cluster-wide gauges.
func (t *Tracker) clusterGauges() (metrics.ClusterGauges, bool) {
	c := t.cluster.Load()
	if c == nil || !time.Now().Before(c.until) {
		return metrics.ClusterGauges{}, false
	}
	return c.g, true
}

// Run sweeps every SweepInterval until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
	tick := time.NewTicker(t.o.SweepInterval.D())
	defer tick.Stop()
	for {
		if err := t.Sweep(ctx); err != nil && ctx.Err() == nil {
			t.log.Warn("lifecycle: sweep incomplete", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sweep is one pass of Run: it takes or renews the leases, and does what
// the leases it holds ask for: refresh the cluster-wide gauges; detect
// orphans, act on tasks over their watchdog budget and delete records past
// retention.
func (t *Tracker) Sweep(ctx context.Context) error {
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	now := time.Now()
	ttl := t.leaseTTL()
	var errs []error
	gauges, err := t.st.Lease(ctx, leaseGauges, t.holder, ttl)
	if err != nil {
		errs = append(errs, fmt.Errorf("lease %s: %w", leaseGauges, err))
	}
	sweep, err := t.st.Lease(ctx, leaseSweep, t.holder, ttl)
	if err != nil {
		errs = append(errs, fmt.Errorf("lease %s: %w", leaseSweep, err))
	}
	if !gauges {
		t.cluster.Store(nil)
	}
	if !sweep {
		// Whoever sweeps now counts what happens meanwhile.
		t.sweep = newSweepState()
	}
	if !gauges && !sweep {
		return errors.Join(errs...)
	}
	snap := metrics.ClusterGauges{Tasks: map[string]map[string]int{}, Orphans: map[string]int{}}
	for _, name := range t.names {
		n, fresh, oerr := t.scanOrphans(ctx, name, now, sweep)
		if oerr != nil {
			errs = append(errs, fmt.Errorf("agent %s: orphans: %w", name, oerr))
		} else if gauges {
			snap.Orphans[name] = n
		}
		if gauges {
			counts, err := t.st.CountByState(ctx, name)
			if err != nil {
				errs = append(errs, fmt.Errorf("agent %s: counts: %w", name, err))
			} else {
				snap.Tasks[name] = withEveryState(counts)
			}
		}
		if sweep {
			if oerr == nil {
				t.reportOrphans(name, fresh)
				for _, rec := range fresh {
					t.onWatchdog(ctx, name, rec.TaskID, WatchdogOrphaned, a2a.ParseState(rec.State))
				}
			}
			// Reads first: the watchdog then acts on where the tasks are.
			if err := t.poll(ctx, t.agents[name], now); err != nil {
				errs = append(errs, fmt.Errorf("agent %s: polls: %w", name, err))
			}
			if err := t.watch(ctx, t.agents[name], now); err != nil {
				errs = append(errs, fmt.Errorf("agent %s: watchdog: %w", name, err))
			}
			if err := t.retain(ctx, name, now); err != nil {
				errs = append(errs, fmt.Errorf("agent %s: retention: %w", name, err))
			}
		}
	}
	if gauges {
		t.cluster.Store(&clusterState{g: snap, until: now.Add(ttl)})
	}
	return errors.Join(errs...)
}

// withEveryState gives every state a count, zeros included, so each series
// exists from the start rather than appearing with the first task.
func withEveryState(counts map[string]int) map[string]int {
	out := make(map[string]int, len(a2a.AllStates)+len(counts))
	for _, s := range a2a.AllStates {
		out[s.String()] = 0
	}
	for s, n := range counts {
		out[s] = n
	}
	return out
}

// each calls fn for every record matching f, from cursor on, for at most
// maxPages pages; it returns where it stopped ("" at the end).
func (t *Tracker) each(ctx context.Context, f store.LifecycleFilter, cursor string, fn func(store.TaskLifecycle) error) (string, error) {
	for range maxPages {
		recs, next, err := t.st.List(ctx, f, cursor, pageSize)
		if err != nil {
			return cursor, err
		}
		for _, rec := range recs {
			if err := fn(rec); err != nil {
				return cursor, err
			}
		}
		if next == "" {
			return "", nil
		}
		cursor = next
	}
	return cursor, nil
}

// scanOrphans counts the agent's orphans and, when detect is set, returns
// those that became orphans since the last sweep.
func (t *Tracker) scanOrphans(ctx context.Context, agent string, now time.Time, detect bool) (int, []store.TaskLifecycle, error) {
	cutoff := now.Add(-t.o.OrphanAfter.D())
	since, seen := t.sweep.orphanCutoff[agent]
	if !seen {
		// A replica that just took over counts what became an orphan while
		// the lease was passing; earlier ones were its predecessor's.
		since = cutoff.Add(-t.leaseTTL() - t.o.SweepInterval.D())
	}
	n := 0
	var fresh []store.TaskLifecycle
	rest, err := t.each(ctx, store.LifecycleFilter{Agent: agent, State: store.LifecycleOpen, InactiveSince: cutoff}, "", func(rec store.TaskLifecycle) error {
		n++
		if detect && !rec.LastActivity.Before(since) {
			fresh = append(fresh, rec)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	if rest != "" {
		t.log.Warn("lifecycle: too many orphans to count in one sweep; the gauge is a lower bound", "agent", agent, "counted", n)
	}
	if detect {
		t.sweep.orphanCutoff[agent] = cutoff
	}
	return n, fresh, nil
}

// reportOrphans counts and logs the tasks that just became orphans.
func (t *Tracker) reportOrphans(agent string, fresh []store.TaskLifecycle) {
	for i, rec := range fresh {
		t.m.OrphanDetected(agent)
		if i < maxFreshOrphanLogs {
			t.log.Warn("lifecycle: task orphaned: no activity and no terminal state", "agent", agent, "task_id", rec.TaskID,
				"tenant", rec.Tenant, "state", rec.State, "last_activity", rec.LastActivity, "orphan_after", t.o.OrphanAfter.D().String())
		}
	}
	if len(fresh) > maxFreshOrphanLogs {
		t.log.Warn("lifecycle: more tasks orphaned than logged", "agent", agent, "orphaned", len(fresh), "logged", maxFreshOrphanLogs)
	}
}

// retain deletes the agent's records whose last activity is older than
// their tenant's retention, except those under legal hold.
func (t *Tracker) retain(ctx context.Context, agent string, now time.Time) error {
	tenants := make([]string, 0, len(t.o.TenantRetention))
	for tenant := range t.o.TenantRetention {
		tenants = append(tenants, tenant)
	}
	sort.Strings(tenants)
	var errs []error
	for _, tenant := range tenants {
		f := store.LifecycleFilter{Agent: agent, Tenant: tenant, InactiveSince: now.Add(-t.o.TenantRetention[tenant].D())}
		errs = append(errs, t.expire(ctx, "tenant\x00"+tenant, f, nil))
	}
	// Tenants with their own retention had their pass above.
	ownPass := func(rec store.TaskLifecycle) bool {
		_, ok := t.o.TenantRetention[rec.Tenant]
		return ok
	}
	errs = append(errs, t.expire(ctx, "default", store.LifecycleFilter{Agent: agent, InactiveSince: now.Add(-t.o.RecordRetention.D())}, ownPass))
	return errors.Join(errs...)
}

// expire deletes what f lists, except records skip names and those under
// legal hold, resuming where the pass last stopped.
func (t *Tracker) expire(ctx context.Context, pass string, f store.LifecycleFilter, skip func(store.TaskLifecycle) bool) error {
	key := f.Agent + "\x00" + pass
	deleted := 0
	next, err := t.each(ctx, f, t.sweep.retainCursor[key], func(rec store.TaskLifecycle) error {
		if rec.LegalHold || (skip != nil && skip(rec)) {
			return nil
		}
		ok, err := t.st.Delete(ctx, rec.Agent, rec.TaskID)
		if err != nil {
			return err
		}
		if ok {
			deleted++
		}
		return nil
	})
	if next == "" {
		delete(t.sweep.retainCursor, key)
	} else {
		t.sweep.retainCursor[key] = next
	}
	if deleted > 0 {
		t.log.Info("lifecycle: records past retention deleted", "agent", f.Agent, "tenant", f.Tenant, "deleted", deleted)
	}
	return err
}
