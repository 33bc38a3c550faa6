// Package lifecycle follows every task the gateway sees through its
// states. It keeps one record per task in the store (store.Lifecycle), fed
// by each answer and stream event the proxy observes, by push
// notifications (Record, Accept) and by the gateway's own actions; exports
// metrics about dwell times, transitions and interruptions; refuses
// requests the protocol forbids for tasks it knows are terminal (Guard);
// and, on one elected replica, looks for orphaned tasks, tasks over their
// watchdog budget and records past retention (Run). An operations API
// (OpsHandler) lists and inspects the records and sets legal holds.
//
// Events are applied off the request path, in order per task: each goes to
// one of a fixed set of workers chosen by a hash of agent and task id.
// Terminal states are final; concurrent writers (replicas, a cancel racing
// a completion) are reconciled by the store's compare-and-set.
package lifecycle

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

const (
	// applyTimeout bounds the store calls of one event.
	applyTimeout = 5 * time.Second
	// drainTimeout bounds how long Close keeps applying queued events.
	drainTimeout = 10 * time.Second
	// webhookTimeout bounds one escalation POST.
	webhookTimeout = 10 * time.Second
)

var (
	// ErrQueueFull means an event was dropped because its worker's queue
	// was full; it was counted and logged.
	ErrQueueFull = errors.New("lifecycle: event queue full")
	// ErrClosed means the tracker was closed.
	ErrClosed = errors.New("lifecycle: tracker closed")
	// errInvalidEvent means an event lacks what identifies its task.
	errInvalidEvent = errors.New("lifecycle: invalid event")
)

// Caller makes the gateway's own JSON-RPC calls to an agent: the watchdog's
// re-read and cancel, the sweep's polls. *proxy.Gateway implements it.
type Caller interface {
	Call(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error)
}

// CallerFunc adapts a function to Caller, so the proxy can be bound after
// the tracker was built (the tracker's stage is part of the proxy).
type CallerFunc func(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error)

// Call calls f.
func (f CallerFunc) Call(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error) {
	return f(ctx, agent, v, m, params)
}

// Agent is what the tracker needs to know about one configured agent.
type Agent struct {
	Name     string
	Watchdog config.WatchdogOptions
	// TenantRouting says the agent expects the 1.0 routing tenant in every
	// request, the watchdog's calls included.
	TenantRouting bool
}

// Options assemble a Tracker.
type Options struct {
	// Store keeps the records. Required.
	Store store.Lifecycle
	// Config is the lifecycle section, defaults applied.
	Config config.LifecycleOptions
	// Agents are the configured agents; the sweep covers exactly these.
	Agents []Agent
	// Caller reaches the agents for the watchdog; required when an agent
	// has a watchdog budget.
	Caller Caller
	// Metrics receives the lifecycle metrics. Required.
	Metrics *metrics.Lifecycle
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Holder names this replica in leases; default a random name.
	Holder string
	// Webhook posts escalations; default a client with a timeout that
	// follows no redirects.
	Webhook *http.Client
	// Followed, when set, reports whether a push source follows the task
	// at its agent: the sweep does not poll those (poll.go).
	Followed func(ctx context.Context, agent, taskID string) (bool, error)
	// OnWatchdog, when set, hears of every task the sweep finds orphaned
	// (action WatchdogOrphaned) or escalates (WatchdogEscalated), with the
	// state it is stuck in, so the push relay can tell its consumers.
	OnWatchdog func(ctx context.Context, agent, taskID, action string, state a2a.State)
}

// Actions passed to Options.OnWatchdog.
const (
	WatchdogOrphaned  = "orphaned"
	WatchdogEscalated = actionEscalate
)

// TaskEvent is one thing the gateway learned about a task.
type TaskEvent struct {
	Agent, TaskID, ContextID string
	// Tenant and Subject own the task; a record is created only for an
	// event that names its tenant.
	Tenant, Subject string
	// Version is the protocol version of the exchange that carried the
	// event; zero when unknown (a push notification).
	Version a2a.Version
	// State is the task's state, or StateUnknown for events that carry
	// none (an artifact, a message): those count as activity.
	State a2a.State
	// At is when the gateway saw the event; zero means now.
	At time.Time
	// Opened, when set, is when the request that created the task began.
	Opened time.Time
	// EndedBy says who caused a terminal state: store.EndedByCancel for a
	// caller's cancel, store.EndedByWatchdog; empty means the agent.
	EndedBy string

	// subscribers changes the count of open streams instead of the state.
	subscribers int
}

