package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Lifecycle keys. The record is one hash per task, whose hash tag is the
// task's reference, the same tag as the task's ownership record, so both
// share a slot and a script may touch them together:
//
//	<prefix>:lc:{<agent>:t:<task id>}
//	  v      format version, "1"
//	  rev    revision: the Redis server time of the save in microseconds, or
//	         the previous revision plus one if that is larger
//	  ten    tenant
//	  sub    subject
//	  ctx    context id
//	  ver    protocol version
//	  st     state name
//	  since  StateSince   (RFC 3339 with nanoseconds, UTC)
//	  crt    Created      (same)
//	  act    LastActivity (same)
//	  hist   History, a JSON array of {"from", "to", "at"}
//	  subs   Subscribers, decimal
//	  end    EndedBy
//	  esc    Escalated, "1" or "0"
//	  hold   LegalHold, "1" or "0"
//
// Save is one script on the record: a compare-and-set on rev that rewrites
// every field and sets or clears the expiry. Because revisions follow the
// server clock, a record deleted and created again never repeats a
// revision a writer may still hold.
//
// Each agent's indexes are tagged by the agent, so all of one agent's index
// updates are one script on one slot. Sorted sets, member = escaped task id,
// score = LastActivity in Unix microseconds:
//
//	<prefix>:lcx:{<agent>}:all                    every record
//	<prefix>:lcx:{<agent>}:s:<state>              records in state
//	<prefix>:lcx:{<agent>}:open                   records in a non-terminal state
//	<prefix>:lcx:{<agent>}:t:<tenant>             the tenant's records
//	<prefix>:lcx:{<agent>}:ts:<tenant>:<state>    the tenant's records in state
//	<prefix>:lcx:{<agent>}:to:<tenant>            the tenant's open records
//
// so that every LifecycleFilter is a range of exactly one index. Beside
// them, a hash says which indexes hold each task, and a sorted set when the
// records with an expiry expire:
//
//	<prefix>:lcx:{<agent>}:m     task -> "<rev>|<state>|<open 1 or 0>|<tenant>"
//	<prefix>:lcx:{<agent>}:exp   task, score = expiry in Unix ms of the server clock
//
// Agent, tenant and task ids are escaped as keyspace describes, so ":" or
// "}" in them can neither merge two indexes nor move the hash tag. The index
// scripts derive index keys from the agent's base key and the hash above,
// since a task's previous tenant is known only there; all of them share the
// agent's slot, which Redis Cluster allows.
//
// The index update is a second round trip after the record's compare-and-
// set. Saves that callers make at the same time go out together: their
// compare-and-sets in one pipeline, then the index updates of those that
// succeeded in another, one script per agent, so a busy tracker pays two
// round trips per batch rather than per task. A save that finds none in
// flight waits up to a millisecond for others (coalescer.gather), so a
// lightly loaded tracker batches too. An index update applies only
// a revision newer than the one indexed, so updates that arrive out of
// order cannot regress an index. If it fails, or never runs, the indexes
// name the record as it was: the record's next Save repairs them, List
// fetches each record it is about to return and skips index entries whose
// record is gone or no longer matches, and CountByState counts the stale
// entry until then. Index entries of expired records are pruned by the
// index scripts, a bounded batch at a time.
//
// Leases are one string per name, holding the holder, expiring after the
// lease's ttl:
//
//	<prefix>:lease:{<name>}
const (
	lifecycleFamily      = "lc"
	lifecycleIndexFamily = "lcx"
	leaseFamily          = "lease"
	lifecycleFormat      = "1"
)

// lifecycleListRounds bounds the index reads of one List call that meets
// stale index entries; the page then ends short, with a cursor.
const lifecycleListRounds = 8

