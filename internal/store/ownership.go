package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"
)

// RefKind tells a task id from a context id: an agent may issue the same
// string as both, and they must not share an owner record.
type RefKind uint8

// Kinds of reference. The zero value is invalid so that a forgotten kind is
// caught as an argument error.
const (
	RefTask RefKind = iota + 1
	RefContext
)

func (k RefKind) String() string {
	switch k {
	case RefTask:
		return "task"
	case RefContext:
		return "context"
	}
	return fmt.Sprintf("RefKind(%d)", uint8(k))
}

// Ref names a task or a context of one agent.
type Ref struct {
	Kind RefKind
	ID   string
}

// Owner is the tenant, and within it the subject, that created a task or
// context through the gateway.
type Owner struct {
	Tenant  string
	Subject string
}

// IsZero reports whether o is the absent owner.
func (o Owner) IsZero() bool { return o.Tenant == "" && o.Subject == "" }

// Ownership records which tenant and subject own each task id and context id
// the gateway has seen, per agent. It sits on the hot path of every request:
// each call costs one round trip to the back end at most (Redis sends the
// Claims made at the same time in shared pipelines).
type Ownership interface {
	// Claim records owner for every ref that has no owner yet, atomically per
	// ref, and returns per ref the owner on record afterwards: owner itself,
	// or whoever claimed the ref first. Records expire OwnershipTTL after they
	// were created; a claim does not extend them.
	Claim(ctx context.Context, agent string, refs []Ref, owner Owner) ([]Owner, error)
	// Lookup returns the owner of each ref, the zero Owner where none is on
	// record.
	Lookup(ctx context.Context, agent string, refs []Ref) ([]Owner, error)
	// Resolve is Lookup of lookups and Claim of claims in one round trip,
	// for requests that name existing ids and create new ones at once.
	Resolve(ctx context.Context, agent string, lookups, claims []Ref, owner Owner) (found, claimed []Owner, err error)
}

// RecordResolver is implemented by the Ownership a Store hands out: where
// the back end can (Redis, where the record shares the slot of the task's
// owner), it reads a task's lifecycle record in the round trip that
// resolves owners; the embedded store makes no round trips to save and
// leaves the record unread. Requests the lifecycle guard checks need both.
type RecordResolver interface {
	// ResolveWithRecord is Resolve that also reads the lifecycle record of
	// agent's task taskID.
	ResolveWithRecord(ctx context.Context, agent string, lookups, claims []Ref, owner Owner, taskID string) (found, claimed []Owner, rec TaskRecord, err error)
}

// TaskRecord is a lifecycle record read along with owners.
type TaskRecord struct {
	Lifecycle TaskLifecycle
	// Found says a record exists; Read that it was read. A record that
	// could not be read (Read false) is for the caller to read on its own.
	Found, Read bool
}

// Limits on Ownership arguments. Agent names, tenants, subjects and ids come
// from callers and agents, so their size is bounded before any work is done.
const (
	// MaxNameBytes bounds agent names, tenants, subjects and ids.
	MaxNameBytes = 512
	// MaxRefsPerCall bounds the refs of one Claim or Lookup.
	MaxRefsPerCall = 1024
)

func checkName(what, s string) error { return checkBounded(what, s, MaxNameBytes, true) }

// checkOptionalName is checkName for a name that may be empty.
func checkOptionalName(what, s string) error { return checkBounded(what, s, MaxNameBytes, false) }

func checkBounded(what, s string, limit int, required bool) error {
	if required && s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidArgument, what)
	}
	if len(s) > limit {
		return fmt.Errorf("%w: %s is %d bytes, over the limit of %d", ErrInvalidArgument, what, len(s), limit)
	}
	return nil
}

// checkLimit checks the limit of a listing call against its bound.
func checkLimit(limit, bound int) error {
	if limit < 1 || limit > bound {
		return fmt.Errorf("%w: limit %d is not between 1 and %d", ErrInvalidArgument, limit, bound)
	}
	return nil
}

