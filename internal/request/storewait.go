package request

import (
	"context"
	"sync/atomic"
	"time"
)

// The request path is the work a caller waits for. A context on it carries
// a StoreBudget, which bounds how long the request may wait for the store
// in all (the store's request_budget), across every call it makes.

type pathKey struct{}

// StoreBudget is the store wait of one request under one budget.
type StoreBudget struct {
	// budgeted is false for a shared batch that no budget bounds.
	budgeted bool
	// spent is the store wait so far under this budget, in nanoseconds.
	spent atomic.Int64
	// exhausted is set once a round trip ran out of one of the request's
	// budgets; renewed budgets share it.
	exhausted *atomic.Bool
}

// OnPath marks ctx as a request's own: store round trips made with it are
// ones a caller waits for, and together they may wait no longer than the
// store's request budget. Work done later on a caller's behalf (queued
// bookkeeping) uses OffPath.
func OnPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, pathKey{}, &StoreBudget{budgeted: true, exhausted: new(atomic.Bool)})
}

// RenewBudget gives the request of ctx a new budget for one answer or
// stream event of the agent's: what the request waited before the agent
// answered does not count against it, and a stream open for hours is not
// cut off by the sum of its events' waits. Other contexts are returned as
// they are.
func RenewBudget(ctx context.Context) context.Context {
	b := BudgetOf(ctx)
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, pathKey{}, &StoreBudget{budgeted: true, exhausted: b.exhausted})
}

// OffPath marks ctx as background work, even if derived from a request's
// context: it keeps the store's own timeouts only.
func OffPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, pathKey{}, (*StoreBudget)(nil))
}

// SharedPath marks ctx as work some caller waits for that no one
// request's budget bounds: a batch of several callers' calls, each of
// which stops waiting at its own budget.
func SharedPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, pathKey{}, &StoreBudget{})
}

// IsOnPath reports whether a caller waits for the round trips made with
// ctx.
func IsOnPath(ctx context.Context) bool {
	return pathOf(ctx) != nil
}

// BudgetOf is the store budget that bounds ctx's round trips, nil for
// none.
func BudgetOf(ctx context.Context) *StoreBudget {
	b := pathOf(ctx)
	if b == nil || !b.budgeted {
		return nil
	}
	return b
}

func pathOf(ctx context.Context) *StoreBudget {
	b, _ := ctx.Value(pathKey{}).(*StoreBudget)
	return b
}

// Spent is how long the request waited under this budget.
func (b *StoreBudget) Spent() time.Duration { return time.Duration(b.spent.Load()) }

// Spend counts a wait of d against the budget.
func (b *StoreBudget) Spend(d time.Duration) { b.spent.Add(int64(d)) }

// Exhaust records that a round trip ran out of the budget.
func (b *StoreBudget) Exhaust() { b.exhausted.Store(true) }

// StoreWait reports how long the request of ctx (see OnPath) waited for
// the store under the budget of ctx, and whether any of its budgets ran
// out.
func StoreWait(ctx context.Context) (waited time.Duration, exhausted bool) {
	b := BudgetOf(ctx)
	if b == nil {
		return 0, false
	}
	return b.Spent(), b.exhausted.Load()
}