// Tracker follows task lifecycles. Build it with New; it is safe for
// concurrent use.
type Tracker struct {
	st      store.Lifecycle
	o       config.LifecycleOptions
	agents  map[string]Agent
	names   []string // sorted agent names
	caller  Caller
	m       *metrics.Lifecycle
	log     *slog.Logger
	holder  string
	webhook *http.Client
	// followed is Options.Followed, possibly nil.
	followed func(ctx context.Context, agent, taskID string) (bool, error)
	// onWatchdog is Options.OnWatchdog, never nil.
	onWatchdog func(ctx context.Context, agent, taskID, action string, state a2a.State)
	// opsToken is the digest of the ops API token; nil refuses every call.
	opsToken []byte

	q *queue
	// recent spares reads of records this replica saved last.
	recent *recordCache
	// baseCtx bounds every store call of the workers; cancelled once
	// Close has waited drainTimeout.
	baseCtx context.Context
	cancel  context.CancelFunc

	// cluster is what this replica exports as cluster-wide gauges, and
	// until when; nil while it does not hold the gauges lease.
	cluster atomic.Pointer[clusterState]

	sweepMu sync.Mutex
	sweep   sweepState

	storeErrs *throttle
	queueErrs *throttle
	closeOnce sync.Once
}

// New builds a tracker and starts its workers; Close stops them. The
// watchdog and the gauges need Run.
func New(o Options) (*Tracker, error) {
	if o.Store == nil || o.Metrics == nil {
		return nil, errors.New("lifecycle: a store and metrics are required")
	}
	if o.Config.Workers < 1 || o.Config.QueueSize < 1 || o.Config.SweepInterval <= 0 || o.Config.OrphanAfter <= 0 || o.Config.RecordRetention <= 0 {
		return nil, errors.New("lifecycle: options without defaults; call ApplyDefaults and Validate first")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{
		st:        o.Store,
		recent:    newRecordCache(),
		o:         o.Config,
		agents:    make(map[string]Agent, len(o.Agents)),
		caller:    o.Caller,
		m:         o.Metrics,
		log:       log,
		holder:    o.Holder,
		webhook:   o.Webhook,
		storeErrs: newThrottle(10 * time.Second),
		queueErrs: newThrottle(10 * time.Second),
		sweep:     newSweepState(),
	}
	for _, a := range o.Agents {
		if a.Name == "" {
			return nil, errors.New("lifecycle: an agent without a name")
		}
		if _, dup := t.agents[a.Name]; dup {
			return nil, fmt.Errorf("lifecycle: agent %q is listed twice", a.Name)
		}
		a.Watchdog.ApplyDefaults()
		if a.Watchdog.Enabled() && t.caller == nil {
			return nil, fmt.Errorf("lifecycle: agent %q has a watchdog budget but no Caller was given", a.Name)
		}
		t.agents[a.Name] = a
		t.names = append(t.names, a.Name)
	}
	sort.Strings(t.names)
	if t.holder == "" {
		t.holder = defaultHolder()
	}
	t.followed = o.Followed
	t.onWatchdog = o.OnWatchdog
	if t.onWatchdog == nil {
		t.onWatchdog = func(context.Context, string, string, string, a2a.State) {}
	}
	if t.webhook == nil {
		t.webhook = &http.Client{
			Transport:     telemetry.Transport(nil, "ops webhook"),
			Timeout:       webhookTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if env := o.Config.OpsTokenEnv; env != "" {
		if tok := os.Getenv(env); tok != "" {
			sum := sha256.Sum256([]byte(tok))
			t.opsToken = sum[:]
		}
	}
	t.baseCtx, t.cancel = context.WithCancel(context.Background())
	t.q = newQueue(o.Config.Workers, o.Config.QueueSize, t.work)
	t.m.SetClusterSource(t.clusterGauges)
	return t, nil
}

// defaultHolder names this process in leases: unique per process, readable
// in Redis.
func defaultHolder() string {
	host, _ := os.Hostname()
	var b [8]byte
	_, _ = rand.Read(b[:])
	if len(host) > 64 {
		host = host[:64]
	}
	return host + "-" + hex.EncodeToString(b[:])
}

// Close applies what is queued (for at most drainTimeout) and stops the
// workers. Events recorded afterwards are refused with ErrClosed.
func (t *Tracker) Close() {
	t.closeOnce.Do(func() {
		stop := time.AfterFunc(drainTimeout, t.cancel)
		t.q.close()
		stop.Stop()
		t.cancel()
		t.cluster.Store(nil)
	})
}

// Flush waits until every event queued before the call has been applied.
func (t *Tracker) Flush(ctx context.Context) error { return t.q.flush(ctx) }

// Record queues ev to be applied in order with the other events of its
// task. It never blocks, so it does not wait on ctx: when the task's queue
// is full the event is dropped, counted and logged, and ErrQueueFull
// returned. An event seen as a caller leaves must still be recorded.
func (t *Tracker) Record(ctx context.Context, ev TaskEvent) error {
	if err := checkEvent(&ev); err != nil {
		return err
	}
	err := t.q.tryPut(item{ev: ev})
	if errors.Is(err, ErrQueueFull) {
		// Under overload the caller waits a little for room (back pressure)
		// rather than the record losing an event at once.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWait)
		if t.q.put(wctx, item{ev: ev}) == nil {
			err = nil
		}
		cancel()
	}
	if errors.Is(err, ErrQueueFull) {
		t.m.QueueDropped()
		if n, ok := t.queueErrs.allow(); ok {
			t.log.Warn("lifecycle: event queue full; task event dropped", "agent", ev.Agent, "task_id", ev.TaskID, "dropped_since_last_report", n)
		}
	}
	return err
}

// recordWait bounds how long Record waits for room in a full queue.
const recordWait = 50 * time.Millisecond

// Accept applies ev to the task's record, in order with the events queued
// before it, and reports whether the event is consistent with the task's
// lifecycle: false for an event dropped as late (after a terminal state)
// or regressive (a transition the protocol does not allow). A push relay
// calls it to decide whether to relay an event; the event is then recorded
// and must not be passed to Record again.
func (t *Tracker) Accept(ctx context.Context, agent, taskID string, ev a2a.Event) (bool, error) {
	if ev.TaskID != "" && ev.TaskID != taskID {
		return false, fmt.Errorf("%w: the event is about task %q, not %q", errInvalidEvent, ev.TaskID, taskID)
	}
	return t.accept(ctx, TaskEvent{Agent: agent, TaskID: taskID, ContextID: ev.ContextID, State: ev.State})
}

// accept applies a TaskEvent synchronously, in its task's order.
func (t *Tracker) accept(ctx context.Context, ev TaskEvent) (bool, error) {
	if err := checkEvent(&ev); err != nil {
		return false, err
	}
	reply := make(chan applied, 1)
	if err := t.q.put(ctx, item{ev: ev, reply: reply}); err != nil {
		return false, err
	}
	select {
	case r := <-reply:
		return r.accepted, r.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func checkEvent(ev *TaskEvent) error {
	if ev.Agent == "" || ev.TaskID == "" {
		return fmt.Errorf("%w: agent and task id are required", errInvalidEvent)
	}
	if len(ev.Agent) > store.MaxNameBytes || len(ev.TaskID) > store.MaxNameBytes {
		return fmt.Errorf("%w: agent or task id over %d bytes", errInvalidEvent, store.MaxNameBytes)
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	return nil
}

// work is the workers' handler of one queued event.
func (t *Tracker) work(it item) {
	ctx, cancel := context.WithTimeout(t.baseCtx, applyTimeout)
	defer cancel()
	ok, err := t.apply(ctx, it.ev)
	if err != nil {
		if n, allow := t.storeErrs.allow(); allow {
			t.log.Warn("lifecycle: task event not applied", "agent", it.ev.Agent, "task_id", it.ev.TaskID,
				"state", it.ev.State.String(), "err", err, "failures_since_last_report", n)
		}
	}
	if it.reply != nil {
		it.reply <- applied{accepted: ok, err: err}
	}
}

// throttle lets one report through per period and counts the rest, so an
// outage yields a log line every period rather than one per event.
type throttle struct {
	every      time.Duration
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func newThrottle(every time.Duration) *throttle { return &throttle{every: every} }

// allow reports whether to log now, and how many reports were suppressed
// since the last one.
func (th *throttle) allow() (int, bool) {
	th.mu.Lock()
	defer th.mu.Unlock()
	now := time.Now()
	if !th.last.IsZero() && now.Sub(th.last) < th.every {
		th.suppressed++
		return 0, false
	}
	n := th.suppressed
	th.last, th.suppressed = now, 0
	return n, true
}