func checkRefs(agent string, refs []Ref) error {
	if err := checkName("agent name", agent); err != nil {
		return err
	}
	if len(refs) > MaxRefsPerCall {
		return fmt.Errorf("%w: %d refs in one call, over the limit of %d", ErrInvalidArgument, len(refs), MaxRefsPerCall)
	}
	for i, r := range refs {
		if r.Kind != RefTask && r.Kind != RefContext {
			return fmt.Errorf("%w: ref %d: unknown kind %s", ErrInvalidArgument, i, r.Kind)
		}
		// The message is built only on failure: this runs on every request.
		if r.ID == "" || len(r.ID) > MaxNameBytes {
			return checkName(fmt.Sprintf("ref %d: %s id", i, r.Kind), r.ID)
		}
	}
	return nil
}

func checkOwner(o Owner) error {
	return cmp.Or(checkName("owner tenant", o.Tenant), checkOptionalName("owner subject", o.Subject))
}

// ownerVersion starts every stored owner record, so the format can change
// without misreading records written by older gateways.
const ownerVersion = "1"

// encodeOwner renders o as "1|<tenant>|<subject>", both escaped, so "|" in
// a name cannot move the boundary between tenant and subject.
func encodeOwner(o Owner) string {
	var b strings.Builder
	b.Grow(len(o.Tenant) + len(o.Subject) + 4)
	b.WriteString(ownerVersion)
	b.WriteByte('|')
	writeEscaped(&b, o.Tenant)
	b.WriteByte('|')
	writeEscaped(&b, o.Subject)
	return b.String()
}

func decodeOwner(v string) (Owner, error) {
	version, rest, ok := strings.Cut(v, "|")
	if !ok || version != ownerVersion {
		return Owner{}, fmt.Errorf("owner record has unknown format version %.8q", version)
	}
	tenant, subject, ok := strings.Cut(rest, "|")
	if !ok {
		return Owner{}, fmt.Errorf("owner record has no subject field")
	}
	t, err := unescape(tenant)
	if err != nil {
		return Owner{}, fmt.Errorf("owner record tenant: %w", err)
	}
	s, err := unescape(subject)
	if err != nil {
		return Owner{}, fmt.Errorf("owner record subject: %w", err)
	}
	if t == "" {
		return Owner{}, fmt.Errorf("owner record has an empty tenant")
	}
	return Owner{Tenant: t, Subject: s}, nil
}

// checkResolve checks Resolve's arguments; owner only matters for claims.
func checkResolve(agent string, lookups, claims []Ref, owner Owner) error {
	if err := checkRefs(agent, append(lookups[:len(lookups):len(lookups)], claims...)); err != nil || len(claims) == 0 {
		return err
	}
	return checkOwner(owner)
}

// checkedOwnership is the Ownership a Store hands out; see gate.
type checkedOwnership struct {
	gate *gate
	b    Ownership
}

var _ RecordResolver = checkedOwnership{}

func (c checkedOwnership) Claim(ctx context.Context, agent string, refs []Ref, owner Owner) ([]Owner, error) {
	if err := c.gate.check(checkRefs(agent, refs), checkOwner(owner)); err != nil {
		return nil, err
	}
	return c.b.Claim(ctx, agent, refs, owner)
}

func (c checkedOwnership) Lookup(ctx context.Context, agent string, refs []Ref) ([]Owner, error) {
	if err := c.gate.check(checkRefs(agent, refs)); err != nil {
		return nil, err
	}
	return c.b.Lookup(ctx, agent, refs)
}

func (c checkedOwnership) Resolve(ctx context.Context, agent string, lookups, claims []Ref, owner Owner) ([]Owner, []Owner, error) {
	if err := c.gate.check(checkResolve(agent, lookups, claims, owner)); err != nil {
		return nil, nil, err
	}
	return c.b.Resolve(ctx, agent, lookups, claims, owner)
}

// ResolveWithRecord is Resolve alone, with the record unread, where the
// back end cannot read the record in the same round trip.
func (c checkedOwnership) ResolveWithRecord(ctx context.Context, agent string, lookups, claims []Ref, owner Owner, taskID string) ([]Owner, []Owner, TaskRecord, error) {
	if err := c.gate.check(checkResolve(agent, lookups, claims, owner), checkTaskRef(agent, taskID)); err != nil {
		return nil, nil, TaskRecord{}, err
	}
	rr, ok := c.b.(RecordResolver)
	if !ok {
		found, claimed, err := c.b.Resolve(ctx, agent, lookups, claims, owner)
		return found, claimed, TaskRecord{}, err
	}
	return rr.ResolveWithRecord(ctx, agent, lookups, claims, owner, taskID)
}
