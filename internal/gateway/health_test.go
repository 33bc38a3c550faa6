package gateway

import (
	"context"
	"errors"
	"testing"
)

func TestStoreHealth(t *testing.T) {
	var h storeHealth
	pings := 0
	down := errors.New("down")
	ping := func(context.Context) error { pings++; return down }
	check := h.check(ping)

	if err := check(context.Background()); !errors.Is(err, down) || pings != 1 {
		t.Fatalf("without any round trip the store must be asked: %v, %d pings", err, pings)
	}
	h.observe(true)
	if err := check(context.Background()); err != nil || pings != 1 {
		t.Fatalf("a recent success must vouch for the store: %v, %d pings", err, pings)
	}
	h.observe(false)
	if err := check(context.Background()); !errors.Is(err, down) || pings != 2 {
		t.Fatalf("after a failure the store must be asked again: %v, %d pings", err, pings)
	}
	h.lastOK.Store(1) // a success long ago
	if err := check(context.Background()); !errors.Is(err, down) || pings != 3 {
		t.Fatalf("an old success must not vouch for the store: %v, %d pings", err, pings)
	}
}
