package push

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Breaker states, for ReceiverState.State.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// ReceiverState is what this replica knows of one receiver: its circuit
// breaker and the failed requests in a row that led to it. Breakers are
// per replica, like the requests they count.
type ReceiverState struct {
	// Receiver is the scheme, host and port the breaker guards.
	Receiver string
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen.
	State string
	// Failures counts the failed requests in a row.
	Failures int
	// OpenUntil is when an open breaker lets a probe through.
	OpenUntil time.Time
}

// Receivers lists the receivers this replica has sent to recently, by
// receiver.
func (d *Deliverer) Receivers() []ReceiverState {
	now := time.Now()
	d.rcv.mu.Lock()
	out := make([]ReceiverState, 0, len(d.rcv.m))
	for key, r := range d.rcv.m {
		out = append(out, r.breaker.state(key, now))
	}
	d.rcv.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Receiver < out[j].Receiver })
	return out
}

func (b *breaker) state(receiver string, now time.Time) ReceiverState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := ReceiverState{Receiver: receiver, State: BreakerClosed, Failures: b.failures}
	switch {
	case b.until.IsZero():
	case now.Before(b.until):
		s.State, s.OpenUntil = BreakerOpen, b.until
	default:
		s.State = BreakerHalfOpen
	}
	return s
}

// Redeliver puts a dead letter back at the end of its endpoint's queue and
// wakes this replica's workers for it. The dead-letter API and the
// console both redeliver through it.
func (d *Deliverer) Redeliver(ctx context.Context, endpoint, id string) error {
	if err := d.st.Redeliver(ctx, endpoint, id); err != nil {
		return err
	}
	d.log.Info("push: dead letter redelivered", "endpoint", endpoint, "id", id)
	select {
	case d.hints <- endpoint:
	default:
	}
	return nil
}

// Discard deletes a dead letter for good; it reports whether there was one.
func (d *Deliverer) Discard(ctx context.Context, endpoint, id string) (bool, error) {
	found, err := d.st.DiscardDeadLetter(ctx, endpoint, id)
	if err == nil && found {
		d.log.Info("push: dead letter discarded", "endpoint", endpoint, "id", id)
	}
	return found, err
}

// AttemptLog is DeliveryOptions.Log: where every attempt is written with
// its task; nil when none was given.
func (d *Deliverer) AttemptLog() store.DeliveryLog { return d.o.Log }

// logAttempt writes a to its task's delivery log. The queue keeps the
// attempts that matter for delivery; a failure to write this log only
// costs the operator's view, so it is logged and not returned.
func (d *Deliverer) logAttempt(ctx context.Context, n store.Delivery, a store.Attempt) {
	if d.o.Log == nil || n.TaskID == "" {
		return
	}
	agent := EndpointAgent(n.Endpoint)
	if agent == "" {
		return
	}
	if err := d.o.Log.Add(ctx, agent, n.TaskID, store.TaskAttempt{Endpoint: n.Endpoint, ID: n.ID, Attempt: a}); err != nil {
		d.storeError("log a delivery attempt", err)
	}
}

// EndpointAgent is the agent of the push config an endpoint names, "" for
// an endpoint this package did not name.
func EndpointAgent(ep string) string {
	parts := strings.SplitN(ep, "/", 4)
	if len(parts) != 4 {
		return ""
	}
	return unescapeOr(parts[1])
}

// EndpointTenant is the tenant of an endpoint's push config when the
// tenant has a push policy of its own, "" otherwise ("*": the default
// policy's endpoints do not name their tenant).
func EndpointTenant(ep string) string {
	key, _, _ := strings.Cut(ep, "/")
	if key == defaultPolicyKey {
		return ""
	}
	return unescapeOr(key)
}

func unescapeOr(s string) string {
	v, err := url.PathUnescape(s)
	if err != nil {
		return ""
	}
	return v
}

// ReceiverOf is the scheme, host and port of a dead letter's webhook, as
// breakers and limits count receivers; an error when its payload cannot be
// read.
func ReceiverOf(dl store.DeadLetter) (string, error) {
	r, err := DecodePayload(dl.Payload)
	if err != nil {
		return "", err
	}
	return receiverOf(r.URL)
}
