package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Delivery keys. Endpoints are spread over deliveryBuckets hash-tag buckets
// (FNV-1a of the endpoint, modulo 64); everything about one endpoint lives
// in its bucket's slot, beside the bucket's own registry, so every step is
// one atomic script on one slot, on Cluster too. With <b> the bucket number
// and <ep>, <id> escaped as keyspace describes:
//
//	<prefix>:dq:{<b>}:q:<ep>        stream, the endpoint's queue; each entry
//	                                has the fields id, task, enq (Enqueued in
//	                                Unix ns), pl (payload), in that order
//	                                (see deliveryPrelude)
//	<prefix>:dq:{<b>}:ids:<ep>      sorted set of delivery ids: score +inf
//	                                while queued, else when it left the queue
//	                                (Unix ms); makes enqueues idempotent
//	<prefix>:dq:{<b>}:att:<ep>      hash, id -> attempt log, one JSON object
//	                                per line, newest MaxDeliveryAttempts
//	<prefix>:dq:{<b>}:lease:<ep>    string, the holder, expiring with the lease
//	<prefix>:dq:{<b>}:off:<ep>      string, why the endpoint is disabled,
//	                                expiring after DisabledEndpointTTL
//	<prefix>:dq:{<b>}:due           sorted set, endpoints with queued
//	                                deliveries, score = when due (Unix ms)
//	<prefix>:dq:{<b>}:heads         sorted set, the same endpoints, score =
//	                                Enqueued of their head (Unix ms)
//	<prefix>:dq:{<b>}:n             deliveries queued in the bucket
//	<prefix>:dq:{<b>}:dead          sorted set of dead letters, all score 0,
//	                                member "<ms, 13 digits>|<ep>|<id>", so
//	                                lexical order is time order
//	<prefix>:dq:{<b>}:dl:<ep>:<id>  hash, one dead letter: v ("1"), id, task,
//	                                enq, pl, at (Unix ns), why, att (the
//	                                attempt log), m (its member in dead)
//
// A queue's stream is deleted when it empties, and its id set then expires
// after DeliveryIDRetention; markers of ids that left the queue are trimmed
// after DeliveryIDRetention by every write that removes deliveries (an
// enqueue takes an older marker for no repeat), while queued ids (+inf)
// never are. Claiming an endpoint pushes its due score to the end of the lease
// (a visibility timeout), so other workers do not see it while it is being
// worked on, and see it again should the worker die.
//
// Durability: EnqueueAll returns only after Redis applied the script, and
// deliveries leave the queue only by AckHeads, DeadLetter or DisableEndpoint, so
// "nothing acknowledged is lost" holds exactly as far as Redis keeps what it
// acknowledged. That needs appendonly yes. With appendfsync always, Redis
// writes and fsyncs the AOF before it replies, and nothing acknowledged is
// lost to a crash of Redis or of its machine. With appendfsync everysec (the
// usual production setting) Redis writes the AOF before replying too, so a
// crash or kill of the redis-server process alone loses nothing, except
// while a slow disk keeps the background fsync busy: Redis then postpones
// the write for up to 2 s, and a crash of the process or machine in that
// window loses up to about 2 s of acknowledged writes (as does losing the
// machine at any time). Deployments that cannot accept that window use
// appendfsync always. Replication is asynchronous and this store issues no
// WAIT, so a failover to a replica can lose the writes it had not received.
// RDB snapshots alone lose everything since the last snapshot.
// maxmemory-policy must be noeviction: an evicted stream is a lost queue.
//
// Endpoints, Backlog and DeadLetters read every bucket: one pipeline of 64
// commands (or 128), which go-redis splits by node on Cluster.
const deliveryFamily = "dq"

// deliveryDeadFormat is the v field of a dead letter.
const deliveryDeadFormat = "1"

// Bounds on the scripts' clean-up work, and the dead letters one bucket
// keeps (64 buckets: 640,000 in all).
const (
	deliveryDisableBatch    = 500
	maxDeadLettersPerBucket = 10_000
)

// The KEYS of every delivery script, in this order, and the ARGV they share.
const (
	dkQueue = iota
	dkIDs
	dkAttempts
	dkDue
	dkHeads
	dkCount
	dkDead
	dkOff
	dkLease
	dkCommon // number of the keys above
)

