package config

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Watchdog actions.
const (
	// WatchdogEscalate tells operations (a log line, a metric and a POST to
	// lifecycle.ops_webhook) and leaves the task alone. The default: only
	// the agent knows whether a long task is stuck.
	WatchdogEscalate = "escalate"
	// WatchdogCancel cancels the task at the agent.
	WatchdogCancel = "cancel"
)

// Bounds on the lifecycle options.
const (
	// MinSweepInterval keeps the sweep from hammering the store.
	MinSweepInterval = 100 * time.Millisecond
	// MaxLifecycleWorkers and MaxLifecycleQueue bound the memory the event
	// queue may take.
	MaxLifecycleWorkers = 256
	MaxLifecycleQueue   = 1 << 20
	// MaxTenantLabelsLimit bounds the tenant label's cardinality.
	MaxTenantLabelsLimit = 1000
	// MaxPollsPerSweepLimit bounds lifecycle.max_polls_per_sweep: each poll
	// is a call to the agent within one sweep.
	MaxPollsPerSweepLimit = 10000
	// MinOpsTokenBytes is the shortest ops token accepted: anything shorter
	// can be guessed.
	MinOpsTokenBytes = 16
)

// LifecycleOptions is the `lifecycle:` section: how the gateway follows
// each task's states, when it calls a task an orphan, how long it keeps
// the records, and the operations API and webhook.
type LifecycleOptions struct {
	// RecordRetention is how long a task's record is kept after its last
	// activity, unless the tenant has its own retention or the record is
	// under legal hold. Default 720h (30 days).
	RecordRetention duration.Duration `yaml:"record_retention"`
	// TenantRetention overrides RecordRetention per tenant.
	TenantRetention map[string]duration.Duration `yaml:"tenant_retention"`
	// OrphanAfter is how long a task that has not reached a terminal state
	// may go without any activity before it counts as an orphan. Default 1h.
	OrphanAfter duration.Duration `yaml:"orphan_after"`
	// SweepInterval is how often one replica looks for orphans, tasks over
	// their watchdog budget and records past retention, and refreshes the
	// cluster-wide gauges. Default 30s; at least 100ms.
	SweepInterval duration.Duration `yaml:"sweep_interval"`
	// PollAfter is how long an open task may go without news before the
	// sweeping replica reads it from its agent (GetTask), when no client's
	// stream and no push source follows it; a read that finds it unchanged
	// waits twice as long for the next, up to OrphanAfter. Default 30s; 0
	// disables the reads.
	PollAfter *duration.Duration `yaml:"poll_after"`
	// MaxPollsPerSweep bounds those reads per agent and sweep; the oldest
	// tasks go first. Default 100.
	MaxPollsPerSweep int `yaml:"max_polls_per_sweep"`
	// TenantLabel adds a tenant label to the per-task lifecycle metrics and
	// to a2agw_claim_refusals_total.
	TenantLabel bool `yaml:"tenant_label"`
	// MaxTenantLabels caps the distinct tenant label values; further
	// tenants share the value "other". Default 20.
	MaxTenantLabels int `yaml:"max_tenant_labels"`
	// OpsTokenEnv names the environment variable holding the bearer token
	// of the operations API (/ops/ on the admin listener). Without it every
	// /ops request is refused.
	OpsTokenEnv string `yaml:"ops_token_env"`
	// OpsWebhook is an http(s) URL the watchdog POSTs escalations to.
	OpsWebhook string `yaml:"ops_webhook"`
	// Workers is the number of goroutines applying task events; events of
	// one task always go to the same worker, in order. Default 32 (they
	// mostly wait on Redis).
	Workers int `yaml:"workers"`
	// QueueSize is each worker's queue length. When it is full the request
	// that brings an event waits up to 50ms for room; an event still without
	// room is dropped and counted. Default 1024.
	QueueSize int `yaml:"queue_size"`
}

// WatchdogOptions are one agent's budgets for the time a task may spend in
// a state before the watchdog acts.
type WatchdogOptions struct {
	// Working is the budget for the working state, and for the submitted
	// state before it: a task the agent took but never started is as stuck
	// as one that never ends. 0: no budget.
	Working duration.Duration `yaml:"working"`
	// InputRequired is the budget for waiting on the client's input. 0: no budget.
	InputRequired duration.Duration `yaml:"input_required"`
	// AuthRequired is the budget for waiting on a credential. 0: no budget.
	AuthRequired duration.Duration `yaml:"auth_required"`
	// Action is "escalate" (default) or "cancel".
	Action string `yaml:"action"`
}

