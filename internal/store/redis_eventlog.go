package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Event-log keys share the task's hash tag (see keyspace.refTagged), so
// each operation is one script on one slot:
//
//	<prefix>:ev:{<agent>:t:<task id>}    stream; entry id "<seq>-0", fields
//	                                     id, at (Unix ns), pl (payload)
//	<prefix>:evid:{<agent>:t:<task id>}  hash, event id -> seq, for the
//	                                     events still in the stream, and
//	                                     "" -> the last seq given (event
//	                                     ids are never empty)
//	<prefix>:evs:{<agent>:t:<task id>}   string "<seq>|<snapshot>"
//	<prefix>:evl:{<agent>:t:<task id>}   string "1", the live mark, expiring
//	                                     when it lapses
//
// Record numbers events from the last seq given (read with the event id's
// own, so numbering costs no read of the stream), trims the
// stream to the log's MaxEvents (dropping the trimmed ids from the hash)
// and renews every key for the log's Retention, so a log expires whole;
// in the same script it reads the task's push configs
// (redis_pushconfig.go: same hash tag) and renews the live mark.
const (
	eventLogFamily      = "ev"
	eventIDsFamily      = "evid"
	eventSnapshotFamily = "evs"
	eventLiveFamily     = "evl"
)

// append_event appends with KEYS[1] stream, KEYS[2] ids, KEYS[3] snapshot;
// ARGV id, at ns, payload, max events, retention ms. It returns {seq,
// added}.
const eventAppendFn = `
local function append_event()
local known = redis.call('HMGET', KEYS[2], ARGV[1], '')
if known[1] then
  return {tonumber(known[1]), 0}
end
local n = tonumber(known[2])
if n then
  n = n + 1
else
  -- A log written before the ids hash kept the last number, or a new one.
  n = 1
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
  if last then
    n = tonumber(string.match(last[1], '^(%d+)')) + 1
  end
end
local seq = string.format('%.0f', n)
redis.call('XADD', KEYS[1], seq .. '-0', 'id', ARGV[1], 'at', ARGV[2], 'pl', ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], seq, '', seq)
-- Entries are numbered from 1 without gaps, so up to max events the log
-- holds no more than n.
if n > tonumber(ARGV[4]) then
  local excess = redis.call('XLEN', KEYS[1]) - tonumber(ARGV[4])
  if excess > 0 then
    for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', excess)) do
      redis.call('XDEL', KEYS[1], e[1])
      redis.call('HDEL', KEYS[2], e[2][2]) -- fields 'id', id, 'at', at, 'pl', payload, as XADD wrote them
    end
  end
end
for i = 1, 3 do
  redis.call('PEXPIRE', KEYS[i], ARGV[5])
end
return {n, 1}
end
`

// Record's script: append_event's keys and arguments, then KEYS[4] the
// push configs, KEYS[5] the live mark; ARGV[6] the live mark's ms (0: not
// renewed). Reply: {seq, added, config records}.
const eventRecordLua = eventAppendFn + `
local r = append_event()
if tonumber(ARGV[6]) > 0 then
  redis.call('SET', KEYS[5], '1', 'PX', ARGV[6])
end
return {r[1], r[2], redis.call('HVALS', KEYS[4])}
`

// KEYS[1] stream, KEYS[2] ids; ARGV id ("" from the start), limit.
// Reply: {0} when id is not logged, else {1, entries}.
const eventAfterLua = `
local start = '-'
if ARGV[1] ~= '' then
  local seq = redis.call('HGET', KEYS[2], ARGV[1])
  if not seq then
    return {0}
  end
  start = string.format('%.0f', tonumber(seq) + 1) .. '-0'
end
return {1, redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', ARGV[2])}
`

