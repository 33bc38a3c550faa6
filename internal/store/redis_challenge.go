package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Challenge keys. The task's current challenge is one hash, and its sealed
// credential one string, both tagged by the task's reference so that every
// transition is one script on one slot:
//
//	<prefix>:ach:{<agent>:t:<task id>}    hash
//	  id     challenge id
//	  ctx    context id          ten, sub   tenant, subject
//	  ver    protocol version    sch        scheme
//	  scp    scopes, a JSON array of strings
//	  url    authorization URL
//	  st     status              m          method
//	  crt, exp, cmp, usd   created, expires, completed, used: Unix ms
//	  cu     when the credential's lifetime ends, Unix ms
//	  ost    digest of the bound OAuth state
//	  ovf    sealed PKCE verifier
//	<prefix>:achc:{<agent>:t:<task id>}   sealed credential, expiring
//	                                      with the token or the challenge
//
// Beside them, each on its own tag:
//
//	<prefix>:achi:{<id>}          "<agent>|<task id>" (escaped): Get by id
//	<prefix>:achs:{<digest>}      "<agent>|<task id>": OAuth state, deleted
//	                              on first read (GETDEL)
//	<prefix>:achx:{<agent>}       sorted set of "<task id>|<id>", score the
//	                              expiry in Unix ms: what Due reads
//
// The id index and the expiry set are written after the record, in a
// second round trip. A record found by Open is indexed again, so a crash
// between the two heals at the task's next auth-required event; a
// challenge missing from the expiry set is still refused once expired, it
// is only not announced. A lookup through an index always checks the id in
// the record, so a replaced challenge is never found by its old id.
const (
	challengeFamily      = "ach"
	challengeCredFamily  = "achc"
	challengeIDFamily    = "achi"
	challengeStateFamily = "achs"
	challengeDueFamily   = "achx"
)

// challengeStatusPrelude is shared by the transition scripts: KEYS[1] is
// the record, ARGV[1] the challenge id ("" to take the current one),
// ARGV[2] now in Unix ms. Replies start with a code: 1 done, 0 nothing to
// do, -1 not found, -2 expired, -3 wrong status.
const challengeStatusPrelude = `
local function current(id)
  local cur = redis.call('HGET', KEYS[1], 'id')
  if not cur or (id ~= '' and cur ~= id) then
    return nil
  end
  return redis.call('HGET', KEYS[1], 'st'), tonumber(redis.call('HGET', KEYS[1], 'exp'))
end
local function pending(st)
  return st == 'open' or st == 'completed'
end
local function lapsed(now)
  return tonumber(redis.call('HGET', KEYS[1], 'cu') or '0') <= now
end
-- refuse returns the reply refusing a transition of challenge id that
-- needs status want at now, or nil and the challenge's expiry.
local function refuse(id, want, now)
  local st, exp = current(id)
  if not st then return {-1} end
  if st == 'expired' or (pending(st) and exp <= now) then return {-2} end
  if st ~= want then return {-3} end
  return nil, exp
end
`

var (
	challengeOpenScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'st')
local cur = redis.call('HGET', KEYS[1], 'id')
if (st == 'open' or st == 'completed' or st == 'expired') and cur ~= ARGV[2] then
  return {0, redis.call('HGETALL', KEYS[1])}
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {1, redis.call('HGETALL', KEYS[1])}
`)
	challengeCompleteScript = redis.NewScript(challengeStatusPrelude + `
local now = tonumber(ARGV[2])
local refused, exp = refuse(ARGV[1], 'open', now)
if refused then return refused end
local ttl = math.min(tonumber(ARGV[5]), exp - now)
redis.call('SET', KEYS[2], ARGV[4], 'PX', ttl)
redis.call('HSET', KEYS[1], 'st', 'completed', 'm', ARGV[3], 'cmp', ARGV[2], 'cu', string.format('%.0f', now + ttl))
redis.call('HDEL', KEYS[1], 'ost', 'ovf')
return {1, redis.call('HGETALL', KEYS[1])}
`)
	challengeBeginScript = redis.NewScript(challengeStatusPrelude + `
local refused = refuse(ARGV[1], 'open', tonumber(ARGV[2]))
if refused then return refused end
local prev = redis.call('HGET', KEYS[1], 'ost') or ''
redis.call('HSET', KEYS[1], 'ost', ARGV[3], 'ovf', ARGV[4])
return {1, redis.call('HGETALL', KEYS[1]), prev}
`)
	challengeTakeScript = redis.NewScript(challengeStatusPrelude + `
