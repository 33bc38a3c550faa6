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

// Dedupe records, one string per (tenant, key):
//
//	<prefix>:dd:{<tenant>:<key>}
//
// The value is the record: a state byte ('i' in flight, 'd' done), an
// outcome byte (how the holder got an in-flight record: 'n' new, 't'
// takeover; '-' once done), then five fields, each as three decimal digits
// of length followed by its bytes:
//
//	holder   token of the claim holding the record in flight, or of the
//	         claim that completed it
//	fp       fingerprint of the request
//	task     task id, once SetTask ran
//	lease    lease in milliseconds (in flight)
//	started  the expiry, in milliseconds, the record was given when its
//	         lease last started (in flight)
//
// and a done record ends with its result. A lease is measured with the
// record's own expiry, on the Redis server's clock: it has run for started
// minus PTTL, so gateways with skewed clocks agree on when it ends.
//
// Tenant and key are escaped as keyspace describes, so ":" or "}" in them
// cannot make two tenants' records share a key. A record is one key and
// every operation acts on that key alone, so none needs a multi-key command
// on Cluster; the tag spreads records over all shards. A first claim is a
// plain SET NX GET, the cheapest command that can tell; the rest are Lua
// scripts that compare the holder token before they write.
const dedupeFamily = "dd"

// Record states and claim outcomes as stored.
const (
	dedupeInFlight   = 'i'
	dedupeDone       = 'd'
	dedupeByNew      = 'n'
	dedupeByTakeover = 't'
	dedupeNoOutcome  = '-'
)

// dedupeLuaPrelude reads and writes records in the layout above.
const dedupeLuaPrelude = `
local function malformed()
  error({err = 'ERR malformed dedupe record'})
end
local function field(v, pos)
  local digits = string.sub(v, pos, pos + 2)
  if not string.match(digits, '^%d%d%d$') then
    malformed()
  end
  local ends = pos + 2 + tonumber(digits)
  if ends > #v then
    malformed()
  end
  return string.sub(v, pos + 3, ends), ends + 1
end
-- state, outcome, holder, fp, task, lease, started: checked as the
-- gateway checks them, so no script writes over a record it cannot read.
local function parse(v)
  local h, fp, task, lease, started, pos
  h, pos = field(v, 3)
  fp, pos = field(v, pos)
  task, pos = field(v, pos)
  lease, pos = field(v, pos)
  started, pos = field(v, pos)
  local st, oc = string.sub(v, 1, 1), string.sub(v, 2, 2)
  local ok = h ~= '' and fp ~= ''
  if st == 'i' then
    ok = ok and (oc == 'n' or oc == 't') and pos > #v and
      string.match(lease, '^%d+$') ~= nil and string.match(started, '^%d+$') ~= nil
  elseif st ~= 'd' then
    ok = false
  end
  if not ok then
    malformed()
  end
  return st, oc, h, fp, task, lease, started
end
local function pack(st, oc, h, fp, task, lease, started)
  local out = {st, oc}
  for _, f in ipairs({h, fp, task, lease, started}) do
    out[#out + 1] = string.format('%03d', #f) .. f
  end
  return table.concat(out)
end
-- The record in KEYS[1] if holder holds it in flight, else nil.
local function held(holder)
  local v = redis.call('GET', KEYS[1])
  if not v then
    return nil
  end
  local st, oc, h, fp, task, lease, started = parse(v)
  if st ~= 'i' or h ~= holder then
    return nil
  end
  return {oc = oc, h = h, fp = fp, task = task, lease = lease, started = started}
end
-- Lua numbers are doubles: format whole milliseconds without an exponent.
local function ms(n)
  return string.format('%.0f', n)
end
`

// KEYS[1] record; ARGV fingerprint, holder, lease ms, expiry ms. Claim runs
// it only when a SET NX GET found another holder's record in flight, to
// date its lease and take it over if it ran out, atomically. Reply:
// {outcome, record, pttl}.
const dedupeClaimLua = dedupeLuaPrelude + `
local v = redis.call('GET', KEYS[1])
if not v then
  v = pack('i', 'n', ARGV[2], ARGV[1], '', ARGV[3], ARGV[4])
  redis.call('SET', KEYS[1], v, 'PX', ARGV[4])
  return {'new', v, tonumber(ARGV[4])}
end
local left = redis.call('PTTL', KEYS[1])
local st, oc, h, fp, task, lease, started = parse(v)
if st == 'i' then
  if h == ARGV[2] then
    if oc == 't' then
      return {'takeover', v, left}
    end
    return {'new', v, left}
  end
  if fp == ARGV[1] and (left < 0 or tonumber(started) - left >= tonumber(lease)) then
    v = pack('i', 't', ARGV[2], fp, task, ARGV[3], ARGV[4])
    redis.call('SET', KEYS[1], v, 'PX', ARGV[4])
    return {'takeover', v, tonumber(ARGV[4])}
  end
end
return {'existing', v, left}
`

