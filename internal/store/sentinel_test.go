package store_test

import (
	"context"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/store/storetest"
)

// sentinel runs a conformance suite against a master with one replica
// behind a sentinel, opened through Open with a master name: the
// configuration path that builds a failover client. Every store of the
// suite finds the master through the sentinel, as a gateway does.
func sentinel(t *testing.T, suite func(*testing.T, storetest.NewStore)) {
	if testing.Short() {
		t.Skip("starts a Redis master, a replica and a sentinel")
	}
	s := redistest.StartSentinel(t, 1, 1)
	suite(t, func(t *testing.T, o store.Options) store.Store {
		o.Redis.Addrs = s.Addrs()
		o.Redis.MasterName = s.MasterName()
		st, err := store.Open(context.Background(), o, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return st
	})
}
