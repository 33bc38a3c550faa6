package store

import (
	"context"
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

type redisOwnership struct {
	conn *redisConn
	ttl  time.Duration
}

var _ Ownership = (*redisOwnership)(nil)

// Claim sends one SET NX GET per ref in one pipeline: one round trip, split
// per node by go-redis in cluster mode. SET NX GET creates the record if
// there is none and otherwise returns it, atomically, so a record that
// expires meanwhile cannot be missed. Every answer a caller waits for
// records its task and context, so under load many Claims are due at once:
// they share the pipelines of conn.piped.
func (r *redisOwnership) Claim(ctx context.Context, agent string, refs []Ref, owner Owner) ([]Owner, error) {
	_, claimed, _, err := r.resolve(ctx, r.conn.piped, agent, nil, refs, owner, "")
	return claimed, err
}

// Lookup sends one GET per ref in one pipeline.
func (r *redisOwnership) Lookup(ctx context.Context, agent string, refs []Ref) ([]Owner, error) {
	found, _, _, err := r.resolve(ctx, r.conn.unshared, agent, refs, nil, Owner{}, "")
	return found, err
}

// Resolve sends the lookups' GETs and the claims' SET NX GET in one
// pipeline; claims alone share Claim's.
func (r *redisOwnership) Resolve(ctx context.Context, agent string, lookups, claims []Ref, owner Owner) ([]Owner, []Owner, error) {
	switch {
	case len(claims) == 0:
		found, err := r.Lookup(ctx, agent, lookups)
		return found, nil, err
	case len(lookups) == 0:
		claimed, err := r.Claim(ctx, agent, claims, owner)
		return nil, claimed, err
	}
	found, claimed, _, err := r.resolve(ctx, r.conn.unshared, agent, lookups, claims, owner, "")
	return found, claimed, err
}

var _ RecordResolver = (*redisOwnership)(nil)

// ResolveWithRecord adds the HGETALL of the task's lifecycle record to
// Resolve's pipeline. A record that cannot be read or decoded is left
// unread: the guard that wants it reads it again and decides what an
// unreadable record means.
func (r *redisOwnership) ResolveWithRecord(ctx context.Context, agent string, lookups, claims []Ref, owner Owner, taskID string) ([]Owner, []Owner, TaskRecord, error) {
	recKey := r.conn.keys.refTagged(lifecycleFamily, agent, Ref{Kind: RefTask, ID: taskID})
	found, claimed, cmd, err := r.resolve(ctx, r.conn.unshared, agent, lookups, claims, owner, recKey)
	if err != nil {
		return nil, nil, TaskRecord{}, err
	}
	var rec TaskRecord
	rec.Lifecycle, rec.Found, err = readHash(r.conn, "lifecycle get", recKey, cmd, func(h map[string]string) (TaskLifecycle, error) {
		return decodeLifecycle(agent, taskID, h)
	})
	if err != nil {
		return found, claimed, TaskRecord{}, nil
	}
	rec.Read = true
	return found, claimed, rec, nil
}

// resolve sends, with send, the GETs of lookups, the SET NX GETs of claims
// and, when recKey is set, its HGETALL, and reads the owners.
func (r *redisOwnership) resolve(ctx context.Context, send func(context.Context, piped) error, agent string, lookups, claims []Ref, owner Owner, recKey string) ([]Owner, []Owner, *redis.MapStringStringCmd, error) {
	lkeys, ckeys := r.keys(agent, lookups), r.keys(agent, claims)
	value := encodeOwner(owner)
	gets := make([]*redis.StringCmd, len(lkeys))
	sets := make([]*redis.StatusCmd, len(ckeys))
	var rec *redis.MapStringStringCmd
	if err := send(ctx, func(ctx context.Context, pipe redis.Pipeliner) {
		for i, k := range lkeys {
			gets[i] = pipe.Get(ctx, k)
		}
		for i, k := range ckeys {
			sets[i] = pipe.SetArgs(ctx, k, value, redis.SetArgs{Mode: "NX", Get: true, TTL: r.ttl})
		}
		if recKey != "" {
			rec = pipe.HGetAll(ctx, recKey)
		}
	}); err != nil {
		return nil, nil, nil, r.conn.fail("ownership claim", err)
	}
	found, err := readOwners(r.conn, "ownership lookup", gets, lkeys, Owner{})
	if err != nil {
		return nil, nil, nil, err
	}
	claimed, err := readOwners(r.conn, "ownership claim", sets, ckeys, owner)
	if err != nil {
		return nil, nil, nil, err
	}
	return found, claimed, rec, nil
}

// readOwners decodes the replies of GETs, or of SET GETs, of keys: the
// owner on record, or absent where there was none.
func readOwners[C interface{ Result() (string, error) }](c *redisConn, op string, cmds []C, keys []string, absent Owner) ([]Owner, error) {
	out := make([]Owner, len(cmds))
	for i, cmd := range cmds {
		o, found, err := readValue(c, op, keys[i], cmd, decodeOwner)
		if err != nil {
			return nil, err
		}
		if !found {
			o = absent
		}
		out[i] = o
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
