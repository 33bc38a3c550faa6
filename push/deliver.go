package push

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// This file holds the delivery workers of the push relay. Every
// notification is written to the store's queue (store.DeliveryStore)
// before any attempt; workers claim endpoints, deliver each endpoint's
// queue head first and retry it on the schedule until a 2xx, so delivery is
// at least once and in order per endpoint. Limits and the circuit breaker
// are per receiver, so one slow or dead receiver holds neither the workers
// nor the queues of the others. The HTTP sender and the payload format are
// in sender.go, the operators' dead-letter API in admin.go.

// DeliveryMetrics receives the delivery events the gateway exports. Calls
// must be cheap: they run on the delivery path. Reasons are the Retry* and
// Dead* constants.
type DeliveryMetrics interface {
	// Queued: a notification was written to the queue (not a duplicate).
	Queued()
	// Delivered: a receiver answered 2xx, latency after the event.
	Delivered(latency time.Duration)
	// Retried: an attempt failed and another is scheduled.
	Retried(reason string)
	// DeadLettered: a notification will not be attempted again.
	DeadLettered(reason string)
	// Backlog reports, every GaugeInterval, the deliveries queued across
	// every replica and the age of the oldest; each replica reports the
	// same cluster-wide values, so aggregate them with max, not sum.
	Backlog(depth int, oldestAge time.Duration)
}

// Reasons passed to DeliveryMetrics.Retried.
const (
	RetryTimeout     = "timeout"
	RetryNetwork     = "network"
	RetryStatus429   = "status_429"
	RetryStatus5xx   = "status_5xx"
	RetryStatusOther = "status_other"
	RetryCircuitOpen = "circuit_open"
)

// Reasons passed to DeliveryMetrics.DeadLettered.
const (
	DeadRetriesExhausted = "retries_exhausted"
	DeadGone             = "gone"
	DeadUndeliverable    = "undeliverable"
)

// NopDeliveryMetrics discards every event.
type NopDeliveryMetrics struct{}

func (NopDeliveryMetrics) Queued()                    {}
func (NopDeliveryMetrics) Delivered(time.Duration)    {}
func (NopDeliveryMetrics) Retried(string)             {}
func (NopDeliveryMetrics) DeadLettered(string)        {}
func (NopDeliveryMetrics) Backlog(int, time.Duration) {}

var _ DeliveryMetrics = NopDeliveryMetrics{}

// Sender makes one delivery attempt. A response of any status is reported
// as status with a nil error; retryAfter is the receiver's Retry-After, if
// any. An error means there was no response, or, wrapping ErrUndeliverable,
// that the notification can never be sent as it is (it is dead-lettered at
// once).
type Sender interface {
	Send(ctx context.Context, d store.Delivery) (status int, retryAfter time.Duration, err error)
}

// ReceiverKeyer is implemented by a Sender that knows which receiver a
// delivery goes to (for HTTPSender, the webhook's scheme, host and port).
// Rate limits, concurrency limits and the circuit breaker are then shared
// by every endpoint that calls the same receiver; otherwise they are per
// endpoint.
type ReceiverKeyer interface {
	ReceiverKey(d store.Delivery) (string, error)
}

// ErrUndeliverable marks a notification that no retry can deliver: a
// payload that does not decode, a URL the policy forbids, a token that is
// not a valid header value.
var ErrUndeliverable = errors.New("push: notification cannot be delivered")

// Defaults of DeliveryOptions.
const (
	DefaultNotificationTimeout    = 10 * time.Second
	DefaultMaxRetryAfter          = time.Hour
	DefaultPerReceiverConcurrency = 16
	DefaultBreakerFailures        = 5
	DefaultBreakerCooldown        = 30 * time.Second
	DefaultDeliveryWorkers        = 64
	DefaultMinLeaseTTL            = 30 * time.Second
	DefaultPollInterval           = 250 * time.Millisecond
	DefaultBatchPerClaim          = 100
	DefaultGaugeInterval          = 15 * time.Second
)

// Internal pacing of the workers.
const (
	// maxRateWait is the longest a worker sleeps for a receiver's rate
	// limit; a longer wait releases the endpoint until then instead.
	maxRateWait = time.Second
	// busyWait is how long a worker waits for one of a receiver's
	// concurrency slots before it releases the endpoint for busyRetry.
	busyWait  = 100 * time.Millisecond
	busyRetry = 100 * time.Millisecond
	// releaseRetry paces retries of a release that failed because the
	// store was unavailable; the lease runs out anyway.
	releaseRetry   = 250 * time.Millisecond
	storeOpTimeout = 5 * time.Second
	// receiverIdle is how long an unused receiver's state is kept.
	receiverIdle     = 10 * time.Minute
	receiverSweep    = time.Minute
	errorLogInterval = 10 * time.Second
	maxWorkers       = 10_000
	maxTimeout       = 5 * time.Minute
	maxBatch         = 10_000
	maxRate          = 1_000_000 // requests per second, and burst
)

