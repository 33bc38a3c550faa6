package redistest

import (
	"testing"
)

func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five redis-server processes and waits for a failover")
	}
	ctx := testContext(t)
	s := StartSentinel(t, 1, 3)
	if got := len(s.Addrs()); got != 3 {
		t.Fatalf("len(Addrs()) = %d, want 3", got)
	}
	client := s.Client(t)
	if err := client.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatalf("SET through the sentinels: %v", err)
	}
	// Replication is asynchronous: make sure the replica has the write
	// before its master dies.
	if n, err := client.Wait(ctx, 1, 0).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want the replica to acknowledge", n, err)
	}

	old := s.KillMaster(t)
	master := s.WaitFailover(t, old, testTimeout)
	if master == old {
		t.Fatalf("the sentinels still name %s", old)
	}
	err := eventually(ctx, func() error { return client.Set(ctx, "k2", "after", 0).Err() })
	if err != nil {
		t.Fatalf("SET after failover: %v", err)
	}
	if got, err := client.Get(ctx, "k").Result(); err != nil || got != "before" {
		t.Fatalf("GET k after failover = %q, %v; want \"before\"", got, err)
	}
	if got := s.Master(t); got != master {
		t.Fatalf("Master() = %s, want %s", got, master)
	}
}
