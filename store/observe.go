package store

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// RoundTripObserver is told about every round trip to Redis: the command
// name, or "pipeline" for a pipeline, whether a request waited for it (see
// OnRequestPath), how long it took, and whether it failed. It must be
// cheap; it runs on the request path.
type RoundTripObserver func(op string, onRequestPath bool, d time.Duration, failed bool)

type requestPathKey struct{}

// OnRequestPath marks ctx as a request's own: round trips made with it are
// ones a caller waits for. Work done later on a caller's behalf (queued
// bookkeeping) uses OffRequestPath.
func OnRequestPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestPathKey{}, true)
}

// OffRequestPath marks ctx as background work, even if derived from a
// request's context.
func OffRequestPath(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestPathKey{}, false)
}

func onRequestPath(ctx context.Context) bool {
	v, _ := ctx.Value(requestPathKey{}).(bool)
	return v
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
