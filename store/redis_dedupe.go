package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dedupe keys, one hash per (tenant, key):
//
//	<prefix>:dd:{<tenant>:<key>}
//	  st        "inflight" or "done"
//	  fp        fingerprint of the request
//	  h         holder token: of the current claim while in flight, of the
//	            claim that completed the record once done
//	  lease_ms  while in flight: when the lease ends, in Unix milliseconds
//	            of the Redis server's clock
//	  oc        while in flight: "new" or "takeover", how the holder got it
//	  task      task id, once SetTask ran
//	  res       result, once done
//
// Tenant and key are escaped as keyspace describes, so ":" or "}" in them
// cannot make two tenants' records share a key. The whole record is one key
// and each operation one script on it, so every operation is atomic and
// needs no multi-key command on Cluster; the tag spreads records over all
// shards. Leases are measured with redis.call('TIME') inside the script, so
// gateways with skewed clocks agree on when a lease ran out.
const dedupeFamily = "dd"

// Field values of the hash above.
const (
	dedupeInFlight = "inflight"
	dedupeDone     = "done"
)

// dedupeLuaPrelude is shared by the scripts that read the clock. TIME makes
// a script non-deterministic, which Redis 5 and later handle by replicating
// the script's writes rather than the script.
const dedupeLuaPrelude = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Lua numbers are doubles: format whole milliseconds without an exponent.
local function ms(n)
  return string.format('%.0f', n)
end
`

// KEYS[1] record; ARGV fingerprint, holder, lease ms, expiry ms.
// Reply: {outcome, st, fp, h, lease_ms, now_ms, task, res}.
const dedupeClaimLua = dedupeLuaPrelude + `
local r = redis.call('HMGET', KEYS[1], 'st', 'fp', 'h', 'lease_ms', 'oc', 'task', 'res')
local now = now_ms()
if not r[1] then
  local lease = ms(now + tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'st', 'inflight', 'fp', ARGV[1], 'h', ARGV[2], 'lease_ms', lease, 'oc', 'new')
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {'new', 'inflight', ARGV[1], ARGV[2], lease, now, '', ''}
end
if r[1] == 'inflight' then
  if r[3] == ARGV[2] then
    return {r[5] or 'new', r[1], r[2], r[3], r[4], now, r[6], ''}
  end
  local ends = tonumber(r[4])
  if ends and r[3] and now >= ends and r[2] == ARGV[1] then
    local lease = ms(now + tonumber(ARGV[3]))
    redis.call('HSET', KEYS[1], 'h', ARGV[2], 'lease_ms', lease, 'oc', 'takeover')
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return {'takeover', r[1], r[2], ARGV[2], lease, now, r[6], ''}
  end
end
return {'existing', r[1], r[2], r[3], r[4], now, r[6], r[7]}
`

// KEYS[1] record. Reply: nil, or the shape of Claim's with an empty outcome.
const dedupeGetLua = dedupeLuaPrelude + `
local r = redis.call('HMGET', KEYS[1], 'st', 'fp', 'h', 'lease_ms', 'task', 'res')
if not r[1] then
  return false
end
return {'', r[1], r[2], r[3], r[4], now_ms(), r[5], r[6]}
`

// KEYS[1] record; ARGV holder, lease ms. Reply: 1 if renewed, else 0.
const dedupeRenewLua = dedupeLuaPrelude + `
local r = redis.call('HMGET', KEYS[1], 'st', 'h')
if r[1] ~= 'inflight' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'lease_ms', ms(now_ms() + tonumber(ARGV[2])))
local left = redis.call('PTTL', KEYS[1])
if left >= 0 and left < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`

// KEYS[1] record; ARGV holder, task id. Reply: 1 if set, else 0.
const dedupeSetTaskLua = `
local r = redis.call('HMGET', KEYS[1], 'st', 'h')
if r[1] ~= 'inflight' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'task', ARGV[2])
return 1
`

// KEYS[1] record; ARGV holder, result, ttl ms. Reply: 1 if done by holder,
// else 0.
const dedupeCompleteLua = `
local r = redis.call('HMGET', KEYS[1], 'st', 'h')
if r[2] ~= ARGV[1] then
  return 0
end
if r[1] == 'done' then
  return 1
end
if r[1] ~= 'inflight' then
  return 0