// DeliveryOptions tune the delivery workers. Zero values take the
// defaults; Validate reports values out of range, which NewDeliverer
// replaces by the defaults.
type DeliveryOptions struct {
	// Schedule is the delay before each retry; after the last retry fails
	// the notification is dead-lettered. nil means DefaultSchedule; an
	// empty non-nil slice means no retries. At most MaxRetries entries.
	Schedule []time.Duration
	// Jitter spreads the retries of queues that failed together: each
	// retry delay d is drawn uniformly from [(1-Jitter)d, (1+Jitter)d].
	// Default DefaultJitter (0.2), at most MaxJitter (0.5).
	Jitter float64
	// NoJitter turns jitter off: every retry waits its scheduled delay.
	NoJitter bool
	// Timeout bounds one attempt, request and response. Default 10s.
	Timeout time.Duration
	// MaxRetryAfter caps the Retry-After honoured on 429 and 503. Default 1h.
	MaxRetryAfter time.Duration
	// PerReceiverConcurrency bounds the requests in flight to one receiver
	// from this replica. Order per endpoint does not depend on it: an
	// endpoint's queue is always delivered one notification at a time.
	// Default 16.
	PerReceiverConcurrency int
	// PerReceiverRate bounds the requests per second to one receiver from
	// this replica, with bursts of PerReceiverBurst (default: the rate,
	// rounded up, at least 1). 0 means unlimited.
	PerReceiverRate  float64
	PerReceiverBurst int
	// BreakerFailures is how many failed requests (no response, or 5xx) in
	// a row open a receiver's circuit breaker for BreakerCooldown. While it
	// is open, due notifications to the receiver are not sent but counted
	// as failed attempts, so they follow the schedule and are dead-lettered
	// in the end. Default 5; negative turns the breaker off. Default
	// cooldown 30s.
	BreakerFailures int
	BreakerCooldown time.Duration
	// Workers bounds the endpoints this replica delivers at a time.
	// Default 64.
	Workers int
	// Holder names this replica in endpoint leases; unique per replica.
	// Default: host name, process id and a random suffix.
	Holder string
	// LeaseTTL is how long a claim on an endpoint lasts without renewal;
	// a replica that dies holds its endpoints that long. At least twice
	// Timeout. Default max(30s, 3*Timeout).
	LeaseTTL time.Duration
	// PollInterval is how often the replica looks for due endpoints
	// (retries coming due, notifications enqueued by other replicas).
	// Default 250ms.
	PollInterval time.Duration
	// BatchPerClaim is how many notifications a worker delivers from one
	// endpoint before it lets other endpoints have the worker. Default 100.
	BatchPerClaim int
	// GaugeInterval is how often the backlog gauges are refreshed. Default 15s.
	GaugeInterval time.Duration
	// OnDisabled, when set, is called with an endpoint that was disabled
	// because its receiver answered 410 Gone, so that its push config can
	// be deleted. It runs on a worker and must not block.
	OnDisabled func(endpoint string)
	// Log, when set, receives every attempt with its task, for operators
	// (store.OperatorConcerns).
	Log store.DeliveryLog
}

