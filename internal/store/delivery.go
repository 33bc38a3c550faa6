package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// Delivery is one notification waiting in its endpoint's queue. The store
// routes it by Endpoint and ID; Payload is opaque here.
type Delivery struct {
	// ID is the notification's stable id (for example "<taskId>:<seq>"),
	// unique per endpoint; receivers deduplicate on it.
	ID string
	// Endpoint is the queue key: the push config the notification goes to,
	// scoped by the caller (tenant, agent, task, config), so that order is
	// kept per task and push config.
	Endpoint string
	TaskID   string
	// Payload is what the delivery worker sends, in its own encoding.
	Payload []byte
	// Enqueued is when the event happened, for the event-to-delivery
	// latency; zero means now. The store returns it in UTC; it must lie
	// between 1970 and 2261, as every time of this concern.
	Enqueued time.Time
}

// Attempt is one try at delivering a notification.
type Attempt struct {
	At time.Time
	// Status is the receiver's HTTP status, 0 when there was no response.
	Status  int
	Latency time.Duration
	// Err says what went wrong, "" on success; at most MaxAttemptErrBytes
	// (longer texts are cut).
	Err string
	// RetryAt is when the next attempt is due, zero when none follows. It is
	// stored with the attempt so that whichever worker takes the endpoint
	// over, after a restart or on another replica, keeps the same schedule.
	RetryAt time.Time
}

// DeadLetter is a notification that will not be attempted again unless an
// operator redelivers it.
type DeadLetter struct {
	Delivery
	// Attempts is the attempt log at the time it was dead-lettered, oldest
	// first.
	Attempts []Attempt
	// At is when it was dead-lettered.
	At time.Time
	// Reason says why, for the operator.
	Reason string
}

