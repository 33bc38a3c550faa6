package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

func manyRefs(n int) []store.Ref {
	refs := make([]store.Ref, n)
	for i := range refs {
		refs[i] = store.Ref{Kind: store.RefTask, ID: fmt.Sprintf("task-%d", i)}
	}
	return refs
}

func openCluster(t *testing.T, c *redistest.Cluster, prefix string) store.Store {
	t.Helper()
	s, err := store.Open(testContext(t), store.Options{KeyPrefix: prefix, Redis: store.RedisOptions{Addrs: c.Addrs()}}, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestClusterSpreadAndDown checks that ownership keys are spread over every
// shard rather than one hot slot, and that a cluster that lost a shard for
// good is reported as unavailable.
func TestClusterSpreadAndDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node Redis Cluster")
	}
	ctx := testContext(t)
	c := redistest.StartCluster(t, 3, 0)
	s := openCluster(t, c, "spread")
	// Its event log and delivery queues live in different slots.
	if _, ok := store.RecordEnqueuerOf(s.EventLog()); ok {
		t.Fatal("RecordEnqueue on Cluster")
	}
	refs := manyRefs(300)
	owner := store.Owner{Tenant: "acme"}
	if _, err := s.Ownership().Claim(ctx, "agent", refs, owner); err != nil {
		t.Fatalf("Claim: %v", err)
	}

	var mu sync.Mutex
	perMaster := map[string]int{}
	err := c.Client(t).ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, _, err := m.Scan(ctx, 0, "spread:own:*", 1000).Result()
		mu.Lock()
		perMaster[m.Options().Addr] = len(keys)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	total := 0
	for addr, n := range perMaster {
		if n == 0 {
			t.Errorf("master %s holds no ownership keys: %v", addr, perMaster)
		}
		total += n
	}
	if len(perMaster) != 3 || total != len(refs) {
		t.Fatalf("keys per master = %v, want %d keys over 3 masters", perMaster, len(refs))
	}

	c.KillMaster(t, 0)
	// The shard has no replica, so the cluster stays down; every call must
	// say so rather than fail in some other way.
	if _, err := s.Ownership().Claim(ctx, "agent", refs, owner); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Claim with a shard down: err = %v, want ErrUnavailable", err)
	}
	if _, err := s.Ownership().Lookup(ctx, "agent", refs); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Lookup with a shard down: err = %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping with a shard down: err = %v, want ErrUnavailable", err)
	}
}

// TestClusterFailover checks that a long-lived store follows a failover: its
// records survive on the promoted replica and new claims succeed, without
// waiting for go-redis's periodic slot-map refresh.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node Redis Cluster and waits for a failover")
	}
	ctx := testContext(t)
	c := redistest.StartCluster(t, 3, 1)
	s := openCluster(t, c, "failover")
	refs := manyRefs(100)
	alice := store.Owner{Tenant: "acme", Subject: "alice"}
	if _, err := s.Ownership().Claim(ctx, "agent", refs, alice); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	// Replication is asynchronous: make sure the replicas have the records
	// before the master dies, as the test is about the store, not about
	// Redis losing the last writes.
	err := c.Client(t).ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Do(ctx, "WAIT", 1, 0).Err()
	})
	if err != nil {
		t.Fatalf("WAIT: %v", err)
	}

	c.KillMaster(t, 0)
	c.WaitHealthy(t, testTimeout)

	var got []store.Owner
	eventually(t, func() error {
		var err error
		got, err = s.Ownership().Claim(ctx, "agent", refs, store.Owner{Tenant: "globex"})
		return err
	})
	for i, o := range got {
		if o != alice {
			t.Fatalf("owner of %v after failover = %+v, want %+v", refs[i], o, alice)
		}
	}
}
