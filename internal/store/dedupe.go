package store

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// DedupeState is the state of a dedupe record. The zero value is invalid, so
// a record that was never filled in cannot pass for one in flight.
type DedupeState uint8

// States of a dedupe record.
const (
	DedupeInFlight DedupeState = iota + 1
	DedupeDone
)

func (s DedupeState) String() string {
	switch s {
	case DedupeInFlight:
		return "in-flight"
	case DedupeDone:
		return "done"
	}
	return fmt.Sprintf("DedupeState(%d)", uint8(s))
}

// DedupeRecord is one (tenant, key) record.
type DedupeRecord struct {
	State DedupeState
	// Fingerprint is what the request was (method and canonical body hash);
	// the store compares it only for equality.
	Fingerprint string
	// Holder is the random token of the claim holding an in-flight record;
	// on a done record, the token of the claim that completed it.
	Holder string
	// LeaseExpired is computed when read: the record is in flight and the
	// holder's lease has run out. Redis measures it by the record's own
	// expiry, on the server's clock, so the replicas' clocks do not matter.
	LeaseExpired bool
	// TaskID is set by SetTask while in flight and kept by Complete.
	TaskID string
	// Result is the opaque blob set by Complete.
	Result []byte
}

// ClaimOutcome says what Claim did.
type ClaimOutcome uint8

// Outcomes of Claim.
const (
	// ClaimNew: the caller now holds a fresh in-flight record.
	ClaimNew ClaimOutcome = iota + 1
	// ClaimTakeover: the caller took over an in-flight record whose lease
	// expired.
	ClaimTakeover
	// ClaimExisting: someone else's record; see the record returned.
	ClaimExisting
)

func (o ClaimOutcome) String() string {
	switch o {
	case ClaimNew:
		return "new"
	case ClaimTakeover:
		return "takeover"
	case ClaimExisting:
		return "existing"
	}
	return fmt.Sprintf("ClaimOutcome(%d)", uint8(o))
}

// Dedupe stores the records that let the gateway forward each (tenant,
// message id) to the agent at most once: the first arrival claims a record,
// forwards and stores the result; duplicates replay it, wait for it, or take
// over a claim whose holder went away.
//
// Every method acts on one key, so it works on Cluster without CROSSSLOT,
// in one round trip (calls made at the same time share pipelines), except
// a Claim that finds another holder's record in flight, which takes two.
// An in-flight record never expires
// before its lease ends, whatever ttl says, so a record cannot vanish while
// its holder is still forwarding.
type Dedupe interface {
	// Claim, atomically:
	//  - no record: creates an in-flight record {fingerprint, holder,
	//    lease = now+lease}, expiring after ttl, and returns ClaimNew;
	//  - an in-flight record held by this same holder (an earlier Claim whose
	//    reply was lost to a timeout and is retried with the same token):
	//    returns the record unchanged, with the outcome of that earlier claim
	//    (ClaimNew, or ClaimTakeover if it took the record over), so a
	//    timeout never turns a request into its own duplicate;
	//  - an in-flight record whose lease expired and whose fingerprint
	//    equals fingerprint: holder becomes the holder, the lease is renewed
	//    and the expiry reset to ttl; returns ClaimTakeover and the record,
	//    which keeps its TaskID;
	//  - anything else: returns ClaimExisting and the record as stored (the
	//    caller compares fingerprints, waits, or replays the result).
	Claim(ctx context.Context, tenant, key, fingerprint, holder string, lease, ttl time.Duration) (DedupeRecord, ClaimOutcome, error)
	// Get returns the record, and false if there is none.
	Get(ctx context.Context, tenant, key string) (DedupeRecord, bool, error)

	// The following act only when holder still holds the in-flight record
	// (a compare-and-set on the token, never a blind write or delete) and
	// report whether they did.

	// Renew sets the lease to now+lease, and extends the record's expiry if
	// it would end before the new lease does.
	Renew(ctx context.Context, tenant, key, holder string, lease time.Duration) (bool, error)
	// SetTask records the id of the task the agent created for the request.
	SetTask(ctx context.Context, tenant, key, holder, taskID string) (bool, error)
	// Complete marks the record done with result and resets its expiry to
	// ttl. Complete by the holder that already completed the record reports
	// true and changes nothing, so a retry after a lost reply is not
	// mistaken for a lost claim.
	Complete(ctx context.Context, tenant, key, holder string, result []byte, ttl time.Duration) (bool, error)
	// Release deletes the in-flight record: the request never reached the
	// agent, so a retry may go ahead. Done records are never released.
	Release(ctx context.Context, tenant, key, holder string) (bool, error)
}

