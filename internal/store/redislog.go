package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// redisLogger puts go-redis's own messages (pool and failover notices) on
// the gateway's structured log instead of plain text on stderr, which
// would break a JSON log stream. go-redis holds one logger for the whole
// process; the last store opened sets it.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "log", "redis")
}

func routeRedisLog(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }
