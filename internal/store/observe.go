package store

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RoundTripObserver is told about every round trip to Redis: the command
// name, or "pipeline" for a pipeline, whether a request waited for it (see
// OnRequestPath), how long it took, and whether it failed. It must be
// cheap; it runs on the request path.
type RoundTripObserver func(op string, onRequestPath bool, d time.Duration, failed bool)

type requestPathKey struct{}

// requestPath is what a request's context carries for its round trips:
// whether a caller waits for them, and how long the request already waited
// for the store (see budgetHook).
type requestPath struct {
	// budgeted is false for a shared batch that no budget bounds.
	budgeted bool
	// spent is the store wait so far under this budget, in nanoseconds.
	spent atomic.Int64
	// exhausted is set once a round trip ran out of one of the request's
	// budgets.
	exhausted *atomic.Bool
}

// OnRequestPath marks ctx as a request's own: round trips made with it are
// ones a caller waits for, and together they may wait for the store no
// longer than the store's request_budget. Work done later on a caller's
// behalf (queued bookkeeping) uses OffRequestPath.
func OnRequestPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestPathKey{}, &requestPath{budgeted: true, exhausted: new(atomic.Bool)})
}

// RenewBudget gives the request of ctx a new budget for one answer or
// stream event of the agent's: what the request waited before the agent
// answered does not count against it, and a stream open for hours is not
// cut off by the sum of its events' waits. Other contexts are returned as
// they are.
func RenewBudget(ctx context.Context) context.Context {
	p := pathOf(ctx)
	if p == nil || !p.budgeted {
		return ctx
	}
	return context.WithValue(ctx, requestPathKey{}, &requestPath{budgeted: true, exhausted: p.exhausted})
}

// OffRequestPath marks ctx as background work, even if derived from a
// request's context: it keeps the store's own timeouts only.
func OffRequestPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestPathKey{}, (*requestPath)(nil))
}

func onRequestPath(ctx context.Context) bool {
	return pathOf(ctx) != nil
}

func pathOf(ctx context.Context) *requestPath {
	p, _ := ctx.Value(requestPathKey{}).(*requestPath)
	return p
}

// RequestWait reports how long the request of ctx (see OnRequestPath)
// waited for the store under the budget of ctx, and whether any of its
// budgets ran out.
func RequestWait(ctx context.Context) (waited time.Duration, exhausted bool) {
	p := pathOf(ctx)
	if p == nil || !p.budgeted {
		return 0, false
	}
	return time.Duration(p.spent.Load()), p.exhausted.Load()
}

// Observe makes s report each Redis round trip to observe. The embedded
// store makes none, so it reports nothing.
func Observe(s Store, observe RoundTripObserver) {
	rs, ok := s.(*redisStore)
	if !ok {
		return
	}
	rs.conn.client.AddHook(roundTripHook{observe})
}

type roundTripHook struct{ observe RoundTripObserver }

func (h roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(cmd.Name(), onRequestPath(ctx), time.Since(start), err != nil && err != redis.Nil)
		return err
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.observe("pipeline", onRequestPath(ctx), time.Since(start), err != nil && err != redis.Nil)
		return err
	}
}

var _ redis.Hook = roundTripHook{}
