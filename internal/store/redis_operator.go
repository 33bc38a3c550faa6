package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// deliveryLogFamily keys the per-task delivery logs:
// <prefix>:dlog:{<agent>:t:<task>}, a list of JSON attempts, newest last.
const deliveryLogFamily = "dlog"

// redisDeliveryLog is the Redis DeliveryLog: one capped list per task.
type redisDeliveryLog struct {
	conn *redisConn
}

func (r *redisDeliveryLog) key(agent, taskID string) string {
	return r.conn.keys.refTagged(deliveryLogFamily, agent, Ref{Kind: RefTask, ID: taskID})
}

// taskAttemptJSON is an entry as stored.
type taskAttemptJSON struct {
	Endpoint string `json:"e"`
	ID       string `json:"i"`
	At       int64  `json:"t"`
	Status   int    `json:"s,omitempty"`
	Latency  int64  `json:"l,omitempty"`
	Err      string `json:"x,omitempty"`
	RetryAt  int64  `json:"r,omitempty"`
}

func (r *redisDeliveryLog) Add(ctx context.Context, agent, taskID string, a TaskAttempt) error {
	// Marshal cannot fail on a struct of integers and strings.
	b, _ := json.Marshal(taskAttemptJSON{Endpoint: a.Endpoint, ID: a.ID, At: a.At.UnixNano(), Status: a.Status, Latency: int64(a.Latency), Err: a.Err,
		RetryAt: timeUnixNano(a.RetryAt)})
	key := r.key(agent, taskID)
	// Every delivery adds an entry, which rides with the delivery's other
	// calls.
	var cmds [3]redis.Cmder
	err := r.conn.ridden(ctx, func(ctx context.Context, p redis.Pipeliner) {
		cmds = [3]redis.Cmder{p.RPush(ctx, key, b), p.LTrim(ctx, key, -MaxTaskAttempts, -1), p.Expire(ctx, key, TaskAttemptRetention)}
	})
	if err == nil {
		err = cmp.Or(cmds[0].Err(), cmds[1].Err(), cmds[2].Err())
	}
	return r.conn.fail("delivery log add", err)
}

func (r *redisDeliveryLog) List(ctx context.Context, agent, taskID string) ([]TaskAttempt, error) {
	raw, err := r.conn.client.LRange(ctx, r.key(agent, taskID), 0, -1).Result()
	if err != nil {
		return nil, r.conn.fail("delivery log list", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	out := make([]TaskAttempt, 0, len(raw))
	for _, s := range raw {
		var e taskAttemptJSON
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, fmt.Errorf("store: delivery log list: %w", err)
		}
		out = append(out, TaskAttempt{Endpoint: e.Endpoint, ID: e.ID, Attempt: Attempt{
			At: time.Unix(0, e.At).UTC(), Status: e.Status, Latency: time.Duration(e.Latency), Err: e.Err, RetryAt: unixNanoTime(e.RetryAt),
		}})
	}
	return out, nil
}

// deliveryDiscard deletes a dead letter and its index entry. KEYS[1]
// the bucket's dead-letter index, KEYS[2] the dead letter.
var deliveryDiscard = redis.NewScript(`
local m = redis.call('HGET', KEYS[2], 'm')
if not m then
  return 0
end
redis.call('ZREM', KEYS[1], m)
redis.call('DEL', KEYS[2])
return 1
`)

func (r *redisDelivery) DiscardDeadLetter(ctx context.Context, endpoint, id string) (bool, error) {
	k := r.endpointKeys(endpoint)
	return r.conn.acted("delivery discard dead letter", deliveryDiscard.Run(ctx, r.conn.client, []string{k.keys[dkDead], k.deadKey(id)}))
}