// DeliveryStore is the durable queue of the push-notification relay: one
// ordered queue per endpoint, written before any delivery attempt, a
// registry of the endpoints that have work due, per-delivery attempt logs,
// endpoint leases so that one worker at a time delivers an endpoint's queue
// (which keeps its order across replicas), and the dead letters.
//
// A worker's loop: Endpoints finds endpoints that are due; ClaimEndpoint
// takes one; AckHeads reads its heads with their attempt logs; after a
// 2xx the worker acknowledges the heads delivered and reads the next
// (AckHeads again); after a failure it records the attempt with its RetryAt and releases the endpoint
// until then; after the last retry it dead-letters the head and goes on
// with the next one.
type DeliveryStore interface {
	// EnqueueAll appends each of ds durably to the end of its endpoint's
	// queue, at once, and makes the endpoint due, unless it is due later
	// already (a retry is pending). It is idempotent on (Endpoint, ID)
	// while the delivery is queued and for DeliveryIDRetention after it
	// left the queue: queued[i] reports whether this call stored ds[i].
	// errs[i], each on its own, is ErrEndpointDisabled for a disabled
	// endpoint and ErrQueueFull when the endpoint already holds
	// MaxQueueLength deliveries (or the memory store is full).
	EnqueueAll(ctx context.Context, ds []Delivery) (queued []bool, errs []error)
	// DeadLetter moves the head of the queue to the dead letters with the
	// full attempt log and reason. Like AckHeads, it refuses an id that is
	// queued behind the head and ignores one that is gone.
	DeadLetter(ctx context.Context, endpoint, id, reason string, attempts []Attempt) error
	// RecordAttempt appends a to the log of a queued delivery. It fails with
	// ErrNotFound when id is not queued. The worker then releases the
	// endpoint until a.RetryAt; should it die first, whoever claims the
	// endpoint next finds RetryAt in the log.
	RecordAttempt(ctx context.Context, endpoint, id string, a Attempt) error
	// Endpoints returns up to limit (1..MaxEndpointsPerCall) endpoints with
	// pending deliveries that are due now, most overdue first. A claimed
	// endpoint is not due until its lease runs out or is released.
	Endpoints(ctx context.Context, limit int) ([]string, error)
	// Depth returns the number of deliveries queued for the endpoint and
	// when the oldest was enqueued (zero when none).
	Depth(ctx context.Context, endpoint string) (n int, oldest time.Time, err error)
	// Backlog is Depth over every endpoint: the deliveries queued in total
	// and the Enqueued time of the oldest, to the millisecond (zero when
	// none).
	Backlog(ctx context.Context) (n int, oldest time.Time, err error)
	// DeadLetters lists dead letters oldest first, limit
	// 1..MaxDeadLetterListLimit, with an opaque cursor for the next page
	// ("" at the end).
	DeadLetters(ctx context.Context, cursor string, limit int) ([]DeadLetter, string, error)
	// GetDeadLetter returns one dead letter; false when there is none.
	GetDeadLetter(ctx context.Context, endpoint, id string) (DeadLetter, bool, error)
	// Redeliver puts a dead letter back at the end of its endpoint's queue
	// with a fresh attempt log, and re-enables the endpoint if it was
	// disabled. It fails with ErrNotFound when there is no such dead letter.
	Redeliver(ctx context.Context, endpoint, id string) error
	// DiscardDeadLetter deletes one dead letter an operator gave up on; it
	// reports whether there was one.
	DiscardDeadLetter(ctx context.Context, endpoint, id string) (bool, error)
	// DisableEndpoint marks the endpoint disabled for DisabledEndpointTTL,
	// so EnqueueAll refuses it, and moves every delivery still queued to the
	// dead letters with reason. It returns how many it moved.
	DisableEndpoint(ctx context.Context, endpoint, reason string) (int, error)
	// ClaimEndpoint gives holder the endpoint for ttl, so that one worker
	// of one replica delivers its queue at a time and its order holds;
	// calling again renews. While claimed, the endpoint is not due before
	// the lease runs out. Reports whether holder holds it now.
	ClaimEndpoint(ctx context.Context, endpoint, holder string, ttl time.Duration) (bool, error)
	// ReleaseEndpoint gives up holder's lease, and makes the endpoint due at
	// next (now when zero) if deliveries are still queued. It does nothing when holder does
	// not hold the lease.
	ReleaseEndpoint(ctx context.Context, endpoint, holder string, next time.Time) error

	// The delivery workers' calls, each one round trip on Redis: a worker
	// makes one per delivery instead of three, and one per claim instead
	// of two.

	// EnqueueClaim enqueues d as EnqueueAll does and, when d was added and the
	// endpoint's lease is free (or holder's already), claims it for holder
	// for ttl and reads its head with the attempt log as ClaimHead does. A
	// replica that enqueues to an endpoint nobody delivers then starts
	// delivering it without a claim of its own. A repeat claims nothing.
	EnqueueClaim(ctx context.Context, d Delivery, holder string, ttl time.Duration) (queued, claimed bool, head Delivery, atts []Attempt, err error)
	// ClaimHead is ClaimEndpoint, then reads the head, as AckHeads does;
	// the head is read only when holder has the endpoint.
	ClaimHead(ctx context.Context, endpoint, holder string, ttl time.Duration) (claimed bool, head Delivery, atts []Attempt, found bool, err error)
	// AckHeads removes the delivered heads ids, in their order, and their
	// attempt logs, then reads up to limit heads, the oldest deliveries not
	// yet acknowledged or dead-lettered, in queue order, with their attempt
	// logs (the newest MaxDeliveryAttempts), fewer once they hold
	// MaxHeadBytesPerRead of payload; nil for an empty queue. No ids: it
	// only reads. A worker that delivered a batch learns what comes next. It fails with
	// ErrNotHead when an id is queued but not at the head when its turn
	// comes (order is strict: only the head is ever delivered), keeping the
	// removals before it; an id that is no longer queued is ignored, so a
	// repeated AckHeads is harmless. When the queue is then empty, holder's
	// lease is given up as ReleaseEndpoint would ("" keeps it).
	AckHeads(ctx context.Context, endpoint string, ids []string, holder string, limit int) (next []Queued, err error)
}

// Queued is a queued delivery with its attempt log, oldest first.
type Queued struct {
	Delivery
	Attempts []Attempt
}

// Errors of the delivery concern.
var (
	// ErrEndpointDisabled refuses an enqueue to an endpoint disabled by
	// DisableEndpoint (its receiver answered 410 Gone, for example).
	ErrEndpointDisabled = errors.New("store: delivery endpoint is disabled")
	// ErrQueueFull refuses an enqueue beyond MaxQueueLength, or beyond the
	// memory store's bounds.
	ErrQueueFull = errors.New("store: delivery queue is full")
	// ErrNotHead refuses to acknowledge or dead-letter a delivery queued behind the
	// head: a worker that sees it has lost its endpoint to another.
	ErrNotHead = errors.New("store: delivery is not the head of its queue")
	// ErrNotFound means the delivery or dead letter named does not exist.
	ErrNotFound = errors.New("store: not found")
)

