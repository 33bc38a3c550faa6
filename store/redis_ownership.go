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

// Claim sends SET NX PX and GET for every ref in one pipeline: one round
// trip, split per node by go-redis in cluster mode.
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
	pending := make([]int, len(refs))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
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
			won, err := sets[j].Result()
			if err != nil {
				return nil, r.conn.fail("ownership claim", err)
			}
			if won {
				out[i] = owner
				continue
			}
			v, err := gets[j].Result()
			if errors.Is(err, redis.Nil) {
				vanished = append(vanished, i)
				continue
			}
			if err != nil {
				return nil, r.conn.fail("ownership claim", err)
			}
			if out[i], err = decodeOwner(v); err != nil {
				return nil, fmt.Errorf("store: ownership claim: key %q: %w", keys[i], err)
			}
		}
		pending = vanished
	}
	return out, nil
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

func (r *redisOwnership) keys(agent string, refs []Ref) []string {
	keys := make([]string, len(refs))
	for i, ref := range refs {
		keys[i] = r.conn.keys.refTagged(ownershipFamily, agent, ref)
	}
	return keys
}