// lifecycleIndexPrelude is shared by the index scripts: KEYS[1] is the
// agent's hash of indexed tasks, KEYS[2] its expiry set, ARGV[1] its base
// key.
const lifecycleIndexPrelude = `
local base = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function index_keys(state, open, tenant)
  local keys = {base .. ':all', base .. ':s:' .. state, base .. ':t:' .. tenant, base .. ':ts:' .. tenant .. ':' .. state}
  if open == '1' then
    keys[#keys + 1] = base .. ':open'
    keys[#keys + 1] = base .. ':to:' .. tenant
  end
  return keys
end
local function indexed_rev(member)
  local entry = redis.call('HGET', KEYS[1], member)
  if not entry then
    return nil
  end
  return tonumber(string.match(entry, '^(%d+)|'))
end
local function unindex(member)
  local entry = redis.call('HGET', KEYS[1], member)
  if entry then
    local state, open, tenant = string.match(entry, '^%d+|([^|]+)|([01])|(.+)$')
    if state then
      for _, k in ipairs(index_keys(state, open, tenant)) do
        redis.call('ZREM', k, member)
      end
    end
    redis.call('HDEL', KEYS[1], member)
  end
  redis.call('ZREM', KEYS[2], member)
end
local function prune(now)
  local due = redis.call('ZRANGE', KEYS[2], '-inf', now, 'BYSCORE', 'LIMIT', 0, 128)
  for _, member in ipairs(due) do
    unindex(member)
  end
end
`

// lifecycleFields names the record's fields after rev, in the order
// encodeLifecycle renders their values.
var lifecycleFields = [...]string{"v", "ten", "sub", "ctx", "ver", "st", "since", "crt", "act", "hist", "subs", "end", "esc", "hold"}

// KEYS[1] record; ARGV expected rev ("0": no record may exist; every
// record has a rev), expiry ms ("0": none), then the values of
// lifecycleFields. Reply: the new rev, or 0 when the stored rev is not the
// expected one. Revisions, microseconds, stay exact in a Lua number until
// the year 2255. The field names are part of the script rather than of
// every call: a new task's save is the costliest script Redis runs for it,
// and its arguments are most of that. A record the HSET creates has no
// expiry to clear, which spares most new tasks the PERSIST.
var lifecycleSaveScript = redis.NewScript(`
local current = redis.call('HGET', KEYS[1], 'rev')
if (current or '0') ~= ARGV[1] then
  return 0
end
local t = redis.call('TIME')
local rev = math.max(tonumber(t[1]) * 1000000 + tonumber(t[2]), (tonumber(current) or 0) + 1)
redis.call('HSET', KEYS[1], 'rev', string.format('%.0f', rev)` + lifecycleFieldArgs() + `)
if ARGV[2] == '0' then
  if current then
    redis.call('PERSIST', KEYS[1])
  end
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return rev
`)

// lifecycleFieldArgs renders the HSET arguments of lifecycleFields for the
// save script: ", 'v', ARGV[3], 'ten', ARGV[4]" and so on.
func lifecycleFieldArgs() string {
	var b strings.Builder
	for i, f := range lifecycleFields {
		fmt.Fprintf(&b, ", '%s', ARGV[%d]", f, i+3)
	}
	return b.String()
}

