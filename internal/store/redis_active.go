package store

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Active-task keys, one sorted set per tenant:
//
//	<prefix>:act:{<tenant>}   member <agent>:<task id>, score = last activity (Unix ms)
//
// Escaped as keyspace describes. One tenant's set lives in one slot; the
// tag is the tenant, so tenants spread over the cluster. Count trims marks
// older than the window and counts the rest in one script.
const activeFamily = "act"

// KEYS[1] set; ARGV cutoff ms. Reply: the count.
var activeCountLua = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
return redis.call('ZCARD', KEYS[1])
`)

type redisActive struct {
	conn *redisConn
}

var _ ActiveTasks = (*redisActive)(nil)

func (r *redisActive) key(tenant string) string {
	return r.conn.keys.tagged(activeFamily, tenant)
}

func (r *redisActive) Track(ctx context.Context, tenant, agent, taskID string, active bool) error {
	member := escape(agent) + ":" + escape(taskID)
	var err error
	if active {
		err = r.conn.client.ZAdd(ctx, r.key(tenant), redis.Z{Score: float64(time.Now().UnixMilli()), Member: member}).Err()
	} else {
		err = r.conn.client.ZRem(ctx, r.key(tenant), member).Err()
	}
	return r.conn.fail("active tasks track", err)
}

func (r *redisActive) Count(ctx context.Context, tenant string, window time.Duration) (int, error) {
	cutoff := strconv.FormatInt(time.Now().Add(-window).UnixMilli(), 10)
	n, err := activeCountLua.Run(ctx, r.conn.client, []string{r.key(tenant)}, cutoff).Int()
	return n, r.conn.fail("active tasks count", err)
}
