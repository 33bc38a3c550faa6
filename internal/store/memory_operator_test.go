package store

import (
	"context"
	"testing"
	"time"
)

// The embedded delivery log keeps at most max tasks; the one attempted
// least recently goes first.
func TestMemDeliveryLogEvictsTheLeastRecentlyAttempted(t *testing.T) {
	l := newMemDeliveryLog(2)
	ctx := context.Background()
	add := func(task string) {
		t.Helper()
		if err := l.Add(ctx, "demo", task, TaskAttempt{Endpoint: "ep", ID: "n", Attempt: Attempt{At: time.Now(), Status: 200}}); err != nil {
			t.Fatal(err)
		}
	}
	add("a")
	add("b")
	add("a") // a is now the most recent
	add("c") // evicts b
	for task, want := range map[string]int{"a": 2, "b": 0, "c": 1} {
		if got, err := l.List(ctx, "demo", task); err != nil || len(got) != want {
			t.Errorf("task %s: %d attempts, %v; want %d", task, len(got), err, want)
		}
	}
}
