package bench

import (
	"strings"
	"testing"
)

func TestSelectTargets(t *testing.T) {
	ts := []target{{name: TargetDirect}, {name: TargetJWTRedis}, {name: TargetJWTRedisDedupe}}
	all, err := selectTargets(ts, nil)
	if err != nil || len(all) != 3 {
		t.Fatalf("no selection: %v, %v; want all three", all, err)
	}
	some, err := selectTargets(ts, []string{TargetJWTRedisDedupe, TargetJWTRedis})
	if err != nil || len(some) != 2 || !some[TargetJWTRedis] || !some[TargetJWTRedisDedupe] || some[TargetDirect] {
		t.Fatalf("two named: %v, %v", some, err)
	}
	if _, err := selectTargets(ts, []string{TargetJWTRedis, "gw-jwt-redis-dedup"}); err == nil || !strings.Contains(err.Error(), `"gw-jwt-redis-dedup"`) {
		t.Fatalf("a misspelt target: %v, want an error naming it", err)
	}
}
