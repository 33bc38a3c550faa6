package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// An event of a task with a push config costs two scripts one after the
// other: Record's, on the task's hash slot, which reads the configs, and
// the enqueue of the notification built from them, on the endpoint's
// bucket. Outside Cluster one script may touch both, and the relay knows
// the configs from the task's event before: RecordEnqueue logs the event
// and enqueues the notification built from those configs in one script,
// provided the configs are still the same (their digest, from the stored
// records, says so). When they are not, it enqueues nothing and returns
// them, and the caller enqueues as after Record. Either way the event is
// logged first, in the same atomic step.

// RecordEnqueuer logs an event and enqueues its notification in one step.
type RecordEnqueuer interface {
	// RecordEnqueue is Record and, in the same step, when the task's push
	// configs are still those digest names (Recorded.Digest of an earlier
	// Record), EnqueueClaim of d for holder ("": EnqueueAll of d alone,
	// claiming nothing). Enqueued.Stale reports that they are not: nothing
	// was enqueued, and Recorded.Configs are the configs as they are now.
	RecordEnqueue(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration, digest string, d Delivery, holder string, ttl time.Duration) (Recorded, Enqueued, error)
}

// Enqueued is what RecordEnqueue did with the notification.
type Enqueued struct {
	// Stale: the configs changed, nothing was enqueued.
	Stale bool
	// Queued, Claimed, Head and Attempts are EnqueueClaim's results; Err
	// its refusal (ErrEndpointDisabled, ErrQueueFull), the event being
	// logged regardless.
	Queued, Claimed bool
	Head            Delivery
	Attempts        []Attempt
	Err             error
}

// RecordEnqueuerOf returns l's RecordEnqueue with l's bounds, and false
// when l's store has none (the embedded store, Redis Cluster).
func RecordEnqueuerOf(l EventLog) (RecordEnqueuer, bool) {
	c, ok := l.(checkedEventLog)
	if !ok {
		return nil, false
	}
	r, ok := c.b.(redisEventLog)
	if !ok || r.conn.cluster != nil {
		return nil, false
	}
	return checkedRecordEnqueuer{c.gate, r}, true
}

// configsDigest names a task's stored config records, in any order.
func configsDigest(records []string) string {
	slices.Sort(records)
	h := sha1.New()
	for _, r := range records {
		h.Write([]byte(strconv.Itoa(len(r)) + ":" + r))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// eventRecordEnqueueLua: KEYS[1..9] and ARGV[1..13] are those of
// deliveryEnqueueClaimScript (ARGV[12] "" claims nothing), KEYS[10..14]
// and ARGV[14..19] those of eventRecordLua, ARGV[20] the digest of the
// configs the delivery was built from. Reply: {seq, added, config records}
// when the configs are not those, else {seq, added, false, outcome[,
// head]}.
var eventRecordEnqueueScript = redis.NewScript(`
local RK = {KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14]}
local RA = {ARGV[14], ARGV[15], ARGV[16], ARGV[17], ARGV[18], ARGV[19]}
` + strings.NewReplacer("KEYS[", "RK[", "ARGV[", "RA[").Replace(eventAppendFn) +
	deliveryPrelude + deliveryClaim + deliveryHeadReply + deliveryEnqueueFn + `
local r = append_event()
if tonumber(RA[6]) > 0 then
  redis.call('SET', RK[5], '1', 'PX', RA[6])
end
local vals = redis.call('HVALS', RK[4])
local sorted = {}
for i, v in ipairs(vals) do
  sorted[i] = v
end
table.sort(sorted)
local parts = {}
for i, v in ipairs(sorted) do
  parts[i] = #v .. ':' .. v
end
if redis.sha1hex(table.concat(parts)) ~= ARGV[20] then
  return {r[1], r[2], vals}
end
local out = enqueue()
if out == 'ok' and ARGV[12] ~= '' and claim_as(ARGV[12], ARGV[13]) then
  return {r[1], r[2], false, out, with_attempts(fresh or head())}
end
return {r[1], r[2], false, out}
`)

func (l redisEventLog) RecordEnqueue(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration, digest string, d Delivery, holder string, ttl time.Duration) (Recorded, Enqueued, error) {
	dl := redisDelivery{conn: l.conn}
	keys, args := dl.enqueueCall(d, time.Now())
	keys = append(keys, l.recordKeys(agent, taskID)...)
	args = append(args, holder, millis(ttl))
	args = append(args, l.recordArgs(id, payload, at, live)...)
	args = append(args, digest)
	res, err := runRelayed(ctx, l.conn, eventRecordEnqueueScript, keys, args...).Slice()
	if err != nil {
		return Recorded{}, Enqueued{}, l.conn.fail("event log record and enqueue", err)
	}
	if len(res) == 3 {
		rec, err := l.recorded(agent, taskID, res)
		return rec, Enqueued{Stale: true}, err
	}
	var seq, added int64
	var out string
	if len(res) == 4 || len(res) == 5 {
		seq, _ = res[0].(int64)
		added, _ = res[1].(int64)
		out, _ = res[3].(string)
	}
	if seq < 1 || !slices.Contains(enqueueOutcomes, out) {
		return Recorded{}, Enqueued{}, fmt.Errorf("store: event log record and enqueue: endpoint %.64q: unexpected script reply", d.Endpoint)
	}
	// The configs are those the caller named.
	rec := Recorded{Seq: seq, Added: added == 1, Digest: digest}
	var e Enqueued
	if e.Queued, e.Err = enqueueResult(d, out, nil); e.Err != nil || len(res) == 4 {
		return rec, e, nil
	}
	head, atts, found, err := headReply(dl.endpointKeys(d.Endpoint), d.Endpoint, "event log record and enqueue", res[4])
	if err == nil && !found {
		err = fmt.Errorf("store: event log record and enqueue: endpoint %.64q: claimed without a head", d.Endpoint)
	}
	if err != nil {
		return rec, Enqueued{}, err
	}
	e.Claimed, e.Head, e.Attempts = true, head, atts
	return rec, e, nil
}

// checkedRecordEnqueuer checks what checkedEventLog.Record and
// checkedDelivery.EnqueueClaim check.
type checkedRecordEnqueuer struct {
	gate *gate
	b    redisEventLog
}

func (c checkedRecordEnqueuer) RecordEnqueue(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration, digest string, d Delivery, holder string, ttl time.Duration) (Recorded, Enqueued, error) {
	at, err := checkAppend(agent, taskID, id, payload, at)
	claim := error(nil)
	if holder != "" {
		claim = checkClaim(d.Endpoint, holder, ttl)
	}
	if err := c.gate.check(err, checkLive(live), checkDelivery(&d), claim); err != nil {
		return Recorded{}, Enqueued{}, err
	}
	return c.b.RecordEnqueue(ctx, agent, taskID, id, payload, at, live, digest, d, holder, ttl)
}