// ARGV base, then for each of one or more tasks of the agent: task, rev,
// state, open, tenant, score, expiry ms ("0": none). An entry whose task
// has a newer revision indexed already is skipped, and of several entries
// of one task only the newest counts. Reply: the tasks indexed.
//
// It runs once per batch of saves, so its commands are per batch rather
// than per task: one HMGET reads what is indexed for all the tasks, and
// each index key gets one ZREM for the tasks that leave it and one ZADD
// for those that enter it or stay (a ZADD of a member already there moves
// its score), the task hash one HSET and the expiry set at most one ZREM
// and one ZADD. That is what a new task costs Redis most for after its
// record: a batch of them now makes about six commands instead of ten a
// task. A task with no entry has nothing in the expiry set (every entry
// there has one in the hash; unindex drops both), so it needs no ZREM.
var lifecycleIndexScript = redis.NewScript(lifecycleIndexPrelude + `
local now = now_ms()
prune(now)
local tasks, newest = {}, {}
for i = 2, #ARGV, 7 do
  local task = ARGV[i]
  local seen = newest[task]
  if not seen then
    tasks[#tasks + 1] = task
    newest[task] = i
  elseif tonumber(ARGV[seen + 1]) < tonumber(ARGV[i + 1]) then
    newest[task] = i
  end
end
if #tasks == 0 then
  return 0
end
local entries = redis.call('HMGET', KEYS[1], unpack(tasks))
-- keys lists the index keys touched in the order first met, so that the
-- commands run in an order that does not depend on table iteration.
local keys, known, adds, rems = {}, {}, {}, {}
local function list(t, k)
  if not known[k] then
    known[k] = true
    keys[#keys + 1] = k
  end
  local l = t[k]
  if not l then
    l = {}
    t[k] = l
  end
  return l
end
local entryPairs, expAdds, expRems = {}, {}, {}
local indexed = 0
for j, task in ipairs(tasks) do
  local i = newest[task]
  local rev, state, open, tenant, score, ttl = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], tonumber(ARGV[i + 6])
  local entry = entries[j]
  local current = entry and tonumber(string.match(entry, '^(%d+)|'))
  if not current or current < tonumber(rev) then
    local enters = {}
    for _, k in ipairs(index_keys(state, open, tenant)) do
      enters[k] = true
      local l = list(adds, k)
      l[#l + 1] = score
      l[#l + 1] = task
    end
    if entry then
      local os, oo, ot = string.match(entry, '^%d+|([^|]+)|([01])|(.+)$')
      if os then
        for _, k in ipairs(index_keys(os, oo, ot)) do
          if not enters[k] then
            local l = list(rems, k)
            l[#l + 1] = task
          end
        end
      end
      if ttl <= 0 then
        expRems[#expRems + 1] = task
      end
    end
    entryPairs[#entryPairs + 1] = task
    entryPairs[#entryPairs + 1] = rev .. '|' .. state .. '|' .. open .. '|' .. tenant
    if ttl > 0 then
      expAdds[#expAdds + 1] = string.format('%.0f', now + ttl)
      expAdds[#expAdds + 1] = task
    end
    indexed = indexed + 1
  end
end
for _, k in ipairs(keys) do
  if rems[k] then
    redis.call('ZREM', k, unpack(rems[k]))
  end
end
for _, k in ipairs(keys) do
  if adds[k] then
    redis.call('ZADD', k, unpack(adds[k]))
  end
end
if #entryPairs > 0 then
  redis.call('HSET', KEYS[1], unpack(entryPairs))
end
if #expRems > 0 then
  redis.call('ZREM', KEYS[2], unpack(expRems))
end
if #expAdds > 0 then
  redis.call('ZADD', KEYS[2], unpack(expAdds))
end
return indexed
`)

// KEYS[1] record. Reply: {outcome, bound}: "held" (nothing done),
// "deleted" with the deleted rev, or "absent" with a bound below any rev a
// save after this one can get.
var lifecycleDeleteScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'rev', 'hold')
if r[2] == '1' then
  return {'held', '0'}
end
if r[1] then
  redis.call('DEL', KEYS[1])
  return {'deleted', r[1]}
end
local t = redis.call('TIME')
return {'absent', string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]) - 1)}
`)

// ARGV base, task, bound. Unindexes the task unless a revision newer than
// bound is indexed, which a save that raced the delete made.
var lifecycleUnindexScript = redis.NewScript(lifecycleIndexPrelude + `
prune(now_ms())
local rev = indexed_rev(ARGV[2])
if not rev or rev <= tonumber(ARGV[3]) then
  unindex(ARGV[2])
end
return 1
`)

// KEYS[3...] the per-state indexes. Reply: their sizes.
var lifecycleCountScript = redis.NewScript(lifecycleIndexPrelude + `
prune(now_ms())
local counts = {}
for i = 3, #KEYS do
  counts[#counts + 1] = redis.call('ZCARD', KEYS[i])
end
return counts
`)

// KEYS[1] index; ARGV score and task of the last entry read ("" to start),
// count. Reply: up to count entries after it, with scores. The entry is
// found by rank while it still has that score; otherwise the read restarts
// at the first entry of that score and the caller skips what it has seen.
var lifecycleScanScript = redis.NewScript(`
local start = 0
if ARGV[2] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if score and tonumber(score) == tonumber(ARGV[1]) then
    start = redis.call('ZRANK', KEYS[1], ARGV[2]) + 1
  else
    start = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[1])
  end
