package scaletest

import (
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Two gateway processes configured with a Sentinel master name instead of
// Cluster addresses: the same binary and checks, configuration only. The
// master is killed; the sentinels promote its replica, the gateways find
// it, and ownership and dedupe records written before the failover still
// hold.
func TestGatewaysThroughSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis master, a replica, three sentinels and two gateway processes")
	}
	s := redistest.StartSentinel(t, 1, 3)
	w := newWorld(t, 2, store.RedisOptions{Addrs: s.Addrs(), MasterName: s.MasterName()}, nil)
	acme, globex := w.caller(t, "acme", "alice"), w.caller(t, "globex", "bob")

	victims := w.createVictims(t, acme)
	w.checkIsolation(t, globex, victims)
	early := w.checkDedupeRetries(t, acme)
	w.checkConcurrentRetries(t, globex)
	if t.Failed() {
		t.FailNow()
	}
	// Replication is asynchronous: writes of the last moment before a
	// master dies may be lost (docs/production.md). WAIT returns once the
	// replica acknowledged every write so far, so the records the checks
	// below read were replicated before the master dies.
	if n, err := s.Client(t).Do(t.Context(), "WAIT", 1, 10_000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica = %d, %v", n, err)
	}

	killed := time.Now()
	old := s.KillMaster(t)
	s.WaitFailover(t, old, 60*time.Second)
	promoted := time.Now()
	settled := w.settle(t, victims[0])

	w.checkIsolation(t, globex, append(victims, w.createVictims(t, acme)...))
	w.checkReplay(t, early, nil)
	w.checkDedupeRetries(t, globex)
	t.Logf("sentinel failover (master SIGKILL to the replica promoted and known to every sentinel): %s", promoted.Sub(killed).Round(time.Millisecond))
	t.Logf("both gateways served again %s after the kill", settled.Sub(killed).Round(time.Millisecond))
}