// deliveryPrelude is shared by the scripts. KEYS are the keys above;
// ARGV[1] is the escaped endpoint (its member in due and heads), ARGV[2]
// now in Unix ms, ARGV[3] now in Unix ns, ARGV[4] the prefix of the
// bucket's dead letter keys ("<prefix>:dq:{<b>}:dl:"), ARGV[5] now in ms
// with 13 digits.
//
// A queue entry, as XRANGE returns it, is {stream id, fields}, and fields
// is the flat list XADD wrote: 'id', id, 'task', task, 'enq', Enqueued ns,
// 'pl', payload. Every XADD writes them in that order (add_entry), so the
// scripts read a value at its fixed place, named by the F_ constants: the
// field map decodeQueueEntry reads by name.
const deliveryPrelude = luaEscape + `
local F_ID, F_TASK, F_ENQ, F_PL = 2, 4, 6, 8
local function add_entry(id, task, enq, pl)
  return redis.call('XADD', KEYS[1], '*', 'id', id, 'task', task, 'enq', enq, 'pl', pl)
end
local function head()
  return redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
end
local function is_head(h, id)
  return h and h[2][F_ID - 1] == 'id' and h[2][F_ID] == id
end
local function not_head(id)
  if redis.call('ZSCORE', KEYS[2], id) == 'inf' then
    return 'nothead'
  end
  return 'gone'
end
local function ms_of(ns)
  return string.format('%.0f', math.floor(tonumber(ns) / 1000000))
end
local function trim_ids(retention)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.0f', tonumber(ARGV[2]) - tonumber(retention)))
end
local function added(id, enq_ns, len)
  redis.call('ZADD', KEYS[2], 'inf', id)
  redis.call('INCR', KEYS[6])
  if len == 0 then
    -- Only a queue that emptied has its ids expiring.
    redis.call('PERSIST', KEYS[2])
    redis.call('ZADD', KEYS[5], ms_of(enq_ns), ARGV[1])
  end
  redis.call('ZADD', KEYS[4], 'NX', ARGV[2], ARGV[1])
end
-- removed_heads removes the queue's first entries, sids, whose delivery
-- ids are ids, with one command of each kind. nxt is the entry after them,
-- false when there is none, nil when the caller has not read it.
local function removed_heads(sids, ids, retention, nxt)
  redis.call('XDEL', KEYS[1], unpack(sids))
  local marks = {}
  for _, id in ipairs(ids) do
    marks[#marks + 1] = ARGV[2]
    marks[#marks + 1] = id
  end
  redis.call('ZADD', KEYS[2], unpack(marks))
  redis.call('DECRBY', KEYS[6], #sids)
  if nxt == nil then
    nxt = head()
  end
  if nxt then
    redis.call('HDEL', KEYS[3], unpack(ids))
    redis.call('ZADD', KEYS[5], ms_of(nxt[2][F_ENQ]), ARGV[1])
  else
    -- Attempt logs are kept for queued deliveries only: none is left.
    redis.call('DEL', KEYS[1], KEYS[3])
    redis.call('ZREM', KEYS[4], ARGV[1])
    redis.call('ZREM', KEYS[5], ARGV[1])
    redis.call('PEXPIRE', KEYS[2], retention)
  end
end
local function removed(h, retention)
  removed_heads({h[1]}, {h[2][F_ID]}, retention, nil)
end
local function bury(h, reason, attempts)
  local f = h[2]
  local key = ARGV[4] .. ARGV[1] .. ':' .. escape(f[F_ID])
  local old = redis.call('HGET', key, 'm')
  if old then
    redis.call('ZREM', KEYS[7], old)
    redis.call('DEL', key)
  end
  local member = ARGV[5] .. '|' .. ARGV[1] .. '|' .. escape(f[F_ID])
  redis.call('HSET', key, 'v', '` + deliveryDeadFormat + `', 'id', f[F_ID], 'task', f[F_TASK], 'enq', f[F_ENQ], 'pl', f[F_PL],
    'at', ARGV[3], 'why', reason, 'att', attempts, 'm', member)
  redis.call('ZADD', KEYS[7], 0, member)
end
local function trim_dead(cutoff, cap)
  for _ = 1, 100 do
    local first = redis.call('ZRANGE', KEYS[7], 0, 0)[1]
    if not first then
      return
    end
    if first >= cutoff and redis.call('ZCARD', KEYS[7]) <= tonumber(cap) then
      return
    end
    redis.call('ZREM', KEYS[7], first)
    local ep, eid = string.match(first, '^%d+|([^|]*)|(.*)$')
    if ep then
      redis.call('DEL', ARGV[4] .. ep .. ':' .. eid)
    end
  end
end
`

// enqueue appends with ARGV[6] id, task, Enqueued ns, payload, max
// length, id retention ms; it returns the outcome. An id that left the
// queue longer ago than the retention is not a repeat: the writes that
// remove deliveries trim such ids. fresh is the entry it added to an empty
// queue, which is then its head.
const deliveryEnqueueFn = `
local fresh = false
local function enqueue()
  if redis.call('EXISTS', KEYS[8]) == 1 then
    return 'disabled'
  end
  local left = redis.call('ZSCORE', KEYS[2], ARGV[6])
  if left and (left == 'inf' or tonumber(left) >= tonumber(ARGV[2]) - tonumber(ARGV[11])) then
    return 'dup'
  end
  local len = redis.call('XLEN', KEYS[1])
  if len >= tonumber(ARGV[10]) then
    return 'full'
  end
  local sid = add_entry(ARGV[6], ARGV[7], ARGV[8], ARGV[9])
  if len == 0 then
    fresh = {sid, {'id', ARGV[6], 'task', ARGV[7], 'enq', ARGV[8], 'pl', ARGV[9]}}
  end
  added(ARGV[6], ARGV[8], len)
  return 'ok'
end
`

