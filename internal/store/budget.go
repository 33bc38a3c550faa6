package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/redis/go-redis/v9"
)

// ErrBudgetSpent means a request waited for the store as long as its
// budget (request_budget) allows; it satisfies errors.Is(err,
// ErrUnavailable), so the request is answered like any outage, at once,
// instead of after every timeout and retry of every call it makes.
var ErrBudgetSpent = fmt.Errorf("%w: the request's store wait budget is spent", ErrUnavailable)

// requestBudget bounds the total time one request (see request.OnPath)
// waits for Redis, across all its round trips, retries and dials included.
type requestBudget time.Duration

// bound returns ctx limited to what is left of its request's budget, and
// done, which takes the call's error once the wait is over: it counts the
// wait and, when the budget ran out during the call, answers
// ErrBudgetSpent. Contexts off the request path are returned as they are.
func (b requestBudget) bound(ctx context.Context) (context.Context, func(error) error) {
	p := request.BudgetOf(ctx)
	if p == nil || ctx.Value(budgetApplied{}) != nil {
		return ctx, func(err error) error { return err }
	}
	start := time.Now()
	left := time.Duration(b) - p.Spent()
	bctx, cancel := context.WithDeadline(context.WithValue(ctx, budgetApplied{}, true), start.Add(left))
	return bctx, func(err error) error {
		p.Spend(time.Since(start))
		spent := err != nil && !errors.Is(err, redis.Nil) && bctx.Err() != nil && ctx.Err() == nil
		cancel()
		if !spent {
			return err
		}
		p.Exhaust()
		// The cause is kept as text: it is no deadline of the caller's.
		return fmt.Errorf("%w (%s): %v", ErrBudgetSpent, time.Duration(b), err)
	}
}

// budgetApplied marks a context already bounded, so that a client with
// the hook installed twice (stores opened on one client) counts each wait
// once.
type budgetApplied struct{}

// budgetHook applies the request budget to every command and pipeline
// sent with the go-redis client.
type budgetHook struct{ budget requestBudget }

func (h budgetHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h budgetHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		bctx, done := h.budget.bound(ctx)
		err := done(next(bctx, cmd))
		if errors.Is(err, ErrBudgetSpent) {
			cmd.SetErr(err)
		}
		return err
	}
}

func (h budgetHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		bctx, done := h.budget.bound(ctx)
		err := done(next(bctx, cmds))
		if errors.Is(err, ErrBudgetSpent) {
			for _, c := range cmds {
				if c.Err() != nil && !errors.Is(c.Err(), redis.Nil) {
					c.SetErr(err)
				}
			}
		}
		return err
	}
}

var _ redis.Hook = budgetHook{}

// piped queues fn's commands on the shared pipeline and waits for them
// within the request's budget.
func (c *redisConn) piped(ctx context.Context, fn piped) error {
	bctx, done := c.budget.bound(ctx)
	_, err := c.pipes.do(bctx, fn)
	return done(err)
}

// unshared sends fn's commands in a pipeline of their own, shared with no
// other call; each command carries its own error.
func (c *redisConn) unshared(ctx context.Context, fn piped) error {
	pipe := c.client.Pipeline()
	fn(ctx, pipe)
	_, _ = pipe.Exec(ctx)
	return nil
}

// relayed is piped on the push relay's pipelines.
func (c *redisConn) relayed(ctx context.Context, fn piped) error {
	bctx, done := c.budget.bound(ctx)
	_, err := c.relay.do(bctx, fn)
	return done(err)
}

// ridden is relayed for a call that rides (see coalescer.ride).
func (c *redisConn) ridden(ctx context.Context, fn piped) error {
	bctx, done := c.budget.bound(ctx)
	_, err := c.relay.ride(bctx, fn)
	return done(err)
}
