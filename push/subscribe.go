package push

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/url"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// This file holds the upstream subscriber: every replica runs one, and for
// each task with push configs (store.PushConfigs.Watched) exactly one
// replica, the holder of the task's lease, follows the task at its agent
// and publishes what it learns to the Relay. It follows a task in one of
// three ways:
//
//   - native: the agent pushes notifications to the gateway's own webhook
//     (inbound.go), registered at the agent with a per-task secret; the
//     holder reads the task with GetTask when the agent stays silent for
//     ReconcileInterval;
//   - stream: the holder subscribes to the task's stream (SubscribeToTask,
//     tasks/resubscribe); a stream that ends without a terminal event is
//     reconciled with GetTask, one that breaks is opened again after an
//     exponential backoff with full jitter;
//   - polling: after MaxStreamFailures streams in a row failed or ended
//     without news, or when the agent cannot stream, GetTask every
//     PollInterval.
//
// Every new stream, GetTask answer and takeover starts with the task as the
// agent shows it, compared with the task's event log (reconcile.go), so
// nothing the log missed is lost, whichever replica held the task before.
// Each event is applied to the task's lifecycle record first and published
// only when the record accepts it.
//
// The store may fail to take an event (an outage, a failover). The task
// then stays in the watched index, and the event is kept and published
// again (retry.go); the holder reads the task again after a backoff
// instead of waiting for the agent's silence, and a task the agent shows
// ended has its logged terminal event published again, which enqueues
// what the queue does not hold yet and only then finishes the task.

// WatchdogMetadataKey is the metadata member of the status update the relay
// publishes when the lifecycle watchdog declares a watched task orphaned or
// escalates it: {"action": ..., "reason": ...}.
const WatchdogMetadataKey = "a2a-gateway/watchdog"

// SourceMode is how the relay follows an agent's tasks.
type SourceMode string

// Source modes; auto picks one from the agent's card.
const (
	SourceAuto   SourceMode = "auto"
	SourceNative SourceMode = "native"
	SourceStream SourceMode = "stream"
	sourcePoll   SourceMode = "poll"
	sourceDone   SourceMode = ""
)

// Upstream reaches the agents; *proxy.Gateway is one.
type Upstream interface {
	Call(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any) ([]byte, error)
	CallStream(ctx context.Context, agent string, v a2a.Version, m a2a.Method, params any, yield func(ev a2a.Event, result []byte) error) error
}

// Capabilities is what an agent's card says it can do.
type Capabilities struct {
	Streaming, PushNotifications bool
}

// Acceptor applies an event to the task's lifecycle record and reports
// whether the event is consistent with it; *lifecycle.Tracker is one.
type Acceptor interface {
	Accept(ctx context.Context, agent, taskID string, ev a2a.Event) (bool, error)
}

// Leaser grants leases held until they run out unrenewed; store.Lifecycle
// is one.
type Leaser interface {
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
}

// SourceMetrics receives the subscriber's events; calls must be cheap.
type SourceMetrics interface {
	// Subscriptions changes the count of tasks this replica follows.
	Subscriptions(agent string, delta int)
	Resubscribed(agent string)
	PollingFallback(agent string)
	TakenOver(agent string)
}

// SourceAgent says how one agent's tasks are followed.
type SourceAgent struct {
	Name string
	Mode SourceMode
	// Version, when set, is the version the agent is asked in whatever
	// version its tasks' consumers registered in: a bridged agent's own.
	// Asked in another, the gateway would read each task through the
	// bridge, which drops the members the other version lacks, and the
	// task would look changed on every read. The relay renders every
	// event in each consumer's version anyway.
	Version a2a.Version
	// TenantRouting sends the task owner's tenant with every 1.0 call.
	TenantRouting bool
	// LeaseTTL is the subscription lease, renewed every third of it.
	LeaseTTL time.Duration
	// MaxBackoff caps the wait before a stream is opened again.
	MaxBackoff time.Duration
	// MaxStreamFailures streams in a row that fail or bring nothing new
	// make the holder poll instead.
	MaxStreamFailures int
	PollInterval      time.Duration
	// ReconcileInterval is how long a natively pushing agent may stay
	// silent before the holder asks for the task.
	ReconcileInterval time.Duration
}

