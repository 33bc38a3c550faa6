package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option adjusts what New registers.
type Option func(*options)

type options struct {
	tenantLabels int
}

// WithTenantLabel adds a tenant label to the per-task lifecycle metrics,
// with at most max distinct values; tenants beyond them share the value
// OtherTenant.
func WithTenantLabel(max int) Option {
	return func(o *options) { o.tenantLabels = max }
}

// OtherTenant is the tenant label of tenants beyond the cap.
const OtherTenant = "other"

// lifecycleBuckets span a quick answer to a task that waits days for input.
var lifecycleBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200}

// Lifecycle holds the metrics of task lifecycles. Counters and histograms
// are per replica; the cluster-wide gauges (a2agw_tasks, a2agw_task_orphans)
// come from a ClusterGauges source that only the replica elected to export
// them provides, so summing across replicas never double counts.
type Lifecycle struct {
	stateDuration   *prometheus.HistogramVec
	lifetime        *prometheus.HistogramVec
	transitions     *prometheus.CounterVec
	interruptions   *prometheus.CounterVec
	resumes         *prometheus.CounterVec
	orphansDetected *prometheus.CounterVec
	eventsDropped   *prometheus.CounterVec
	eventsDup       *prometheus.CounterVec
	watchdog        *prometheus.CounterVec
	polls           *prometheus.CounterVec
	queueDropped    prometheus.Counter
	cluster         *clusterCollector
	tenants         *tenantLabels
}

// newLifecycle creates and registers the lifecycle metrics.
func newLifecycle(reg prometheus.Registerer, opts []Option) *Lifecycle {
	var o options
	for _, f := range opts {
		f(&o)
	}
	tenants := &tenantLabels{max: o.tenantLabels, seen: map[string]struct{}{}}
	// perTask labels get the tenant label when it is enabled.
	perTask := tenants.names
	l := &Lifecycle{
		stateDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "task_state_duration_seconds",
			Help:    "Time tasks spent in a state, observed when they leave it, by agent and state.",
			Buckets: lifecycleBuckets,
		}, perTask("agent", "state")),
		lifetime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "task_lifetime_seconds",
			Help:    "Time from a task's creation to its terminal state, by agent and terminal state.",
			Buckets: lifecycleBuckets,
		}, perTask("agent", "state")),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "task_transitions_total",
			Help: "Task state changes applied, by agent, previous state (unknown for a task's first state) and new state.",
		}, perTask("agent", "from", "to")),
		interruptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "task_interruptions_total",
			Help: "Tasks that stopped to wait on the client, by agent and reason (input-required, auth-required).",
		}, perTask("agent", "reason")),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "task_resumes_total",
			Help: "Ends of interruptions, by agent, reason and outcome: resumed (back to working or submitted) or the terminal state the task ended in.",
		}, perTask("agent", "reason", "outcome")),
		orphansDetected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "task_orphans_detected_total",
			Help: "Tasks found without activity for longer than orphan_after before reaching a terminal state, each counted once, by agent.",
		}, []string{"agent"}),
		eventsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "task_events_dropped_total",
			Help: "Task events not applied, by agent and reason: late (after a terminal state) or regressive (a transition the protocol does not allow).",
		}, []string{"agent", "reason"}),
		eventsDup: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "task_events_duplicate_total",
			Help: "Task events that repeated the task's current state (re-sent updates, snapshots of an unchanged task), by agent.",
		}, []string{"agent"}),
		watchdog: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "watchdog_actions_total",
			Help: "Watchdog actions on tasks over their budget, by agent, action (refreshed, cancel, cancel_failed, escalate, escalate_failed) and the state over budget.",
		}, []string{"agent", "action", "state"}),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "lifecycle_polls_total",
			Help: "GetTask reads of open tasks the gateway had no news of, by agent and outcome (changed, unchanged, failed).",
		}, []string{"agent", "outcome"}),
		queueDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "lifecycle_queue_dropped_total",
			Help: "Task events dropped because the lifecycle queue was full.",
		}),
		cluster: &clusterCollector{
			tasks: prometheus.NewDesc(Namespace+"_tasks",
				"Tasks on record by agent and state, across the cluster; exported by one elected replica.", []string{"agent", "state"}, nil),
			orphans: prometheus.NewDesc(Namespace+"_task_orphans",
				"Tasks currently orphaned (no activity for longer than orphan_after, not terminal), across the cluster; exported by one elected replica.", []string{"agent"}, nil),
		},
		tenants: tenants,
	}
	reg.MustRegister(l.stateDuration, l.lifetime, l.transitions, l.interruptions, l.resumes,
		l.orphansDetected, l.eventsDropped, l.eventsDup, l.watchdog, l.polls, l.queueDropped, l.cluster)
	return l
}

