package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunEventLog runs the EventLog conformance cases against newStore.
func RunEventLog(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	t.Run("AppendAndReadAfter", func(t *testing.T) {
		el := h.open(t, time.Hour).EventLog()
		ctx := context60(t)
		agent, task := "demo|x", "task:1/{a} %"
		var want []store.LoggedEvent
		for i := range 3 {
			ev := elEvent(i)
			seq, added, err := appendEvent(ctx, el, agent, task, ev.ID, ev.Payload, ev.At)
			if err != nil || !added || seq != int64(i+1) {
				t.Fatalf("Append(%s) = %d, %v, %v; want %d, added", ev.ID, seq, added, err, i+1)
			}
			ev.Seq = seq
			want = append(want, ev)
		}
		if seq, added, err := appendEvent(ctx, el, agent, task, "ev-1", []byte(`{"other":true}`), time.Now()); err != nil || added || seq != 2 {
			t.Fatalf("duplicate Append = %d, %v, %v; want 2, not added", seq, added, err)
		}
		for _, tc := range []struct {
			after string
			limit int
			want  []store.LoggedEvent
		}{
			{"", 10, want}, {"ev-0", 10, want[1:]}, {"ev-2", 10, nil}, {"", 2, want[:2]}, {"ev-0", 1, want[1:2]},
		} {
			got, found, err := el.After(ctx, agent, task, tc.after, tc.limit)
			if err != nil || !found || !sameEvents(got, tc.want) {
				t.Fatalf("After(%q, %d) = %+v, %v, %v; want %+v", tc.after, tc.limit, got, found, err, tc.want)
			}
		}
		if got, found, err := el.After(ctx, agent, task, "never-logged", 10); err != nil || found || len(got) != 0 {
			t.Fatalf("After an unknown id = %v, %v, %v; want not found", got, found, err)
		}
		if got, found, err := el.After(ctx, agent, "task:1", "", 10); err != nil || !found || len(got) != 0 {
			t.Fatalf("another task's log = %v, %v, %v; want empty", got, found, err)
		}
	})
	t.Run("KeepsTheNewestEvents", func(t *testing.T) {
		el := h.open(t, time.Hour).EventLog().Bounded(store.EventLogOptions{MaxEvents: 3})
		ctx := context60(t)
		for i := range 5 {
			ev := elEvent(i)
			if _, _, err := appendEvent(ctx, el, "demo", "t", ev.ID, ev.Payload, ev.At); err != nil {
				t.Fatal(err)
			}
		}
		got, _, err := el.After(ctx, "demo", "t", "", 10)
		if err != nil || len(got) != 3 || got[0].Seq != 3 || got[2].Seq != 5 {
			t.Fatalf("After = %+v, %v; want events 3 to 5", got, err)
		}
		if _, found, err := el.After(ctx, "demo", "t", "ev-0", 10); err != nil || found {
			t.Fatalf("an evicted id is still found: %v, %v", found, err)
		}
		// Its id is forgotten with it: appended again, it is a new event.
		if seq, added, err := appendEvent(ctx, el, "demo", "t", "ev-0", []byte(`{}`), time.Now()); err != nil || !added || seq != 6 {
			t.Fatalf("Append of an evicted id = %d, %v, %v; want 6, added", seq, added, err)
		}
	})
	t.Run("ExpiresAfterRetention", func(t *testing.T) {
		el := h.open(t, time.Hour).EventLog().Bounded(store.EventLogOptions{Retention: 200 * time.Millisecond})
		ctx := context60(t)
		if _, _, err := appendEvent(ctx, el, "demo", "t", "ev-0", []byte(`{}`), time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := el.SaveSnapshot(ctx, "demo", "t", 1, []byte(`{"id":"t"}`)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _, err := el.After(ctx, "demo", "t", "", 10)
			_, _, snap, serr := el.Snapshot(ctx, "demo", "t")
			if err != nil || serr != nil {
				t.Fatal(err, serr)
			}
			if len(got) == 0 && !snap {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the log outlived its retention")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if seq, added, err := appendEvent(ctx, el, "demo", "t", "ev-0", []byte(`{}`), time.Now()); err != nil || !added || seq != 1 {
			t.Fatalf("Append after expiry = %d, %v, %v; want a new log", seq, added, err)
		}
	})
	t.Run("Snapshot", func(t *testing.T) {
		el := h.open(t, time.Hour).EventLog()
		ctx := context60(t)
		if _, _, ok, err := el.Snapshot(ctx, "demo", "t"); err != nil || ok {
			t.Fatalf("Snapshot of a new task = %v, %v", ok, err)
		}
		for _, tc := range []struct {
			seq    int64
			snap   string
			stored bool
		}{
			{2, `{"v":2}`, true}, {1, `{"v":1}`, false}, {2, `{"v":"2b"}`, false}, {5, `{"v":5}`, true},
		} {
			if stored, err := el.SaveSnapshot(ctx, "demo", "t", tc.seq, []byte(tc.snap)); err != nil || stored != tc.stored {
				t.Fatalf("SaveSnapshot(%d) = %v, %v; want %v", tc.seq, stored, err, tc.stored)
			}
		}
		seq, snap, ok, err := el.Snapshot(ctx, "demo", "t")
		if err != nil || !ok || seq != 5 || string(snap) != `{"v":5}` {
			t.Fatalf("Snapshot = %d, %s, %v, %v; want 5 and its snapshot", seq, snap, ok, err)
		}
		if _, _, ok, err := el.Snapshot(ctx, "other", "t"); err != nil || ok {
			t.Fatalf("another agent's task has a snapshot: %v, %v", ok, err)
		}
	})
	t.Run("ArgumentsAndOutage", func(t *testing.T) {
		st := h.open(t, time.Hour)
		el := st.EventLog()
		ctx := context60(t)
		for name, call := range map[string]func() error{
			"no task": func() error {
				_, _, err := appendEvent(ctx, el, "demo", "", "id", []byte(`{}`), time.Now())
				return err
			},
			"no id": func() error { _, _, err := appendEvent(ctx, el, "demo", "t", "", []byte(`{}`), time.Now()); return err },
			"huge payload": func() error {
				_, _, err := appendEvent(ctx, el, "demo", "t", "id", make([]byte, store.MaxEventPayloadBytes+1), time.Now())
				return err
			},
			"limit 0":          func() error { _, _, err := el.After(ctx, "demo", "t", "", 0); return err },
			"long after id":    func() error { _, _, err := el.After(ctx, "demo", "t", strings.Repeat("i", 600), 1); return err },
			"snapshot seq 0":   func() error { _, err := el.SaveSnapshot(ctx, "demo", "t", 0, []byte(`{}`)); return err },
			"empty snapshot":   func() error { _, err := el.SaveSnapshot(ctx, "demo", "t", 1, nil); return err },
			"snapshot no task": func() error { _, _, _, err := el.Snapshot(ctx, "demo", ""); return err },
		} {
			if err := call(); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s: %v; want ErrInvalidArgument", name, err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := appendEvent(ctx, el, "demo", "t", "id", []byte(`{}`), time.Now()); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("closed store: %v", err)
		}
	})
	runEventRecord(t, h)
}

// elEvent is event i, at a fixed time to the nanosecond.
func elEvent(i int) store.LoggedEvent {
	return store.LoggedEvent{
		ID:      fmt.Sprintf("ev-%d", i),
		Payload: []byte(fmt.Sprintf(`{"statusUpdate":{"taskId":"t","n":%d,"bin":"\u0000|\n"}}`, i)),
		At:      time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC).Add(time.Duration(i) * time.Second),
	}
}

func sameEvents(a, b []store.LoggedEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Seq != b[i].Seq || a[i].ID != b[i].ID || string(a[i].Payload) != string(b[i].Payload) || !a[i].At.Equal(b[i].At) {
			return false
		}
	}
	return true
}

// appendEvent logs an event with Record, marking nothing live.
func appendEvent(ctx context.Context, el store.EventLog, agent, task, id string, payload []byte, at time.Time) (int64, bool, error) {
	r, err := el.Record(ctx, agent, task, id, payload, at, 0)
	return r.Seq, r.Added, err
}