// SubscriberOptions assemble a Subscriber; every field but Metrics, Logger
// and ScanInterval is required.
type SubscriberOptions struct {
	Relay    *Relay
	Configs  store.PushConfigs
	Sources  store.PushSources
	Leases   Leaser
	Tracker  Acceptor
	Upstream Upstream
	// Capabilities reads an agent's card, for SourceAuto.
	Capabilities func(ctx context.Context, agent string) (Capabilities, error)
	Agents       []SourceAgent
	// InboundURL is the public base of the native webhook; a task's is
	// InboundURL/<agent>/<task id>.
	InboundURL string
	// Holder names this replica in leases.
	Holder string
	// ScanInterval is how often the watched tasks are looked through for
	// one without a holder. Default 1s.
	ScanInterval time.Duration
	// Observe, when set, sees every event a source applied to the task's
	// lifecycle record and the record accepted, before it is published:
	// the auth flow opens a challenge for a task that entered
	// auth-required.
	Observe func(ctx context.Context, ev Event)
	Metrics SourceMetrics
	Logger  *slog.Logger
}

// Subscriber follows watched tasks upstream; see the top of this file.
type Subscriber struct {
	o       SubscriberOptions
	agents  map[string]SourceAgent
	views   *views
	retries *retries
	log     *slog.Logger

	mu   sync.Mutex
	held map[store.TaskRef]*holding
	// waiting counts the native pushes of each task that wait for a read
	// (inbound.go).
	waiting map[store.TaskRef]int
	wg      sync.WaitGroup
}

// holding is a task this replica follows.
type holding struct {
	stop context.CancelFunc
	// repair asks the follower to read the task again soon: something
	// about it did not reach the store.
	repair chan struct{}
}

// DefaultScanInterval is SubscriberOptions.ScanInterval's default.
const DefaultScanInterval = time.Second