if not current('') or redis.call('HGET', KEYS[1], 'ost') ~= ARGV[3] then return {-1} end
local verifier = redis.call('HGET', KEYS[1], 'ovf')
redis.call('HDEL', KEYS[1], 'ost', 'ovf')
local refused = refuse('', 'open', tonumber(ARGV[2]))
if refused then return refused end
return {1, redis.call('HGETALL', KEYS[1]), verifier}
`)
	challengeUseScript = redis.NewScript(challengeStatusPrelude + `
local now = tonumber(ARGV[2])
local refused = refuse(ARGV[1], 'completed', now)
if refused then return refused end
local cred = redis.call('GET', KEYS[2])
if not cred or lapsed(now) then return {-2} end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'st', 'used', 'usd', ARGV[2])
return {1, redis.call('HGETALL', KEYS[1]), cred}
`)
	challengeExpireScript = redis.NewScript(challengeStatusPrelude + `
local st, exp = current(ARGV[1])
if not st then return {-1} end
local now = tonumber(ARGV[2])
local gone = st == 'completed' and (redis.call('EXISTS', KEYS[2]) == 0 or lapsed(now))
if pending(st) and (exp <= now or gone) then
  redis.call('HSET', KEYS[1], 'st', 'expired')
  redis.call('HDEL', KEYS[1], 'ost', 'ovf')
  redis.call('DEL', KEYS[2])
  return {1, redis.call('HGETALL', KEYS[1])}
end
return {0, redis.call('HGETALL', KEYS[1])}
`)
	challengeCloseScript = redis.NewScript(challengeStatusPrelude + `