end
return redis.call('ZRANGE', KEYS[1], start, start + tonumber(ARGV[3]) - 1, 'WITHSCORES')
`)

// KEYS[1] lease; ARGV holder, ttl ms. Reply: 1 if holder holds it now.
var leaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// redisLifecycle runs each step as one script; go-redis sends EVALSHA and
// falls back to EVAL once per node that has not cached a script yet.
type redisLifecycle struct {
	conn   *redisConn
	states []string
	// saves gathers the Saves of concurrent callers (the tracker's workers).
	saves *coalescer[lifecycleSave, lifecycleSaved]
}

var _ Lifecycle = (*redisLifecycle)(nil)

func newRedisLifecycle(conn *redisConn) *redisLifecycle {
	r := &redisLifecycle{conn: conn, states: lifecycleStates()}
	r.saves = newCoalescer(1, r.saveBatch)
	return r
}

func (r *redisLifecycle) recordKey(agent, taskID string) string {
	return r.conn.keys.refTagged(lifecycleFamily, agent, Ref{Kind: RefTask, ID: taskID})
}

// indexBase returns <prefix>:lcx:{<agent>}, which every index key of the
// agent extends.
func (r *redisLifecycle) indexBase(agent string) string {
	return r.conn.keys.tagged(lifecycleIndexFamily, agent)
}

// indexKey names the one index that holds what f selects; it must agree
// with index_keys in the scripts.
func indexKey(base string, f LifecycleFilter) string {
	tenant := escape(f.Tenant)
	switch {
	case f.Tenant == "" && f.State == "":
		return base + ":all"
	case f.Tenant == "" && f.State == LifecycleOpen:
		return base + ":open"
	case f.Tenant == "":
		return base + ":s:" + f.State
	case f.State == "":
		return base + ":t:" + tenant
	case f.State == LifecycleOpen:
		return base + ":to:" + tenant
	}
	return base + ":ts:" + tenant + ":" + f.State
}

func (r *redisLifecycle) Get(ctx context.Context, agent, taskID string) (TaskLifecycle, bool, error) {
	key := r.recordKey(agent, taskID)
	return readHash(r.conn, "lifecycle get", key, r.conn.client.HGetAll(ctx, key), func(h map[string]string) (TaskLifecycle, error) {
		return decodeLifecycle(agent, taskID, h)
	})
}

func (r *redisLifecycle) Save(ctx context.Context, stored TaskLifecycle, ttl time.Duration) (int64, bool, error) {
	if stored.LegalHold {
		ttl = 0
	}
	fields := encodeLifecycle(&stored)
	expiry := "0"
	if ttl > 0 {
		expiry = millis(ttl)
	}
	res, err := r.saves.gather(ctx, lifecycleSave{
		key:  r.recordKey(stored.Agent, stored.TaskID),
		args: append([]any{strconv.FormatInt(stored.Rev, 10), expiry}, fields[:]...),
		base: r.indexBase(stored.Agent),
		entry: []any{escape(stored.TaskID), "", stored.State, flag(openState(stored.State)), escape(stored.Tenant),
			strconv.FormatFloat(activityScore(stored.LastActivity), 'g', -1, 64), expiry},
	})
	if err != nil {
		return 0, false, r.conn.fail("lifecycle save", err)
	}
	return res.rev, res.ok, res.err
}

// lifecycleSave is one Save waiting for its batch: the record's script call
// and its index entry, whose revision (entry[1]) the record's save sets.
type lifecycleSave struct {
	key   string
	args  []any
	base  string
	entry []any
}

// lifecycleSaved is what one Save of a batch did, as Save reports it.
type lifecycleSaved struct {
	rev int64
	ok  bool
	err error
}

// saveBatch runs the compare-and-sets of a batch of Saves in one pipeline,
// then the index updates of those that succeeded in another, one script per
// agent: two round trips for the whole batch, in pipelines of its own, so
// that no request's call waits behind a batch of saves.
func (r *redisLifecycle) saveBatch(ctx context.Context, calls []*batchCall[lifecycleSave, lifecycleSaved]) {
	scripts := make([]scriptCall, len(calls))
	for i, c := range calls {
		scripts[i] = scriptCall{keys: []string{c.req.key}, args: c.req.args}
	}
	var agents []string
	entries := map[string][]any{}
	for i, cmd := range evalOn(ctx, r.conn, r.conn.unshared, lifecycleSaveScript, scripts) {
		c := calls[i]
		// The script replies 0 when the stored revision was not the
		// expected one; Int64 gives 0 with an error too.
		rev, err := cmd.Int64()
		c.res = lifecycleSaved{rev: rev, ok: rev > 0, err: r.conn.fail("lifecycle save", err)}
		if !c.res.ok {
			continue
		}
		entry := append([]any(nil), c.req.entry...)
		entry[1] = strconv.FormatInt(rev, 10)
		if _, seen := entries[c.req.base]; !seen {
			agents = append(agents, c.req.base)
		}
		entries[c.req.base] = append(entries[c.req.base], entry...)
	}
	if len(agents) == 0 {
		return
	}
	scripts = scripts[:0]
	for _, base := range agents {
		scripts = append(scripts, scriptCall{keys: []string{base + ":m", base + ":exp"}, args: append([]any{base}, entries[base]...)})
	}
	failed := map[string]error{}
	for i, cmd := range evalOn(ctx, r.conn, r.conn.unshared, lifecycleIndexScript, scripts) {
		if err := cmd.Err(); err != nil {
			failed[agents[i]] = r.conn.fail("lifecycle save: the record is saved but its indexes are not", err)
		}
	}
	for _, c := range calls {
		if err, ok := failed[c.req.base]; ok && c.res.ok {
			c.res.err = err
		}
	}
}

func (r *redisLifecycle) List(ctx context.Context, f LifecycleFilter, cursor string, limit int) ([]TaskLifecycle, string, error) {
	after, paged, err := decodeLifecycleCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	index := indexKey(r.indexBase(f.Agent), f)
	// No entry scored above maxScore can match InactiveSince: a record
	// active before it has a score at most its score.
	maxScore := math.Inf(1)
	if !f.InactiveSince.IsZero() {
		maxScore = activityScore(f.InactiveSince)
	}
	// query is where the next read starts, the last entry read; after is
	// the last entry handed out or skipped as stale, which the next page
	// starts after. query trails after only while a read that restarted at
	// the first entry of a score passes entries already seen.
	query, started := after, paged
	var out []TaskLifecycle
	for range lifecycleListRounds {
		want := limit - len(out)
		raw, err := r.scanIndex(ctx, index, query, started, want+1)
		if err != nil {
			return nil, "", err
		}
		end := len(raw) <= want
		var batch []lifecyclePos
		for _, p := range raw {
			if len(batch) == want {
				end = false
				break
			}
			if p.score > maxScore {
				end = true
				break
			}
			query, started = p, true
			if paged && !after.before(p) {
				continue
			}
			batch = append(batch, p)
			after, paged = p, true
		}
		recs, err := r.fetch(ctx, f, batch)
		if err != nil {
			return nil, "", err
		}
		out = append(out, recs...)
		if end {
			return out, "", nil
		}
		if len(out) == limit {
			break
		}
	}
	if !paged {
		return out, "", nil
	}
	return out, encodeLifecycleCursor(after), nil
}

// scanIndex reads up to count entries of index after from (from the start
// when started is false).
func (r *redisLifecycle) scanIndex(ctx context.Context, index string, from lifecyclePos, started bool, count int) ([]lifecyclePos, error) {
	score, member := "", ""
	if started {
		score, member = strconv.FormatFloat(from.score, 'g', -1, 64), from.member
	}
	v, err := lifecycleScanScript.Run(ctx, r.conn.client, []string{index}, score, member, count).StringSlice()
	if err != nil {
		return nil, r.conn.fail("lifecycle list", err)
	}
	if len(v)%2 != 0 {
		return nil, fmt.Errorf("store: lifecycle list: index %q: unexpected reply of %d elements", index, len(v))
	}
	out := make([]lifecyclePos, 0, len(v)/2)
	for i := 0; i < len(v); i += 2 {
		s, err := strconv.ParseFloat(v[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("store: lifecycle list: index %q: score %.32q: %w", index, v[i+1], err)
		}
		out = append(out, lifecyclePos{score: s, member: v[i]})
	}
	return out, nil
}

// fetch reads the records the entries name that match f, in one pipeline,
// which go-redis splits by slot on Cluster; records that are gone are left
// out.
func (r *redisLifecycle) fetch(ctx context.Context, f LifecycleFilter, entries []lifecyclePos) ([]TaskLifecycle, error) {
	ids := make([]string, len(entries))
	keys := make([]string, len(entries))
	cmds := make([]*redis.MapStringStringCmd, len(entries))
	pipe := r.conn.client.Pipeline()
	for i, p := range entries {
		id, err := unescape(p.member)
		if err != nil || id == "" {
			return nil, fmt.Errorf("store: lifecycle list: agent %q: index member %.64q is not an escaped task id", f.Agent, p.member)
		}
		ids[i], keys[i] = id, r.recordKey(f.Agent, id)
		cmds[i] = pipe.HGetAll(ctx, keys[i])
	}
	// Exec reports the first failed command; each one is examined below.
	_, _ = pipe.Exec(ctx)
	var out []TaskLifecycle
	for i, c := range cmds {
		rec, found, err := readHash(r.conn, "lifecycle list", keys[i], c, func(h map[string]string) (TaskLifecycle, error) {
			return decodeLifecycle(f.Agent, ids[i], h)
		})
		if err != nil {
			return nil, err
		}
		if found && f.matches(&rec) {
			out = append(out, rec)
		}
	}
	return out, nil
}

func (r *redisLifecycle) CountByState(ctx context.Context, agent string) (map[string]int, error) {
	base := r.indexBase(agent)
	keys := []string{base + ":m", base + ":exp"}
	for _, s := range r.states {
		keys = append(keys, indexKey(base, LifecycleFilter{State: s}))
	}
	counts, err := lifecycleCountScript.Run(ctx, r.conn.client, keys, base).Int64Slice()
	if err != nil {
		return nil, r.conn.fail("lifecycle count", err)
	}
	if len(counts) != len(r.states) {
		return nil, fmt.Errorf("store: lifecycle count: agent %q: %d counts for %d states", agent, len(counts), len(r.states))
	}
	out := map[string]int{}
	for i, n := range counts {
		if n > 0 {
			out[r.states[i]] = int(n)
		}
	}
	return out, nil
}

func (r *redisLifecycle) Delete(ctx context.Context, agent, taskID string) (bool, error) {
	key := r.recordKey(agent, taskID)
	v, err := lifecycleDeleteScript.Run(ctx, r.conn.client, []string{key}).StringSlice()
	if err != nil {
		return false, r.conn.fail("lifecycle delete", err)
	}
	if len(v) != 2 {
		return false, fmt.Errorf("store: lifecycle delete: key %q: unexpected reply of %d elements", key, len(v))
	}
	switch v[0] {
	case "held":
		return false, nil
	case "deleted", "absent":
	default:
		return false, fmt.Errorf("store: lifecycle delete: key %q: unknown outcome %.16q", key, v[0])
	}
	// An absent record's index entries are cleaned up too: they are what a
	// failed index step left behind.
	base := r.indexBase(agent)
	err = lifecycleUnindexScript.Run(ctx, r.conn.client, []string{base + ":m", base + ":exp"}, base, escape(taskID), v[1]).Err()
	return v[0] == "deleted", r.conn.fail("lifecycle delete: the record is deleted but its index entries are not", err)
}

func (r *redisLifecycle) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	return r.conn.acted("lease", leaseScript.Run(ctx, r.conn.client, []string{r.conn.keys.tagged(leaseFamily, name)}, holder, millis(ttl)))
}

// lifecycleTransitionJSON is one History entry in the hist field.
type lifecycleTransitionJSON struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	At   time.Time `json:"at"`
}

// appendHistory writes the hist field as json.Marshal writes a slice of
// lifecycleTransitionJSON, without its reflection: every record save
// writes it. State names need no escaping (normalizeLifecycle admits only
// package a2a's names) and times are in UTC, in a year RFC 3339 can write.
func appendHistory(b []byte, hist []TaskTransition) []byte {
	b = append(b, '[')
	for i, tr := range hist {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"from":"`...)
		b = append(b, tr.From...)
		b = append(b, `","to":"`...)
		b = append(b, tr.To...)
		b = append(b, `","at":"`...)
		b = tr.At.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `"}`...)
	}
	return append(b, ']')
}

