package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ownership keys, one string per reference:
//
//	<prefix>:own:{<agent>:t:<task id>}      -> "1|<tenant>|<subject>"
//	<prefix>:own:{<agent>:c:<context id>}   -> "1|<tenant>|<subject>"
//
// Agent, ids, tenant and subject are escaped as keyspace describes, so
// ":" and "|" in them cannot make two references or two owners look alike.
// Each key expires OwnershipTTL after it was created (SET NX PX).
//
// Why one key per reference, with the reference as hash tag: ownership is
// read and written on every request, so its keys must spread over all
// Cluster shards rather than sit in one hot slot; a Claim touches each key on
// its own, so no multi-key command needs them together. A future family that
// must change a task's record atomically with its owner (lifecycle, say)
// uses the same tag and lands in the same slot.
const ownershipFamily = "own"

// claimAttempts bounds Claim's retries for records that expired between the
// SET NX that found them and the GET that read them, which only a very short
// OwnershipTTL makes likely.
const claimAttempts = 3

type redisOwnership struct {
	conn *redisConn
	ttl  time.Duration
}

var _ Ownership = (*redisOwnership)(nil)

func newRedisOwnership(conn *redisConn, ttl time.Duration) *redisOwnership {
	return &redisOwnership{conn: conn, ttl: ttl}
}

// Claim sends SET NX PX and GET for every ref in one pipeline: one round
// trip, split per node by go-redis in cluster mode, and shared with the
// Claims made at the same time.
func (r *redisOwnership) Claim(ctx context.Context, agent string, refs []Ref, owner Owner) ([]Owner, error) {
	if err := r.conn.gate.check(); err != nil {
		return nil, err
	}
	if err := checkRefs(agent, refs); err != nil {
		return nil, err
	}
	if err := checkOwner(owner); err != nil {
		return nil, err
	}
	out := make([]Owner, len(refs))
	keys := r.keys(agent, refs)
	value := encodeOwner(owner)
	// Every answer a caller waits for records its task and context, so
	// under load many Claims are due at once: the first attempt shares a
	// pipeline with them.
	sets := make([]*redis.BoolCmd, len(keys))
	gets := make([]*redis.StringCmd, len(keys))
	if err := r.conn.piped(ctx, func(ctx context.Context, pipe redis.Pipeliner) {
		for i, k := range keys {
			sets[i] = pipe.SetNX(ctx, k, value, r.ttl)
			gets[i] = pipe.Get(ctx, k)
		}
	}); err != nil {
		return nil, r.conn.fail("ownership claim", err)
	}
	var pending []int
	for i := range keys {
		won, v, err := claimed(sets[i], gets[i])
		switch {
		case err != nil:
			return nil, r.conn.fail("ownership claim", err)
		case won:
			out[i] = owner
		case v == "":
			pending = append(pending, i)
		default:
			if out[i], err = decodeOwner(v); err != nil {
				return nil, fmt.Errorf("store: ownership claim: key %q: %w", keys[i], err)
			}
		}
	}
	// Records that expired between their SET NX and their GET are claimed
	// again, on their own.
	for attempt := 1; len(pending) > 0; attempt++ {
		if attempt == claimAttempts {
			return nil, fmt.Errorf("store: ownership claim: %d records expired while being read %d times in a row; ownership_ttl %s is too short",
				len(pending), claimAttempts, r.ttl)
		}
		sets := make([]*redis.BoolCmd, len(pending))
		gets := make([]*redis.StringCmd, len(pending))
		pipe := r.conn.client.Pipeline()
		for j, i := range pending {
			sets[j] = pipe.SetNX(ctx, keys[i], value, r.ttl)
			gets[j] = pipe.Get(ctx, keys[i])
		}
		// Exec reports the first failed command; each one is examined below.
		_, _ = pipe.Exec(ctx)

		var vanished []int
		for j, i := range pending {
			won, v, err := claimed(sets[j], gets[j])
			if err != nil {
				return nil, r.conn.fail("ownership claim", err)
			}
			switch {
			case won:
				out[i] = owner
			case v == "":
				vanished = append(vanished, i)
			default:
				if out[i], err = decodeOwner(v); err != nil {
					return nil, fmt.Errorf("store: ownership claim: key %q: %w", keys[i], err)
				}
			}
		}
		pending = vanished
	}
	return out, nil
}

// claimed reads the replies of one key's SET NX and GET: whether the SET
// NX won, else the value on record ("" if the record expired in between).
func claimed(set *redis.BoolCmd, get *redis.StringCmd) (bool, string, error) {
	won, err := set.Result()
	if err != nil || won {
		return won, "", err
	}
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return false, "", nil
	}
	return false, v, err
}

