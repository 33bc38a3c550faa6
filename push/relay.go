package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Event is one event of a task, from whichever source saw it: the client's
// own stream or answer, an upstream subscription, a native push, or the
// gateway itself (an orphan or escalation notice).
type Event struct {
	Agent, TaskID, ContextID string
	// Version is the protocol version of Payload: the agent's.
	Version a2a.Version
	// Kind is a2a.EventTask, a2a.EventStatusUpdate or a2a.EventArtifactUpdate.
	Kind a2a.EventKind
	// State is set for tasks and status updates.
	State a2a.State
	// Payload is the unwrapped result object: no JSON-RPC envelope, no SSE
	// framing.
	Payload []byte
	// At is when the event happened; zero means now.
	At time.Time
	// ID is EventID(Payload) when the caller has it already (a relayed
	// stream names each event with it); empty: Publish computes it.
	ID string
	// Live says a client's stream of the task carries the event: its
	// publication renews the task's live mark (live.go).
	Live bool
}

// Published says what Publish did with an event.
type Published struct {
	// Seq is the event's place in the task's event log, ID its EventID.
	Seq int64
	ID  string
	// Duplicate is set when the event was logged already (another source
	// saw it first); its notifications are enqueued again, which the queue
	// ignores for those already there.
	Duplicate bool
	// Terminal is set when the event ends the task.
	Terminal bool
}

// Enqueuer writes a notification to the durable queue; *Deliverer is one.
type Enqueuer interface {
	Enqueue(ctx context.Context, n store.Delivery) error
}

// RelayOptions assemble a Relay.
type RelayOptions struct {
	Configs store.PushConfigs
	// Events is the event log, with the bounds the configuration sets.
	Events store.EventLog
	Queue  Enqueuer
	// Policies names the URL policy each tenant's webhooks are delivered
	// under, for the endpoint names; nil: the default policy for everyone.
	Policies *Policies
	// WebhookSecret returns the Standard Webhooks secret of a tenant's
	// notifications, nil for none; nil means none for everyone.
	WebhookSecret func(tenant string) []byte
	// LiveTTL is how long a task stays marked live after an Event.Live was
	// published (live.go); 0 means DefaultLiveTTL.
	LiveTTL time.Duration
	Logger  *slog.Logger
}

// Relay turns task events into notifications: it logs every event in the
// task's event log and enqueues one delivery per push config of the task,
// in the shape the config's protocol version expects.
type Relay struct {
	configs  store.PushConfigs
	events   store.EventLog
	queue    Enqueuer
	policies *Policies
	secret   func(string) []byte
	liveTTL  time.Duration
	log      *slog.Logger
	// together logs an event and enqueues its notification in one step,
	// nil where the store cannot (see speculate).
	together store.RecordEnqueuer
	deliv    *Deliverer

	mu sync.Mutex
	// lone holds, per task with exactly one push config, that config as
	// its last event found it, with its digest (see speculate).
	lone map[taskKey]loneConfig
}

type taskKey struct{ agent, task string }

type loneConfig struct {
	config store.PushConfig
	digest string
}

// maxLone bounds Relay.lone; it is emptied when full, as tasks that never
// end would otherwise stay in it.
const maxLone = 4096