// KEYS[1] record; ARGV holder, lease ms. Reply: 1 if renewed, else 0.
const dedupeRenewLua = dedupeLuaPrelude + `
local r = held(ARGV[1])
if not r then
  return 0
end
local started = ms(math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[2])))
redis.call('SET', KEYS[1], pack('i', r.oc, r.h, r.fp, r.task, ARGV[2], started), 'PX', started)
return 1
`

// KEYS[1] record; ARGV holder, task id. Reply: 1 if set, else 0. The
// expiry is kept, and with it the lease's age.
const dedupeSetTaskLua = dedupeLuaPrelude + `
local r = held(ARGV[1])
if not r then
  return 0
end
redis.call('SET', KEYS[1], pack('i', r.oc, r.h, r.fp, ARGV[2], r.lease, r.started), 'KEEPTTL')
return 1
`

// KEYS[1] record; ARGV holder field (the holder token as the layout stores
// it: three digits of length, then the token), result, ttl ms. Reply: 1 if
// done by holder, else 0. It runs once for every first-seen send, so it is
// written out instead of using parse and pack: the holder is compared in
// place, the leading fields are copied as they are, and no table or closure
// is made, which costs Redis about a fifth less per call. A record another
// holder holds is left alone unread; the holder's own is checked as parse
// checks it, so that no record the gateway cannot read is written over.
const dedupeCompleteLua = `
local v = redis.call('GET', KEYS[1])
if not v then
  return 0
end
local hf = ARGV[1]
if string.sub(v, 3, 2 + #hf) ~= hf then
  return 0
end
local st, oc = string.sub(v, 1, 1), string.sub(v, 2, 2)
-- fp, task, lease and started follow the holder
local pos, taskEnds, ok = 3 + #hf, 0, true
for i = 1, 4 do
  local digits = string.match(v, '^%d%d%d', pos)
  local ends = digits and pos + 2 + tonumber(digits)
  if not ends or ends > #v then
    error({err = 'ERR malformed dedupe record'})
  end
  if i == 1 then
    ok = ends > pos + 2
  elseif i == 2 then
    taskEnds = ends
  elseif st == 'i' then
    ok = ok and string.match(string.sub(v, pos + 3, ends), '^%d+$') ~= nil
  end
  pos = ends + 1
end
if st == 'i' then
  ok = ok and (oc == 'n' or oc == 't') and pos > #v
elseif st ~= 'd' then
  ok = false
end
if not ok then
  error({err = 'ERR malformed dedupe record'})
end
if st == 'd' then
  return 1
end
redis.call('SET', KEYS[1], 'd-' .. string.sub(v, 3, taskEnds) .. '000000' .. ARGV[2], 'PX', ARGV[3])
return 1
`

// KEYS[1] record; ARGV holder. Reply: 1 if deleted, else 0.
const dedupeReleaseLua = dedupeLuaPrelude + `
if not held(ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`

// redisDedupe runs each operation in one round trip. go-redis sends
// EVALSHA and falls back to EVAL once per node that has not cached a script
// yet.
type redisDedupe struct {
	conn                                     *redisConn
	claim, renew, setTask, complete, release *redis.Script
}

var _ Dedupe = (*redisDedupe)(nil)

func newRedisDedupe(conn *redisConn) *redisDedupe {
	return &redisDedupe{
		conn:     conn,
		claim:    redis.NewScript(dedupeClaimLua),
		renew:    redis.NewScript(dedupeRenewLua),
		setTask:  redis.NewScript(dedupeSetTaskLua),
		complete: redis.NewScript(dedupeCompleteLua),
		release:  redis.NewScript(dedupeReleaseLua),
	}
}

// key returns <prefix>:dd:{<tenant>:<key>}: records of one tenant and key
// share a slot, different keys spread over the cluster.
func (r *redisDedupe) key(tenant, key string) string {
	return r.conn.keys.tagged(dedupeFamily, tenant, key)
}

