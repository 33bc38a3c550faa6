package push

import (
	"bytes"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// The kept events come back per task in the order kept, each dropped once
// however many publishers published it, within the count and size bounds.
func TestRetriesKeepOrderAndBounds(t *testing.T) {
	ev := func(task string, size int) Event {
		return Event{Agent: "a", TaskID: task, Payload: bytes.Repeat([]byte{'x'}, size)}
	}
	r := newRetries()
	for i := 1; i <= 3; i++ {
		if !r.add(ev("t1", i), false) {
			t.Fatalf("event %d not kept", i)
		}
	}
	r.add(ev("t2", 1), true)
	ref := store.TaskRef{Agent: "a", TaskID: "t1"}
	for want := 1; want <= 3; want++ {
		first, ok := r.first(ref)
		if !ok || len(first.ev.Payload) != want {
			t.Fatalf("first of t1: %d bytes, %v; want the event of %d", len(first.ev.Payload), ok, want)
		}
		r.done(ref, first.n)
		r.done(ref, first.n) // a second publisher of the same event
	}
	if _, kept := r.first(ref); kept || r.len() != 1 {
		t.Fatalf("t1 still kept: %v; %d kept in all, want t2's", kept, r.len())
	}
	if got, _ := r.first(store.TaskRef{Agent: "a", TaskID: "t2"}); !got.letGo {
		t.Fatal("the orphan notice lost its let-go")
	}

	for _, tc := range []struct {
		name string
		fill func(*retries)
		next Event
	}{
		{"count", func(r *retries) {
			for range maxRetries {
				r.add(ev("t", 0), false)
			}
		}, ev("t", 0)},
		{"bytes", func(r *retries) { r.add(ev("t", maxRetryBytes-10), false) }, ev("u", 11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRetries()
			tc.fill(r)
			if r.add(tc.next, false) {
				t.Fatal("kept beyond the bound")
			}
			first, _ := r.first(store.TaskRef{Agent: "a", TaskID: "t"})
			r.done(store.TaskRef{Agent: "a", TaskID: "t"}, first.n)
			if !r.add(tc.next, false) {
				t.Fatal("not kept once there was room")
			}
		})
	}
}