// Limits and retention of the delivery concern.
const (
	// MaxDeliveryPayloadBytes bounds Delivery.Payload.
	MaxDeliveryPayloadBytes = 4 << 20
	// MaxQueueLength bounds the deliveries queued for one endpoint, so one
	// runaway task cannot fill Redis.
	MaxQueueLength = 10_000
	// MaxDeliveryAttempts bounds an attempt log; the oldest entries go.
	MaxDeliveryAttempts = 64
	// MaxAttemptErrBytes bounds Attempt.Err, MaxReasonBytes a dead letter's
	// reason; longer texts are cut.
	MaxAttemptErrBytes = 1024
	MaxReasonBytes     = 1024
	// MaxEndpointsPerCall bounds the limit of Endpoints.
	MaxEndpointsPerCall = 1024
	// MaxHeadsPerRead bounds the ids and the limit of AckHeads, and
	// MaxHeadBytesPerRead the payload it reads beyond the first head.
	MaxHeadsPerRead     = 16
	MaxHeadBytesPerRead = 1 << 20
	// MaxDeadLetterListLimit bounds the limit of DeadLetters.
	MaxDeadLetterListLimit = 100

	// DeliveryIDRetention is how long an id is remembered after its
	// delivery left the queue, so that a late duplicate enqueue (a retried
	// call, a replica replaying events after a takeover) is still dropped.
	DeliveryIDRetention = time.Hour
	// DeadLetterRetention is how long a dead letter is kept.
	DeadLetterRetention = 14 * 24 * time.Hour
	// DisabledEndpointTTL is how long DisableEndpoint keeps an endpoint
	// disabled; the push config is normally deleted well before.
	DisabledEndpointTTL = 7 * 24 * time.Hour

	maxDeadLetterCursorBytes = 4*MaxNameBytes + 64
)

// deliveryBuckets is the number of hash-tag buckets the delivery keys are
// spread over (see redis_delivery.go). It is part of the stored format:
// changing it strands every queued delivery.
const deliveryBuckets = 64

// deliveryBucket places an endpoint in its bucket.
func deliveryBucket(endpoint string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(endpoint))
	return int(h.Sum32() % deliveryBuckets)
}

// checkDelivery checks *d and normalizes its Enqueued time in place.
func checkDelivery(d *Delivery) error {
	if err := cmp.Or(checkDeliveryRef(d.Endpoint, d.ID), checkName("task id", d.TaskID)); err != nil {
		return err
	}
	if len(d.Payload) > MaxDeliveryPayloadBytes {
		return fmt.Errorf("%w: payload is %d bytes, over the limit of %d", ErrInvalidArgument, len(d.Payload), MaxDeliveryPayloadBytes)
	}
	var err error
	d.Enqueued, err = nanoTime("enqueued", d.Enqueued)
	return err
}

func checkDeliveryRef(endpoint, id string) error {
	return cmp.Or(checkName("endpoint", endpoint), checkName("delivery id", id))
}

func checkClaim(endpoint, holder string, ttl time.Duration) error {
	return cmp.Or(checkName("endpoint", endpoint), checkName("lease holder", holder), checkPositive("lease ttl", ttl))
}

// normalizeAttempt checks a and returns the copy a store keeps: times in
// UTC without a monotonic reading, the error text cut to its bound.
func normalizeAttempt(a Attempt) (Attempt, error) {
	if a.Status < 0 || a.Status > 999 {
		return Attempt{}, fmt.Errorf("%w: status %d is not an HTTP status or 0", ErrInvalidArgument, a.Status)
	}
	if a.Latency < 0 {
		return Attempt{}, fmt.Errorf("%w: latency %s is negative", ErrInvalidArgument, a.Latency)
	}
	var err error
	if a.At, err = nanoTime("attempt time", a.At); err != nil {
		return Attempt{}, err
	}
	if a.RetryAt, err = nanoTime("retry time", a.RetryAt); err != nil {
		return Attempt{}, err
	}
	a.Err = clipText(a.Err, MaxAttemptErrBytes)
	return a, nil
}

func normalizeAttempts(atts []Attempt) ([]Attempt, error) {
	atts = atts[max(0, len(atts)-MaxDeliveryAttempts):]
	out := make([]Attempt, len(atts))
	for i, a := range atts {
		var err error
		if out[i], err = normalizeAttempt(a); err != nil {
			return nil, fmt.Errorf("attempt %d: %w", i, err)
		}
	}
	return out, nil
}

// clipText cuts s to at most n bytes of valid UTF-8.
func clipText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}