// Validate reports every option out of range; field is the options' path
// in the configuration.
func (o *DeliveryOptions) Validate(field string) error {
	var errs []error
	add := func(sub, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", field, sub, fmt.Sprintf(format, args...)))
	}
	if len(o.Schedule) > MaxRetries {
		add("schedule", "at most %d retries, got %d", MaxRetries, len(o.Schedule))
	}
	for i, d := range o.Schedule {
		if d < 0 || d > maxRetryGap {
			add(fmt.Sprintf("schedule[%d]", i), "must be between 0 and %s", maxRetryGap)
		}
	}
	for _, f := range []struct {
		name   string
		d, max time.Duration
	}{
		{"timeout", o.Timeout, maxTimeout}, {"max_retry_after", o.MaxRetryAfter, maxRetryGap},
		{"breaker_cooldown", o.BreakerCooldown, maxRetryGap}, {"lease_ttl", o.LeaseTTL, maxRetryGap},
		{"poll_interval", o.PollInterval, time.Minute}, {"gauge_interval", o.GaugeInterval, time.Hour},
	} {
		if f.d < 0 || f.d > f.max {
			add(f.name, "must be between 0 and %s", f.max)
		}
	}
	if !(o.Jitter >= 0 && o.Jitter <= MaxJitter) {
		add("jitter", "must be between 0 and %g", MaxJitter)
	}
	if o.PerReceiverConcurrency < 0 || o.PerReceiverConcurrency > maxWorkers {
		add("per_receiver_concurrency", "must be between 0 and %d", maxWorkers)
	}
	if !(o.PerReceiverRate >= 0 && o.PerReceiverRate <= maxRate) {
		add("per_receiver_rate", "must be between 0 and %g", float64(maxRate))
	}
	if o.PerReceiverBurst < 0 || o.PerReceiverBurst > maxRate {
		add("per_receiver_burst", "must be between 0 and %d", maxRate)
	}
	if o.Workers < 0 || o.Workers > maxWorkers {
		add("workers", "must be between 0 and %d", maxWorkers)
	}
	if o.BatchPerClaim < 0 || o.BatchPerClaim > maxBatch {
		add("batch_per_claim", "must be between 0 and %d", maxBatch)
	}
	if len(o.Holder) > store.MaxNameBytes {
		add("holder", "must be at most %d bytes", store.MaxNameBytes)
	}
	if o.LeaseTTL > 0 && o.LeaseTTL < 2*max(o.Timeout, 0) {
		add("lease_ttl", "must be at least twice the timeout (%s)", o.Timeout)
	}
	if o.LeaseTTL > 0 && o.Timeout == 0 && o.LeaseTTL < 2*DefaultNotificationTimeout {
		add("lease_ttl", "must be at least twice the default timeout (%s)", DefaultNotificationTimeout)
	}
	return errors.Join(errs...)
}

// withDefaults fills in zero values, and replaces values Validate refuses,
// so a Deliverer given unvalidated options still behaves.
func (o DeliveryOptions) withDefaults() DeliveryOptions {
	if len(o.Schedule) > MaxRetries || slices.ContainsFunc(o.Schedule, func(d time.Duration) bool { return d < 0 || d > maxRetryGap }) {
		o.Schedule = nil
	}
	if o.Schedule == nil {
		o.Schedule = DefaultSchedule
	}
	o.Schedule = slices.Clone(o.Schedule)
	switch {
	case o.NoJitter:
		o.Jitter = 0
	case !(o.Jitter > 0 && o.Jitter <= MaxJitter):
		o.Jitter = DefaultJitter
	}
	orDefault(&o.Timeout, DefaultNotificationTimeout, maxTimeout)
	orDefault(&o.MaxRetryAfter, DefaultMaxRetryAfter, maxRetryGap)
	orDefault(&o.BreakerCooldown, DefaultBreakerCooldown, maxRetryGap)
	orDefault(&o.PollInterval, DefaultPollInterval, time.Minute)
	orDefault(&o.GaugeInterval, DefaultGaugeInterval, time.Hour)
	if o.LeaseTTL <= 0 || o.LeaseTTL < 2*o.Timeout || o.LeaseTTL > maxRetryGap {
		o.LeaseTTL = max(DefaultMinLeaseTTL, 3*o.Timeout)
	}
	if o.PerReceiverConcurrency <= 0 || o.PerReceiverConcurrency > maxWorkers {
		o.PerReceiverConcurrency = DefaultPerReceiverConcurrency
	}
	if !(o.PerReceiverRate > 0) || o.PerReceiverRate > maxRate {
		o.PerReceiverRate = 0
	}
	if o.PerReceiverBurst <= 0 || o.PerReceiverBurst > maxRate {
		o.PerReceiverBurst = max(1, int(math.Ceil(o.PerReceiverRate)))
	}
	if o.BreakerFailures == 0 {
		o.BreakerFailures = DefaultBreakerFailures
	}
	if o.Workers <= 0 || o.Workers > maxWorkers {
		o.Workers = DefaultDeliveryWorkers
	}
	if o.BatchPerClaim <= 0 || o.BatchPerClaim > maxBatch {
		o.BatchPerClaim = DefaultBatchPerClaim
	}
	if o.Holder == "" || len(o.Holder) > store.MaxNameBytes {
		o.Holder = defaultHolder()
	}
	return o
}

func orDefault(d *time.Duration, def, limit time.Duration) {
	if *d <= 0 || *d > limit {
		*d = def
	}
}

// defaultHolder names this process: host, pid and a random suffix, since
// containers on one host often share process ids.
func defaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "gateway"
	}
	return fmt.Sprintf("%.200s-%d-%s", host, os.Getpid(), rand.Text()[:10])
}