// tenantLabels maps tenants to bounded label values.
type tenantLabels struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// names appends the tenant label name when the tenant label is on.
func (t *tenantLabels) names(labels ...string) []string {
	if t.max > 0 {
		return append(labels, "tenant")
	}
	return labels
}

// labels appends the tenant value when the tenant label is on.
func (t *tenantLabels) labels(tenant string, values ...string) []string {
	if t.max <= 0 {
		return values
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[tenant]; !ok {
		if len(t.seen) >= t.max {
			return append(values, OtherTenant)
		}
		t.seen[tenant] = struct{}{}
	}
	return append(values, tenant)
}

// StateLeft observes the time a task spent in state.
func (l *Lifecycle) StateLeft(agent, tenant, state string, d time.Duration) {
	l.stateDuration.WithLabelValues(l.tenants.labels(tenant, agent, state)...).Observe(max(d, 0).Seconds())
}

// Ended observes a task's lifetime on reaching terminal state.
func (l *Lifecycle) Ended(agent, tenant, state string, d time.Duration) {
	l.lifetime.WithLabelValues(l.tenants.labels(tenant, agent, state)...).Observe(max(d, 0).Seconds())
}

// Transition counts a state change.
func (l *Lifecycle) Transition(agent, tenant, from, to string) {
	l.transitions.WithLabelValues(l.tenants.labels(tenant, agent, from, to)...).Inc()
}

// Interrupted counts a task starting to wait on the client for reason.
func (l *Lifecycle) Interrupted(agent, tenant, reason string) {
	l.interruptions.WithLabelValues(l.tenants.labels(tenant, agent, reason)...).Inc()
}

// InterruptionEnded counts the end of an interruption with its outcome.
func (l *Lifecycle) InterruptionEnded(agent, tenant, reason, outcome string) {
	l.resumes.WithLabelValues(l.tenants.labels(tenant, agent, reason, outcome)...).Inc()
}

// OrphanDetected counts a task newly found orphaned.
func (l *Lifecycle) OrphanDetected(agent string) { l.orphansDetected.WithLabelValues(agent).Inc() }

// EventDropped counts an event that was not applied.
func (l *Lifecycle) EventDropped(agent, reason string) {
	l.eventsDropped.WithLabelValues(agent, reason).Inc()
}

// EventDuplicate counts an event that repeated the current state.
func (l *Lifecycle) EventDuplicate(agent string) { l.eventsDup.WithLabelValues(agent).Inc() }

// WatchdogAction counts one watchdog action on a task over budget in state.
func (l *Lifecycle) WatchdogAction(agent, action, state string) {
	l.watchdog.WithLabelValues(agent, action, state).Inc()
}

// Polled counts one read of an open task without news; outcome is
// "changed", "unchanged" or "failed".
func (l *Lifecycle) Polled(agent, outcome string) {
	l.polls.WithLabelValues(agent, outcome).Inc()
}

// QueueDropped counts an event dropped on a full queue.
func (l *Lifecycle) QueueDropped() { l.queueDropped.Inc() }

// ClusterGauges are the cluster-wide gauge values: task counts by agent and
// state, orphan counts by agent.
type ClusterGauges struct {
	Tasks   map[string]map[string]int
	Orphans map[string]int
}

// ClusterSource returns the current cluster-wide gauges, and false when
// this replica must not export them (it does not hold the lease).
type ClusterSource func() (ClusterGauges, bool)

// SetClusterSource sets where the cluster-wide gauges come from. Until it
// is set, they are not exported.
func (l *Lifecycle) SetClusterSource(src ClusterSource) { l.cluster.src.Store(&src) }

// clusterCollector exports the cluster-wide gauges only while its source
// says so; registered once, it never has to be unregistered when the
// replica loses the lease.
type clusterCollector struct {
	tasks, orphans *prometheus.Desc
	src            atomic.Pointer[ClusterSource]
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tasks
	ch <- c.orphans
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.src.Load()
	if src == nil {
		return
	}
	g, ok := (*src)()
	if !ok {
		return
	}
	for agent, states := range g.Tasks {
		for state, n := range states {
			ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(n), agent, state)
		}
	}
	for agent, n := range g.Orphans {
		ch <- prometheus.MustNewConstMetric(c.orphans, prometheus.GaugeValue, float64(n), agent)
	}
}
