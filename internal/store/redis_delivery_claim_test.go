package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// claimStore is how the delivery workers of the replica that enqueues to
// an idle endpoint take it in the same round trip.
type claimStore interface {
	EnqueueClaim(ctx context.Context, d store.Delivery, holder string, ttl time.Duration) (queued, claimed bool, head store.Delivery, atts []store.Attempt, err error)
}

// TestDeliveryRedisEnqueueClaim: EnqueueClaim enqueues as Enqueue does and
// claims the endpoint, with its head, only when the delivery was added and
// the lease is free or the holder's own; a claimed endpoint is not due for
// other workers.
func TestDeliveryRedisEnqueueClaim(t *testing.T) {
	ctx := testContext(t)
	s := store.NewRedis(redistest.Start(t).Client(t), store.Options{}).Delivery()
	cs, ok := s.(claimStore)
	if !ok {
		t.Fatal("the Redis delivery store does not claim on enqueue")
	}
	const ttl = time.Minute
	d := func(ep, id string) store.Delivery {
		return store.Delivery{ID: id, Endpoint: ep, TaskID: "t1", Payload: []byte("body " + id)}
	}
	if _, err := s.DisableEndpoint(ctx, "off", "gone"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		d       store.Delivery
		holder  string
		queued  bool
		claimed bool
		head    string
		err     error
	}{
		{"idle endpoint", d("ep", "e1"), "a", true, true, "e1", nil},
		{"held by another", d("ep", "e2"), "b", true, false, "", nil},
		{"held by the holder", d("ep", "e3"), "a", true, true, "e1", nil},
		{"a repeat", d("ep", "e3"), "a", false, false, "", nil},
		{"disabled endpoint", d("off", "e1"), "a", false, false, "", store.ErrEndpointDisabled},
		{"no endpoint", d("", "e1"), "a", false, false, "", store.ErrInvalidArgument},
	} {
		queued, claimed, head, atts, err := cs.EnqueueClaim(ctx, tc.d, tc.holder, ttl)
		switch {
		case !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil):
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.err)
		case queued != tc.queued || claimed != tc.claimed || head.ID != tc.head || len(atts) != 0:
			t.Fatalf("%s: queued %v, claimed %v, head %q; want %v, %v, %q", tc.name, queued, claimed, head.ID, tc.queued, tc.claimed, tc.head)
		case claimed && (string(head.Payload) != "body "+head.ID || head.Endpoint != "ep"):
			t.Fatalf("%s: head %+v", tc.name, head)
		}
	}
	// Claimed, the endpoint is no other worker's to find.
	if eps, err := s.Endpoints(ctx, 10); err != nil || slices.Contains(eps, "ep") {
		t.Fatalf("due endpoints %v, %v; want ep claimed away", eps, err)
	}
	if ok, err := s.ClaimEndpoint(ctx, "ep", "b", ttl); err != nil || ok {
		t.Fatalf("another holder claimed a claimed endpoint: %v, %v", ok, err)
	}
	var got []string
	for {
		n, ok, err := s.Next(ctx, "ep")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, n.ID)
		if err := s.Ack(ctx, "ep", n.ID); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"e1", "e2", "e3"}; !slices.Equal(got, want) {
		t.Fatalf("queued %v, want %v", got, want)
	}
}