// queueHead is the front of an endpoint's queue as last read: the heads,
// oldest first, with their attempt logs.
type queueHead struct {
	heads []store.Queued
	// read: the heads were read (with a claim or an acknowledgement),
	// otherwise they are to be read; released: the queue was empty and the
	// acknowledgement gave the endpoint back.
	read, released bool
}

// unacked holds what a worker delivered from its endpoint and has not yet
// acknowledged: heads read together are delivered one after another and
// acknowledged together, in one store round trip, before anything else
// about the queue is written.
type unacked struct {
	ds   []store.Delivery
	logs sync.WaitGroup // attempt log entries being written
}

// Deliverer runs the delivery workers of one replica and serves the
// dead-letter API. Enqueue may be called at any time; Run delivers until
// its context ends.
type Deliverer struct {
	st      store.DeliveryStore
	send    Sender
	keyOf   func(store.Delivery) (string, error)
	o       DeliveryOptions
	backoff backoff
	m       DeliveryMetrics
	log     *slog.Logger
	rcv     *receivers

	// hints carries endpoints enqueued on this replica, so they are
	// delivered without waiting for the next poll.
	hints chan string
	// spare hands an endpoint's work to a worker goroutine waiting for
	// more (see dispatch).
	spare chan func()
	// freed wakes the scheduler when a worker ends; wantPoll says whether
	// it should look for more work then.
	freed    chan struct{}
	wantPoll atomic.Bool
	lastLog  atomic.Int64 // Unix ns of the last store error logged

	mu     sync.Mutex
	active map[string]*endpointRun
	// run is set while Run runs, for Enqueue's claims (handoff.go).
	run *runState
}

// endpointRun is the state of an endpoint a worker of this replica has.
type endpointRun struct {
	// again is set when the endpoint was enqueued to while the worker had
	// it: a worker that finds the queue empty then looks once more, since
	// the enqueue may have raced with its release.
	again bool
}