// KEYS[1] snapshot; ARGV seq, snapshot, retention ms. Reply: 1 stored.
const eventSnapshotLua = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local s = tonumber(string.match(cur, '^(%d+)|'))
  if s and s >= tonumber(ARGV[1]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
return 1
`

// redisEventLogs holds the scripts every bounded view shares.
type redisEventLogs struct {
	conn                  *redisConn
	record, after, snapsh *redis.Script
}

type redisEventLog struct {
	*redisEventLogs
	o EventLogOptions
}

var _ EventLog = redisEventLog{}

func newRedisEventLog(conn *redisConn) redisEventLog {
	return redisEventLog{
		redisEventLogs: &redisEventLogs{
			conn:   conn,
			record: redis.NewScript(eventRecordLua),
			after:  redis.NewScript(eventAfterLua),
			snapsh: redis.NewScript(eventSnapshotLua),
		},
		o: EventLogOptions{}.withDefaults(),
	}
}

func (l redisEventLog) Bounded(o EventLogOptions) EventLog {
	return redisEventLog{redisEventLogs: l.redisEventLogs, o: o.withDefaults()}
}

func (l redisEventLog) keys(agent, taskID string) []string {
	ref := Ref{Kind: RefTask, ID: taskID}
	k := l.conn.keys
	return []string{k.refTagged(eventLogFamily, agent, ref), k.refTagged(eventIDsFamily, agent, ref), k.refTagged(eventSnapshotFamily, agent, ref)}
}

func (l redisEventLog) After(ctx context.Context, agent, taskID, id string, limit int) ([]LoggedEvent, bool, error) {
	res, err := l.after.Run(ctx, l.conn.client, l.keys(agent, taskID)[:2], id, limit).Slice()
	if err != nil {
		return nil, false, l.conn.fail("event log after", err)
	}
	if len(res) < 1 || res[0] != int64(1) {
		return nil, false, nil
	}
	var entries []any
	if len(res) > 1 {
		entries, _ = res[1].([]any)
	}
	out := make([]LoggedEvent, 0, len(entries))
	for _, e := range entries {
		ev, err := parseLoggedEvent(e)
		if err != nil {
			return nil, false, fmt.Errorf("store: event log after: %w", err)
		}
		out = append(out, ev)
	}
	return out, true, nil
}

// parseLoggedEvent reads one XRANGE entry the append script wrote.
func parseLoggedEvent(e any) (LoggedEvent, error) {
	entry, _ := e.([]any)
	if len(entry) != 2 {
		return LoggedEvent{}, errors.New("malformed stream entry")
	}
	sid, _ := entry[0].(string)
	fields, _ := entry[1].([]any)
	seqText, _, _ := strings.Cut(sid, "-")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if err != nil || len(fields) != 6 {
		return LoggedEvent{}, fmt.Errorf("malformed stream entry %.32q", sid)
	}
	id, _ := fields[1].(string)
	atText, _ := fields[3].(string)
	pl, _ := fields[5].(string)
	at, err := strconv.ParseInt(atText, 10, 64)
	if err != nil || id == "" {
		return LoggedEvent{}, fmt.Errorf("malformed stream entry %.32q", sid)
	}
	return LoggedEvent{Seq: seq, ID: id, Payload: []byte(pl), At: unixNanoTime(at)}, nil
}

func (l redisEventLog) Snapshot(ctx context.Context, agent, taskID string) (int64, []byte, bool, error) {
	v, err := l.conn.client.Get(ctx, l.keys(agent, taskID)[2]).Bytes()
	if errors.Is(err, redis.Nil) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, l.conn.fail("event log snapshot", err)
	}
	seqText, snap, ok := bytes.Cut(v, []byte{'|'})
	seq, err := strconv.ParseInt(string(seqText), 10, 64)
	if !ok || err != nil {
		return 0, nil, false, errors.New("store: event log snapshot: malformed record")
	}
	return seq, snap, true, nil
}

func (l redisEventLog) SaveSnapshot(ctx context.Context, agent, taskID string, seq int64, snapshot []byte) (bool, error) {
	return l.conn.acted("event log save snapshot", l.snapsh.Run(ctx, l.conn.client, l.keys(agent, taskID)[2:], seq, snapshot, l.o.Retention.Milliseconds()))
}

// recordKeys are the keys of eventRecordLua: the log's three, the task's
// push configs and its live mark, all under the task's hash tag.
func (l redisEventLog) recordKeys(agent, taskID string) []string {
	ref := Ref{Kind: RefTask, ID: taskID}
	k := l.conn.keys
	return append(l.keys(agent, taskID), k.refTagged(pushConfigFamily, agent, ref), k.refTagged(eventLiveFamily, agent, ref))
}

func (l redisEventLog) Record(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration) (Recorded, error) {
	res, err := runRelayed(ctx, l.conn, l.record, l.recordKeys(agent, taskID), l.recordArgs(id, payload, at, live)...).Slice()
	if err != nil {
		return Recorded{}, l.conn.fail("event log record", err)
	}
	return l.recorded(agent, taskID, res)
}

// recordArgs are the ARGV of eventRecordLua.
func (l redisEventLog) recordArgs(id string, payload []byte, at time.Time, live time.Duration) []any {
	var liveMS int64
	if live > 0 {
		liveMS = liveMillis(live)
	}
	return []any{id, at.UnixNano(), payload, l.o.MaxEvents, l.o.Retention.Milliseconds(), liveMS}
}

// recorded reads the reply of eventRecordLua: {seq, added, config records}.
func (l redisEventLog) recorded(agent, taskID string, res []any) (Recorded, error) {
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
	raw := make([]string, 0, len(recs))
	for _, rec := range recs {
		v, _ := rec.(string)
		c, err := decodeStoredPushConfig(agent, taskID, []byte(v))
		if err != nil {
			return Recorded{}, fmt.Errorf("store: event log record: %w", err)
		}
		r.Configs = append(r.Configs, c)
		raw = append(raw, v)
	}
	sortPushConfigs(r.Configs)
	r.Digest = configsDigest(raw)
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
