package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// benchOwnership measures the hot path: a request claims its task and
// context, later requests look them up.
func benchOwnership(b *testing.B, s store.Store) {
	own := s.Ownership()
	owner := store.Owner{Tenant: "acme", Subject: "alice"}
	ctx := context.Background()
	var seq atomic.Int64
	b.Run("Claim", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := fmt.Sprint(seq.Add(1))
				refs := []store.Ref{{Kind: store.RefTask, ID: "t-" + id}, {Kind: store.RefContext, ID: "c-" + id}}
				if _, err := own.Claim(ctx, "agent", refs, owner); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("Lookup", func(b *testing.B) {
		b.ReportAllocs()
		refs := []store.Ref{{Kind: store.RefTask, ID: "t-1"}, {Kind: store.RefContext, ID: "c-1"}}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := own.Lookup(ctx, "agent", refs); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

func BenchmarkOwnershipMemory(b *testing.B) {
	s := store.NewMemory(store.Options{})
	b.Cleanup(func() { _ = s.Close() })
	benchOwnership(b, s)
}

func BenchmarkOwnershipRedis(b *testing.B) {
	benchOwnership(b, store.NewRedis(redistest.Start(b).Client(b), store.Options{}))
}