// NewDeliverer returns the workers for st, sending with s. Zero options
// take their defaults, and options Validate refuses are replaced by them;
// m may be nil (no metrics), log nil (no logs). st and s are required: Run
// refuses to start without them.
func NewDeliverer(st store.DeliveryStore, s Sender, o DeliveryOptions, m DeliveryMetrics, log *slog.Logger) *Deliverer {
	o = o.withDefaults()
	if m == nil {
		m = NopDeliveryMetrics{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Deliverer{
		st: st, send: s, o: o, m: m, log: log,
		backoff: newBackoff(o.Schedule, o.Jitter, o.MaxRetryAfter),
		rcv:     newReceivers(o.PerReceiverConcurrency, o.PerReceiverRate, o.PerReceiverBurst, max(o.BreakerFailures, 0), o.BreakerCooldown),
		hints:   make(chan string, 4*o.Workers),
		spare:   make(chan func()),
		freed:   make(chan struct{}, 1),
		active:  map[string]*endpointRun{},
	}
	d.keyOf = func(n store.Delivery) (string, error) { return n.Endpoint, nil }
	if k, ok := s.(ReceiverKeyer); ok {
		d.keyOf = k.ReceiverKey
	}
	return d
}

// Options returns the effective options, defaults filled in.
func (d *Deliverer) Options() DeliveryOptions {
	o := d.o
	o.Schedule = slices.Clone(o.Schedule)
	return o
}

// Enqueue writes n durably to its endpoint's queue; it is attempted only
// after that. n.ID must be 1-256 visible ASCII characters without '.', as
// it travels in headers (the JWT jti and Standard Webhooks' webhook-id) for
// receivers to deduplicate on. Enqueueing an id again is harmless. Errors
// wrap the store's: store.ErrEndpointDisabled means the endpoint's receiver
// answered 410 Gone, and its push config should go.
func (d *Deliverer) Enqueue(ctx context.Context, n store.Delivery) error {
	return d.EnqueueAll(ctx, []store.Delivery{n})[0]
}

// Run delivers until ctx ends, then waits for its workers, which give
// their endpoints back so that other replicas carry on at once. Call it
// once.
func (d *Deliverer) Run(ctx context.Context) {
	if d.st == nil || d.send == nil {
		d.log.Error("push: the deliverer has no store or no sender; notifications are not delivered")
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	d.setRun(&runState{ctx: ctx, wg: &wg})
	defer d.setRun(nil)
	wg.Go(func() { d.reportBacklog(ctx) })
	poll := time.NewTicker(d.o.PollInterval)
	defer poll.Stop()
	sweep := time.NewTicker(receiverSweep)
	defer sweep.Stop()
	d.poll(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case ep := <-d.hints:
			d.start(ctx, &wg, ep)
		case <-d.freed:
			if d.wantPoll.Swap(false) {
				d.poll(ctx, &wg)
			}
		case <-poll.C:
			d.poll(ctx, &wg)
		case now := <-sweep.C:
			d.rcv.sweep(now.Add(-receiverIdle))
		}
	}
}

// poll starts workers on due endpoints, as many as there are free workers.
func (d *Deliverer) poll(ctx context.Context, wg *sync.WaitGroup) {
	d.mu.Lock()
	free := d.o.Workers - len(d.active)
	d.mu.Unlock()
	if free <= 0 {
		d.wantPoll.Store(true)
		return
	}
	c, cancel := context.WithTimeout(ctx, storeOpTimeout)
	eps, err := d.st.Endpoints(c, min(free, store.MaxEndpointsPerCall))
	cancel()
	if err != nil {
		d.storeError("look for due endpoints", err)
		return
	}
	// A full answer may mean more is due; look again when a worker frees.
	d.wantPoll.Store(len(eps) == free)
	for _, ep := range eps {
		d.start(ctx, wg, ep)
	}
}

// start gives ep a worker, unless one has it already or none is free.
func (d *Deliverer) start(ctx context.Context, wg *sync.WaitGroup, ep string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.active[ep]; r != nil {
		r.again = true
		return
	}
	if len(d.active) >= d.o.Workers {
		d.wantPoll.Store(true)
		return
	}
	d.active[ep] = &endpointRun{}
	d.dispatch(ctx, wg, func() { d.work(ctx, ep, nil) })
}

// spareIdle is how long a worker goroutine waits for more work once it is
// done with an endpoint.
const spareIdle = time.Second

// dispatch runs fn on a worker goroutine that is waiting for work, or on a
// new one, counted in wg until it ends. An endpoint enqueued to while idle
// (every event of a task that streams slowly) thus reuses a goroutine
// whose stack has grown already through a delivery's decoding, signing and
// HTTP exchange, instead of growing a new one's again.
func (d *Deliverer) dispatch(ctx context.Context, wg *sync.WaitGroup, fn func()) {
	select {
	case d.spare <- fn:
		return
	default:
	}
	wg.Go(func() {
		idle := time.NewTimer(spareIdle)
		defer idle.Stop()
		for {
			fn()
			idle.Reset(spareIdle)
			select {
			case fn = <-d.spare:
			case <-idle.C:
				return
			case <-ctx.Done():
				return
			}
		}
	})
}

// drainOutcome says why a worker stopped delivering an endpoint.
type drainOutcome int

const (
	drained  drainOutcome = iota // the queue is empty
	deferred                     // the head waits until a time
	yielded                      // the batch is done; more is due now
	stopped                      // the lease is lost, the store failed or Run ends
	released                     // the queue is empty and given back already
)

// work claims ep and delivers its queue; first, when set, is its head,
// claimed already by the enqueue that started the worker.
func (d *Deliverer) work(ctx context.Context, ep string, first *queueHead) {
	yield := false
	defer func() {
		d.mu.Lock()
		delete(d.active, ep)
		d.mu.Unlock()
		if yield {
			d.wantPoll.Store(true)
		}
		select {
		case d.freed <- struct{}{}:
		default:
		}
	}()
	for {
		ok, h, err := d.claimOr(ctx, ep, &first)
		if err != nil {
			d.storeError("claim an endpoint", err)
			return
		}
		if !ok {
			return // another worker has it
		}
		claimed := time.Now()
		out, next, err := d.drain(ctx, ep, &claimed, h)
		for out == drained && err == nil && d.takeAgain(ctx, ep) {
			// Enqueued to while it was being drained: the lease is still
			// ours, so drain it again rather than release and claim it.
			out, next, err = d.drain(ctx, ep, &claimed, queueHead{})
		}
		switch {
		case err == nil, errors.Is(err, context.Canceled):
		case errors.Is(err, errLost):
			// Not ours to release any more.
			d.log.Debug("push: endpoint taken over", "endpoint", ep, "error", err)
			return
		default:
			d.storeError("deliver an endpoint", err)
		}
		if out != released {
			d.release(ctx, ep, next, claimed)
		}
		yield = out == yielded
		if (out != drained && out != released) || !d.takeAgain(ctx, ep) {
			return
		}
	}
}

// claim claims ep for this replica and reads its head.
func (d *Deliverer) claim(ctx context.Context, ep string) (bool, queueHead, error) {
	c, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	ok, n, atts, found, err := d.st.ClaimHead(c, ep, d.o.Holder, d.o.LeaseTTL)
	return ok, headOf(n, atts, found), err
}

// takeAgain reports, and clears, whether ep was enqueued to since the
// last call, unless Run is ending.
func (d *Deliverer) takeAgain(ctx context.Context, ep string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.active[ep]
	again := r.again && ctx.Err() == nil
	r.again = false
	return again
}

// errLost means the worker no longer has the endpoint or its head: another
// worker took over (its lease ran out) or an operator acted.
var errLost = errors.New("push: the endpoint was taken over")

// drain delivers ep's queue from the heads h (read when h.read is unset)
// until it is empty, the head must wait, the batch is done, or it must
// stop. claimed is when the lease was last renewed. For deferred, next is
// when the endpoint is due again. What it delivered is acknowledged before
// it returns.
func (d *Deliverer) drain(ctx context.Context, ep string, claimed *time.Time, h queueHead) (out drainOutcome, next time.Time, err error) {
	var u unacked
	defer func() {
		// Acknowledged even as Run ends, so that nothing is sent twice.
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeOpTimeout)
		defer cancel()
		if aerr := d.settle(c, ep, &u, nil, "", 1); aerr != nil && err == nil {
			out, err = stopped, aerr
		}
	}()
	for left := d.o.BatchPerClaim; left > 0; left-- {
		if err := ctx.Err(); err != nil {
			return stopped, time.Time{}, err
		}
		if time.Since(*claimed) > d.o.LeaseTTL/3 {
			ok, err := d.st.ClaimEndpoint(ctx, ep, d.o.Holder, d.o.LeaseTTL)
			if err != nil {
				return stopped, time.Time{}, err
			}
			if !ok {
				return stopped, time.Time{}, errLost
			}
			*claimed = time.Now()
		}
		if len(h.heads) == 0 && (len(u.ds) > 0 || !h.read) {
			if err := d.settle(ctx, ep, &u, &h, d.o.Holder, min(left, store.MaxHeadsPerRead)); err != nil {
				return stopped, time.Time{}, err
			}
		}
		switch {
		case len(h.heads) == 0 && h.released:
			return released, time.Time{}, nil
		case len(h.heads) == 0:
			return drained, time.Time{}, nil
		}
		q := h.heads[0]
		if k := len(q.Attempts); k > 0 && q.Attempts[k-1].RetryAt.After(time.Now()) {
			return deferred, q.Attempts[k-1].RetryAt, nil
		}
		h.heads = h.heads[1:]
		acked := len(u.ds)
		done, next, err := d.deliver(ctx, q.Delivery, q.Attempts, &u)
		if err != nil {
			return stopped, time.Time{}, err
		}
		if !done {
			return deferred, next, nil
		}
		if len(u.ds) == acked {
			// Dead-lettered, or the endpoint disabled: read the queue again.
			h = queueHead{}
		}
	}
	return yielded, time.Time{}, nil
}

// headOf is the queue read as the head n with its attempt log atts, if ok.
func headOf(n store.Delivery, atts []store.Attempt, ok bool) queueHead {
	h := queueHead{read: true}
	if ok {
		h.heads = []store.Queued{{Delivery: n, Attempts: atts}}
	}
	return h
}

// settle acknowledges what u holds and reads up to limit heads after it
// into h, unless h is nil; holder gives the endpoint back ("" keeps it)
// when the queue is empty. It returns once u's attempt log entries are
// written too: they were queued as each head was delivered, so on Redis
// they share the acknowledgement's round trip or go before it.
func (d *Deliverer) settle(ctx context.Context, ep string, u *unacked, h *queueHead, holder string, limit int) error {
	defer u.logs.Wait()
	if len(u.ds) == 0 && h == nil {
		return nil
	}
	ids := make([]string, len(u.ds))
	for i, n := range u.ds {
		ids[i] = n.ID
	}
	next, err := d.st.AckHeads(ctx, ep, ids, holder, limit)
	if err != nil {
		return lostOr(err)
	}
	for _, n := range u.ds {
		d.m.Delivered(max(time.Since(n.Enqueued), 0))
	}
	u.ds = u.ds[:0]
	if h != nil {
		*h = queueHead{heads: next, read: true, released: len(next) == 0 && holder != ""}
	}
	return nil
}

// release gives ep back, due at next (now when zero). A store outage is
// retried while the lease would still hold the endpoint, since until the
// release the endpoint is not due; after that it is due again anyway.
func (d *Deliverer) release(ctx context.Context, ep string, next, claimed time.Time) {
	bg := context.WithoutCancel(ctx)
	for {
		c, cancel := context.WithTimeout(bg, storeOpTimeout)
		err := d.st.ReleaseEndpoint(c, ep, d.o.Holder, next)
		cancel()
		if err == nil || !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil || time.Since(claimed) > d.o.LeaseTTL {
			if err != nil {
				d.storeError("release an endpoint", err)
			}
			return
		}
		if !sleep(ctx, releaseRetry) {
			return
		}
	}
}

// deliver makes one attempt at the head n, whose attempt log is atts, if
// the receiver's breaker, rate and concurrency limits let it, and records
// the outcome. done means n was delivered, and is added to u to be
// acknowledged, or left the queue (dead-lettered); otherwise it waits until
// next. What u holds is acknowledged before any other outcome is recorded.
func (d *Deliverer) deliver(ctx context.Context, n store.Delivery, atts []store.Attempt, u *unacked) (done bool, next time.Time, err error) {
	key, err := d.keyOf(n)
	if err != nil {
		a := store.Attempt{At: time.Now(), Err: err.Error()}
		return d.bury(ctx, n, atts, a, DeadUndeliverable, undeliverable(err), u)
	}
	r := d.rcv.get(key)
	defer func() { d.rcv.put(r, time.Now()) }()

	if open, until := r.breaker.blocked(time.Now()); open {
		return d.notAttempted(ctx, n, atts, until, u)
	}
	if r.limiter != nil {
		now := time.Now()
		res := r.limiter.ReserveN(now, 1)
		if wait := res.DelayFrom(now); wait > 0 {
			if wait > maxRateWait {
				res.CancelAt(now)
				return false, now.Add(wait), nil
			}
			if !sleep(ctx, wait) {
				return false, time.Time{}, ctx.Err()
			}
		}
	}
	if !acquire(ctx, r.slots, busyWait) {
		if err := ctx.Err(); err != nil {
			return false, time.Time{}, err
		}
		return false, time.Now().Add(busyRetry), nil
	}
	defer func() { <-r.slots }()
	ok, probe := r.breaker.admit(time.Now())
	if !ok {
		return d.notAttempted(ctx, n, atts, time.Time{}, u)
	}

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	status, hint, err := d.send.Send(sctx, n)
	cancel()
	answered := time.Now()
	a := store.Attempt{At: start, Status: status, Latency: answered.Sub(start)}
	return d.judge(ctx, n, atts, r.breaker, probe, a, answered, hint, err, u)
}

// judge tells the breaker and the store how the attempt a, answered at
// answered, went.
func (d *Deliverer) judge(ctx context.Context, n store.Delivery, atts []store.Attempt, b *breaker, probe bool, a store.Attempt, answered time.Time, hint time.Duration, err error, u *unacked) (bool, time.Time, error) {
	status := a.Status
	switch {
	case err != nil && errors.Is(err, ErrUndeliverable):
		b.abandon(probe)
		a.Status, a.Err = 0, err.Error()
		return d.bury(ctx, n, atts, a, DeadUndeliverable, undeliverable(err), u)
	case err != nil && ctx.Err() != nil:
		// Run is ending: no verdict on the receiver, no attempt recorded.
		b.abandon(probe)
		return false, time.Time{}, ctx.Err()
	case err != nil:
		b.failure(time.Now())
		a.Status, a.Err = 0, err.Error()
		reason := RetryNetwork
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			reason = RetryTimeout
		}
		return d.failed(ctx, n, atts, a, time.Time{}, reason, u)
	case status >= 200 && status <= 299:
		b.success()
		// The log entry is written while the next head is delivered.
		u.logs.Go(func() { d.logAttempt(ctx, n, a) })
		u.ds = append(u.ds, n)
		return true, time.Time{}, nil
	case status == http.StatusGone:
		b.success()
		return d.gone(ctx, n, a, u)
	}
	reason := RetryStatusOther
	switch {
	case status >= 500:
		b.failure(time.Now())
		reason = RetryStatus5xx
	case status == http.StatusTooManyRequests:
		b.success() // alive, only busy: Retry-After paces it
		reason = RetryStatus429
	default:
		b.success()
	}
	var notBefore time.Time
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		notBefore = d.backoff.honour(answered, hint)
	}
	a.Err = fmt.Sprintf("receiver answered %d %s", status, http.StatusText(status))
	return d.failed(ctx, n, atts, a, notBefore, reason, u)
}