// Bounds of the times the delivery concern keeps, as Unix nanoseconds.
var (
	minNanoTime = time.Unix(0, 1).UTC()
	maxNanoTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// nanoTime checks a time the store keeps as Unix nanoseconds and returns it
// in UTC without a monotonic reading. The zero time stays zero ("none").
func nanoTime(what string, t time.Time) (time.Time, error) {
	if t.IsZero() {
		return time.Time{}, nil
	}
	if t.Before(minNanoTime) || !t.Before(maxNanoTime) {
		return time.Time{}, fmt.Errorf("%w: %s %s is outside 1970 to 2261", ErrInvalidArgument, what, t.UTC().Format(time.RFC3339))
	}
	return t.Round(0).UTC(), nil
}

// unixNanoTime reads a time kept as Unix nanoseconds; 0 is the zero time.
func unixNanoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func timeUnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// deadMember is a dead letter's place in the listing order: the time it was
// dead-lettered in Unix milliseconds, 13 digits so that byte order is time
// order, then the escaped endpoint and id, which make it unique.
func deadMember(at time.Time, endpoint, id string) string {
	return fmt.Sprintf("%013d|%s|%s", max(at.UnixMilli(), 0), escape(endpoint), escape(id))
}

// parseDeadMember splits a member deadMember wrote.
func parseDeadMember(m string) (endpoint, id string, err error) {
	ms, rest, ok1 := strings.Cut(m, "|")
	ep, eid, ok2 := strings.Cut(rest, "|")
	if !ok1 || !ok2 || len(ms) != 13 || strings.Trim(ms, "0123456789") != "" {
		return "", "", fmt.Errorf("dead letter index member %.64q is malformed", m)
	}
	if endpoint, err = unescape(ep); err != nil || endpoint == "" {
		return "", "", fmt.Errorf("dead letter index member %.64q: endpoint is not escaped", m)
	}
	if id, err = unescape(eid); err != nil || id == "" {
		return "", "", fmt.Errorf("dead letter index member %.64q: id is not escaped", m)
	}
	return endpoint, id, nil
}

// decodeDeadCursor returns the member a page starts after; "" for the first
// page.
func decodeDeadCursor(c string) (string, error) {
	member, err := decodeCursor(c, maxDeadLetterCursorBytes)
	if err != nil || member == "" {
		return member, err
	}
	if _, _, err := parseDeadMember(member); err != nil {
		return "", errMalformedCursor
	}
	return member, nil
}

// checkedDelivery is the DeliveryStore a Store hands out: it refuses every
// call once the store is closed and checks the arguments before the back
// end, memory or Redis, sees them, so both refuse the same calls.
type checkedDelivery struct {
	gate *gate
	b    DeliveryStore
}

func (c checkedDelivery) EnqueueAll(ctx context.Context, ds []Delivery) ([]bool, []error) {
	queued, errs := make([]bool, len(ds)), make([]error, len(ds))
	var idx []int
	var valid []Delivery
	for i, d := range ds {
		if errs[i] = c.gate.check(checkDelivery(&d)); errs[i] == nil {
			idx = append(idx, i)
			valid = append(valid, d)
		}
	}
	if len(valid) == 0 {
		return queued, errs
	}
	q, e := c.b.EnqueueAll(ctx, valid)
	for j, i := range idx {
		queued[i], errs[i] = q[j], e[j]
	}
	return queued, errs
}

func (c checkedDelivery) EnqueueClaim(ctx context.Context, d Delivery, holder string, ttl time.Duration) (bool, bool, Delivery, []Attempt, error) {
	if err := c.gate.check(checkDelivery(&d), checkClaim(d.Endpoint, holder, ttl)); err != nil {
		return false, false, Delivery{}, nil, err
	}
	return c.b.EnqueueClaim(ctx, d, holder, ttl)
}

func (c checkedDelivery) AckHeads(ctx context.Context, endpoint string, ids []string, holder string, limit int) ([]Queued, error) {
	errs := []error{checkName("endpoint", endpoint), checkOptionalName("holder", holder)}
	if len(ids) > MaxHeadsPerRead || limit < 1 || limit > MaxHeadsPerRead {
		errs = append(errs, fmt.Errorf("%w: at most %d ids and a limit of 1 to %d", ErrInvalidArgument, MaxHeadsPerRead, MaxHeadsPerRead))
	}
	for _, id := range ids {
		errs = append(errs, checkName("delivery id", id))
	}
	if err := c.gate.check(errs...); err != nil {
		return nil, err
	}
	return c.b.AckHeads(ctx, endpoint, ids, holder, limit)
}

// DeadLetter hands the back end the attempts normalized, in a slice of its
// own, and the reason cut to its bound.
func (c checkedDelivery) DeadLetter(ctx context.Context, endpoint, id, reason string, attempts []Attempt) error {
	atts, err := normalizeAttempts(attempts)
	if err := c.gate.check(checkDeliveryRef(endpoint, id), err); err != nil {
		return err
	}
	return c.b.DeadLetter(ctx, endpoint, id, clipText(reason, MaxReasonBytes), atts)
}

func (c checkedDelivery) RecordAttempt(ctx context.Context, endpoint, id string, a Attempt) error {
	if err := c.gate.check(checkDeliveryRef(endpoint, id)); err != nil {
		return err
	}
	a, err := normalizeAttempt(a)
	if err != nil {
		return err
	}
	return c.b.RecordAttempt(ctx, endpoint, id, a)
}

func (c checkedDelivery) Endpoints(ctx context.Context, limit int) ([]string, error) {
	if err := c.gate.check(checkLimit(limit, MaxEndpointsPerCall)); err != nil {
		return nil, err
	}
	return c.b.Endpoints(ctx, limit)
}

func (c checkedDelivery) Depth(ctx context.Context, endpoint string) (int, time.Time, error) {
	if err := c.gate.check(checkName("endpoint", endpoint)); err != nil {
		return 0, time.Time{}, err
	}
	return c.b.Depth(ctx, endpoint)
}

func (c checkedDelivery) Backlog(ctx context.Context) (int, time.Time, error) {
	if err := c.gate.check(); err != nil {
		return 0, time.Time{}, err
	}
	return c.b.Backlog(ctx)
}

func (c checkedDelivery) DeadLetters(ctx context.Context, cursor string, limit int) ([]DeadLetter, string, error) {
	if err := c.gate.check(checkLimit(limit, MaxDeadLetterListLimit)); err != nil {
		return nil, "", err
	}
	return c.b.DeadLetters(ctx, cursor, limit)
}

func (c checkedDelivery) GetDeadLetter(ctx context.Context, endpoint, id string) (DeadLetter, bool, error) {
	if err := c.gate.check(checkDeliveryRef(endpoint, id)); err != nil {
		return DeadLetter{}, false, err
	}
	return c.b.GetDeadLetter(ctx, endpoint, id)
}

func (c checkedDelivery) Redeliver(ctx context.Context, endpoint, id string) error {
	if err := c.gate.check(checkDeliveryRef(endpoint, id)); err != nil {
		return err
	}
	return c.b.Redeliver(ctx, endpoint, id)
}

func (c checkedDelivery) DiscardDeadLetter(ctx context.Context, endpoint, id string) (bool, error) {
	if err := c.gate.check(checkDeliveryRef(endpoint, id)); err != nil {
		return false, err
	}
	return c.b.DiscardDeadLetter(ctx, endpoint, id)
}

func (c checkedDelivery) DisableEndpoint(ctx context.Context, endpoint, reason string) (int, error) {
	if err := c.gate.check(checkName("endpoint", endpoint)); err != nil {
		return 0, err
	}
	reason = clipText(reason, MaxReasonBytes)
	if reason == "" {
		// The marker's value is its reason; Redis cannot store an empty
		// string any differently, but a reason helps whoever reads it.
		reason = "disabled"
	}
	return c.b.DisableEndpoint(ctx, endpoint, reason)
}

func (c checkedDelivery) ClaimEndpoint(ctx context.Context, endpoint, holder string, ttl time.Duration) (bool, error) {
	if err := c.gate.check(checkClaim(endpoint, holder, ttl)); err != nil {
		return false, err
	}
	return c.b.ClaimEndpoint(ctx, endpoint, holder, ttl)
}

func (c checkedDelivery) ClaimHead(ctx context.Context, endpoint, holder string, ttl time.Duration) (bool, Delivery, []Attempt, bool, error) {
	if err := c.gate.check(checkClaim(endpoint, holder, ttl)); err != nil {
		return false, Delivery{}, nil, false, err
	}
	return c.b.ClaimHead(ctx, endpoint, holder, ttl)
}

// ReleaseEndpoint hands the back end next normalized, now for zero.
func (c checkedDelivery) ReleaseEndpoint(ctx context.Context, endpoint, holder string, next time.Time) error {
	next, err := nanoTime("next", next)
	if err := c.gate.check(checkName("endpoint", endpoint), checkName("lease holder", holder), err); err != nil {
		return err
	}
	if next.IsZero() {
		next = time.Now()
	}
	return c.b.ReleaseEndpoint(ctx, endpoint, holder, next)
}
