package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// headStore is how the delivery workers read a Redis queue: the head with
// its attempt log, and the next head with each acknowledgement.
type headStore interface {
	Head(ctx context.Context, endpoint string) (store.Delivery, []store.Attempt, bool, error)
	ClaimHead(ctx context.Context, endpoint, holder string, ttl time.Duration) (bool, store.Delivery, []store.Attempt, bool, error)
	AckHead(ctx context.Context, endpoint, id, holder string) (store.Delivery, []store.Attempt, bool, error)
}

// TestDeliveryRedisHead: ClaimHead, Head and AckHead answer what
// ClaimEndpoint, Next, Attempts and Ack would, one round trip each, and an
// AckHead that empties the queue gives the lease back.
func TestDeliveryRedisHead(t *testing.T) {
	ctx := testContext(t)
	s := store.NewRedis(redistest.Start(t).Client(t), store.Options{}).Delivery()
	hs, ok := s.(headStore)
	if !ok {
		t.Fatal("the Redis delivery store reads no heads")
	}
	const (
		ep  = "acme:agent:t1:cfg"
		ttl = time.Minute
	)
	type head struct {
		d    store.Delivery
		atts []store.Attempt
		ok   bool
	}
	want := func(t *testing.T, what string, h head, err error, id string, attempts int) {
		t.Helper()
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case id == "" && h.ok:
			t.Fatalf("%s: head %q, want an empty queue", what, h.d.ID)
		case id != "" && (!h.ok || h.d.ID != id || string(h.d.Payload) != "body "+id || h.d.Endpoint != ep || len(h.atts) != attempts):
			t.Fatalf("%s: head %+v with %d attempts (ok %v), want %q with %d", what, h.d, len(h.atts), h.ok, id, attempts)
		}
	}
	claim := func(t *testing.T, holder string, wantClaimed bool) head {
		t.Helper()
		claimed, d, atts, ok, err := hs.ClaimHead(ctx, ep, holder, ttl)
		if err != nil || claimed != wantClaimed {
			t.Fatalf("ClaimHead(%s) = %v, %v; want claimed %v", holder, claimed, err, wantClaimed)
		}
		return head{d, atts, ok}
	}
	ack := func(id, holder string) (head, error) {
		d, atts, ok, err := hs.AckHead(ctx, ep, id, holder)
		return head{d, atts, ok}, err
	}

	d, atts, ok, err := hs.Head(ctx, ep)
	want(t, "Head of no queue", head{d, atts, ok}, err, "", 0)
	for _, id := range []string{"e1", "e2", "e3"} {
		mustEnqueue(t, s, delivery(ep, id))
	}
	failed := store.Attempt{At: time.Unix(1_772_600_001, 0), Status: 503, Err: "receiver answered 503", RetryAt: time.Unix(1_772_600_005, 0)}
	if err := s.RecordAttempt(ctx, ep, "e1", failed); err != nil {
		t.Fatal(err)
	}
	h := claim(t, "w1", true)
	want(t, "ClaimHead(w1)", h, nil, "e1", 1)
	if !h.d.Enqueued.Equal(delivery(ep, "e1").Enqueued) || h.atts[0].Status != 503 || !h.atts[0].RetryAt.Equal(failed.RetryAt) {
		t.Fatalf("ClaimHead read %+v, attempts %+v", h.d, h.atts)
	}
	if h := claim(t, "w2", false); h.ok {
		t.Fatalf("a refused claim read the head %q", h.d.ID)
	}
	d, atts, ok, err = hs.Head(ctx, ep)
	want(t, "Head", head{d, atts, ok}, err, "e1", 1)

	h, err = ack("e1", "w1")
	want(t, "AckHead(e1)", h, err, "e2", 0)
	claim(t, "w2", false) // w1 keeps the lease while the queue holds more
	h, err = ack("e1", "w1")
	want(t, "AckHead(e1) again", h, err, "e2", 0)
	if _, err := ack("e3", "w1"); !errors.Is(err, store.ErrNotHead) {
		t.Fatalf("AckHead of a delivery behind the head: %v, want ErrNotHead", err)
	}
	h, err = ack("e2", "w1")
	want(t, "AckHead(e2)", h, err, "e3", 0)
	h, err = ack("e3", "w1")
	want(t, "AckHead(e3)", h, err, "", 0)
	want(t, "ClaimHead(w2) of the emptied queue", claim(t, "w2", true), nil, "", 0)
	// An acknowledgement seen before also gives an empty queue back.
	h, err = ack("e3", "w2")
	want(t, "AckHead(e3) again", h, err, "", 0)
	claim(t, "w3", true)
	if n, _, err := s.Backlog(ctx); err != nil || n != 0 {
		t.Fatalf("backlog %d, %v; want 0", n, err)
	}
}