// notAttempted records an attempt the open circuit breaker prevented: it
// follows the schedule like a failed one, and is due no earlier than the
// breaker closes.
func (d *Deliverer) notAttempted(ctx context.Context, n store.Delivery, atts []store.Attempt, until time.Time, u *unacked) (bool, time.Time, error) {
	a := store.Attempt{At: time.Now(), Err: "not attempted: the receiver's circuit breaker is open"}
	return d.failed(ctx, n, atts, a, until, RetryCircuitOpen, u)
}

// failed records the failed attempt a and schedules the next, not before
// notBefore; past the schedule's end, n is dead-lettered.
func (d *Deliverer) failed(ctx context.Context, n store.Delivery, atts []store.Attempt, a store.Attempt, notBefore time.Time, reason string, u *unacked) (bool, time.Time, error) {
	next, ok := d.backoff.next(len(atts)+1, a.At, notBefore)
	if !ok {
		why := fmt.Sprintf("no 2xx after %d attempts; last: %s", len(atts)+1, a.Err)
		return d.bury(ctx, n, atts, a, DeadRetriesExhausted, why, u)
	}
	a.RetryAt = next
	if err := d.settle(ctx, n.Endpoint, u, nil, "", 1); err != nil {
		return false, time.Time{}, err
	}
	d.logAttempt(ctx, n, a)
	if err := d.st.RecordAttempt(ctx, n.Endpoint, n.ID, a); err != nil {
		return false, time.Time{}, lostOr(err)
	}
	d.m.Retried(reason)
	return false, next, nil
}