// MaxDedupeResultBytes bounds the result a dedupe record stores.
const MaxDedupeResultBytes = 64 << 20

// checkDedupeKey checks the arguments every Dedupe method takes. Tenants,
// keys and tokens come from callers, so their size is bounded before any
// work is done.
func checkDedupeKey(tenant, key string) error {
	return cmp.Or(checkName("tenant", tenant), checkName("dedupe key", key))
}

func checkDedupeHolder(tenant, key, holder string) error {
	return cmp.Or(checkDedupeKey(tenant, key), checkName("holder", holder))
}

func checkDedupeResult(result []byte, ttl time.Duration) error {
	if len(result) > MaxDedupeResultBytes {
		return fmt.Errorf("%w: result is %d bytes, over the limit of %d", ErrInvalidArgument, len(result), MaxDedupeResultBytes)
	}
	return checkPositive("ttl", ttl)
}

func checkPositive(what string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: %s %s is not positive", ErrInvalidArgument, what, d)
	}
	return nil
}

// checkedDedupe is the Dedupe a Store hands out: it refuses every call
// once the store is closed and checks the arguments before the back end,
// memory or Redis, sees them, so both refuse the same calls.
type checkedDedupe struct {
	gate *gate
	b    Dedupe
}

func (w checkedDedupe) Claim(ctx context.Context, tenant, key, fingerprint, holder string, lease, ttl time.Duration) (DedupeRecord, ClaimOutcome, error) {
	if err := w.gate.check(checkDedupeHolder(tenant, key, holder), checkName("fingerprint", fingerprint),
		checkPositive("lease", lease), checkPositive("ttl", ttl)); err != nil {
		return DedupeRecord{}, 0, err
	}
	return w.b.Claim(ctx, tenant, key, fingerprint, holder, lease, ttl)
}

func (w checkedDedupe) Get(ctx context.Context, tenant, key string) (DedupeRecord, bool, error) {
	if err := w.gate.check(checkDedupeKey(tenant, key)); err != nil {
		return DedupeRecord{}, false, err
	}
	return w.b.Get(ctx, tenant, key)
}

func (w checkedDedupe) Renew(ctx context.Context, tenant, key, holder string, lease time.Duration) (bool, error) {
	if err := w.gate.check(checkDedupeHolder(tenant, key, holder), checkPositive("lease", lease)); err != nil {
		return false, err
	}
	return w.b.Renew(ctx, tenant, key, holder, lease)
}

func (w checkedDedupe) SetTask(ctx context.Context, tenant, key, holder, taskID string) (bool, error) {
	if err := w.gate.check(checkDedupeHolder(tenant, key, holder), checkName("task id", taskID)); err != nil {
		return false, err
	}
	return w.b.SetTask(ctx, tenant, key, holder, taskID)
}

func (w checkedDedupe) Complete(ctx context.Context, tenant, key, holder string, result []byte, ttl time.Duration) (bool, error) {
	if err := w.gate.check(checkDedupeHolder(tenant, key, holder), checkDedupeResult(result, ttl)); err != nil {
		return false, err
	}
	return w.b.Complete(ctx, tenant, key, holder, result, ttl)
}

func (w checkedDedupe) Release(ctx context.Context, tenant, key, holder string) (bool, error) {
	if err := w.gate.check(checkDedupeHolder(tenant, key, holder)); err != nil {
		return false, err
	}
	return w.b.Release(ctx, tenant, key, holder)
}
