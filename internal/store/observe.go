package store

import (
	"context"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/redis/go-redis/v9"
)

// RoundTripObserver is told about every round trip to Redis: the command
// name, or "pipeline" for a pipeline, whether a request waited for it (see
// request.OnPath), how long it took, and whether it failed. It must be
// cheap; it runs on the request path.
type RoundTripObserver func(op string, onRequestPath bool, d time.Duration, failed bool)

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
		h.observe(cmd.Name(), request.IsOnPath(ctx), time.Since(start), err != nil && err != redis.Nil)
		return err
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.observe("pipeline", request.IsOnPath(ctx), time.Since(start), err != nil && err != redis.Nil)
		return err
	}
}

var _ redis.Hook = roundTripHook{}