// bury dead-letters the head n with its final attempt a.
func (d *Deliverer) bury(ctx context.Context, n store.Delivery, atts []store.Attempt, a store.Attempt, metric, reason string, u *unacked) (bool, time.Time, error) {
	if err := d.settle(ctx, n.Endpoint, u, nil, "", 1); err != nil {
		return false, time.Time{}, err
	}
	all := append(slices.Clone(atts), a)
	d.logAttempt(ctx, n, a)
	if err := d.st.DeadLetter(ctx, n.Endpoint, n.ID, reason, all); err != nil {
		return false, time.Time{}, lostOr(err)
	}
	d.m.DeadLettered(metric)
	d.log.Warn("push: notification dead-lettered", "endpoint", n.Endpoint, "id", n.ID, "task", n.TaskID, "attempts", len(all), "reason", reason)
	return true, time.Time{}, nil
}

// gone handles a 410: the receiver says the endpoint is no more, so the
// endpoint is disabled and everything queued for it dead-lettered.
func (d *Deliverer) gone(ctx context.Context, n store.Delivery, a store.Attempt, u *unacked) (bool, time.Time, error) {
	const reason = "endpoint disabled: the receiver answered 410 Gone"
	a.Err = "receiver answered 410 Gone"
	if err := d.settle(ctx, n.Endpoint, u, nil, "", 1); err != nil {
		return false, time.Time{}, err
	}
	d.logAttempt(ctx, n, a)
	if err := d.st.RecordAttempt(ctx, n.Endpoint, n.ID, a); err != nil {
		return false, time.Time{}, lostOr(err)
	}
	moved, err := d.st.DisableEndpoint(ctx, n.Endpoint, reason)
	for range moved {
		d.m.DeadLettered(DeadGone)
	}
	if err != nil {
		return false, time.Time{}, err
	}
	d.log.Warn("push: endpoint disabled after 410 Gone", "endpoint", n.Endpoint, "task", n.TaskID, "dead_lettered", moved)
	if d.o.OnDisabled != nil {
		d.o.OnDisabled(n.Endpoint)
	}
	return true, time.Time{}, nil
}

