package store_test

import (
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// TestResolveWithRecord checks that the Redis store reads a task's
// lifecycle record in the round trip that resolves owners, standalone and
// on Cluster (the record shares the slot of the task's owner), and tells
// a missing record from one it could not read.
func TestResolveWithRecord(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		srv := redistest.Start(t)
		s, _ := open(t, store.Options{KeyPrefix: "rr", Redis: store.RedisOptions{Addrs: []string{srv.Addr()}}})
		testResolveWithRecord(t, s, func(key, field, value string) {
			if err := srv.Client(t).HSet(testContext(t), key, field, value).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a three-node Redis Cluster")
		}
		c := redistest.StartCluster(t, 3, 0)
		testResolveWithRecord(t, openCluster(t, c, "rr"), func(key, field, value string) {
			if err := c.Client(t).HSet(testContext(t), key, field, value).Err(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func testResolveWithRecord(t *testing.T, s store.Store, hset func(key, field, value string)) {
	t.Helper()
	ctx := testContext(t)
	rr, ok := s.Ownership().(store.RecordResolver)
	if !ok {
		t.Fatal("the Redis ownership store reads no records with owners")
	}
	acme := store.Owner{Tenant: "acme", Subject: "alice"}
	task, ctxRef := store.Ref{Kind: store.RefTask, ID: "t1"}, store.Ref{Kind: store.RefContext, ID: "c1"}
	if _, err := s.Ownership().Claim(ctx, "agent", []store.Ref{task, ctxRef}, acme); err != nil {
		t.Fatal(err)
	}
	rec := lcRec("agent", "t1", "acme", "input-required", 0)
	rec.ContextID = "c1"
	rec.Rev = mustSave(t, s.Lifecycle(), rec, 0)
	var trips int
	store.Observe(s, func(string, bool, time.Duration, bool) { trips++ })

	for _, tt := range []struct {
		name              string
		task              string
		claims            []store.Ref
		found, read, owns bool
	}{
		{"the owner's task", "t1", nil, true, true, true},
		{"a task without a record", "t2", nil, false, true, false},
		{"with a claim", "t1", []store.Ref{{Kind: store.RefContext, ID: "new"}}, true, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			trips = 0
			lookups := []store.Ref{{Kind: store.RefTask, ID: tt.task}, ctxRef}
			found, claimed, got, err := rr.ResolveWithRecord(ctx, "agent", lookups, tt.claims, acme, tt.task)
			if err != nil {
				t.Fatal(err)
			}
			if trips != 1 {
				t.Errorf("%d round trips, want 1", trips)
			}
			if (found[0] == acme) != tt.owns || found[1] != acme || len(claimed) != len(tt.claims) {
				t.Errorf("owners found %v, claimed %v", found, claimed)
			}
			if got.Found != tt.found || got.Read != tt.read {
				t.Fatalf("record found %v, read %v; want %v, %v", got.Found, got.Read, tt.found, tt.read)
			}
			if tt.found && (got.Lifecycle.Rev != rec.Rev || got.Lifecycle.State != "input-required" || got.Lifecycle.ContextID != "c1") {
				t.Errorf("record = %+v, want the one saved", got.Lifecycle)
			}
		})
	}

	// A record the store cannot decode is left for the caller to read.
	hset("rr:lc:{agent:t:t1}", "st", "bogus")
	_, _, got, err := rr.ResolveWithRecord(ctx, "agent", []store.Ref{task}, nil, acme, "t1")
	if err != nil || got.Read || got.Found {
		t.Errorf("corrupt record: %+v, %v; want it unread", got, err)
	}
	if _, _, _, err := rr.ResolveWithRecord(ctx, "agent", []store.Ref{task}, nil, acme, ""); err == nil {
		t.Error("a record without a task id was read")
	}
}