func (r *redisDedupe) Claim(ctx context.Context, tenant, key, fingerprint, holder string, lease, ttl time.Duration) (DedupeRecord, ClaimOutcome, error) {
	// An in-flight record lives at least as long as its lease.
	expiry := time.Duration(ceilMillis(max(ttl, lease))) * time.Millisecond
	k, l, e := r.key(tenant, key), millis(lease), millis(expiry)
	record := encodeDedupeRecord(dedupeInFlight, dedupeByNew, holder, fingerprint, "", l, e, nil)
	// Every first-seen send claims its key before it is forwarded, so under
	// load many claims are due at once: they share pipelines. SET NX GET
	// creates the record if there is none and otherwise returns it.
	var set *redis.StatusCmd
	if err := r.conn.piped(ctx, func(ctx context.Context, pipe redis.Pipeliner) {
		set = pipe.SetArgs(ctx, k, record, redis.SetArgs{Mode: "NX", Get: true, TTL: expiry})
	}); err != nil {
		return DedupeRecord{}, 0, r.conn.fail("dedupe claim", err)
	}
	v, err := set.Result()
	if errors.Is(err, redis.Nil) {
		return DedupeRecord{State: DedupeInFlight, Fingerprint: fingerprint, Holder: holder}, ClaimNew, nil
	}
	if err != nil {
		return DedupeRecord{}, 0, r.conn.fail("dedupe claim", err)
	}
	// The record is not dated yet (-2): only another holder's lease needs
	// to be, below.
	rec, outcome, err := decodeDedupeRecord(v, -2)
	switch {
	case err != nil:
		return DedupeRecord{}, 0, fmt.Errorf("store: dedupe claim: key %q: %w", k, err)
	case rec.State == DedupeInFlight && rec.Holder == holder:
		// This holder's own claim, whose reply was lost and is retried.
		return rec, outcome, nil
	case rec.State != DedupeInFlight:
		return rec, ClaimExisting, nil
	}
	// Someone else's claim in flight, which a duplicate finds while the
	// first request runs: the claim script dates its lease and takes it
	// over if it ran out, atomically, in a second round trip only this
	// path pays for (shared, too, with the calls made at the same time).
	reply, err := runPiped(ctx, r.conn, r.claim, []string{k}, fingerprint, holder, l, e).Result()
	if err != nil {
		return DedupeRecord{}, 0, r.conn.fail("dedupe claim", err)
	}
	if rec, outcome, err = decodeClaimReply(reply); err != nil {
		return DedupeRecord{}, 0, fmt.Errorf("store: dedupe claim: key %q: %w", k, err)
	}
	return rec, outcome, nil
}

func (r *redisDedupe) Get(ctx context.Context, tenant, key string) (DedupeRecord, bool, error) {
	k := r.key(tenant, key)
	pipe := r.conn.client.Pipeline()
	get := pipe.Get(ctx, k)
	ttl := pipe.PTTL(ctx, k)
	_, _ = pipe.Exec(ctx)
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return DedupeRecord{}, false, nil
	}
	if err == nil {
		err = ttl.Err()
	}
	if err != nil {
		return DedupeRecord{}, false, r.conn.fail("dedupe get", err)
	}
	rec, _, err := decodeDedupeRecord(v, pttlMillis(ttl.Val()))
	if err != nil {
		return DedupeRecord{}, false, fmt.Errorf("store: dedupe get: key %q: %w", k, err)
	}
	return rec, true, nil
}

func (r *redisDedupe) Renew(ctx context.Context, tenant, key, holder string, lease time.Duration) (bool, error) {
	return r.cas(ctx, "dedupe renew", r.renew, tenant, key, holder, millis(lease))
}

func (r *redisDedupe) SetTask(ctx context.Context, tenant, key, holder, taskID string) (bool, error) {
	return r.cas(ctx, "dedupe set task", r.setTask, tenant, key, holder, taskID)
}

func (r *redisDedupe) Complete(ctx context.Context, tenant, key, holder string, result []byte, ttl time.Duration) (bool, error) {
	// Completes come after the answers, one per first-seen send, so under
	// load many are due at once: they share pipelines. A nil slice is sent
	// as an empty string all the same; []byte keeps binary results intact.
	return r.conn.acted("dedupe complete", runPiped(ctx, r.conn, r.complete, []string{r.key(tenant, key)}, dedupeField(holder), result, millis(ttl)))
}

func (r *redisDedupe) Release(ctx context.Context, tenant, key, holder string) (bool, error) {
	return r.cas(ctx, "dedupe release", r.release, tenant, key, holder)
}

// cas runs one of the holder-checked scripts, which reply 1 when they acted.
func (r *redisDedupe) cas(ctx context.Context, op string, s *redis.Script, tenant, key string, args ...any) (bool, error) {
	return r.conn.acted(op, s.Run(ctx, r.conn.client, []string{r.key(tenant, key)}, args...))
}

// millis renders d in whole milliseconds, rounded up so that a positive
// duration never becomes 0, which PEXPIRE would take as "delete now".
func millis(d time.Duration) string {
	return strconv.FormatInt(ceilMillis(d), 10)
}

func ceilMillis(d time.Duration) int64 {
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return int64(ms)
}

// pttlMillis is a PTTL reply in milliseconds. go-redis keeps the replies
// that are not durations, -1 (no expiry) and -2 (no key), as -1 and -2
// nanoseconds.
func pttlMillis(d time.Duration) int64 {
	if d < 0 {
		return int64(d)
	}
	return d.Milliseconds()
}