// EnqueueAll's script, run once per delivery: enqueue's arguments. Reply: the outcome.
const deliveryEnqueueLua = deliveryPrelude + deliveryEnqueueFn + `
return enqueue()
`

// deliveryHeadReply returns the head h with its attempt log, or nil for
// an empty queue: {entry id, fields, log or nil}.
const deliveryHeadReply = `
local function with_attempts(h)
  if not h then
    return false
  end
  return {h[1], h[2], redis.call('HGET', KEYS[3], h[2][F_ID])}
end
`

// Removes the heads ARGV[10..] in turn (id retention ARGV[6] ms), then
// reads up to ARGV[8] heads with their attempt logs, stopping before one
// that would take the payload read past ARGV[9] bytes; an id acknowledged
// before is skipped. When the queue is empty, the lease of the holder
// ARGV[7] ("" for none) is given up, as ReleaseEndpoint would (the queue
// left due and heads when it emptied). Reply: 'nothead', or the heads.
//
// It runs for nearly every delivery, so it reads the queue once, the heads
// to remove and those after them together, and removes all the heads at
// once. An id met twice is gone the second time, as it would be after its
// own removal.
const deliveryAckHeadsLua = deliveryPrelude + `
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', #ARGV - 9 + tonumber(ARGV[8]))
local at, sids, ids, acked = 1, {}, {}, {}
local refused = false
for i = 10, #ARGV do
  local id = ARGV[i]
  if is_head(entries[at], id) then
    sids[#sids + 1] = entries[at][1]
    ids[#ids + 1] = id
    acked[id] = true
    at = at + 1
  elseif not acked[id] and not_head(id) == 'nothead' then
    refused = true
    break
  end
end
if #sids > 0 then
  removed_heads(sids, ids, ARGV[6], entries[at] or false)
end
if refused then
  return 'nothead'
end
trim_ids(ARGV[6])
local heads, size = {}, 0
for i = at, math.min(#entries, at + tonumber(ARGV[8]) - 1) do
  local h = entries[i]
  size = size + #(h[2][F_PL] or '')
  if #heads > 0 and size > tonumber(ARGV[9]) then
    break
  end
  heads[#heads + 1] = h
end
local out = {}
if #heads > 0 then
  local fids = {}
  for i, h in ipairs(heads) do
    fids[i] = h[2][F_ID]
  end
  local logs = redis.call('HMGET', KEYS[3], unpack(fids))
  for i, h in ipairs(heads) do
    out[i] = {h[1], h[2], logs[i]}
  end
elseif ARGV[7] ~= '' and redis.call('GET', KEYS[9]) == ARGV[7] then
  redis.call('DEL', KEYS[9])
end
return out
`

// ARGV[6] id, id retention ms, reason, attempt log, dead letter cutoff
// (13-digit ms), dead letter cap.
const deliveryDeadLetterLua = deliveryPrelude + `
local h = head()
if not is_head(h, ARGV[6]) then
  return not_head(ARGV[6])
end
bury(h, ARGV[8], ARGV[9])
removed(h, ARGV[7])
trim_ids(ARGV[7])
trim_dead(ARGV[10], ARGV[11])
return 'ok'
`

// ARGV[6] reason, id retention ms, dead letter cutoff, dead letter cap,
// batch, disabled ttl ms. Reply: how many deliveries it moved.
const deliveryDisableLua = deliveryPrelude + `
redis.call('SET', KEYS[8], ARGV[6], 'PX', ARGV[11])
local moved = 0
while moved < tonumber(ARGV[10]) do
  local h = head()
  if not h then
    break
  end
  bury(h, ARGV[6], redis.call('HGET', KEYS[3], h[2][F_ID]) or '')
  removed(h, ARGV[7])
  moved = moved + 1
end
trim_ids(ARGV[7])
trim_dead(ARGV[8], ARGV[9])
return moved
`

// KEYS[10] the dead letter; ARGV[6] max length.
const deliveryRedeliverLua = deliveryPrelude + `
local r = redis.call('HMGET', KEYS[10], 'id', 'task', 'enq', 'pl', 'm')
if not r[1] then
  return 'missing'
end
if redis.call('ZSCORE', KEYS[2], r[1]) ~= 'inf' then
  local len = redis.call('XLEN', KEYS[1])
  if len >= tonumber(ARGV[6]) then
    return 'full'
  end
  add_entry(r[1], r[2], r[3], r[4])
  redis.call('HDEL', KEYS[3], r[1])
  added(r[1], r[3], len)
end
redis.call('DEL', KEYS[8])
redis.call('DEL', KEYS[10])
if r[5] then
  redis.call('ZREM', KEYS[7], r[5])
end
return 'ok'
`

// ARGV[6] id, attempt line, log cap.
const deliveryRecordLua = deliveryPrelude + `
if redis.call('ZSCORE', KEYS[2], ARGV[6]) ~= 'inf' then
  return 'gone'
end
local v = redis.call('HGET', KEYS[3], ARGV[6])
if v then
  v = v .. '\n' .. ARGV[7]
else
  v = ARGV[7]
end
local n = 1
for _ in string.gmatch(v, '\n') do
  n = n + 1
end
local pos = 1
while n > tonumber(ARGV[8]) do
  pos = string.find(v, '\n', pos, true) + 1
  n = n - 1
end
if pos > 1 then
  v = string.sub(v, pos)
end
redis.call('HSET', KEYS[3], ARGV[6], v)
return 'ok'
`

// deliveryClaim: claim_as claims the lease for holder for ttl ms; true if
// the holder holds it now.
const deliveryClaim = `
local function claim_as(holder, ttl)
  if not redis.call('SET', KEYS[9], holder, 'NX', 'PX', ttl) then
    if redis.call('GET', KEYS[9]) ~= holder then
      return false
    end
    redis.call('PEXPIRE', KEYS[9], ttl)
  end
  redis.call('ZADD', KEYS[4], 'XX', 'GT', string.format('%.0f', tonumber(ARGV[2]) + tonumber(ttl)), ARGV[1])
  return true
end
`

// ARGV[6] holder, ttl ms. Reply: 1 if holder holds the lease now.
const deliveryClaimLua = deliveryPrelude + deliveryClaim + `
if claim_as(ARGV[6], ARGV[7]) then
  return 1
end
return 0
`

// Claim as deliveryClaimLua does, then the head with its attempt log.
// Reply: 0, or {1, head}.
const deliveryClaimHeadLua = deliveryPrelude + deliveryClaim + deliveryHeadReply + `
if not claim_as(ARGV[6], ARGV[7]) then
  return 0
end
return {1, with_attempts(head())}
`

// ARGV[6] holder, next ms. Reply: 1 if holder held the lease.
const deliveryReleaseLua = deliveryPrelude + `
if redis.call('GET', KEYS[9]) ~= ARGV[6] then
  return 0
end
redis.call('DEL', KEYS[9])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('ZADD', KEYS[4], ARGV[7], ARGV[1])
else
  redis.call('ZREM', KEYS[4], ARGV[1])
  redis.call('ZREM', KEYS[5], ARGV[1])
end
return 1
`

type redisDelivery struct {
	conn                                                      *redisConn
	enqueue, dead, disable, redeliver, record, claim, release *redis.Script
	ackHeads, claimHead                                       *redis.Script
}

var _ DeliveryStore = (*redisDelivery)(nil)

func newRedisDelivery(conn *redisConn) *redisDelivery {
	return &redisDelivery{
		conn:      conn,
		enqueue:   redis.NewScript(deliveryEnqueueLua),
		dead:      redis.NewScript(deliveryDeadLetterLua),
		disable:   redis.NewScript(deliveryDisableLua),
		redeliver: redis.NewScript(deliveryRedeliverLua),
		record:    redis.NewScript(deliveryRecordLua),
		claim:     redis.NewScript(deliveryClaimLua),
		release:   redis.NewScript(deliveryReleaseLua),
		ackHeads:  redis.NewScript(deliveryAckHeadsLua),
		claimHead: redis.NewScript(deliveryClaimHeadLua),
	}
}

// bucketBase returns <prefix>:dq:{<b>}.
func (r *redisDelivery) bucketBase(b int) string {
	return r.conn.keys.prefix + ":" + deliveryFamily + ":{" + strconv.Itoa(b) + "}"
}

// endpointKeys holds the keys and common arguments of one endpoint.
type endpointKeys struct {
	base, member string
	keys         []string
}

func (r *redisDelivery) endpointKeys(endpoint string) endpointKeys {
	base := r.bucketBase(deliveryBucket(endpoint))
	e := escape(endpoint)
	keys := make([]string, dkCommon, dkCommon+1)
	keys[dkQueue] = base + ":q:" + e
	keys[dkIDs] = base + ":ids:" + e
	keys[dkAttempts] = base + ":att:" + e
	keys[dkDue] = base + ":due"
	keys[dkHeads] = base + ":heads"
	keys[dkCount] = base + ":n"
	keys[dkDead] = base + ":dead"
	keys[dkOff] = base + ":off:" + e
	keys[dkLease] = base + ":lease:" + e
	return endpointKeys{base: base, member: e, keys: keys}
}

func (k endpointKeys) deadKey(id string) string {
	return k.base + ":dl:" + k.member + ":" + escape(id)
}

// args returns the common ARGV for a script run at now, followed by more.
func (k endpointKeys) args(now time.Time, more ...any) []any {
	ms := now.UnixMilli()
	return append([]any{k.member, ms, now.UnixNano(), k.base + ":dl:", fmt.Sprintf("%013d", ms)}, more...)
}

// deadCutoff is the member below which dead letters are past retention.
func deadCutoff(now time.Time) string {
	return fmt.Sprintf("%013d", max(now.Add(-DeadLetterRetention).UnixMilli(), 0))
}

// runOutcome runs a script whose reply is one of outcomes.
func (r *redisDelivery) runOutcome(ctx context.Context, op string, s *redis.Script, keys []string, args []any, outcomes ...string) (string, error) {
	return r.outcome(op, runRelayed(ctx, r.conn, s, keys, args...), keys, outcomes)
}

// outcome reads the reply of a script run with keys, one of outcomes.
func (r *redisDelivery) outcome(op string, cmd *redis.Cmd, keys []string, outcomes []string) (string, error) {
	v, err := cmd.Text()
	if err != nil {
		return "", r.conn.fail(op, err)
	}
	if !slices.Contains(outcomes, v) {
		return "", fmt.Errorf("store: %s: key %q: unexpected script reply %.32q", op, keys[dkQueue], v)
	}
	return v, nil
}

// decodeQueueEntry reads a stream entry the enqueue script wrote.
func decodeQueueEntry(endpoint string, m redis.XMessage) (Delivery, error) {
	id, _ := m.Values["id"].(string)
	task, hasTask := m.Values["task"].(string)
	enq, _ := m.Values["enq"].(string)
	pl, hasPayload := m.Values["pl"].(string)
	ns, err := strconv.ParseInt(enq, 10, 64)
	if err != nil || id == "" || !hasTask || !hasPayload {
		return Delivery{}, fmt.Errorf("queue entry %s is malformed", m.ID)
	}
	return Delivery{ID: id, Endpoint: endpoint, TaskID: task, Payload: []byte(pl), Enqueued: unixNanoTime(ns)}, nil
}

func (r *redisDelivery) DeadLetter(ctx context.Context, endpoint, id, reason string, attempts []Attempt) error {
	now := time.Now()
	k := r.endpointKeys(endpoint)
	out, err := r.runOutcome(ctx, "delivery dead letter", r.dead, k.keys,
		k.args(now, id, millis(DeliveryIDRetention), reason, encodeAttemptLog(attempts), deadCutoff(now), maxDeadLettersPerBucket),
		"ok", "gone", "nothead")
	if err != nil {
		return err
	}
	if out == "nothead" {
		return fmt.Errorf("%w: dead letter of %.64q", ErrNotHead, id)
	}
	return nil
}

func (r *redisDelivery) DisableEndpoint(ctx context.Context, endpoint, reason string) (int, error) {
	k := r.endpointKeys(endpoint)
	total := 0
	for {
		now := time.Now()
		n, err := r.disable.Run(ctx, r.conn.client, k.keys,
			k.args(now, reason, millis(DeliveryIDRetention), deadCutoff(now), maxDeadLettersPerBucket, deliveryDisableBatch, millis(DisabledEndpointTTL))...).Int()
		if err != nil {
			return total, r.conn.fail("delivery disable", err)
		}
		total += n
		if n < deliveryDisableBatch {
			return total, nil
		}
	}
}

func (r *redisDelivery) AckHeads(ctx context.Context, endpoint string, ids []string, holder string, limit int) ([]Queued, error) {
	k := r.endpointKeys(endpoint)
	args := k.args(time.Now(), millis(DeliveryIDRetention), holder, limit, MaxHeadBytesPerRead)
	for _, id := range ids {
		args = append(args, id)
	}
	// Nobody's latency waits on what was delivered already: the
	// acknowledgement rides with the next round trip.
	v, err := rideRelayed(ctx, r.conn, r.ackHeads, k.keys, args...).Result()
	if err != nil {
		return nil, r.conn.fail("delivery ack", err)
	}
	if s, ok := v.(string); ok && s == "nothead" {
		return nil, fmt.Errorf("%w: ack of %.64q", ErrNotHead, ids)
	}
	reply, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("store: delivery ack: key %q: unexpected script reply", k.keys[dkQueue])
	}
	next := make([]Queued, len(reply))
	for i, h := range reply {
		if next[i].Delivery, next[i].Attempts, _, err = headReply(k, endpoint, "delivery ack", h); err != nil {
			return nil, err
		}
	}
	return next, nil
}

func (r *redisDelivery) ClaimHead(ctx context.Context, endpoint, holder string, ttl time.Duration) (bool, Delivery, []Attempt, bool, error) {
	k := r.endpointKeys(endpoint)
	v, err := runRelayed(ctx, r.conn, r.claimHead, k.keys, k.args(time.Now(), holder, millis(ttl))...).Result()
	if err != nil {
		return false, Delivery{}, nil, false, r.conn.fail("delivery claim", err)
	}
	if n, ok := v.(int64); ok && n == 0 {
		return false, Delivery{}, nil, false, nil
	}
	reply, ok := v.([]any)
	if !ok || len(reply) != 2 {
		return false, Delivery{}, nil, false, fmt.Errorf("store: delivery claim: key %q: unexpected script reply", k.keys[dkQueue])
	}
	d, atts, found, err := headReply(k, endpoint, "delivery claim", reply[1])
	return err == nil, d, atts, found, err
}

