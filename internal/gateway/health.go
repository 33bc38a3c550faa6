package gateway

import (
	"context"
	"sync/atomic"
	"time"
)

// recentEnough is how long a successful Redis round trip vouches for the
// store. Under load round trips succeed many times a millisecond, so a
// request rarely needs a round trip of its own just to learn the store is
// up; when the store has been quiet, or its last round trip failed, the
// request asks with a PING.
const recentEnough = 250 * time.Millisecond

// storeHealth follows the outcome of every round trip to the store.
type storeHealth struct {
	// lastOK is when a round trip last succeeded (Unix nanoseconds), or 0
	// after a failure.
	lastOK atomic.Int64
}

// observe records one round trip's outcome.
func (h *storeHealth) observe(ok bool) {
	if ok {
		h.lastOK.Store(time.Now().UnixNano())
	} else {
		h.lastOK.Store(0)
	}
}

// check answers whether the store is up: from recent round trips when they
// say so, else by asking it.
func (h *storeHealth) check(ping func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if t := h.lastOK.Load(); t != 0 && time.Since(time.Unix(0, t)) < recentEnough {
			return nil
		}
		return ping(ctx)
	}
}