// NewRelay returns a relay; Configs, Events and Queue are required.
func NewRelay(o RelayOptions) (*Relay, error) {
	if o.Configs == nil || o.Events == nil || o.Queue == nil {
		return nil, errors.New("push: relay: the push configs, the event log and the queue are required")
	}
	if o.LiveTTL < 0 || o.LiveTTL > store.MaxLiveMark {
		return nil, fmt.Errorf("push: relay: the live mark's TTL must be between 0 and %s", store.MaxLiveMark)
	}
	r := &Relay{configs: o.Configs, events: o.Events, queue: o.Queue, policies: o.Policies, secret: o.WebhookSecret, liveTTL: o.LiveTTL, log: o.Logger}
	if r.liveTTL == 0 {
		r.liveTTL = DefaultLiveTTL
	}
	if r.secret == nil {
		r.secret = func(string) []byte { return nil }
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if d, ok := o.Queue.(*Deliverer); ok && d.st != nil {
		if t, ok := store.RecordEnqueuerOf(o.Events); ok {
			r.together, r.deliv, r.lone = t, d, map[taskKey]loneConfig{}
		}
	}
	return r, nil
}

// Publish logs ev in the task's event log and, for each push config of the
// task, enqueues one delivery (id EventID(ev.Payload), per endpoint),
// rendered for the config's version. A terminal event finishes the task in
// the watched index once its deliveries are enqueued. A duplicate event is
// enqueued again, so that a publisher that follows another keeps the order
// of its own events in the queue; the queue ignores what it holds already.
//
// Safe for concurrent use; callers serialise per task. On an error the
// caller publishes the event again: every step is idempotent.
func (r *Relay) Publish(ctx context.Context, ev Event) (Published, error) {
	if err := checkEvent(ev); err != nil {
		return Published{}, err
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	id := ev.ID
	if id == "" {
		id = EventID(ev.Payload)
	}
	var live time.Duration
	if ev.Live {
		live = r.liveTTL
	}
	rec, handled, qerr, err := r.speculate(ctx, ev, id, live)
	if err == nil && rec.Seq == 0 {
		// One round trip logs the event, reads the configs and renews the mark.
		rec, err = r.events.Record(ctx, ev.Agent, ev.TaskID, id, ev.Payload, ev.At, live)
	}
	if err != nil {
		return Published{}, fmt.Errorf("push: publish: log the event: %w", err)
	}
	seq := rec.Seq
	p := Published{Seq: seq, ID: id, Duplicate: !rec.Added, Terminal: ev.Kind != a2a.EventArtifactUpdate && ev.State.Terminal()}
	r.remember(ev, rec, p.Terminal)
	if qerr != nil {
		return p, qerr
	}
	if configs := rec.Configs; len(configs) > 0 && !handled {
		if err := r.deliver(ctx, ev, seq, id, configs); err != nil {
			return p, err
		}
	}
	if p.Terminal {
		if err := r.configs.Finish(ctx, ev.Agent, ev.TaskID); err != nil {
			return p, fmt.Errorf("push: publish: finish the task: %w", err)
		}
	}
	return p, nil
}

// speculate logs ev and enqueues its notification in one round trip, when
// the store can and the task had exactly one push config, of version 1.0
// (whose notification needs no snapshot), at its last event: the
// notification is built from that config, and enqueued only if the config
// is still the same (store.RecordEnqueuer). handled means ev is logged
// and its notification enqueued, or refused with qerr; otherwise ev may be
// logged already (rec then has the configs as they are) or not (rec is
// zero): either way the caller goes on as after Record, which logs a
// logged event as the duplicate it is.
func (r *Relay) speculate(ctx context.Context, ev Event, id string, live time.Duration) (rec store.Recorded, handled bool, qerr, err error) {
	if r.together == nil || !validID(id) {
		return store.Recorded{}, false, nil, nil
	}
	r.mu.Lock()
	lc, ok := r.lone[taskKey{ev.Agent, ev.TaskID}]
	r.mu.Unlock()
	if !ok {
		return store.Recorded{}, false, nil, nil
	}
	body, err := a2a.ConvertEvent(ev.Payload, ev.Version, ev.Kind, a2a.V10)
	if err != nil {
		// Refused or skipped as Publish does without the guess.
		return store.Recorded{}, false, nil, nil
	}
	traceParent, traceState := originOf(ctx)
	n, err := r.notification(ev, id, lc.config, body, traceParent, traceState)
	if err != nil {
		return store.Recorded{}, false, nil, nil
	}
	stale, qerr := r.deliv.enqueueVia(n, func(holder string, ttl time.Duration) (store.Enqueued, error) {
		var e store.Enqueued
		var err error
		rec, e, err = r.together.RecordEnqueue(ctx, ev.Agent, ev.TaskID, id, ev.Payload, ev.At, live, lc.digest, n, holder, ttl)
		return e, err
	})
	switch {
	case stale:
		return rec, false, nil, nil
	case rec.Seq == 0:
		// The step failed as a whole.
		return store.Recorded{}, false, nil, qerr
	case errors.Is(qerr, store.ErrEndpointDisabled):
		r.dropConfig(ctx, lc.config, "its receiver answered 410 Gone")
		qerr = nil
	case qerr != nil:
		qerr = fmt.Errorf("push: publish: enqueue for config %s: %w", lc.config.ID, qerr)
	}
	rec.Configs = []store.PushConfig{lc.config}
	return rec, true, qerr, nil
}

// remember keeps the task's lone 1.0 push config for speculate, as ev,
// logged as rec, found it; a task that ends is forgotten.
func (r *Relay) remember(ev Event, rec store.Recorded, terminal bool) {
	if r.lone == nil {
		return
	}
	k := taskKey{ev.Agent, ev.TaskID}
	r.mu.Lock()
	defer r.mu.Unlock()
	if terminal || rec.Digest == "" || len(rec.Configs) != 1 || rec.Configs[0].Version != a2a.V10 {
		delete(r.lone, k)
		return
	}
	if _, ok := r.lone[k]; !ok && len(r.lone) >= maxLone {
		clear(r.lone)
	}
	r.lone[k] = loneConfig{config: rec.Configs[0], digest: rec.Digest}
}

// deliver enqueues ev, the event logged as seq, for every config, in one
// round trip when the queue takes several at once.
func (r *Relay) deliver(ctx context.Context, ev Event, seq int64, id string, configs []store.PushConfig) error {
	var bodies renderings
	var errs []error
	traceParent, traceState := originOf(ctx)
	to := make([]store.PushConfig, 0, len(configs))
	ds := make([]store.Delivery, 0, len(configs))
	for _, c := range configs {
		body, err := bodies.get(c.Version, func() ([]byte, error) { return r.render(ctx, ev, seq, c.Version) })
		if errors.Is(err, a2a.ErrNotA2A) || errors.Is(err, store.ErrInvalidArgument) {
			// No retry renders it (an event that is not what its kind
			// says, a task snapshot over the size limit): the others go.
			r.log.Warn("push: notification cannot be rendered; push config skipped", "agent", c.Agent, "task", c.TaskID, "config", c.ID, "error", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("push: publish: render the notification for %s: %w", c.Version, err)
		}
		n, err := r.notification(ev, id, c, body, traceParent, traceState)
		if err != nil {
			// A config that cannot be encoded never will be: say so, and
			// let the others through.
			r.log.Warn("push: notification cannot be encoded; push config skipped", "agent", c.Agent, "task", c.TaskID, "config", c.ID, "error", err)
			continue
		}
		to = append(to, c)
		ds = append(ds, n)
	}
	for i, err := range enqueueAll(ctx, r.queue, ds) {
		switch c := to[i]; {
		case errors.Is(err, store.ErrEndpointDisabled):
			r.dropConfig(ctx, c, "its receiver answered 410 Gone")
		case err != nil:
			errs = append(errs, fmt.Errorf("push: publish: enqueue for config %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// notification is the delivery of ev, id, to c, with body rendered for c.
func (r *Relay) notification(ev Event, id string, c store.PushConfig, body []byte, traceParent, traceState string) (store.Delivery, error) {
	payload, err := EncodePayload(Request{
		URL: c.URL, ContentType: a2a.ContentType(c.Version), Body: body, Token: c.Token,
		AuthScheme: c.AuthScheme, AuthCredentials: c.AuthCredentials, WebhookSecret: r.secret(c.Tenant),
		TraceParent: traceParent, TraceState: traceState,
	})
	if err != nil {
		return store.Delivery{}, err
	}
	return store.Delivery{ID: id, Endpoint: r.policies.endpoint(c), TaskID: c.TaskID, Payload: payload, Enqueued: ev.At}, nil
}

// renderings caches one body per consumer version, rendered when first
// needed.
type renderings struct {
	v03, v10 []byte
}

func (b *renderings) get(v a2a.Version, render func() ([]byte, error)) ([]byte, error) {
	slot := &b.v10
	if v == a2a.V03 {
		slot = &b.v03
	}
	if *slot == nil {
		body, err := render()
		if err != nil {
			return nil, err
		}
		*slot = body
	}
	return *slot, nil
}

// render is the body of ev, logged as seq, for a consumer of version v:
// 1.0 a StreamResponse, 0.3 the full Task as it is after ev.
func (r *Relay) render(ctx context.Context, ev Event, seq int64, v a2a.Version) ([]byte, error) {
	if v == a2a.V10 {
		return a2a.ConvertEvent(ev.Payload, ev.Version, ev.Kind, a2a.V10)
	}
	snap, err := r.snapshot(ctx, ev, seq)
	if err != nil {
		return nil, err
	}
	return a2a.ConvertEvent(snap, a2a.V10, a2a.EventTask, a2a.V03)
}

// snapshot returns the task as it is after ev, logged as seq: the stored
// snapshot with ev folded in, unless it is folded already.
func (r *Relay) snapshot(ctx context.Context, ev Event, seq int64) ([]byte, error) {
	at, snap, ok, err := r.events.Snapshot(ctx, ev.Agent, ev.TaskID)
	if err != nil {
		return nil, fmt.Errorf("read the task snapshot: %w", err)
	}
	if ok && at >= seq {
		return snap, nil
	}
	if !ok {
		snap = nil
	}
	next, err := a2a.FoldTask(snap, ev.Payload, ev.Version, ev.Kind, ev.TaskID, ev.ContextID)
	if err != nil {
		return nil, err
	}
	if _, err := r.events.SaveSnapshot(ctx, ev.Agent, ev.TaskID, seq, next); err != nil {
		return nil, fmt.Errorf("save the task snapshot: %w", err)
	}
	return next, nil
}

// Replay returns up to limit events of the task logged after the event
// afterID ("" from the first), oldest first; found is false when afterID
// is no longer (or never was) in the retained log.
func (r *Relay) Replay(ctx context.Context, agent, taskID, afterID string, limit int) ([]store.LoggedEvent, bool, error) {
	return r.events.After(ctx, agent, taskID, afterID, limit)
}

// EndpointDisabled deletes the push config whose endpoint was disabled
// (its receiver answered 410 Gone): DeliveryOptions.OnDisabled.
func (r *Relay) EndpointDisabled(endpoint string) {
	c, ok := parseEndpoint(endpoint)
	if !ok {
		// A hashed endpoint: the config goes at the task's next event.
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.dropConfig(ctx, c, "its receiver answered 410 Gone")
}

func (r *Relay) dropConfig(ctx context.Context, c store.PushConfig, why string) {
	if _, err := r.configs.Delete(ctx, c.Agent, c.TaskID, c.ID); err != nil {
		r.log.Warn("push: push config could not be deleted", "agent", c.Agent, "task", c.TaskID, "config", c.ID, "error", err)
		return
	}
	r.log.Info("push: push config deleted: "+why, "agent", c.Agent, "task", c.TaskID, "config", c.ID)
}

func checkEvent(ev Event) error {
	switch {
	case ev.Agent == "" || ev.TaskID == "":
		return fmt.Errorf("push: publish: %w: the event names no agent or task", store.ErrInvalidArgument)
	case ev.Kind != a2a.EventTask && ev.Kind != a2a.EventStatusUpdate && ev.Kind != a2a.EventArtifactUpdate:
		return fmt.Errorf("push: publish: %w: a %s event is not a task event", store.ErrInvalidArgument, ev.Kind)
	case len(ev.Payload) == 0:
		return fmt.Errorf("push: publish: %w: the event has no payload", store.ErrInvalidArgument)
	}
	return nil
}
