package store

import (
	"context"
	"fmt"
	"time"
)

// recordKeys are the keys of eventRecordLua: the log's three, the task's
// push configs and its live mark, all under the task's hash tag.
func (l redisEventLog) recordKeys(agent, taskID string) []string {
	ref := Ref{Kind: RefTask, ID: taskID}
	k := l.conn.keys
	return append(l.keys(agent, taskID), k.refTagged(pushConfigFamily, agent, ref), k.refTagged(eventLiveFamily, agent, ref))
}

func (l redisEventLog) Record(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration) (Recorded, error) {
	var liveMS int64
	if live > 0 {
		liveMS = liveMillis(live)
	}
	res, err := l.record.Run(ctx, l.conn.client, l.recordKeys(agent, taskID),
		id, at.UnixNano(), payload, l.o.MaxEvents, l.o.Retention.Milliseconds(), liveMS).Slice()
	if err != nil {
		return Recorded{}, l.conn.fail("event log record", err)
	}
	if len(res) != 3 {
		return Recorded{}, fmt.Errorf("store: event log record: unexpected reply of %d elements", len(res))
	}
	seq, _ := res[0].(int64)
	added, _ := res[1].(int64)
	recs, _ := res[2].([]any)
	if seq < 1 {
		return Recorded{}, fmt.Errorf("store: event log record: unexpected sequence number %v", res[0])
	}
	r := Recorded{Seq: seq, Added: added == 1, Configs: make([]PushConfig, 0, len(recs))}
	for _, rec := range recs {
		v, _ := rec.(string)
		c, err := decodeStoredPushConfig(agent, taskID, []byte(v))
		if err != nil {
			return Recorded{}, fmt.Errorf("store: event log record: %w", err)
		}
		r.Configs = append(r.Configs, c)
	}
	sortPushConfigs(r.Configs)
	return r, nil
}

func (l redisEventLog) Live(ctx context.Context, agent, taskID string) (time.Duration, error) {
	left, err := l.conn.client.PTTL(ctx, l.conn.keys.refTagged(eventLiveFamily, agent, Ref{Kind: RefTask, ID: taskID})).Result()
	if err != nil {
		return 0, l.conn.fail("event log live mark", err)
	}
	// PTTL answers negative for a key that is gone (or never expires,
	// which Record never writes).
	return max(left, 0), nil
}