// headReply reads what deliveryHeadReply returns; nil is an empty queue.
func headReply(k endpointKeys, endpoint, op string, v any) (Delivery, []Attempt, bool, error) {
	if v == nil {
		return Delivery{}, nil, false, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("store: %s: key %q: %s", op, k.keys[dkQueue], why)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) != 3 {
		return Delivery{}, nil, false, bad("unexpected script reply")
	}
	id, _ := reply[0].(string)
	fields, _ := reply[1].([]any)
	if id == "" || len(fields)%2 != 0 {
		return Delivery{}, nil, false, bad("malformed queue entry")
	}
	m := redis.XMessage{ID: id, Values: make(map[string]any, len(fields)/2)}
	for i := 0; i < len(fields); i += 2 {
		name, _ := fields[i].(string)
		m.Values[name] = fields[i+1]
	}
	d, err := decodeQueueEntry(endpoint, m)
	if err != nil {
		return Delivery{}, nil, false, bad(err.Error())
	}
	log, _ := reply[2].(string)
	atts, err := decodeAttemptLog(log)
	if err != nil {
		return Delivery{}, nil, false, bad(err.Error())
	}
	return d, atts, true, nil
}

func (r *redisDelivery) RecordAttempt(ctx context.Context, endpoint, id string, a Attempt) error {
	k := r.endpointKeys(endpoint)
	out, err := r.runOutcome(ctx, "delivery record attempt", r.record, k.keys, k.args(time.Now(), id, encodeAttemptLog([]Attempt{a}), MaxDeliveryAttempts), "ok", "gone")
	if err != nil {
		return err
	}
	if out == "gone" {
		return fmt.Errorf("%w: delivery %.64q is not queued", ErrNotFound, id)
	}
	return nil
}

func (r *redisDelivery) ClaimEndpoint(ctx context.Context, endpoint, holder string, ttl time.Duration) (bool, error) {
	k := r.endpointKeys(endpoint)
	return r.conn.acted("delivery claim", runRelayed(ctx, r.conn, r.claim, k.keys, k.args(time.Now(), holder, millis(ttl))...))
}

func (r *redisDelivery) ReleaseEndpoint(ctx context.Context, endpoint, holder string, next time.Time) error {
	k := r.endpointKeys(endpoint)
	return r.conn.fail("delivery release", runRelayed(ctx, r.conn, r.release, k.keys, k.args(time.Now(), holder, next.UnixMilli())...).Err())
}

func (r *redisDelivery) Endpoints(ctx context.Context, limit int) ([]string, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	due, err := pipedEach[redis.Z](ctx, r.conn, "delivery endpoints", deliveryBuckets, func(pipe redis.Pipeliner, b int) *redis.ZSliceCmd {
		return pipe.ZRangeByScoreWithScores(ctx, r.bucketBase(b)+":due", &redis.ZRangeBy{Min: "-inf", Max: now, Count: int64(limit)})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(due, func(a, b redis.Z) int { return cmp.Compare(a.Score, b.Score) })
	out := make([]string, 0, min(limit, len(due)))
	for _, z := range due[:min(limit, len(due))] {
		m, _ := z.Member.(string)
		ep, err := unescape(m)
		if err != nil || ep == "" {
			return nil, fmt.Errorf("store: delivery endpoints: registry member %.64q is not an escaped endpoint", m)
		}
		out = append(out, ep)
	}
	return out, nil
}

func (r *redisDelivery) Depth(ctx context.Context, endpoint string) (int, time.Time, error) {
	k := r.endpointKeys(endpoint)
	pipe := r.conn.client.Pipeline()
	n := pipe.XLen(ctx, k.keys[dkQueue])
	first := pipe.XRangeN(ctx, k.keys[dkQueue], "-", "+", 1)
	_, _ = pipe.Exec(ctx)
	if err := cmp.Or(n.Err(), first.Err()); err != nil {
		return 0, time.Time{}, r.conn.fail("delivery depth", err)
	}
	if len(first.Val()) == 0 {
		return int(n.Val()), time.Time{}, nil
	}
	d, err := decodeQueueEntry(endpoint, first.Val()[0])
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: delivery depth: key %q: %w", k.keys[dkQueue], err)
	}
	return int(n.Val()), d.Enqueued, nil
}

func (r *redisDelivery) Backlog(ctx context.Context) (int, time.Time, error) {
	counts := make([]*redis.StringCmd, deliveryBuckets)
	heads := make([]*redis.ZSliceCmd, deliveryBuckets)
	pipe := r.conn.client.Pipeline()
	for b := range deliveryBuckets {
		base := r.bucketBase(b)
		counts[b] = pipe.Get(ctx, base+":n")
		heads[b] = pipe.ZRangeWithScores(ctx, base+":heads", 0, 0)
	}
	_, _ = pipe.Exec(ctx)
	total := 0
	oldest := int64(-1)
	for b := range deliveryBuckets {
		n, err := counts[b].Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			if errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) {
				return 0, time.Time{}, fmt.Errorf("store: delivery backlog: key %q is not a count", r.bucketBase(b)+":n")
			}
			return 0, time.Time{}, r.conn.fail("delivery backlog", err)
		}
		total += max(n, 0)
		zs, err := heads[b].Result()
		if err != nil {
			return 0, time.Time{}, r.conn.fail("delivery backlog", err)
		}
		if len(zs) > 0 && (oldest < 0 || int64(zs[0].Score) < oldest) {
			oldest = int64(zs[0].Score)
		}
	}
	if oldest < 0 {
		return total, time.Time{}, nil
	}
	return total, time.UnixMilli(oldest).UTC(), nil
}

