package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Push-config keys. A task's configs share the task's hash tag, the one
// every per-task family uses (see keyspace.refTagged), so a script can
// touch them with the task's event log; the watched index is spread over
// pushWatchBuckets buckets of its own, read together by Watched:
//
//	<prefix>:pc:{<agent>:t:<task id>}   hash, config id -> "<created ns>|<record JSON>",
//	                                    expiring PushConfigRetention after the last Put
//	<prefix>:pw:{<b>}                   sorted set, member "<agent>|<task id>" (escaped),
//	                                    score = first registration (Unix ms)
//
// The creation time is kept outside the JSON so that the Put script can
// keep it when a config is replaced without decoding JSON in Lua. Watched
// entries whose configs are gone are trimmed after PushConfigRetention on
// every Put.
const (
	pushConfigFamily = "pc"
	pushWatchFamily  = "pw"
)

// KEYS[1] configs; ARGV id, "<created ns>|", record, max configs, ttl ms.
// Reply: 1 created, 0 replaced, -1 full.
var pushConfigPutScript = redis.NewScript(`
local old = redis.call('HGET', KEYS[1], ARGV[1])
local created = ARGV[2]
if old then
  created = string.match(old, '^%d+|') or created
elseif redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then
  return -1
end
redis.call('HSET', KEYS[1], ARGV[1], created .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if old then
  return 0
end
return 1
`)

type redisPushConfigs struct {
	conn *redisConn
}

var _ PushConfigs = (*redisPushConfigs)(nil)

func (r *redisPushConfigs) key(agent, taskID string) string {
	return r.conn.keys.refTagged(pushConfigFamily, agent, Ref{Kind: RefTask, ID: taskID})
}

func (r *redisPushConfigs) watchKey(b int) string {
	return r.conn.keys.tagged(pushWatchFamily, strconv.Itoa(b))
}

func (r *redisPushConfigs) Put(ctx context.Context, c PushConfig) (bool, error) {
	n, err := pushConfigPutScript.Run(ctx, r.conn.client, []string{r.key(c.Agent, c.TaskID)},
		c.ID, strconv.FormatInt(c.Created.UnixNano(), 10)+"|", encodePushConfig(c), MaxPushConfigsPerTask, PushConfigRetention.Milliseconds()).Int()
	if err != nil {
		return false, r.conn.fail("push config put", err)
	}
	if n < 0 {
		return false, ErrTooManyPushConfigs
	}
	// The index is written after the config: a Put that fails here has
	// stored the config, and its retry adds the task.
	wk := r.watchKey(pushWatchBucket(c.Agent, c.TaskID))
	pipe := r.conn.client.Pipeline()
	pipe.ZAddNX(ctx, wk, redis.Z{Score: float64(c.Created.UnixMilli()), Member: escapePair(c.Agent, c.TaskID)})
	pipe.ZRemRangeByScore(ctx, wk, "-inf", "("+strconv.FormatInt(time.Now().Add(-PushConfigRetention).UnixMilli(), 10))
	if _, err := pipe.Exec(ctx); err != nil {
		return false, r.conn.fail("push config watch", err)
	}
	return n == 1, nil
}

func (r *redisPushConfigs) Get(ctx context.Context, agent, taskID, id string) (PushConfig, bool, error) {
	key := r.key(agent, taskID)
	return readValue(r.conn, "push config get", key, r.conn.client.HGet(ctx, key, id), func(v string) (PushConfig, error) {
		return decodeStoredPushConfig(agent, taskID, []byte(v))
	})
}

func (r *redisPushConfigs) List(ctx context.Context, agent, taskID string) ([]PushConfig, error) {
	all, err := r.conn.client.HGetAll(ctx, r.key(agent, taskID)).Result()
	if err != nil {
		return nil, r.conn.fail("push config list", err)
	}
	out := make([]PushConfig, 0, len(all))
	for _, v := range all {
		c, err := decodeStoredPushConfig(agent, taskID, []byte(v))
		if err != nil {
			return nil, fmt.Errorf("store: push config list: %w", err)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b PushConfig) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

func (r *redisPushConfigs) Delete(ctx context.Context, agent, taskID, id string) (bool, error) {
	n, err := r.conn.client.HDel(ctx, r.key(agent, taskID), id).Result()
	return n > 0, r.conn.fail("push config delete", err)
}

// Watched reads the first limit entries of every bucket in one pipeline
// and merges them.
func (r *redisPushConfigs) Watched(ctx context.Context, limit int) ([]TaskRef, error) {
	all, err := pipedEach[redis.Z](ctx, r.conn, "push config watched", pushWatchBuckets, func(pipe redis.Pipeliner, b int) *redis.ZSliceCmd {
		return pipe.ZRangeWithScores(ctx, r.watchKey(b), 0, int64(limit-1))
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b redis.Z) int {
		am, _ := a.Member.(string)
		bm, _ := b.Member.(string)
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(am, bm))
	})
	out := make([]TaskRef, 0, min(limit, len(all)))
	for _, z := range all[:min(limit, len(all))] {
		m, _ := z.Member.(string)
		ref, err := parseTaskRef(m)
		if err != nil {
			return nil, fmt.Errorf("store: push config watched: %w", err)
		}
		out = append(out, ref)
	}
	return out, nil
}

func (r *redisPushConfigs) Finish(ctx context.Context, agent, taskID string) error {
	return r.conn.fail("push config finish", r.conn.client.ZRem(ctx, r.watchKey(pushWatchBucket(agent, taskID)), escapePair(agent, taskID)).Err())
}

// decodeStoredPushConfig reads "<created ns>|<record JSON>".
func decodeStoredPushConfig(agent, taskID string, v []byte) (PushConfig, error) {
	ns, rec, ok := bytes.Cut(v, []byte{'|'})
	created, err := strconv.ParseInt(string(ns), 10, 64)
	if !ok || err != nil {
		return PushConfig{}, errors.New("push config record has no creation time")
	}
	c, err := decodePushConfig(agent, taskID, rec)
	if err != nil {
		return PushConfig{}, err
	}
	c.Created = unixNanoTime(created)
	return c, nil
}