end
redis.call('HSET', KEYS[1], 'st', 'done', 'res', ARGV[2])
redis.call('HDEL', KEYS[1], 'lease_ms', 'oc')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`

// KEYS[1] record; ARGV holder. Reply: 1 if deleted, else 0.
const dedupeReleaseLua = `
local r = redis.call('HMGET', KEYS[1], 'st', 'h')
if r[1] ~= 'inflight' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`

// redisDedupe runs each operation as one script. go-redis sends EVALSHA and
// falls back to EVAL once per node that has not cached a script yet.
type redisDedupe struct {
	conn                                          *redisConn
	claim, get, renew, setTask, complete, release *redis.Script
	// claims and completes batch the Claims and Completes of concurrent
	// callers; a Claim goes out at once while fewer than claimsInFlight
	// batches are in flight, since its request waits for it.
	claims    *coalescer[scriptCall, scriptReply]
	completes *coalescer[scriptCall, dedupeCompleted]
}

var _ Dedupe = (*redisDedupe)(nil)

func newRedisDedupe(conn *redisConn) *redisDedupe {
	r := &redisDedupe{
		conn:     conn,
		claim:    redis.NewScript(dedupeClaimLua),
		get:      redis.NewScript(dedupeGetLua),
		renew:    redis.NewScript(dedupeRenewLua),
		setTask:  redis.NewScript(dedupeSetTaskLua),
		complete: redis.NewScript(dedupeCompleteLua),
		release:  redis.NewScript(dedupeReleaseLua),
	}
	r.claims = newCoalescer(claimsInFlight, r.claimBatch)
	r.completes = newCoalescer(1, r.completeBatch)
	return r
}

// tenantTagged returns <prefix>:<family>:{<tenant>:<id>}: records of one
// tenant and id share a slot, different ids spread over the cluster.
func (k keyspace) tenantTagged(family, tenant, id string) string {
	var b strings.Builder
	b.Grow(len(k.prefix) + len(family) + len(tenant) + len(id) + 6)
	b.WriteString(k.prefix)
	b.WriteByte(':')
	b.WriteString(family)
	b.WriteString(":{")
	writeEscaped(&b, tenant)
	b.WriteByte(':')
	writeEscaped(&b, id)
	b.WriteByte('}')
	return b.String()
}

func (r *redisDedupe) key(tenant, key string) string {
	return r.conn.keys.tenantTagged(dedupeFamily, tenant, key)
}

func (r *redisDedupe) Claim(ctx context.Context, tenant, key, fingerprint, holder string, lease, ttl time.Duration) (DedupeRecord, ClaimOutcome, error) {
	if err := r.conn.gate.check(); err != nil {
		return DedupeRecord{}, 0, err
	}
	if err := checkDedupeClaim(tenant, key, fingerprint, holder, lease, ttl); err != nil {
		return DedupeRecord{}, 0, err
	}
	k := r.key(tenant, key)
	res, err := r.claims.do(ctx, scriptCall{keys: []string{k}, args: []any{fingerprint, holder, millis(lease), millis(max(ttl, lease))}})
	if err == nil {
		err = res.err
	}
	if err != nil {
		return DedupeRecord{}, 0, r.conn.fail("dedupe claim", err)
	}
	v := res.reply
	rec, outcome, err := decodeDedupeReply(v)
	if err == nil && outcome == 0 {
		err = errors.New("reply has no outcome")
	}
	if err != nil {
		return DedupeRecord{}, 0, fmt.Errorf("store: dedupe claim: key %q: %w", k, err)
	}
	return rec, outcome, nil
}

func (r *redisDedupe) Get(ctx context.Context, tenant, key string) (DedupeRecord, bool, error) {
	if err := r.conn.gate.check(); err != nil {
		return DedupeRecord{}, false, err
	}
	if err := checkDedupeKey(tenant, key); err != nil {
		return DedupeRecord{}, false, err
	}
	k := r.key(tenant, key)
	v, err := r.get.Run(ctx, r.conn.client, []string{k}).Result()
	if errors.Is(err, redis.Nil) {
		return DedupeRecord{}, false, nil
	}
	if err != nil {
		return DedupeRecord{}, false, r.conn.fail("dedupe get", err)
	}
	rec, _, err := decodeDedupeReply(v)
	if err != nil {
		return DedupeRecord{}, false, fmt.Errorf("store: dedupe get: key %q: %w", k, err)
	}
	return rec, true, nil
}

func (r *redisDedupe) Renew(ctx context.Context, tenant, key, holder string, lease time.Duration) (bool, error) {
	if err := r.conn.gate.check(); err != nil {
		return false, err
	}
	if err := checkDedupeHolder(tenant, key, holder); err != nil {
		return false, err
	}
	if err := checkPositive("lease", lease); err != nil {
		return false, err
	}
	return r.cas(ctx, "dedupe renew", r.renew, tenant, key, holder, millis(lease))
}

func (r *redisDedupe) SetTask(ctx context.Context, tenant, key, holder, taskID string) (bool, error) {
	if err := r.conn.gate.check(); err != nil {
		return false, err
	}
	if err := checkDedupeHolder(tenant, key, holder); err != nil {
		return false, err
	}
	if err := checkName("task id", taskID); err != nil {
		return false, err
	}
	return r.cas(ctx, "dedupe set task", r.setTask, tenant, key, holder, taskID)
}

func (r *redisDedupe) Complete(ctx context.Context, tenant, key, holder string, result []byte, ttl time.Duration) (bool, error) {
	if err := r.conn.gate.check(); err != nil {
		return false, err
	}
	if err := checkDedupeHolder(tenant, key, holder); err != nil {
		return false, err
	}
	if err := checkDedupeResult(result, ttl); err != nil {
		return false, err
	}
	// A nil slice is sent as an empty string all the same; []byte keeps
	// binary results intact.
	done, err := r.completes.do(ctx, scriptCall{keys: []string{r.key(tenant, key)}, args: []any{holder, result, millis(ttl)}})
	if err != nil {
		return false, r.conn.fail("dedupe complete", err)
	}
	return done.ok, done.err
}

// scriptReply is the reply of one script call of a batch.
type scriptReply struct {
	reply any
	err   error
}

// claimBatch runs a batch of Claims in one pipeline: every first-seen send
// claims its key before it is forwarded, so under load many claims are due
// at once.
func (r *redisDedupe) claimBatch(ctx context.Context, calls []*batchCall[scriptCall, scriptReply]) {
	scripts := make([]scriptCall, len(calls))
	for i, c := range calls {
		scripts[i] = c.req
	}
	for i, cmd := range evalPipelined(ctx, r.conn.client, r.claim, scripts) {
		v, err := cmd.Result()
		calls[i].res = scriptReply{reply: v, err: err}
	}
}

// dedupeCompleted is what one Complete of a batch did.
type dedupeCompleted struct {
	ok  bool
	err error
}

// completeBatch runs a batch of Completes in one pipeline. Completes come
// after the answers, one per first-seen send, so under load many are due at
// once.
func (r *redisDedupe) completeBatch(ctx context.Context, calls []*batchCall[scriptCall, dedupeCompleted]) {
	scripts := make([]scriptCall, len(calls))
	for i, c := range calls {
		scripts[i] = c.req
	}
	for i, cmd := range evalPipelined(ctx, r.conn.client, r.complete, scripts) {
		n, err := cmd.Int64()
		if err != nil {
			calls[i].res = dedupeCompleted{err: r.conn.fail("dedupe complete", err)}
			continue
		}
		calls[i].res = dedupeCompleted{ok: n == 1}
	}
}

func (r *redisDedupe) Release(ctx context.Context, tenant, key, holder string) (bool, error) {
	if err := r.conn.gate.check(); err != nil {
		return false, err
	}
	if err := checkDedupeHolder(tenant, key, holder); err != nil {
		return false, err
	}
	return r.cas(ctx, "dedupe release", r.release, tenant, key, holder)
}

// cas runs one of the holder-checked scripts, which reply 1 when they acted.
func (r *redisDedupe) cas(ctx context.Context, op string, s *redis.Script, tenant, key string, args ...any) (bool, error) {
	n, err := s.Run(ctx, r.conn.client, []string{r.key(tenant, key)}, args...).Int64()
	if err != nil {
		return false, r.conn.fail(op, err)
	}
	return n == 1, nil
}

// millis renders d in whole milliseconds, rounded up so that a positive
// duration never becomes 0, which PEXPIRE would take as "delete now".
func millis(d time.Duration) string {
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10)
}

// decodeDedupeReply reads {outcome, st, fp, h, lease_ms, now_ms, task, res}.
// The outcome is 0 when the reply has none (Get).
func decodeDedupeReply(v any) (DedupeRecord, ClaimOutcome, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 8 {
		return DedupeRecord{}, 0, fmt.Errorf("unexpected script reply %T", v)
	}
	var fields [8]string
	for i, x := range a {
		if i == 5 {
			continue
		}
		switch s := x.(type) {
		case string:
			fields[i] = s
		case nil:
		default:
			return DedupeRecord{}, 0, fmt.Errorf("unexpected script reply: element %d is %T", i, x)
		}
	}
	now, ok := a[5].(int64)
	if !ok {
		return DedupeRecord{}, 0, fmt.Errorf("unexpected script reply: server time is %T", a[5])
	}

	var outcome ClaimOutcome
	switch fields[0] {
	case "":
	case "new":
		outcome = ClaimNew
	case "takeover":
		outcome = ClaimTakeover
	case "existing":
		outcome = ClaimExisting
	default:
		return DedupeRecord{}, 0, fmt.Errorf("unknown claim outcome %.16q", fields[0])
	}

	rec := DedupeRecord{Fingerprint: fields[2], Holder: fields[3], TaskID: fields[6]}
	if rec.Fingerprint == "" {
		return DedupeRecord{}, 0, errors.New("dedupe record has no fingerprint")
	}
	switch fields[1] {
	case dedupeInFlight:
		rec.State = DedupeInFlight
		if rec.Holder == "" {
			return DedupeRecord{}, 0, errors.New("in-flight dedupe record has no holder")
		}
		ends, err := strconv.ParseInt(fields[4], 10, 64)
		if err != nil {
			return DedupeRecord{}, 0, fmt.Errorf("in-flight dedupe record has a malformed lease %.24q", fields[4])
		}
		rec.LeaseExpired = now >= ends
	case dedupeDone:
		rec.State = DedupeDone
		rec.Result = []byte(fields[7])
	default:
		return DedupeRecord{}, 0, fmt.Errorf("dedupe record has unknown state %.16q", fields[1])
	}
	return rec, outcome, nil
}