// encodeLifecycle renders the values of lifecycleFields for a normalized
// record; the array's length keeps the two in step.
func encodeLifecycle(rec *TaskLifecycle) [len(lifecycleFields)]any {
	h := appendHistory(make([]byte, 0, 16+80*len(rec.History)), rec.History)
	return [...]any{
		lifecycleFormat,
		rec.Tenant, rec.Subject, rec.ContextID, rec.Version, rec.State,
		rec.StateSince.Format(time.RFC3339Nano),
		rec.Created.Format(time.RFC3339Nano),
		rec.LastActivity.Format(time.RFC3339Nano),
		h,
		strconv.Itoa(rec.Subscribers),
		rec.EndedBy,
		flag(rec.Escalated),
		flag(rec.LegalHold),
	}
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

var errLifecycleField = errors.New("lifecycle record field")

// decodeLifecycle reads a record hash. It accepts only what encodeLifecycle
// and the save script write.
func decodeLifecycle(agent, taskID string, h map[string]string) (TaskLifecycle, error) {
	if v := h["v"]; v != lifecycleFormat {
		return TaskLifecycle{}, fmt.Errorf("lifecycle record has unknown format version %.8q", v)
	}
	rec := TaskLifecycle{
		Agent: agent, TaskID: taskID,
		Tenant: h["ten"], Subject: h["sub"], ContextID: h["ctx"], Version: h["ver"], State: h["st"],
		EndedBy: h["end"],
	}
	var err error
	if rec.Rev, err = strconv.ParseInt(h["rev"], 10, 64); err != nil || rec.Rev <= 0 {
		return TaskLifecycle{}, fmt.Errorf("%w rev %.24q is not a revision", errLifecycleField, h["rev"])
	}
	if rec.Tenant == "" {
		return TaskLifecycle{}, fmt.Errorf("%w ten is empty", errLifecycleField)
	}
	if !canonicalState(rec.State) {
		return TaskLifecycle{}, fmt.Errorf("%w st %.24q is not a state name", errLifecycleField, rec.State)
	}
	for _, t := range []struct {
		field string
		at    *time.Time
	}{{"since", &rec.StateSince}, {"crt", &rec.Created}, {"act", &rec.LastActivity}} {
		if *t.at, err = time.Parse(time.RFC3339Nano, h[t.field]); err != nil {
			return TaskLifecycle{}, fmt.Errorf("%w %s: %w", errLifecycleField, t.field, err)
		}
	}
	var hist []lifecycleTransitionJSON
	if err := json.Unmarshal([]byte(h["hist"]), &hist); err != nil {
		return TaskLifecycle{}, fmt.Errorf("%w hist: %w", errLifecycleField, err)
	}
	if len(hist) > MaxLifecycleHistory {
		return TaskLifecycle{}, fmt.Errorf("%w hist: %d transitions, over the limit of %d", errLifecycleField, len(hist), MaxLifecycleHistory)
	}
	if len(hist) > 0 {
		rec.History = make([]TaskTransition, len(hist))
		for i, tr := range hist {
			if tr.From != "" && !canonicalState(tr.From) || !canonicalState(tr.To) {
				return TaskLifecycle{}, fmt.Errorf("%w hist: transition %d from %.24q to %.24q names no state", errLifecycleField, i, tr.From, tr.To)
			}
			rec.History[i] = TaskTransition{From: tr.From, To: tr.To, At: tr.At.UTC()}
		}
	}
	if rec.Subscribers, err = strconv.Atoi(h["subs"]); err != nil || rec.Subscribers < 0 {
		return TaskLifecycle{}, fmt.Errorf("%w subs %.24q is not a count", errLifecycleField, h["subs"])
	}
	for _, b := range []struct {
		field string
		to    *bool
	}{{"esc", &rec.Escalated}, {"hold", &rec.LegalHold}} {
		switch h[b.field] {
		case "1":
			*b.to = true
		case "0":
		default:
			return TaskLifecycle{}, fmt.Errorf("%w %s %.8q is not 0 or 1", errLifecycleField, b.field, h[b.field])
		}
	}
	return rec, nil
}