func (r *redisDelivery) DeadLetters(ctx context.Context, cursor string, limit int) ([]DeadLetter, string, error) {
	after, err := decodeDeadCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	lo := "-"
	if after != "" {
		lo = "(" + after
	}
	members, err := pipedEach[string](ctx, r.conn, "delivery dead letters", deliveryBuckets, func(pipe redis.Pipeliner, b int) *redis.StringSliceCmd {
		return pipe.ZRangeByLex(ctx, r.bucketBase(b)+":dead", &redis.ZRangeBy{Min: lo, Max: "+", Count: int64(limit) + 1})
	})
	if err != nil {
		return nil, "", err
	}
	slices.Sort(members)
	next := ""
	if len(members) > limit {
		members = members[:limit]
		next = encodeCursor(members[limit-1])
	}
	endpoints, keys := make([]string, len(members)), make([]string, len(members))
	hashes := make([]*redis.MapStringStringCmd, len(members))
	pipe := r.conn.client.Pipeline()
	for i, m := range members {
		ep, id, err := parseDeadMember(m)
		if err != nil {
			return nil, "", fmt.Errorf("store: delivery dead letters: %w", err)
		}
		endpoints[i], keys[i] = ep, r.endpointKeys(ep).deadKey(id)
		hashes[i] = pipe.HGetAll(ctx, keys[i])
	}
	if len(members) > 0 {
		_, _ = pipe.Exec(ctx)
	}
	out := make([]DeadLetter, 0, len(members))
	for i, c := range hashes {
		dl, found, err := readHash(r.conn, "delivery dead letters", keys[i], c, func(h map[string]string) (DeadLetter, error) {
			return decodeDeadLetter(endpoints[i], h)
		})
		if err != nil {
			return nil, "", err
		}
		// A dead letter that is gone was redelivered since the index was read.
		if found {
			out = append(out, dl)
		}
	}
	return out, next, nil
}

func (r *redisDelivery) GetDeadLetter(ctx context.Context, endpoint, id string) (DeadLetter, bool, error) {
	key := r.endpointKeys(endpoint).deadKey(id)
	return readHash(r.conn, "delivery get dead letter", key, r.conn.client.HGetAll(ctx, key), func(h map[string]string) (DeadLetter, error) {
		return decodeDeadLetter(endpoint, h)
	})
}

func (r *redisDelivery) Redeliver(ctx context.Context, endpoint, id string) error {
	k := r.endpointKeys(endpoint)
	keys := append(k.keys, k.deadKey(id))
	out, err := r.runOutcome(ctx, "delivery redeliver", r.redeliver, keys, k.args(time.Now(), MaxQueueLength), "ok", "missing", "full")
	switch {
	case err != nil:
		return err
	case out == "missing":
		return fmt.Errorf("%w: no dead letter %.64q for endpoint %.64q", ErrNotFound, id, endpoint)
	case out == "full":
		return fmt.Errorf("%w: endpoint %.64q holds %d deliveries", ErrQueueFull, endpoint, MaxQueueLength)
	}
	return nil
}

// decodeDeadLetter reads a dead letter hash the scripts wrote.
func decodeDeadLetter(endpoint string, h map[string]string) (DeadLetter, error) {
	if v := h["v"]; v != deliveryDeadFormat {
		return DeadLetter{}, fmt.Errorf("dead letter has unknown format version %.8q", v)
	}
	enq, err1 := strconv.ParseInt(h["enq"], 10, 64)
	at, err2 := strconv.ParseInt(h["at"], 10, 64)
	if err := cmp.Or(err1, err2); err != nil || h["id"] == "" {
		return DeadLetter{}, errors.New("dead letter fields id, enq or at are malformed")
	}
	atts, err := decodeAttemptLog(h["att"])
	if err != nil {
		return DeadLetter{}, fmt.Errorf("dead letter attempt log: %w", err)
	}
	return DeadLetter{
		Delivery: Delivery{ID: h["id"], Endpoint: endpoint, TaskID: h["task"], Payload: []byte(h["pl"]), Enqueued: unixNanoTime(enq)},
		Attempts: atts,
		At:       unixNanoTime(at),
		Reason:   h["why"],
	}, nil
}

// attemptJSON is one line of an attempt log; times are Unix ns, 0 for none.
type attemptJSON struct {
	At      int64  `json:"at"`
	Status  int    `json:"st"`
	Latency int64  `json:"lat"`
	Err     string `json:"err,omitempty"`
	RetryAt int64  `json:"retry,omitempty"`
}