// encodeDedupeRecord lays a record out as the layout above says. Fields
// are at most MaxNameBytes long, which three digits can tell.
func encodeDedupeRecord(state, outcome byte, holder, fingerprint, task, lease, started string, result []byte) string {
	var b strings.Builder
	b.Grow(2 + 15 + len(holder) + len(fingerprint) + len(task) + len(lease) + len(started) + len(result))
	b.WriteByte(state)
	b.WriteByte(outcome)
	for _, f := range [...]string{holder, fingerprint, task, lease, started} {
		n := fieldLength(f)
		b.Write(n[:])
		b.WriteString(f)
	}
	b.Write(result)
	return b.String()
}

// fieldLength is the length of a field as the layout writes it.
func fieldLength(f string) [3]byte {
	n := len(f)
	return [3]byte{byte('0' + n/100), byte('0' + n/10%10), byte('0' + n%10)}
}

// dedupeField is a field as the layout writes it: its length, then itself.
func dedupeField(f string) string {
	n := fieldLength(f)
	return string(n[:]) + f
}

// decodeDedupeRecord reads a record and, for one in flight, whether its
// lease has run out, given the record's PTTL in milliseconds (-1: no
// expiry, which a lease cannot outlast; -2: the record vanished after it
// was read, or the caller does not need it dated). It also returns how the
// holder got an in-flight record.
func decodeDedupeRecord(v string, pttl int64) (DedupeRecord, ClaimOutcome, error) {
	if len(v) < 2 {
		return DedupeRecord{}, 0, fmt.Errorf("dedupe record of %d bytes", len(v))
	}
	var f [5]string
	rest := v[2:]
	for i := range f {
		if len(rest) < 3 {
			return DedupeRecord{}, 0, errors.New("truncated dedupe record")
		}
		n, err := strconv.ParseUint(rest[:3], 10, 16)
		if err != nil || len(rest[:3]) != 3 || int(n) > len(rest)-3 {
			return DedupeRecord{}, 0, errors.New("malformed dedupe record")
		}
		f[i], rest = rest[3:3+n], rest[3+n:]
	}
	rec := DedupeRecord{Holder: f[0], Fingerprint: f[1], TaskID: f[2]}
	if rec.Fingerprint == "" {
		return DedupeRecord{}, 0, errors.New("dedupe record has no fingerprint")
	}
	if rec.Holder == "" {
		return DedupeRecord{}, 0, errors.New("dedupe record has no holder")
	}
	var outcome ClaimOutcome
	switch v[0] {
	case dedupeInFlight:
		rec.State = DedupeInFlight
		switch v[1] {
		case dedupeByNew:
			outcome = ClaimNew
		case dedupeByTakeover:
			outcome = ClaimTakeover
		default:
			return DedupeRecord{}, 0, fmt.Errorf("in-flight dedupe record has unknown outcome %q", v[1])
		}
		lease, err1 := strconv.ParseUint(f[3], 10, 63)
		started, err2 := strconv.ParseUint(f[4], 10, 63)
		if err1 != nil || err2 != nil {
			return DedupeRecord{}, 0, fmt.Errorf("in-flight dedupe record has a malformed lease %.24q/%.24q", f[3], f[4])
		}
		rec.LeaseExpired = pttl == -1 || pttl >= 0 && int64(started)-pttl >= int64(lease)
		if rest != "" {
			return DedupeRecord{}, 0, errors.New("in-flight dedupe record has a result")
		}
	case dedupeDone:
		rec.State = DedupeDone
		// A copy, so a caller may change it.
		rec.Result = []byte(rest)
	default:
		return DedupeRecord{}, 0, fmt.Errorf("dedupe record has unknown state %q", v[0])
	}
	return rec, outcome, nil
}

// decodeClaimReply reads the claim script's {outcome, record, pttl}.
func decodeClaimReply(v any) (DedupeRecord, ClaimOutcome, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		return DedupeRecord{}, 0, fmt.Errorf("unexpected script reply %T", v)
	}
	outcome, _ := a[0].(string)
	record, ok1 := a[1].(string)
	pttl, ok2 := a[2].(int64)
	if !ok1 || !ok2 {
		return DedupeRecord{}, 0, fmt.Errorf("unexpected script reply %T, %T", a[1], a[2])
	}
	rec, _, err := decodeDedupeRecord(record, pttl)
	if err != nil {
		return DedupeRecord{}, 0, err
	}
	// The script names its outcomes as ClaimOutcome.String does.
	for _, o := range [...]ClaimOutcome{ClaimNew, ClaimTakeover, ClaimExisting} {
		if outcome == o.String() {
			return rec, o, nil
		}
	}
	return DedupeRecord{}, 0, fmt.Errorf("unknown claim outcome %.16q", outcome)
}
