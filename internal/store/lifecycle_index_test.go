package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// lifecycleIndexOneByOne is the index script as it was before it ran its
// commands per batch: each entry in turn, unindexed and indexed again. It
// is the reference the batched script must agree with.
var lifecycleIndexOneByOne = redis.NewScript(lifecycleIndexPrelude + `
local now = now_ms()
prune(now)
for i = 2, #ARGV, 7 do
  local task, rev, state, open, tenant = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local current = indexed_rev(task)
  if not current or current < tonumber(rev) then
    unindex(task)
    for _, k in ipairs(index_keys(state, open, tenant)) do
      redis.call('ZADD', k, ARGV[i + 5], task)
    end
    redis.call('HSET', KEYS[1], task, rev .. '|' .. state .. '|' .. open .. '|' .. tenant)
    local ttl = tonumber(ARGV[i + 6])
    if ttl > 0 then
      redis.call('ZADD', KEYS[2], string.format('%.0f', now + ttl), task)
    end
  end
end
return 1
`)

// TestLifecycleIndexBatchMatchesOneByOne runs random batches of index
// entries (new tasks, state and tenant changes, stale and repeated
// entries, expiries set and cleared) through the batched script and the
// one-by-one reference, each on its own agent, and compares every index.
func TestLifecycleIndexBatchMatchesOneByOne(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	states := map[string]bool{"submitted": true, "working": true, "input-required": true, "completed": false, "failed": false}
	stateNames := []string{"submitted", "working", "input-required", "completed", "failed"}
	rng := rand.New(rand.NewPCG(21, 2))
	rev := map[string]int{}
	for round := range 300 {
		var args []any
		for range 1 + rng.IntN(6) {
			task := "t" + strconv.Itoa(rng.IntN(6))
			r := rev[task] + 1 + rng.IntN(3)
			if rng.IntN(5) == 0 {
				r = max(1, rev[task]-1) // stale or repeated
			}
			rev[task] = max(rev[task], r)
			state := stateNames[rng.IntN(len(stateNames))]
			ttl := "0"
			if rng.IntN(3) == 0 {
				ttl = "3600000"
			}
			args = append(args, task, strconv.Itoa(r), state, flag(states[state]), "ten"+strconv.Itoa(rng.IntN(2)),
				strconv.Itoa(1000+rng.IntN(50)), ttl)
		}
		for _, run := range []struct {
			base string
			s    *redis.Script
		}{{"x:lcx:{batched}", lifecycleIndexScript}, {"x:lcx:{reference}", lifecycleIndexOneByOne}} {
			if err := run.s.Run(ctx, client, []string{run.base + ":m", run.base + ":exp"}, append([]any{run.base}, args...)...).Err(); err != nil {
				t.Fatalf("round %d: %s: %v", round, run.base, err)
			}
		}
		got, want := indexDump(t, client, "x:lcx:{batched}"), indexDump(t, client, "x:lcx:{reference}")
		if got != want {
			t.Fatalf("round %d, entries %v:\nbatched:\n%s\nreference:\n%s", round, args, got, want)
		}
	}
}

// indexDump renders every index of base: sorted sets with scores (the
// expiry set's members only: its scores follow the server clock), the hash
// of indexed tasks.
func indexDump(t *testing.T, c *redis.Client, base string) string {
	t.Helper()
	ctx := testContext(t)
	keys, err := c.Keys(ctx, base+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		name := strings.TrimPrefix(k, base)
		switch name {
		case ":m":
			h := c.HGetAll(ctx, k).Val()
			fields := make([]string, 0, len(h))
			for f, v := range h {
				fields = append(fields, f+"="+v)
			}
			slices.Sort(fields)
			fmt.Fprintf(&b, "%s %v\n", name, fields)
		case ":exp":
			members := c.ZRange(ctx, k, 0, -1).Val()
			slices.Sort(members)
			fmt.Fprintf(&b, "%s %v\n", name, members)
		default:
			fmt.Fprintf(&b, "%s %v\n", name, c.ZRangeWithScores(ctx, k, 0, -1).Val())
		}
	}
	return b.String()
}
