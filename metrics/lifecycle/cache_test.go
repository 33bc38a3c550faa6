package lifecycle

import (
	"fmt"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// TestRecordCacheEvictsOldest checks the bound on remembered records: a
// new task beyond it replaces the oldest, updates and drops do not let
// the cache grow past it.
func TestRecordCacheEvictsOldest(t *testing.T) {
	c := newRecordCache()
	rec := func(i int) store.TaskLifecycle { return store.TaskLifecycle{Agent: "a", TaskID: fmt.Sprint("t", i)} }
	for i := range recentRecords {
		c.put(rec(i))
	}
	// Updating a remembered task takes no new slot.
	c.put(rec(0))
	if _, _, known := c.get("a", "t0"); !known || len(c.m) != recentRecords {
		t.Fatalf("after an update: t0 known %v, %d records", known, len(c.m))
	}
	// Dropped and added again, a task keeps its old slot too and goes at
	// the first of them: early, never late.
	c.drop("a", "t1")
	c.put(rec(1))
	for i := recentRecords; i < recentRecords+10; i++ {
		c.put(rec(i))
		if len(c.m) > recentRecords {
			t.Fatalf("%d records remembered, over the bound of %d", len(c.m), recentRecords)
		}
	}
	for _, tt := range []struct {
		id    int
		known bool
	}{{0, false}, {1, false}, {10, false}, {11, true}, {recentRecords + 9, true}} {
		if _, _, known := c.get("a", fmt.Sprint("t", tt.id)); known != tt.known {
			t.Errorf("t%d known = %v, want %v", tt.id, known, tt.known)
		}
	}
}
