package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// runEventRecord runs the cases of EventLog.Record and Live.
func runEventRecord(t *testing.T, h harness) {
	t.Helper()
	t.Run("RecordReadsTheConfigs", func(t *testing.T) {
		st := h.open(t, time.Hour)
		el, pc := st.EventLog(), st.PushConfigs()
		ctx := context60(t)
		agent, task := "demo|x", "task:1/{a} %"
		a, b := pcConfig(agent, task, "cfg-a", 1), pcConfig(agent, task, "cfg-b", 2)
		for _, c := range []store.PushConfig{b, a, pcConfig(agent, "other", "cfg-c", 3)} {
			if _, err := pc.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		ev := elEvent(0)
		r, err := el.Record(ctx, agent, task, ev.ID, ev.Payload, ev.At, 0)
		if err != nil || r.Seq != 1 || !r.Added || !reflect.DeepEqual(r.Configs, []store.PushConfig{a, b}) {
			t.Fatalf("Record = %+v, %v; want seq 1, added, configs a then b", r, err)
		}
		ev.Seq = 1
		if got, _, err := el.After(ctx, agent, task, "", 10); err != nil || !sameEvents(got, []store.LoggedEvent{ev}) {
			t.Fatalf("After = %+v, %v; want the recorded event", got, err)
		}
		// A duplicate is not logged again; its configs are read all the same.
		r, err = el.Record(ctx, agent, task, ev.ID, []byte(`{"other":true}`), time.Now(), 0)
		if err != nil || r.Seq != 1 || r.Added || len(r.Configs) != 2 {
			t.Fatalf("duplicate Record = %+v, %v; want seq 1, not added, two configs", r, err)
		}
		// Record and Append number the same log.
		if seq, added, err := appendEvent(ctx, el, agent, task, "ev-1", []byte(`{}`), time.Now()); err != nil || !added || seq != 2 {
			t.Fatalf("Append after Record = %d, %v, %v; want 2, added", seq, added, err)
		}
		if r, err := el.Record(ctx, "demo", "no-configs", "ev-0", []byte(`{}`), time.Now(), 0); err != nil || r.Seq != 1 || len(r.Configs) != 0 {
			t.Fatalf("Record for a task without configs = %+v, %v", r, err)
		}
	})
	t.Run("LiveMark", func(t *testing.T) {
		el := h.open(t, time.Hour).EventLog()
		ctx := context60(t)
		if left, err := el.Live(ctx, "demo", "t"); err != nil || left != 0 {
			t.Fatalf("Live of an unmarked task = %v, %v; want 0", left, err)
		}
		if _, err := el.Record(ctx, "demo", "t", "ev-0", []byte(`{}`), time.Now(), 0); err != nil {
			t.Fatal(err)
		}
		if left, err := el.Live(ctx, "demo", "t"); err != nil || left != 0 {
			t.Fatalf("Live after a Record that does not mark = %v, %v; want 0", left, err)
		}
		const live = 300 * time.Millisecond
		// A duplicate marks too: the stream that sent it is live.
		if _, err := el.Record(ctx, "demo", "t", "ev-0", []byte(`{}`), time.Now(), live); err != nil {
			t.Fatal(err)
		}
		if left, err := el.Live(ctx, "demo", "t"); err != nil || left <= 0 || left > live {
			t.Fatalf("Live after marking for %s = %v, %v", live, left, err)
		}
		for _, other := range [][2]string{{"demo", "t2"}, {"other", "t"}} {
			if left, err := el.Live(ctx, other[0], other[1]); err != nil || left != 0 {
				t.Fatalf("Live(%q, %q) = %v, %v; want 0", other[0], other[1], left, err)
			}
		}
		waitLapsed(ctx, t, el, "demo", "t")
	})
	t.Run("RecordArgumentsAndOutage", func(t *testing.T) {
		st := h.open(t, time.Hour)
		el := st.EventLog()
		ctx := context60(t)
		for name, call := range map[string]func() error{
			"negative live": func() error {
				_, err := el.Record(ctx, "demo", "t", "id", []byte(`{}`), time.Now(), -time.Second)
				return err
			},
			"long live": func() error {
				_, err := el.Record(ctx, "demo", "t", "id", []byte(`{}`), time.Now(), store.MaxLiveMark+time.Second)
				return err
			},
			"no id":        func() error { _, err := el.Record(ctx, "demo", "t", "", []byte(`{}`), time.Now(), 0); return err },
			"live no task": func() error { _, err := el.Live(ctx, "demo", ""); return err },
		} {
			if err := call(); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s: %v; want ErrInvalidArgument", name, err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := el.Record(ctx, "demo", "t", "id", []byte(`{}`), time.Now(), time.Second); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Record on a closed store: %v", err)
		}
		if _, err := el.Live(ctx, "demo", "t"); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Live on a closed store: %v", err)
		}
	})
}

// waitLapsed waits until the task's live mark has lapsed.
func waitLapsed(ctx context.Context, t *testing.T, el store.EventLog, agent, task string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := el.Live(ctx, agent, task)
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the live mark outlived its time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
