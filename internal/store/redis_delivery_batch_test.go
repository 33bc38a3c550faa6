package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// batchStore is how the push relay enqueues one event for several push
// configs at once on Redis.
type batchStore interface {
	EnqueueAll(ctx context.Context, ds []store.Delivery) ([]bool, []error)
}

// TestDeliveryRedisEnqueueAll: EnqueueAll answers for each delivery what
// Enqueue would, in one pipeline, including after Redis lost its scripts.
func TestDeliveryRedisEnqueueAll(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{}).Delivery()
	bs, ok := s.(batchStore)
	if !ok {
		t.Fatal("the Redis delivery store enqueues no batches")
	}
	d := func(ep, id string) store.Delivery {
		return store.Delivery{ID: id, Endpoint: ep, TaskID: "t1", Payload: []byte("body " + id)}
	}
	if _, err := s.Enqueue(ctx, d("ep-a", "old")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DisableEndpoint(ctx, "ep-off", "gone"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// flush drops Redis's scripts first.
		flush  bool
		ds     []store.Delivery
		queued []bool
		errs   []error
	}{
		{
			name:   "mixed",
			ds:     []store.Delivery{d("ep-a", "e1"), d("ep-b", "e1"), d("ep-a", "old"), d("ep-off", "e1"), d("", "e1")},
			queued: []bool{true, true, false, false, false},
			errs:   []error{nil, nil, nil, store.ErrEndpointDisabled, store.ErrInvalidArgument},
		},
		{
			name:   "scripts flushed",
			flush:  true,
			ds:     []store.Delivery{d("ep-a", "e2"), d("ep-c", "e2")},
			queued: []bool{true, true},
			errs:   []error{nil, nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.flush {
				if err := client.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			queued, errs := bs.EnqueueAll(ctx, tc.ds)
			if len(queued) != len(tc.ds) || len(errs) != len(tc.ds) {
				t.Fatalf("EnqueueAll answered %d and %d results for %d deliveries", len(queued), len(errs), len(tc.ds))
			}
			for i := range tc.ds {
				if queued[i] != tc.queued[i] || !errors.Is(errs[i], tc.errs[i]) || (tc.errs[i] == nil) != (errs[i] == nil) {
					t.Errorf("delivery %d (%s %s): %v, %v; want %v, %v", i, tc.ds[i].Endpoint, tc.ds[i].ID, queued[i], errs[i], tc.queued[i], tc.errs[i])
				}
			}
		})
	}
	// What was queued is in order behind what was there.
	for ep, want := range map[string][]string{"ep-a": {"old", "e1", "e2"}, "ep-b": {"e1"}, "ep-c": {"e2"}} {
		var got []string
		for {
			n, ok, err := s.Next(ctx, ep)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, n.ID)
			if string(n.Payload) != "body "+n.ID {
				t.Fatalf("%s: %s carries %q", ep, n.ID, n.Payload)
			}
			if err := s.Ack(ctx, ep, n.ID); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s queued %v, want %v", ep, got, want)
		}
	}
}
