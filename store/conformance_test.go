package store_test

import (
	"context"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/store"
	"github.com/a2a-gateway/a2a-gateway/store/storetest"
)

func TestOwnershipMemory(t *testing.T) {
	storetest.RunOwnership(t, func(t *testing.T, o store.Options) store.Store {
		return store.NewMemory(o)
	})
}

// The standalone suite shares one client between stores, as NewRedis is
// meant to be used.
func TestOwnershipRedis(t *testing.T) {
	client := redistest.Start(t).Client(t)
	storetest.RunOwnership(t, func(t *testing.T, o store.Options) store.Store {
		return store.NewRedis(client, o)
	})
}

// The cluster suite goes through Open, so the configuration path that builds
// a cluster client is covered too.
func TestOwnershipCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node Redis Cluster")
	}
	c := redistest.StartCluster(t, 3, 0)
	storetest.RunOwnership(t, func(t *testing.T, o store.Options) store.Store {
		o.Redis.Addrs = c.Addrs()
		s, err := store.Open(context.Background(), o, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
