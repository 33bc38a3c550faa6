package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunActiveTasks runs the ActiveTasks conformance cases against newStore.
func RunActiveTasks(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	t.Run("CountsActiveTasksPerTenant", func(t *testing.T) {
		a := h.open(t, time.Hour).ActiveTasks()
		ctx := context60(t)
		for _, tr := range []struct {
			tenant, agent, task string
			active              bool
		}{
			{"acme", "demo", "t1", true},
			{"acme", "demo", "t2", true},
			{"acme", "other", "t1", true}, // same id, other agent: another task
			{"acme", "demo", "t2", true},  // marked again: still one task
			{"globex", "demo", "t1", true},
			{"acme", "demo", "t1", false}, // reached a terminal state
			{"acme:demo", "t3", "x", true},
		} {
			if err := a.Track(ctx, tr.tenant, tr.agent, tr.task, tr.active); err != nil {
				t.Fatal(err)
			}
		}
		for tenant, want := range map[string]int{"acme": 2, "globex": 1, "acme:demo": 1, "nobody": 0} {
			if got, err := a.Count(ctx, tenant, time.Hour); err != nil || got != want {
				t.Fatalf("Count(%q) = %d, %v; want %d", tenant, got, err, want)
			}
		}
	})
	t.Run("StaleMarksStopCounting", func(t *testing.T) {
		a := h.open(t, time.Hour).ActiveTasks()
		ctx := context60(t)
		if err := a.Track(ctx, "acme", "demo", "old", true); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := a.Count(ctx, "acme", 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a mark older than the window still counts")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n, err := a.Count(ctx, "acme", time.Hour); err != nil || n != 0 {
			t.Fatalf("a stale mark was not forgotten: %d, %v", n, err)
		}
	})
	t.Run("ArgumentsAndOutage", func(t *testing.T) {
		st := h.open(t, time.Hour)
		a := st.ActiveTasks()
		ctx := context60(t)
		if err := a.Track(ctx, "", "demo", "t", true); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("empty tenant: %v", err)
		}
		if _, err := a.Count(ctx, "acme", 0); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("zero window: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Count(ctx, "acme", time.Hour); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("closed store: %v", err)
		}
	})
}