// ApplyDefaults fills unset fields with their documented defaults.
func (o *LifecycleOptions) ApplyDefaults() {
	o.RecordRetention = duration.Duration(o.RecordRetention.Or(720 * time.Hour))
	o.OrphanAfter = duration.Duration(o.OrphanAfter.Or(time.Hour))
	o.SweepInterval = duration.Duration(o.SweepInterval.Or(30 * time.Second))
	if o.PollAfter == nil {
		d := duration.Duration(30 * time.Second)
		o.PollAfter = &d
	}
	if o.MaxPollsPerSweep == 0 {
		o.MaxPollsPerSweep = 100
	}
	if o.MaxTenantLabels == 0 {
		o.MaxTenantLabels = 20
	}
	if o.Workers == 0 {
		o.Workers = 32
	}
	if o.QueueSize == 0 {
		o.QueueSize = 1024
	}
}

// Validate checks the options; errors name the field.
func (o *LifecycleOptions) Validate(env Env) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("lifecycle.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if o.RecordRetention <= 0 {
		add("record_retention", "must be positive")
	}
	tenants := make([]string, 0, len(o.TenantRetention))
	for t := range o.TenantRetention {
		tenants = append(tenants, t)
	}
	sort.Strings(tenants) // errors in a stable order
	for _, t := range tenants {
		if t == "" {
			add("tenant_retention", "tenant names must not be empty")
		} else if o.TenantRetention[t] <= 0 {
			add(fmt.Sprintf("tenant_retention[%q]", t), "must be positive")
		}
	}
	if o.OrphanAfter <= 0 {
		add("orphan_after", "must be positive")
	}
	if o.SweepInterval.D() < MinSweepInterval {
		add("sweep_interval", "must be at least %s", MinSweepInterval)
	}
	if o.PollAfter != nil && *o.PollAfter < 0 {
		add("poll_after", "must not be negative")
	}
	if o.MaxPollsPerSweep < 1 || o.MaxPollsPerSweep > MaxPollsPerSweepLimit {
		add("max_polls_per_sweep", "want 1 to %d, got %d", MaxPollsPerSweepLimit, o.MaxPollsPerSweep)
	}
	if o.TenantLabel && (o.MaxTenantLabels < 1 || o.MaxTenantLabels > MaxTenantLabelsLimit) {
		add("max_tenant_labels", "want 1 to %d, got %d", MaxTenantLabelsLimit, o.MaxTenantLabels)
	}
	if o.OpsTokenEnv != "" && env != nil {
		// The value is never echoed: it is a credential.
		switch v, ok := env(o.OpsTokenEnv); {
		case !ok:
			add("ops_token_env", "environment variable %s is not set", o.OpsTokenEnv)
		case len(v) < MinOpsTokenBytes:
			add("ops_token_env", "the token in %s must be at least %d bytes", o.OpsTokenEnv, MinOpsTokenBytes)
		}
	}
	if o.OpsWebhook != "" {
		if u, err := url.Parse(o.OpsWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("ops_webhook", "want an absolute http(s) URL")
		}
	}
	if o.Workers < 1 || o.Workers > MaxLifecycleWorkers {
		add("workers", "want 1 to %d, got %d", MaxLifecycleWorkers, o.Workers)
	}
	if o.QueueSize < 1 || o.QueueSize > MaxLifecycleQueue {
		add("queue_size", "want 1 to %d, got %d", MaxLifecycleQueue, o.QueueSize)
	}
	return errors.Join(errs...)
}

// Retention is how long the records of tenant are kept after their last
// activity.
func (o *LifecycleOptions) Retention(tenant string) time.Duration {
	if d, ok := o.TenantRetention[tenant]; ok {
		return d.D()
	}
	return o.RecordRetention.D()
}

// Polling is PollAfter, 0 when the reads are disabled.
func (o *LifecycleOptions) Polling() time.Duration {
	if o.PollAfter == nil {
		return 0
	}
	return o.PollAfter.D()
}

// ApplyDefaults fills unset fields with their documented defaults.
func (w *WatchdogOptions) ApplyDefaults() {
	if w.Action == "" {
		w.Action = WatchdogEscalate
	}
}

// Validate checks the options; field is the path of the section, such as
// "agents[0].watchdog".
func (w *WatchdogOptions) Validate(field string) error {
	var errs []error
	for _, b := range []struct {
		name string
		d    duration.Duration
	}{{"working", w.Working}, {"input_required", w.InputRequired}, {"auth_required", w.AuthRequired}} {
		if b.d < 0 {
			errs = append(errs, fmt.Errorf("%s.%s: must not be negative", field, b.name))
		}
	}
	if w.Action != WatchdogEscalate && w.Action != WatchdogCancel {
		errs = append(errs, fmt.Errorf("%s.action: want %q or %q, got %q", field, WatchdogEscalate, WatchdogCancel, w.Action))
	}
	return errors.Join(errs...)
}

// Enabled reports whether any state has a budget.
func (w *WatchdogOptions) Enabled() bool {
	return w.Working > 0 || w.InputRequired > 0 || w.AuthRequired > 0
}