// Lookup sends one GET per ref in one pipeline.
func (r *redisOwnership) Lookup(ctx context.Context, agent string, refs []Ref) ([]Owner, error) {
	if err := r.conn.gate.check(); err != nil {
		return nil, err
	}
	if err := checkRefs(agent, refs); err != nil {
		return nil, err
	}
	out := make([]Owner, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	keys := r.keys(agent, refs)
	gets := make([]*redis.StringCmd, len(refs))
	pipe := r.conn.client.Pipeline()
	for i, k := range keys {
		gets[i] = pipe.Get(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for i, g := range gets {
		v, err := g.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, r.conn.fail("ownership lookup", err)
		}
		if out[i], err = decodeOwner(v); err != nil {
			return nil, fmt.Errorf("store: ownership lookup: key %q: %w", keys[i], err)
		}
	}
	return out, nil
}

// Resolve sends the lookups' GETs and the claims' SET NX and GET in one
// pipeline. A claimed record that expired between its SET NX and its GET,
// which only a very short ownership_ttl makes possible, is claimed again
// with Claim.
func (r *redisOwnership) Resolve(ctx context.Context, agent string, lookups, claims []Ref, owner Owner) ([]Owner, []Owner, error) {
	if len(claims) == 0 {
		found, err := r.Lookup(ctx, agent, lookups)
		return found, nil, err
	}
	if len(lookups) == 0 {
		claimed, err := r.Claim(ctx, agent, claims, owner)
		return nil, claimed, err
	}
	found, claimed, _, err := r.resolve(ctx, agent, lookups, claims, owner, "")
	return found, claimed, err
}

var _ RecordResolver = (*redisOwnership)(nil)

// ResolveWithRecord adds the HGETALL of the task's lifecycle record to
// Resolve's pipeline. A record that cannot be read or decoded is left
// unread: the guard that wants it reads it again and decides what an
// unreadable record means.
func (r *redisOwnership) ResolveWithRecord(ctx context.Context, agent string, lookups, claims []Ref, owner Owner, taskID string) ([]Owner, []Owner, TaskRecord, error) {
	if err := checkLifecycleTask(agent, taskID); err != nil {
		return nil, nil, TaskRecord{}, err
	}
	recKey := r.conn.keys.refTagged(lifecycleFamily, agent, Ref{Kind: RefTask, ID: taskID})
	found, claimed, cmd, err := r.resolve(ctx, agent, lookups, claims, owner, recKey)
	if err != nil {
		return nil, nil, TaskRecord{}, err
	}
	var rec TaskRecord
	if fields, err := cmd.Result(); err == nil {
		rec.Read = true
		if len(fields) > 0 {
			if rec.Lifecycle, err = decodeLifecycle(agent, taskID, fields); err != nil {
				rec = TaskRecord{}
			} else {
				rec.Found = true
			}
		}
	}
	return found, claimed, rec, nil
}

// resolve is Resolve's pipeline, with the HGETALL of recKey when it is set.
func (r *redisOwnership) resolve(ctx context.Context, agent string, lookups, claims []Ref, owner Owner, recKey string) ([]Owner, []Owner, *redis.MapStringStringCmd, error) {
	if err := r.conn.gate.check(); err != nil {
		return nil, nil, nil, err
	}
	if err := checkRefs(agent, append(lookups[:len(lookups):len(lookups)], claims...)); err != nil {
		return nil, nil, nil, err
	}
	if len(claims) > 0 {
		if err := checkOwner(owner); err != nil {
			return nil, nil, nil, err
		}
	}
	lkeys, ckeys := r.keys(agent, lookups), r.keys(agent, claims)
	value := encodeOwner(owner)
	pipe := r.conn.client.Pipeline()
	gets := make([]*redis.StringCmd, len(lkeys))
	for i, k := range lkeys {
		gets[i] = pipe.Get(ctx, k)
	}
	sets := make([]*redis.BoolCmd, len(ckeys))
	cgets := make([]*redis.StringCmd, len(ckeys))
	for i, k := range ckeys {
		sets[i] = pipe.SetNX(ctx, k, value, r.ttl)
		cgets[i] = pipe.Get(ctx, k)
	}
	var rec *redis.MapStringStringCmd
	if recKey != "" {
		rec = pipe.HGetAll(ctx, recKey)
	}
	_, _ = pipe.Exec(ctx)

	found := make([]Owner, len(lookups))
	for i, g := range gets {
		o, ok, err := r.readOwner(g, lkeys[i], "ownership lookup")
		if err != nil {
			return nil, nil, nil, err
		}
		if ok {
			found[i] = o
		}
	}
	claimed := make([]Owner, len(claims))
	var vanished []Ref
	var vanishedAt []int
	for i := range sets {
		won, err := sets[i].Result()
		if err != nil {
			return nil, nil, nil, r.conn.fail("ownership claim", err)
		}
		if won {
			claimed[i] = owner
			continue
		}
		o, ok, err := r.readOwner(cgets[i], ckeys[i], "ownership claim")
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok {
			vanished, vanishedAt = append(vanished, claims[i]), append(vanishedAt, i)
			continue
		}
		claimed[i] = o
	}
	if len(vanished) > 0 {
		again, err := r.Claim(ctx, agent, vanished, owner)
		if err != nil {
			return nil, nil, nil, err
		}
		for j, i := range vanishedAt {
			claimed[i] = again[j]
		}
	}
	return found, claimed, rec, nil
}

// readOwner decodes a GET reply; ok is false when the key does not exist.
func (r *redisOwnership) readOwner(g *redis.StringCmd, key, op string) (Owner, bool, error) {
	v, err := g.Result()
	if errors.Is(err, redis.Nil) {
		return Owner{}, false, nil
	}
	if err != nil {
		return Owner{}, false, r.conn.fail(op, err)
	}
	o, err := decodeOwner(v)
	if err != nil {
		return Owner{}, false, fmt.Errorf("store: %s: key %q: %w", op, key, err)
	}
	return o, true, nil
}

func (r *redisOwnership) keys(agent string, refs []Ref) []string {
	keys := make([]string, len(refs))
	for i, ref := range refs {
		keys[i] = r.conn.keys.refTagged(ownershipFamily, agent, ref)
	}
	return keys
}