// undeliverable is the dead letter reason for err.
func undeliverable(err error) string {
	return "undeliverable: " + strings.TrimPrefix(err.Error(), ErrUndeliverable.Error()+": ")
}

// lostOr maps the store's "not the head any more" answers to errLost.
func lostOr(err error) error {
	if errors.Is(err, store.ErrNotHead) || errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %w", errLost, err)
	}
	return err
}

// storeError logs a store failure, at most once per errorLogInterval: in
// an outage every worker fails at once.
func (d *Deliverer) storeError(what string, err error) {
	now := time.Now().UnixNano()
	last := d.lastLog.Load()
	if now-last < int64(errorLogInterval) || !d.lastLog.CompareAndSwap(last, now) {
		return
	}
	d.log.Warn("push: could not "+what+"; retrying", "error", err)
}

// reportBacklog refreshes the backlog gauges until ctx ends.
func (d *Deliverer) reportBacklog(ctx context.Context) {
	t := time.NewTicker(d.o.GaugeInterval)
	defer t.Stop()
	for {
		c, cancel := context.WithTimeout(ctx, storeOpTimeout)
		n, oldest, err := d.st.Backlog(c)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			d.storeError("read the backlog", err)
		case err == nil:
			var age time.Duration
			if !oldest.IsZero() {
				age = max(time.Since(oldest), 0)
			}
			d.m.Backlog(n, age)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sleep waits for d or ctx; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// acquire takes a slot, waiting at most wait.
func acquire(ctx context.Context, slots chan struct{}, wait time.Duration) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
