package store_test

import (
	"context"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/store/storetest"
)

// The conformance suites of every concern, on every back end.
func TestActiveTasksConformance(t *testing.T) { conformance(t, storetest.RunActiveTasks) }
func TestChallengesConformance(t *testing.T)  { conformance(t, storetest.RunChallenges) }
func TestDedupeConformance(t *testing.T)      { conformance(t, storetest.RunDedupe) }
func TestDeliveryConformance(t *testing.T)    { conformance(t, storetest.RunDelivery) }
func TestEventLogConformance(t *testing.T)    { conformance(t, storetest.RunEventLog) }
func TestLifecycleConformance(t *testing.T)   { conformance(t, storetest.RunLifecycle) }
func TestOwnershipConformance(t *testing.T)   { conformance(t, storetest.RunOwnership) }
func TestPushConfigsConformance(t *testing.T) { conformance(t, storetest.RunPushConfigs) }
func TestPushSourcesConformance(t *testing.T) { conformance(t, storetest.RunPushSources) }

// conformance runs a storetest suite against every back end: the embedded
// store; a standalone redis-server, one client shared by the suite's stores
// as NewRedis is meant to be used; and, without -short, a three-master
// Redis Cluster opened through Open, so the configuration path that builds
// a cluster client is covered too.
func conformance(t *testing.T, suite func(*testing.T, storetest.NewStore)) {
	t.Run("memory", func(t *testing.T) {
		suite(t, func(t *testing.T, o store.Options) store.Store { return store.NewMemory(o) })
	})
	t.Run("redis", func(t *testing.T) {
		client := redistest.Start(t).Client(t)
		suite(t, func(t *testing.T, o store.Options) store.Store { return store.NewRedis(client, o) })
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a three-node Redis Cluster")
		}
		c := redistest.StartCluster(t, 3, 0)
		suite(t, func(t *testing.T, o store.Options) store.Store {
			o.Redis.Addrs = c.Addrs()
			s, err := store.Open(context.Background(), o, nil)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		})
	})
	t.Run("sentinel", func(t *testing.T) { sentinel(t, suite) })
}