// NewSubscriber checks o and returns a subscriber; Run starts it.
func NewSubscriber(o SubscriberOptions) (*Subscriber, error) {
	if o.Relay == nil || o.Configs == nil || o.Sources == nil || o.Leases == nil || o.Tracker == nil || o.Upstream == nil ||
		o.Capabilities == nil || o.InboundURL == "" || o.Holder == "" {
		return nil, errors.New("push: subscriber: relay, stores, leases, tracker, upstream, capabilities, inbound URL and holder are required")
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = DefaultScanInterval
	}
	if o.Metrics == nil {
		o.Metrics = nopSourceMetrics{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Subscriber{o: o, agents: map[string]SourceAgent{}, views: newViews(), retries: newRetries(), log: o.Logger, held: map[store.TaskRef]*holding{}, waiting: map[store.TaskRef]int{}}
	for _, a := range o.Agents {
		if a.LeaseTTL <= 0 || a.MaxBackoff <= 0 || a.MaxStreamFailures < 1 || a.PollInterval <= 0 || a.ReconcileInterval <= 0 {
			return nil, fmt.Errorf("push: subscriber: agent %q: lease, backoff, failures and intervals must be positive", a.Name)
		}
		s.agents[a.Name] = a
	}
	return s, nil
}

// Run scans the watched tasks every ScanInterval, and publishes again the
// events whose publication failed, until ctx ends; then it waits for the
// tasks it follows to let go.
func (s *Subscriber) Run(ctx context.Context) {
	defer s.wg.Wait()
	s.wg.Go(func() { s.retryLoop(ctx) })
	tick := time.NewTicker(s.o.ScanInterval)
	defer tick.Stop()
	for {
		if err := s.Scan(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("push: scan of the watched tasks failed", "error", err)
			// The store failed: what the tasks followed here published
			// meanwhile may be lost, so they are read again once it is back.
			s.nudgeAll()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Scan is one pass of Run: it takes the lease of every watched task that
// has no live holder and starts following it, and stops following tasks
// that are no longer watched.
func (s *Subscriber) Scan(ctx context.Context) error {
	refs, err := s.o.Configs.Watched(ctx, store.MaxWatchedListLimit)
	if err != nil {
		return err
	}
	watched := make(map[store.TaskRef]bool, len(refs))
	var errs []error
	for _, ref := range refs {
		watched[ref] = true
		a, ok := s.agents[ref.Agent]
		if !ok || s.following(ref) {
			continue
		}
		got, err := s.o.Leases.Lease(ctx, leaseName(ref), s.o.Holder, a.LeaseTTL)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if got {
			s.start(ctx, ref, a)
		}
	}
	if len(refs) < store.MaxWatchedListLimit {
		// A task missing from a full page may only be further down.
		s.mu.Lock()
		for ref, h := range s.held {
			if !watched[ref] {
				h.stop()
			}
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (s *Subscriber) following(ref store.TaskRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[ref]
	return ok
}

// nudge asks the follower of ref on this replica, if there is one, to read
// the task again soon.
func (s *Subscriber) nudge(ref store.TaskRef) {
	s.mu.Lock()
	h := s.held[ref]
	s.mu.Unlock()
	if h != nil {
		h.nudge()
	}
}

func (s *Subscriber) nudgeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.held {
		h.nudge()
	}
}

func (h *holding) nudge() {
	select {
	case h.repair <- struct{}{}:
	default: // asked already
	}
}

// leaseName is the task's subscription lease; a name over the store's
// bound is shortened to a digest of the task id.
func leaseName(ref store.TaskRef) string {
	name := "push-sub:" + ref.Agent + ":" + ref.TaskID
	if len(name) <= store.MaxNameBytes {
		return name
	}
	sum := sha256.Sum256([]byte(ref.TaskID))
	return "push-sub:" + ref.Agent + ":#" + hex.EncodeToString(sum[:])
}

// start follows ref while the lease is held: one goroutine renews it every
// third of its ttl and stops the follower when it is lost (or cannot be
// renewed for a whole ttl), the other follows the task.
func (s *Subscriber) start(parent context.Context, ref store.TaskRef, a SourceAgent) {
	ctx, cancel := context.WithCancel(parent)
	h := &holding{stop: cancel, repair: make(chan struct{}, 1)}
	s.mu.Lock()
	s.held[ref] = h
	s.mu.Unlock()
	s.o.Metrics.Subscriptions(a.Name, 1)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.renew(ctx, h, ref, a)
	}()
	go func() {
		defer s.wg.Done()
		defer func() {
			cancel()
			s.mu.Lock()
			delete(s.held, ref)
			s.mu.Unlock()
			s.o.Metrics.Subscriptions(a.Name, -1)
		}()
		f := &follower{s: s, ref: ref, a: a, repair: h.repair}
		f.run(ctx)
	}()
}

func (s *Subscriber) renew(ctx context.Context, h *holding, ref store.TaskRef, a SourceAgent) {
	tick := time.NewTicker(a.LeaseTTL / 3)
	defer tick.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ok, err := s.o.Leases.Lease(ctx, leaseName(ref), s.o.Holder, a.LeaseTTL)
		switch {
		case err == nil && !ok:
			s.log.Info("push: subscription lease lost to another replica", "agent", ref.Agent, "task_id", ref.TaskID)
			h.stop()
			return
		case err == nil:
			renewed = time.Now()
		case time.Since(renewed) >= a.LeaseTTL:
			s.log.Warn("push: subscription lease could not be renewed; letting the task go", "agent", ref.Agent, "task_id", ref.TaskID, "error", err)
			h.stop()
			return
		default:
			// The store failed: the task's events may not have reached it.
			h.nudge()
		}
	}
}

// follower follows one task while its lease is held.
type follower struct {
	s   *Subscriber
	ref store.TaskRef
	a   SourceAgent
	// v is the version the agent is asked in, tenant the routing tenant.
	v      a2a.Version
	tenant string
	// repair is holding.repair.
	repair <-chan struct{}
	// liveChecked is when the task's live mark was last read (live.go).
	liveChecked time.Time
}

// errDone ends a stream once the task's terminal event is published.
var errDone = errors.New("push: the task ended")

// run follows the task until it ends, its configs are gone or ctx ends.
func (f *follower) run(ctx context.Context) {
	if !f.load(ctx) {
		return
	}
	mode := f.mode(ctx)
	for mode != sourceDone && ctx.Err() == nil {
		// A client's stream of the task publishes its events meanwhile.
		if !f.awaitIdle(ctx) {
			return
		}
		switch mode {
		case SourceNative:
			mode = f.native(ctx)
		case SourceStream:
			mode = f.stream(ctx)
		default:
			f.s.o.Metrics.PollingFallback(f.a.Name)
			mode = f.poll(ctx)
		}
	}
}

// load reads the task's configs, which say what version to speak and
// whose tenant it is, and records this replica as the holder. It reports
// false when there is nothing to follow.
func (f *follower) load(ctx context.Context) bool {
	s := f.s
	for attempt := 1; ctx.Err() == nil; attempt++ {
		configs, err := s.o.Configs.List(ctx, f.ref.Agent, f.ref.TaskID)
		if err == nil && len(configs) == 0 {
			// Every config was deleted: nobody is waiting for the task.
			f.finish(ctx)
			return false
		}
		if err == nil {
			f.v, f.tenant = f.a.askIn(configs[0].Version), configs[0].Tenant
			err = f.recordHolder(ctx)
		}
		if err == nil {
			return true
		}
		s.log.Warn("push: task not followed yet", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", err)
		if !sleep(ctx, retryDelay(attempt, f.a.MaxBackoff)) {
			return false
		}
	}
	return false
}

// recordHolder counts a takeover when another replica held the task last.
func (f *follower) recordHolder(ctx context.Context) error {
	src, found, err := f.s.o.Sources.Get(ctx, f.ref.Agent, f.ref.TaskID)
	if err != nil {
		return err
	}
	if found && src.Holder != f.s.o.Holder {
		f.s.o.Metrics.TakenOver(f.a.Name)
		f.s.log.Info("push: took over a task's subscription", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "previous_holder", src.Holder)
	}
	return f.s.o.Sources.Put(ctx, store.PushSource{Agent: f.ref.Agent, TaskID: f.ref.TaskID, Holder: f.s.o.Holder}, store.PushConfigRetention)
}

// mode picks how to follow the task, asking the card when configured auto.
func (f *follower) mode(ctx context.Context) SourceMode {
	if f.a.Mode != SourceAuto {
		return f.a.Mode
	}
	caps, err := f.s.o.Capabilities(ctx, f.ref.Agent)
	switch {
	case err != nil:
		f.s.log.Warn("push: agent card unreadable; subscribing to the task's stream", "agent", f.ref.Agent, "error", err)
		return SourceStream
	case caps.PushNotifications:
		return SourceNative
	case caps.Streaming:
		return SourceStream
	}
	return sourcePoll
}

// askIn is the version to ask the agent in about a task whose consumers
// registered in v.
func (a SourceAgent) askIn(v a2a.Version) a2a.Version {
	if a.Version != 0 {
		return a.Version
	}
	return v
}

// params are the params of every call about the task.
func (f *follower) params() a2a.TaskParams {
	return taskParams(f.a, f.v, f.tenant, f.ref.TaskID)
}

// taskParams are the params of a call about a task whose configs are of
// version v and tenant's.
func taskParams(a SourceAgent, v a2a.Version, tenant, taskID string) a2a.TaskParams {
	p := a2a.TaskParams{ID: taskID}
	if a.TenantRouting && v == a2a.V10 {
		p.Tenant = tenant
	}
	return p
}

// stream follows the task's stream, opening it again until the task ends
// or too many streams in a row fail; then it polls. A stream given up
// because the store failed is opened again after a backoff without
// counting against the stream: the agent did nothing wrong.
func (f *follower) stream(ctx context.Context) SourceMode {
	failures, storeFailures := 0, 0
	for opened := 0; ctx.Err() == nil; opened++ {
		if opened > 0 {
			f.s.o.Metrics.Resubscribed(f.a.Name)
		}
		news := false
		var published error
		err := f.s.o.Upstream.CallStream(ctx, f.ref.Agent, f.v, a2a.MethodSubscribe, f.params(), func(ev a2a.Event, res []byte) error {
			if ev.TaskID != "" && ev.TaskID != f.ref.TaskID {
				return nil
			}
			n, done, err := f.s.apply(ctx, f.ref, f.v, ev, res)
			news = news || n
			published = err
			if err == nil && done {
				err = errDone
			}
			if err == nil && f.liveAgain(ctx) {
				err = errLive
			}
			return err
		})
		switch {
		case errors.Is(err, errDone) || ctx.Err() != nil:
			return sourceDone
		case errors.Is(err, errLive):
			return SourceStream // subscribed again once the mark lapses
		case published != nil:
			storeFailures++
			f.s.log.Debug("push: event of a followed task not published; subscribing again", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", published)
			if !sleep(ctx, retryDelay(storeFailures, f.a.MaxBackoff)) {
				return sourceDone
			}
			continue
		case unsupported(err):
			f.s.log.Info("push: the agent does not stream the task; polling it", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", err)
			return sourcePoll
		case err == nil:
			// The stream ended without a terminal event: ask before deciding.
			done, n, rerr := f.reconcile(ctx)
			if done {
				return sourceDone
			}
			news = news || n
			err = rerr
		}
		if err != nil || !news {
			failures++
		} else {
			failures = 0
		}
		if failures >= f.a.MaxStreamFailures {
			f.s.log.Info("push: upstream stream keeps failing; polling the task", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "failures", failures, "error", err)
			return sourcePoll
		}
		if failures > 0 && !sleep(ctx, retryDelay(failures, f.a.MaxBackoff)) {
			return sourceDone
		}
	}
	return sourceDone
}

// poll reads the task every PollInterval until it ends.
func (f *follower) poll(ctx context.Context) SourceMode {
	for ctx.Err() == nil {
		if !f.awaitIdle(ctx) {
			break
		}
		done, _, err := f.reconcile(ctx)
		if done {
			return sourceDone
		}
		if err != nil {
			f.s.log.Debug("push: polling the task failed", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", err)
		}
		if !sleep(ctx, f.a.PollInterval) {
			break
		}
	}
	return sourceDone
}

// native registers the gateway's webhook at the agent, then reads the task
// whenever the agent stays silent for ReconcileInterval.
func (f *follower) native(ctx context.Context) SourceMode {
	for attempt := 1; ; attempt++ {
		err := f.register(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return sourceDone
		}
		if unsupported(err) || attempt >= f.a.MaxStreamFailures {
			f.s.log.Info("push: the agent does not take the gateway's push config; subscribing instead", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", err)
			return SourceStream
		}
		if !sleep(ctx, retryDelay(attempt, f.a.MaxBackoff)) {
			return sourceDone
		}
	}
	for failures := 0; ctx.Err() == nil; {
		// What happened before the registration is only in the task.
		done, _, err := f.reconcile(ctx)
		if done {
			return sourceDone
		}
		if err != nil {
			// A read or publication that failed is tried again after a
			// backoff, not after the agent's silence: the agent may have
			// said all it will say.
			failures++
			f.s.log.Debug("push: reading a natively pushed task failed", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", err)
			if !sleep(ctx, retryDelay(failures, f.a.MaxBackoff)) {
				return sourceDone
			}
			continue
		}
		failures = 0
		if !f.awaitSilence(ctx) {
			return sourceDone
		}
	}
	return sourceDone
}

// awaitSilence returns once the agent was silent for ReconcileInterval
// since now, or, when a repair is asked for, after a backoff; false when
// ctx ends first.
func (f *follower) awaitSilence(ctx context.Context) bool {
	read := time.Now()
	for {
		last := read
		if p := f.lastPush(); p.After(last) {
			last = p
		}
		wait := time.Until(last.Add(f.a.ReconcileInterval))
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-f.repair:
			t.Stop()
			return sleep(ctx, retryDelay(1, f.a.MaxBackoff))
		case <-t.C:
		}
	}
}

func (f *follower) lastPush() time.Time {
	if n := f.s.views.view(f.ref).pushed.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// inboundConfigID is the id of the gateway's own push config at the agent.
const inboundConfigID = "a2a-gateway"

// register gives the agent the gateway's webhook for the task with a fresh
// secret, stored hashed first so the agent's first push is recognised. A
// new holder registers again: the agent replaces the config of that id, so
// only the current secret is honoured.
func (f *follower) register(ctx context.Context) error {
	secret := rand.Text()
	sum := sha256.Sum256([]byte(secret))
	src := store.PushSource{Agent: f.ref.Agent, TaskID: f.ref.TaskID, Holder: f.s.o.Holder, SecretHash: sum[:]}
	if err := f.s.o.Sources.Put(ctx, src, store.PushConfigRetention); err != nil {
		return err
	}
	webhook := f.s.o.InboundURL + "/" + url.PathEscape(f.ref.Agent) + "/" + url.PathEscape(f.ref.TaskID)
	var params any
	if f.v == a2a.V10 {
		p := map[string]any{"taskId": f.ref.TaskID, "id": inboundConfigID, "url": webhook, "token": secret}
		if t := f.params().Tenant; t != "" {
			p["tenant"] = t
		}
		params = p
	} else {
		params = map[string]any{"taskId": f.ref.TaskID, "pushNotificationConfig": map[string]any{"id": inboundConfigID, "url": webhook, "token": secret}}
	}
	_, err := f.s.o.Upstream.Call(ctx, f.ref.Agent, f.v, a2a.MethodPushConfigSet, params)
	return err
}

// unsupported reports whether the agent refused an operation it does not
// offer, as opposed to failing at it.
func unsupported(err error) bool {
	var ae *a2a.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case a2a.ErrUnsupportedOperation.Code, a2a.ErrPushNotSupported.Code, a2a.ErrMethodNotFound.Code:
		return true
	}
	return false
}

// reconcile reads the task from the agent and publishes what the log
// missed; done reports that the task ended (or nobody waits for it any
// more), news that something was published.
func (f *follower) reconcile(ctx context.Context) (done, news bool, err error) {
	news, done, err = f.s.read(ctx, f.ref, f.v, f.params(), time.Time{})
	return done, news, err
}

// read asks the agent for the task and publishes what the log misses, one
// read of the task at a time on this replica. A caller that learnt at
// since that the task changed (a native push) is served by any read sent
// after then, which shows the change: agents store an event before they
// push it. The view is held across the call, which the agent's request
// timeout bounds.
func (s *Subscriber) read(ctx context.Context, ref store.TaskRef, v a2a.Version, p a2a.TaskParams, since time.Time) (news, done bool, err error) {
	tv := s.views.lock(ref)
	defer tv.mu.Unlock()
	if !since.IsZero() && tv.readAt.After(since) {
		return false, false, nil
	}
	sent := time.Now()
	res, err := s.o.Upstream.Call(ctx, ref.Agent, v, a2a.MethodGetTask, p)
	if err != nil {
		return false, false, err
	}
	ev, err := a2a.ParseResult(res)
	if err != nil || ev.Kind != a2a.EventTask || ev.TaskID != ref.TaskID {
		return false, false, fmt.Errorf("the agent did not answer with task %s", ref.TaskID)
	}
	news, done, err = s.applyLocked(ctx, tv, ref, v, ev, res)
	if err == nil {
		tv.readAt = sent
	}
	return news, done, err
}

// apply publishes one event of a task, of version v, in order with the
// task's other events on this replica: a Task is reconciled with the event
// log, a status or artifact update is published once the lifecycle record
// accepts it. news reports that something new was published, done that
// the task ended (and was taken out of the watched index).
func (s *Subscriber) apply(ctx context.Context, ref store.TaskRef, v a2a.Version, ev a2a.Event, payload []byte) (news, done bool, err error) {
	tv := s.views.lock(ref)
	defer tv.mu.Unlock()
	return s.applyLocked(ctx, tv, ref, v, ev, payload)
}

// applyLocked is apply with the task's view held.
func (s *Subscriber) applyLocked(ctx context.Context, tv *taskView, ref store.TaskRef, v a2a.Version, ev a2a.Event, payload []byte) (news, done bool, err error) {
	// Events kept after a failed publication go first, in their order.
	if err := s.republish(ctx, ref); err != nil {
		return false, false, err
	}
	var updates []update
	switch {
	case ev.Kind == a2a.EventTask:
		if err := tv.refresh(ctx, s.o.Relay, ref); err != nil {
			return false, false, err
		}
		if updates, err = missed(tv.snap, payload, v); err != nil {
			return false, false, err
		}
	case ev.Kind == a2a.EventStatusUpdate || ev.Kind == a2a.EventArtifactUpdate:
		updates = []update{{kind: ev.Kind, state: ev.State, payload: payload}}
	default:
		return false, false, nil // messages are no task events
	}
	for _, u := range updates {
		ok, err := s.o.Tracker.Accept(ctx, ref.Agent, ref.TaskID, a2a.Event{Kind: u.kind, TaskID: ref.TaskID, ContextID: ev.ContextID, State: u.state})
		if err != nil {
			return news, false, fmt.Errorf("apply the event to the task's lifecycle: %w", err)
		}
		// A late or regressive event is dropped: the task's record knows
		// better. But a terminal status the agent shows as the task's
		// current one is published even so: the agent's view wins, and the
		// consumers are owed the end.
		if !ok && !(ev.Kind == a2a.EventTask && u.state.Terminal()) {
			owed, err := s.owedLate(ctx, ref, tv, v, u)
			if err != nil {
				return news, false, err
			}
			if !owed {
				continue
			}
		}
		pev := Event{
			Agent: ref.Agent, TaskID: ref.TaskID, ContextID: ev.ContextID, Version: v,
			Kind: u.kind, State: u.state, Payload: u.payload, At: time.Now(), ID: u.id,
		}
		if ok && s.o.Observe != nil {
			s.o.Observe(ctx, pev)
		}
		p, err := s.o.Relay.Publish(ctx, pev)
		if err != nil {
			// The record took the event already, so applying it again
			// may not publish it, and the log may hold it already, so
			// reconciling would not either: it is kept as it is.
			s.keep(pev, false)
			return news, false, err
		}
		news = news || !p.Duplicate
		if p.Terminal {
			s.forget(ctx, ref)
			return news, true, nil
		}
	}
	if ev.Kind == a2a.EventTask && ev.State.Terminal() {
		return news, true, s.republishEnd(ctx, ref, tv)
	}
	return news, false, nil
}

// owedLate reports whether an update the task's record refused as late
// is still owed to the consumers: the record may have taken the task's end
// from the agent's answer to a send (which the relay may never see) before
// the agent pushed the updates that led there. What the consumers were
// sent is the log's to say: until it holds a terminal status, an artifact,
// or a status the logged one may move to, is published in the order the
// agent sent it. The caller holds tv.
func (s *Subscriber) owedLate(ctx context.Context, ref store.TaskRef, tv *taskView, v a2a.Version, u update) (bool, error) {
	if err := tv.refresh(ctx, s.o.Relay, ref); err != nil {
		return false, err
	}
	switch {
	case tv.status == nil:
		return true, nil
	case tv.status.State.Terminal():
		return false, nil
	case u.kind == a2a.EventArtifactUpdate:
		return true, nil
	default:
		return a2a.CanTransition(v, tv.status.State, u.state), nil
	}
}

// republishEnd finishes a task the agent shows ended and whose terminal
// status the log holds already. The publication that logged it may have
// failed to enqueue its notifications (the store failed in between), so
// the logged event is published again: the queue takes what it does not
// hold yet under the same notification ids, and the task leaves the
// watched index only then. The caller holds tv, refreshed.
func (s *Subscriber) republishEnd(ctx context.Context, ref store.TaskRef, tv *taskView) error {
	if tv.status == nil || !tv.status.State.Terminal() {
		return s.finish(ctx, ref)
	}
	if _, err := s.o.Relay.Publish(ctx, *tv.status); err != nil {
		return err
	}
	s.forget(ctx, ref)
	return nil
}

// finish takes the task out of the watched index.
func (f *follower) finish(ctx context.Context) {
	if err := f.s.finish(ctx, f.ref); err != nil {
		f.s.log.Warn("push: task not taken out of the watched index", "agent", f.ref.Agent, "task_id", f.ref.TaskID, "error", err)
	}
}

func (s *Subscriber) finish(ctx context.Context, ref store.TaskRef) error {
	s.forget(ctx, ref)
	return s.o.Configs.Finish(ctx, ref.Agent, ref.TaskID)
}

// forget drops what this replica and the store hold to follow a task whose
// notifications are over; later pushes from its agent are refused.
func (s *Subscriber) forget(ctx context.Context, ref store.TaskRef) {
	s.views.drop(ref)
	if err := s.o.Sources.Delete(ctx, ref.Agent, ref.TaskID); err != nil {
		s.log.Debug("push: push source record not deleted; it expires", "agent", ref.Agent, "task_id", ref.TaskID, "error", err)
	}
}

// WatchdogNotice is what the lifecycle watchdog decided about a task.
type WatchdogNotice struct {
	// Action and Reason go to consumers under WatchdogMetadataKey.
	Action, Reason string
	// State is the state the task is stuck in, as the watchdog saw it;
	// the status the consumers were last sent wins.
	State a2a.State
	// LetGo takes the task out of the watched index once its consumers
	// are told: for an orphan, whose agent went silent.
	LetGo bool
}

// Watchdog tells a watched task's consumers what the lifecycle watchdog
// decided (an orphan, an escalation): a status update with the task's
// current status and WatchdogMetadataKey. It is the gateway's own notice,
// not the agent's, so it is not applied to the lifecycle record, where it
// would count as the task's activity. A task without push configs is
// left alone.
func (s *Subscriber) Watchdog(ctx context.Context, agent, taskID string, n WatchdogNotice) error {
	ref := store.TaskRef{Agent: agent, TaskID: taskID}
	configs, err := s.o.Configs.List(ctx, agent, taskID)
	if err != nil || len(configs) == 0 {
		return err
	}
	tv := s.views.lock(ref)
	defer tv.mu.Unlock()
	if err := tv.refresh(ctx, s.o.Relay, ref); err != nil {
		return err
	}
	var snap map[string]any
	if tv.snap != nil {
		if err := decodeNumbers(tv.snap, &snap); err != nil {
			return err
		}
	}
	// The log holds the latest status the consumers were sent; the
	// watchdog's record may be older than the last event.
	state := n.State
	status, ok := snap["status"].(map[string]any)
	if ok && stateOfStatus(status) != a2a.StateUnknown {
		state = stateOfStatus(status)
	} else {
		status = map[string]any{"state": state.Wire(a2a.V10), "timestamp": time.Now().UTC().Format(time.RFC3339Nano)}
	}
	obj := map[string]any{
		"taskId": taskID, "status": status,
		"metadata": map[string]any{WatchdogMetadataKey: map[string]any{"action": n.Action, "reason": n.Reason}},
	}
	contextID, _ := snap["contextId"].(string)
	if contextID != "" {
		obj["contextId"] = contextID
	}
	v := configs[0].Version
	payload, err := renderEvent(v, a2a.EventStatusUpdate, obj)
	if err != nil {
		return err
	}
	ev := Event{
		Agent: agent, TaskID: taskID, ContextID: contextID, Version: v,
		Kind: a2a.EventStatusUpdate, State: state, Payload: payload, At: time.Now(),
	}
	if err := s.republish(ctx, ref); err != nil {
		s.keep(ev, n.LetGo)
		return err
	}
	if _, err := s.o.Relay.Publish(ctx, ev); err != nil {
		// The watchdog tells once: the notice is kept until it is out.
		s.keep(ev, n.LetGo)
		return err
	}
	if n.LetGo {
		return s.finish(ctx, ref)
	}
	return nil
}

// retryDelay is the wait after n failures in a row: exponential from
// 250ms, capped at limit, with full jitter, so replicas that lost an agent
// together do not come back together.
func retryDelay(n int, limit time.Duration) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return time.Duration(mrand.Int64N(int64(d) + 1))
}

type nopSourceMetrics struct{}

func (nopSourceMetrics) Subscriptions(string, int) {}
func (nopSourceMetrics) Resubscribed(string)       {}
func (nopSourceMetrics) PollingFallback(string)    {}
func (nopSourceMetrics) TakenOver(string)          {}
