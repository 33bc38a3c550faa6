package authz

import (
	"context"
	"errors"
	"log/slog"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// Authorizer decides, for every operation, whether the caller may perform
// it: the agent's policy first, then ownership of every task and context
// the request names. Task and context ids are identifiers, not permissions:
// a foreign task and an unknown one get the same answer, TaskNotFound,
// after the same store round trip, so ids cannot be probed.
type Authorizer struct {
	owners   store.Ownership
	policies map[string]*Policy
	metrics  *metrics.Metrics
	audit    *slog.Logger
}

// NewAuthorizer builds an Authorizer over the ownership store. policies are
// keyed by agent name; an agent without one gets the zero Policy.
func NewAuthorizer(owners store.Ownership, policies map[string]Policy, m *metrics.Metrics, audit *slog.Logger) *Authorizer {
	z := &Authorizer{owners: owners, policies: make(map[string]*Policy, len(policies)), metrics: m, audit: audit}
	for name, p := range policies {
		z.policies[name] = &p
	}
	return z
}

// Grant is an authorization decision in force for one request. It
// remembers which ids are known to be the caller's, so that a stream's
// events cost a store round trip only for ids not seen before.
type Grant struct {
	z          *Authorizer
	principal  *request.Principal
	agent      string
	key        string
	perSubject bool
	known      map[store.Ref]struct{}
	// record is the lifecycle record AuthorizeReading read, if it did.
	record store.TaskRecord
	taskID string
	// asked is the one task an answer may be about, for operations on one
	// task that answer with it or its events (get, cancel, subscribe).
	asked string
}

// Principal is the caller the grant was issued to.
func (g *Grant) Principal() *request.Principal { return g.principal }

// errUnavailable wraps a store failure so that callers fail closed with a clear
// "temporarily unavailable".
var errUnavailable = a2a.ErrUnavailable.WithMessage("authorization is temporarily unavailable; retry later")

// Authorize checks op for p on the agent mounted as agent, whose ownership
// records are kept under recordKey (shared by every mount of the same
// upstream agent). The returned error is an *a2a.Error ready for the
// caller: PermissionDenied for policy, TaskNotFound for ownership,
// Unavailable when the store cannot answer.
func (z *Authorizer) Authorize(ctx context.Context, p *request.Principal, agent, recordKey string, op *a2a.Operation) (*Grant, error) {
	return z.authorize(ctx, p, agent, recordKey, op, false)
}

// AuthorizeReading is Authorize for a request whose next check needs the
// lifecycle record of the task it names (op.TaskID): where the store can
// (store.RecordResolver), the record is read in the round trip that checks
// the task's ownership, and Grant.TaskRecord hands it on. The record is
// read whoever owns the task, so a foreign task costs the same work as the
// caller's own. Lifecycle records are kept per mount: where recordKey is
// not the mount's name, the record is in another slot and is left for the
// caller to read.
func (z *Authorizer) AuthorizeReading(ctx context.Context, p *request.Principal, agent, recordKey string, op *a2a.Operation) (*Grant, error) {
	return z.authorize(ctx, p, agent, recordKey, op, op.TaskID != "" && recordKey == agent)
}

func (z *Authorizer) authorize(ctx context.Context, p *request.Principal, agent, recordKey string, op *a2a.Operation, read bool) (*Grant, error) {
	pol := z.policy(agent)
	g := &Grant{z: z, principal: p, agent: agent, key: recordKey, perSubject: perSubject(pol)}
	switch op.Method {
	case a2a.MethodGetTask, a2a.MethodCancelTask, a2a.MethodSubscribe:
		g.asked = op.TaskID
	}
	if ok, reason := permits(pol, p, op.Method); !ok {
		z.deny(ctx, g, op, reason)
		return nil, a2a.ErrPermissionDenied.WithMessage("this operation is not permitted for the caller")
	}
	lookups, claims := refsOf(op, pol)
	if len(lookups)+len(claims) == 0 {
		z.allow(ctx, g, op)
		return g, nil
	}
	owner := store.Owner{Tenant: p.Tenant, Subject: p.Subject}
	var found, claimed []store.Owner
	var err error
	if rr, ok := z.owners.(store.RecordResolver); ok && read {
		found, claimed, g.record, err = rr.ResolveWithRecord(ctx, recordKey, lookups, claims, owner, op.TaskID)
		g.taskID = op.TaskID
	} else {
		found, claimed, err = z.owners.Resolve(ctx, recordKey, lookups, claims, owner)
	}
	if err != nil {
		return nil, z.storeFailed(ctx, g, op, err)
	}
	if !g.ownsAll(lookups, found) {
		z.deny(ctx, g, op, "not_owner")
		return nil, a2a.ErrTaskNotFound
	}
	if i := g.firstForeign(claimed); i >= 0 {
		// A client-chosen id someone else chose first: the same answer as
		// for an unknown task, and a count, so a deployment sees claims
		// collide (or being squatted).
		z.metrics.ClaimRefused(agent, claims[i].Kind.String(), p.Tenant)
		z.deny(ctx, g, op, "not_owner")
		return nil, a2a.ErrTaskNotFound
	}
	g.ownsAll(claims, claimed)
	z.allow(ctx, g, op)
	return g, nil
}

// refsOf lists the ids op names: those that must already be the caller's
// (lookups) and those the request creates and so reserves (claims).
func refsOf(op *a2a.Operation, pol *Policy) (lookups, claims []store.Ref) {
	task := store.Ref{Kind: store.RefTask, ID: op.TaskID}
	ctxRef := store.Ref{Kind: store.RefContext, ID: op.ContextID}
	switch {
	case op.Method.TaskScoped():
		lookups = append(lookups, task)
	case op.Method == a2a.MethodSend || op.Method == a2a.MethodStream:
		if op.Version == a2a.VLegacy {
			// Legacy clients choose the task id: sending creates it.
			claims = append(claims, task)
		} else if op.TaskID != "" {
			// Task ids are issued by agents. Reserving one the gateway has not
			// seen would let a caller take over a task an agent issues later.
			lookups = append(lookups, task)
		}
		for _, id := range op.ReferenceTaskIDs {
			lookups = append(lookups, store.Ref{Kind: store.RefTask, ID: id})
		}
		if op.ContextID != "" {
			if clientContextIDs(pol) {
				claims = append(claims, ctxRef)
			} else {
				lookups = append(lookups, ctxRef)
			}
		}
	case op.Method == a2a.MethodListTasks && op.ContextID != "":
		lookups = append(lookups, ctxRef)
	}
	return lookups, claims
}

// Record checks the task and context an answer reveals, and the tasks its
// messages reference. Ids not yet on record become the caller's; ids on
// record for someone else mean the agent answered with another tenant's
// task, and the answer must not reach the caller: the returned error is
// TaskNotFound. A reference names an existing task, so it is looked up,
// never claimed: it must be the caller's, and one the gateway does not know
// withholds the answer like a foreign one. An answer to an operation on
// one task that names another is withheld too, whoever owns the other: it
// is not the caller's answer, and claiming its task for the caller would
// let an agent hand out any task it likes.
func (g *Grant) Record(ctx context.Context, ev a2a.Event) error {
	if g.asked != "" && ev.TaskID != "" && ev.TaskID != g.asked {
		return g.withheld(store.Ref{Kind: store.RefTask, ID: ev.TaskID}, "other_task_in_answer")
	}
	var claims, lookups []store.Ref
	for _, r := range []store.Ref{{Kind: store.RefTask, ID: ev.TaskID}, {Kind: store.RefContext, ID: ev.ContextID}} {
		if r.ID != "" && !g.isKnown(r) {
			claims = append(claims, r)
		}
	}
	for _, id := range ev.ReferenceTaskIDs {
		// The answer's own task is checked by its claim.
		if r := (store.Ref{Kind: store.RefTask, ID: id}); id != ev.TaskID && !g.isKnown(r) {
			lookups = append(lookups, r)
		}
	}
	if len(claims)+len(lookups) == 0 {
		return nil
	}
	found, claimed, err := g.z.owners.Resolve(ctx, g.key, lookups, claims, store.Owner{Tenant: g.principal.Tenant, Subject: g.principal.Subject})
	if err != nil {
		g.z.audit.Warn("ownership could not be recorded; answer withheld", "agent", g.agent, "err", err)
		return errUnavailable
	}
	if i := g.firstForeign(claimed); i >= 0 {
		return g.withheld(claims[i], "foreign_in_answer")
	}
	g.ownsAll(claims, claimed)
	if i := g.firstForeign(found); i >= 0 {
		return g.withheld(lookups[i], "foreign_reference_in_answer")
	}
	g.ownsAll(lookups, found)
	return nil
}

// withheld logs and counts an answer that revealed r, which is not the
// caller's, and returns the caller's error: the same for every reason.
func (g *Grant) withheld(r store.Ref, reason string) error {
	g.z.audit.Warn("agent answered with a task the caller does not own; answer withheld",
		"decision", "deny", "reason", reason, "agent", g.agent,
		"tenant", g.principal.Tenant, "subject", g.principal.Subject, "ref", r.Kind.String(), "id", r.ID)
	g.z.metrics.AuthzDenials.WithLabelValues(g.agent, "answer", reason).Inc()
	return a2a.ErrTaskNotFound
}

// TaskRecord returns the lifecycle record of taskID that AuthorizeReading
// read with the task's owner; ok is false when it read none for that task.
func (g *Grant) TaskRecord(taskID string) (rec store.TaskLifecycle, found, ok bool) {
	if g.taskID == "" || g.taskID != taskID || !g.record.Read {
		return store.TaskLifecycle{}, false, false
	}
	return g.record.Lifecycle, g.record.Found, true
}

// OwnedTasks reports which of the task ids are the caller's: one round trip.
func (g *Grant) OwnedTasks(ctx context.Context, ids []string) ([]bool, error) {
	refs := make([]store.Ref, len(ids))
	for i, id := range ids {
		refs[i] = store.Ref{Kind: store.RefTask, ID: id}
	}
	owners, err := g.z.owners.Lookup(ctx, g.key, refs)
	if err != nil {
		return nil, errUnavailable
	}
	out := make([]bool, len(ids))
	for i, o := range owners {
		out[i] = g.owns(o)
	}
	return out, nil
}

// ownsAll checks each ref's owner and remembers the refs that are the caller's.
func (g *Grant) ownsAll(refs []store.Ref, owners []store.Owner) bool {
	for i, o := range owners {
		if !g.owns(o) {
			return false
		}
		g.remember(refs[i])
	}
	return true
}

// firstForeign is the index of the first owner that is not the caller, or -1.
func (g *Grant) firstForeign(owners []store.Owner) int {
	for i, o := range owners {
		if !g.owns(o) {
			return i
		}
	}
	return -1
}

// remember notes a ref as the caller's. The set is made on first use: most
// requests name no id, and their answer reveals one task and one context.
func (g *Grant) remember(r store.Ref) {
	if g.known == nil {
		g.known = make(map[store.Ref]struct{}, 2)
	}
	g.known[r] = struct{}{}
}

func (g *Grant) isKnown(r store.Ref) bool {
	_, ok := g.known[r]
	return ok
}

func (g *Grant) owns(o store.Owner) bool {
	return !o.IsZero() && o.Tenant == g.principal.Tenant && (!g.perSubject || o.Subject == g.principal.Subject)
}

func (z *Authorizer) policy(agent string) *Policy {
	if p, ok := z.policies[agent]; ok {
		return p
	}
	return &Policy{}
}

func (z *Authorizer) deny(ctx context.Context, g *Grant, op *a2a.Operation, reason string) {
	z.metrics.AuthzDenials.WithLabelValues(g.agent, op.Method.String(), reason).Inc()
	z.audit.LogAttrs(ctx, slog.LevelWarn, "authorization", auditAttrs(g, op, "deny", reason)...)
}

func (z *Authorizer) allow(ctx context.Context, g *Grant, op *a2a.Operation) {
	// Every request is allowed through here: build its attributes only for
	// a log that keeps them.
	if z.audit.Enabled(ctx, slog.LevelDebug) {
		z.audit.LogAttrs(ctx, slog.LevelDebug, "authorization", auditAttrs(g, op, "allow", "")...)
	}
}

func (z *Authorizer) storeFailed(ctx context.Context, g *Grant, op *a2a.Operation, err error) error {
	reason := "store_unavailable"
	if !errors.Is(err, store.ErrUnavailable) {
		reason = "store_error"
	}
	z.metrics.AuthzDenials.WithLabelValues(g.agent, op.Method.String(), reason).Inc()
	attrs := append(auditAttrs(g, op, "deny", reason), slog.String("err", err.Error()))
	z.audit.LogAttrs(ctx, slog.LevelError, "authorization", attrs...)
	if errors.Is(err, store.ErrInvalidArgument) {
		return a2a.ErrTaskNotFound
	}
	return errUnavailable
}

func auditAttrs(g *Grant, op *a2a.Operation, decision, reason string) []slog.Attr {
	attrs := []slog.Attr{
		slog.String("decision", decision),
		slog.String("agent", g.agent),
		slog.String("operation", op.Method.String()),
		slog.String("tenant", g.principal.Tenant),
		slog.String("subject", g.principal.Subject),
		slog.String("issuer", g.principal.Issuer),
	}
	if op.TaskID != "" {
		attrs = append(attrs, slog.String("task_id", op.TaskID))
	}
	if op.ContextID != "" {
		attrs = append(attrs, slog.String("context_id", op.ContextID))
	}
	if reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	return attrs
}