// encodeAttemptLog renders normalized attempts as the log the scripts keep:
// one JSON object per line.
func encodeAttemptLog(atts []Attempt) string {
	var b strings.Builder
	for i, a := range atts {
		// Marshal cannot fail on a struct of integers and strings.
		line, _ := json.Marshal(attemptJSON{At: timeUnixNano(a.At), Status: a.Status, Latency: int64(a.Latency), Err: a.Err, RetryAt: timeUnixNano(a.RetryAt)})
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(line)
	}
	return b.String()
}

func decodeAttemptLog(log string) ([]Attempt, error) {
	if log == "" {
		return nil, nil
	}
	var out []Attempt
	for line := range strings.SplitSeq(log, "\n") {
		var j attemptJSON
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			return nil, fmt.Errorf("attempt %d: %w", len(out), err)
		}
		out = append(out, Attempt{At: unixNanoTime(j.At), Status: j.Status, Latency: time.Duration(j.Latency), Err: j.Err, RetryAt: unixNanoTime(j.RetryAt)})
	}
	return out, nil
}

// enqueueOutcomes are the replies of deliveryEnqueueLua.
var enqueueOutcomes = []string{"ok", "dup", "disabled", "full"}

// enqueueCall is the keys and arguments of deliveryEnqueueLua for d,
// checked, at now.
func (r *redisDelivery) enqueueCall(d Delivery, now time.Time) ([]string, []any) {
	enq := d.Enqueued
	if enq.IsZero() {
		enq = now
	}
	k := r.endpointKeys(d.Endpoint)
	return k.keys, k.args(now, d.ID, d.TaskID, enq.UnixNano(), d.Payload, MaxQueueLength, millis(DeliveryIDRetention))
}

// enqueueResult is EnqueueAll's result for one delivery, for the script's reply out.
func enqueueResult(d Delivery, out string, err error) (bool, error) {
	switch {
	case err != nil:
		return false, err
	case out == "disabled":
		return false, fmt.Errorf("%w: %.64q", ErrEndpointDisabled, d.Endpoint)
	case out == "full":
		return false, fmt.Errorf("%w: endpoint %.64q holds %d deliveries", ErrQueueFull, d.Endpoint, MaxQueueLength)
	}
	return out == "ok", nil
}

// EnqueueAll shares a pipeline: one round trip (one per node on Cluster,
// where the endpoints' buckets may live on several).
func (r *redisDelivery) EnqueueAll(ctx context.Context, ds []Delivery) (queued []bool, errs []error) {
	queued, errs = make([]bool, len(ds)), make([]error, len(ds))
	now := time.Now()
	calls := make([]scriptCall, len(ds))
	for i := range ds {
		calls[i].keys, calls[i].args = r.enqueueCall(ds[i], now)
	}
	for i, cmd := range evalRelayed(ctx, r.conn, r.enqueue, calls) {
		out, err := r.outcome("delivery enqueue", cmd, calls[i].keys, enqueueOutcomes)
		queued[i], errs[i] = enqueueResult(ds[i], out, err)
	}
	return queued, errs
}

// Enqueue, then, when the delivery was added and the lease of the holder
// ARGV[12] for ARGV[13] ms can be had, the claim and the head as
// deliveryClaimHeadLua reads them. Reply: {outcome} or {'ok', head}.
var deliveryEnqueueClaimScript = redis.NewScript(deliveryPrelude + deliveryClaim + deliveryHeadReply + deliveryEnqueueFn + `
local out = enqueue()
if out == 'ok' and claim_as(ARGV[12], ARGV[13]) then
  return {out, with_attempts(fresh or head())}
end
return {out}
`)

// EnqueueClaim is one script run.
func (r *redisDelivery) EnqueueClaim(ctx context.Context, d Delivery, holder string, ttl time.Duration) (queued, claimed bool, head Delivery, atts []Attempt, err error) {
	keys, args := r.enqueueCall(d, time.Now())
	v, err := runRelayed(ctx, r.conn, deliveryEnqueueClaimScript, keys, append(args, holder, millis(ttl))...).Slice()
	if err != nil {
		return false, false, Delivery{}, nil, r.conn.fail("delivery enqueue", err)
	}
	var out string
	if len(v) > 0 {
		out, _ = v[0].(string)
	}
	if !slices.Contains(enqueueOutcomes, out) || len(v) > 2 {
		return false, false, Delivery{}, nil, fmt.Errorf("store: delivery enqueue: endpoint %.64q: unexpected script reply %.32q", d.Endpoint, out)
	}
	if queued, err = enqueueResult(d, out, nil); err != nil || len(v) == 1 {
		return queued, false, Delivery{}, nil, err
	}
	head, atts, found, err := headReply(r.endpointKeys(d.Endpoint), d.Endpoint, "delivery enqueue", v[1])
	if err == nil && !found {
		err = fmt.Errorf("store: delivery enqueue: endpoint %.64q: claimed without a head", d.Endpoint)
	}
	if err != nil {
		return queued, false, Delivery{}, nil, err
	}
	return queued, true, head, atts, nil
}
