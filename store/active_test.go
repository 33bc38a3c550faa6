package store_test

import (
	"context"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/store"
	"github.com/a2a-gateway/a2a-gateway/store/storetest"
)

func TestActiveTasksMemory(t *testing.T) {
	storetest.RunActiveTasks(t, func(t *testing.T, o store.Options) store.Store { return store.NewMemory(o) })
}

func TestActiveTasksRedis(t *testing.T) {
	client := redistest.Start(t).Client(t)
	storetest.RunActiveTasks(t, func(t *testing.T, o store.Options) store.Store { return store.NewRedis(client, o) })
}

func TestActiveTasksCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node Redis Cluster")
	}
	c := redistest.StartCluster(t, 3, 0)
	storetest.RunActiveTasks(t, func(t *testing.T, o store.Options) store.Store {
		o.Redis.Addrs = c.Addrs()
		s, err := store.Open(context.Background(), o, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