local st = current('')
if not st or st == 'closed' then return {0} end
local before = redis.call('HGETALL', KEYS[1])
redis.call('HSET', KEYS[1], 'st', 'closed')
redis.call('HDEL', KEYS[1], 'ost', 'ovf')
redis.call('DEL', KEYS[2])
return {1, before}
`)
)

type redisChallenges struct {
	conn *redisConn
}

var _ Challenges = (*redisChallenges)(nil)

func (r *redisChallenges) taskKeys(agent, taskID string) []string {
	ref := Ref{Kind: RefTask, ID: taskID}
	return []string{r.conn.keys.refTagged(challengeFamily, agent, ref), r.conn.keys.refTagged(challengeCredFamily, agent, ref)}
}

func (r *redisChallenges) Open(ctx context.Context, c Challenge, replace string, keep time.Duration) (Challenge, bool, error) {
	scopes, _ := json.Marshal(append([]string{}, c.Scopes...))
	ttl := c.Expires.Sub(c.Created) + keep
	args := []any{millis(ttl), replace,
		"id", c.ID, "ctx", c.ContextID, "ten", c.Tenant, "sub", c.Subject, "ver", c.Version,
		"sch", c.Scheme, "scp", string(scopes), "url", c.AuthorizationURL, "st", ChallengeOpen,
		"crt", unixMs(c.Created), "exp", unixMs(c.Expires)}
	code, cur, _, err := r.script(ctx, "challenge open", challengeOpenScript, c.Agent, c.TaskID, args...)
	if err != nil {
		return Challenge{}, false, err
	}
	if cur.Status == ChallengeOpen || cur.Status == ChallengeCompleted {
		pipe := r.conn.client.Pipeline()
		pipe.Set(ctx, r.conn.keys.tagged(challengeIDFamily, cur.ID), escapePair(c.Agent, c.TaskID), ttl)
		pipe.ZAdd(ctx, r.conn.keys.tagged(challengeDueFamily, c.Agent), redis.Z{Score: float64(cur.Expires.UnixMilli()), Member: escapePair(c.TaskID, cur.ID)})
		if _, err := pipe.Exec(ctx); err != nil {
			return Challenge{}, false, r.conn.fail("challenge index", err)
		}
	}
	return cur, code == 1, nil
}

func (r *redisChallenges) Get(ctx context.Context, id string) (Challenge, bool, error) {
	key := r.conn.keys.tagged(challengeIDFamily, id)
	ref, ok, err := readValue(r.conn, "challenge lookup", key, r.conn.client.Get(ctx, key), parseTaskRef)
	if err != nil || !ok {
		return Challenge{}, false, err
	}
	c, ok, err := r.Current(ctx, ref.Agent, ref.TaskID)
	if err != nil || !ok || c.ID != id {
		return Challenge{}, false, err
	}
	return c, true, nil
}

func (r *redisChallenges) Current(ctx context.Context, agent, taskID string) (Challenge, bool, error) {
	key := r.taskKeys(agent, taskID)[0]
	return readHash(r.conn, "challenge get", key, r.conn.client.HGetAll(ctx, key), func(f map[string]string) (Challenge, error) {
		return decodeChallenge(agent, taskID, f)
	})
}

// byID is Get, with ErrChallengeNotFound for a challenge it does not find.
func (r *redisChallenges) byID(ctx context.Context, id string) (Challenge, error) {
	c, ok, err := r.Get(ctx, id)
	if err == nil && !ok {
		err = ErrChallengeNotFound
	}
	return c, err
}

func (r *redisChallenges) Complete(ctx context.Context, id, method string, sealed []byte, ttl time.Duration, now time.Time) (Challenge, error) {
	c, err := r.byID(ctx, id)
	if err != nil {
		return Challenge{}, err
	}
	c, _, err = r.run(ctx, "challenge complete", challengeCompleteScript, c.Agent, c.TaskID, id, now, method, sealed, millis(ttl))
	return c, err
}

func (r *redisChallenges) BeginOAuth(ctx context.Context, id, stateDigest string, sealedVerifier []byte, now time.Time) (Challenge, error) {
	c, err := r.byID(ctx, id)
	if err != nil {
		return Challenge{}, err
	}
	c, prev, err := r.run(ctx, "challenge oauth begin", challengeBeginScript, c.Agent, c.TaskID, id, now, stateDigest, sealedVerifier)
	if err != nil {
		return Challenge{}, err
	}
	pipe := r.conn.client.Pipeline()
	if prev != "" {
		pipe.Del(ctx, r.conn.keys.tagged(challengeStateFamily, prev))
	}
	pipe.Set(ctx, r.conn.keys.tagged(challengeStateFamily, stateDigest), escapePair(c.Agent, c.TaskID), max(c.Expires.Sub(now), time.Millisecond))
	if _, err := pipe.Exec(ctx); err != nil {
		return Challenge{}, r.conn.fail("challenge oauth state", err)
	}
	return c, nil
}

func (r *redisChallenges) TakeOAuth(ctx context.Context, stateDigest string, now time.Time) (Challenge, []byte, error) {
	key := r.conn.keys.tagged(challengeStateFamily, stateDigest)
	ref, ok, err := readValue(r.conn, "challenge lookup", key, r.conn.client.GetDel(ctx, key), parseTaskRef)
	if err == nil && !ok {
		err = ErrChallengeNotFound
	}
	if err != nil {
		return Challenge{}, nil, err
	}
	c, verifier, err := r.run(ctx, "challenge oauth take", challengeTakeScript, ref.Agent, ref.TaskID, "", now, stateDigest)
	if err != nil {
		return Challenge{}, nil, err
	}
	return c, []byte(verifier), nil
}

func (r *redisChallenges) Use(ctx context.Context, agent, taskID, id string, now time.Time) (Challenge, []byte, error) {
	c, cred, err := r.run(ctx, "challenge use", challengeUseScript, agent, taskID, id, now)
	if err != nil {
		return Challenge{}, nil, err
	}
	// A used challenge is never due.
	if err := r.undue(ctx, agent, taskID, id); err != nil {
		return Challenge{}, nil, err
	}
	return c, []byte(cred), nil
}

func (r *redisChallenges) Expire(ctx context.Context, agent, taskID, id string, now time.Time) (Challenge, bool, error) {
	code, c, _, err := r.script(ctx, "challenge expire", challengeExpireScript, agent, taskID, id, unixMs(now))
	if err != nil {
		return Challenge{}, false, err
	}
	if code == -1 || !c.Pending(now) {
		// Gone, replaced or no longer pending: not due any more.
		err = r.undue(ctx, agent, taskID, id)
	}
	if err = cmp.Or(err, challengeRefusals[code]); err != nil {
		return Challenge{}, false, err
	}
	return c, code == 1, nil
}

func (r *redisChallenges) Close(ctx context.Context, agent, taskID string) (Challenge, bool, error) {
	code, c, _, err := r.script(ctx, "challenge close", challengeCloseScript, agent, taskID, "", 0)
	if err != nil || code != 1 {
		return Challenge{}, false, err
	}
	if err := r.undue(ctx, agent, taskID, c.ID); err != nil {
		return Challenge{}, false, err
	}
	return c, true, nil
}

func (r *redisChallenges) Due(ctx context.Context, agent string, now time.Time, limit int) ([]ChallengeRef, error) {
	key := r.conn.keys.tagged(challengeDueFamily, agent)
	members, err := r.conn.client.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: unixMs(now), Count: int64(limit)}).Result()
	if err != nil {
		return nil, r.conn.fail("challenge due", err)
	}
	out := make([]ChallengeRef, 0, len(members))
	for _, m := range members {
		taskID, cid, err := unescapePair(m)
		if err != nil {
			return nil, fmt.Errorf("store: challenge due: member %q: %w", m, err)
		}
		out = append(out, ChallengeRef{Agent: agent, TaskID: taskID, ID: cid})
	}
	return out, nil
}

// undue takes a challenge out of the agent's expiry set.
func (r *redisChallenges) undue(ctx context.Context, agent, taskID, id string) error {
	return r.conn.fail("challenge unindex", r.conn.client.ZRem(ctx, r.conn.keys.tagged(challengeDueFamily, agent), escapePair(taskID, id)).Err())
}

// script runs s on a task's keys and decodes its reply, {code, [fields],
// [extra]}.
func (r *redisChallenges) script(ctx context.Context, op string, s *redis.Script, agent, taskID string, args ...any) (int64, Challenge, string, error) {
	v, err := s.Run(ctx, r.conn.client, r.taskKeys(agent, taskID), args...).Slice()
	if err != nil {
		return 0, Challenge{}, "", r.conn.fail(op, err)
	}
	if len(v) == 0 {
		return 0, Challenge{}, "", fmt.Errorf("store: %s: empty script reply", op)
	}
	code, _ := v[0].(int64)
	if len(v) < 2 {
		return code, Challenge{}, "", nil
	}
	list, _ := v[1].([]any)
	fields := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		k, _ := list[i].(string)
		fields[k], _ = list[i+1].(string)
	}
	c, err := decodeChallenge(agent, taskID, fields)
	if err != nil {
		return 0, Challenge{}, "", fmt.Errorf("store: %s: %w", op, err)
	}
	var extra string
	if len(v) > 2 {
		extra, _ = v[2].(string)
	}
	return code, c, extra, nil
}

// challengeRefusals are the errors of the scripts' refusal codes.
var challengeRefusals = map[int64]error{-1: ErrChallengeNotFound, -2: ErrChallengeExpired, -3: ErrChallengeState}

// run runs a transition script on a task's record and maps its code.
func (r *redisChallenges) run(ctx context.Context, op string, s *redis.Script, agent, taskID, id string, now time.Time, extra ...any) (Challenge, string, error) {
	code, c, tail, err := r.script(ctx, op, s, agent, taskID, append([]any{id, unixMs(now)}, extra...)...)
	if err = cmp.Or(err, challengeRefusals[code]); err != nil {
		return Challenge{}, "", err
	}
	return c, tail, nil
}

func decodeChallenge(agent, taskID string, f map[string]string) (Challenge, error) {
	c := Challenge{
		ID: f["id"], Agent: agent, TaskID: taskID, ContextID: f["ctx"], Tenant: f["ten"], Subject: f["sub"],
		Version: f["ver"], Scheme: f["sch"], AuthorizationURL: f["url"], Status: f["st"], Method: f["m"],
	}
	if c.ID == "" {
		return Challenge{}, fmt.Errorf("challenge of task %q: record without id", taskID)
	}
	if err := json.Unmarshal([]byte(f["scp"]), &c.Scopes); err != nil {
		return Challenge{}, fmt.Errorf("challenge %q: scopes: %w", c.ID, err)
	}
	for _, t := range []struct {
		field string
		dst   *time.Time
	}{{"crt", &c.Created}, {"exp", &c.Expires}, {"cmp", &c.CompletedAt}, {"usd", &c.UsedAt}} {
		if f[t.field] == "" {
			continue
		}
		ms, err := strconv.ParseInt(f[t.field], 10, 64)
		if err != nil {
			return Challenge{}, fmt.Errorf("challenge %q: %s: %w", c.ID, t.field, err)
		}
		*t.dst = time.UnixMilli(ms).UTC()
	}
	return c, nil
}

func unixMs(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
