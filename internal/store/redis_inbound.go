package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Push-source keys: one string per task, on the task's hash tag, holding
// the record as JSON and expiring with the ttl of the last Put:
//
//	<prefix>:psrc:{<agent>:t:<task id>}   {"v":1,"h":holder,"s":secret digest}
const pushSourceFamily = "psrc"

// pushSourceFormat is the v of every record.
const pushSourceFormat = 1

type pushSourceRecord struct {
	V      int    `json:"v"`
	Holder string `json:"h"`
	Secret []byte `json:"s,omitempty"`
}

type redisPushSources struct {
	conn *redisConn
}

var _ PushSources = (*redisPushSources)(nil)

func (r *redisPushSources) key(agent, taskID string) string {
	return r.conn.keys.refTagged(pushSourceFamily, agent, Ref{Kind: RefTask, ID: taskID})
}

func (r *redisPushSources) Get(ctx context.Context, agent, taskID string) (PushSource, bool, error) {
	key := r.key(agent, taskID)
	return readValue(r.conn, "push source get", key, r.conn.client.Get(ctx, key), func(raw string) (PushSource, error) {
		var rec pushSourceRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.V != pushSourceFormat {
			return PushSource{}, errors.New("push source record is unreadable")
		}
		return PushSource{Agent: agent, TaskID: taskID, Holder: rec.Holder, SecretHash: rec.Secret}, nil
	})
}

func (r *redisPushSources) Put(ctx context.Context, s PushSource, ttl time.Duration) error {
	// Marshal cannot fail on a struct of integers, strings and bytes.
	raw, _ := json.Marshal(pushSourceRecord{V: pushSourceFormat, Holder: s.Holder, Secret: s.SecretHash})
	return r.conn.fail("push source put", r.conn.client.Set(ctx, r.key(s.Agent, s.TaskID), raw, ttl).Err())
}

func (r *redisPushSources) Delete(ctx context.Context, agent, taskID string) error {
	return r.conn.fail("push source delete", r.conn.client.Del(ctx, r.key(agent, taskID)).Err())
}
