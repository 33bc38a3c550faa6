package store_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// TestRecordEnqueue: with the configs of the event before, the event is
// logged and its notification enqueued and claimed in one step; once the
// configs changed, the event is logged, nothing is enqueued, and the
// configs come back as they are; a disabled endpoint refuses the
// notification, the event being logged.
func TestRecordEnqueue(t *testing.T) {
	ctx := testContext(t)
	s := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	if _, ok := store.RecordEnqueuerOf(store.NewMemory(store.Options{}).EventLog()); ok {
		t.Fatal("the embedded store has a RecordEnqueue")
	}
	re, ok := store.RecordEnqueuerOf(s.EventLog())
	if !ok {
		t.Fatal("no RecordEnqueue on a standalone Redis")
	}
	c := store.PushConfig{Agent: "demo", TaskID: "t1", ID: "c1", Tenant: "acme", Version: a2a.V10, URL: "https://hook.example/a"}
	if _, err := s.PushConfigs().Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	first, err := s.EventLog().Record(ctx, "demo", "t1", "e1", []byte(`{"n":1}`), time.Now(), 0)
	if err != nil || first.Digest == "" || len(first.Configs) != 1 {
		t.Fatalf("Record = %+v, %v", first, err)
	}
	n := store.Delivery{ID: "e2", Endpoint: "ep-1", TaskID: "t1", Payload: []byte("n2")}
	rec, e, err := re.RecordEnqueue(ctx, "demo", "t1", "e2", []byte(`{"n":2}`), time.Now(), time.Second, first.Digest, n, "holder", time.Minute)
	if err != nil || rec.Seq != 2 || !rec.Added || e.Stale || !e.Queued || !e.Claimed || e.Err != nil || e.Head.ID != "e2" {
		t.Fatalf("RecordEnqueue = %+v, %+v, %v; want seq 2 logged, e2 queued and claimed", rec, e, err)
	}
	if live, err := s.EventLog().Live(ctx, "demo", "t1"); err != nil || live <= 0 {
		t.Fatalf("live mark %s, %v; want renewed", live, err)
	}
	// The claim is holder's: another holder gets the notification queued
	// behind it, and no claim.
	n3 := store.Delivery{ID: "e3", Endpoint: "ep-1", TaskID: "t1", Payload: []byte("n3")}
	if _, e, err := re.RecordEnqueue(ctx, "demo", "t1", "e3", []byte(`{"n":3}`), time.Now(), 0, first.Digest, n3, "other", time.Minute); err != nil || !e.Queued || e.Claimed {
		t.Fatalf("RecordEnqueue by another holder = %+v, %v; want queued, not claimed", e, err)
	}
	// (queueIDs empties the queue.)
	if ids := queueIDs(t, s.Delivery(), "ep-1"); len(ids) != 2 || ids[0] != "e2" || ids[1] != "e3" {
		t.Fatalf("queue %v, want [e2 e3]", ids)
	}

	c.URL = "https://hook.example/b"
	if _, err := s.PushConfigs().Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	n4 := store.Delivery{ID: "e4", Endpoint: "ep-1", TaskID: "t1", Payload: []byte("n4")}
	rec, e, err = re.RecordEnqueue(ctx, "demo", "t1", "e4", []byte(`{"n":4}`), time.Now(), 0, first.Digest, n4, "holder", time.Minute)
	if err != nil || !e.Stale || rec.Seq != 4 || len(rec.Configs) != 1 || rec.Configs[0].URL != c.URL || rec.Digest == first.Digest {
		t.Fatalf("RecordEnqueue after a config change = %+v, %+v, %v; want stale, logged, the new config", rec, e, err)
	}
	if n, _, err := s.Delivery().Depth(ctx, "ep-1"); err != nil || n != 0 {
		t.Fatalf("queue holds %d, %v: a stale notification was enqueued", n, err)
	}
	// The digest RecordEnqueue returns for stale configs is Record's.
	again, err := s.EventLog().Record(ctx, "demo", "t1", "e4", []byte(`{"n":4}`), time.Now(), 0)
	if err != nil || again.Added || again.Digest != rec.Digest {
		t.Fatalf("Record again = %+v, %v; want the duplicate, digest %s", again, err, rec.Digest)
	}

	if _, err := s.Delivery().DisableEndpoint(ctx, "ep-2", "410 Gone"); err != nil {
		t.Fatal(err)
	}
	n5 := store.Delivery{ID: "e5", Endpoint: "ep-2", TaskID: "t1", Payload: []byte("n5")}
	rec, e, err = re.RecordEnqueue(ctx, "demo", "t1", "e5", []byte(`{"n":5}`), time.Now(), 0, again.Digest, n5, "", 0)
	if err != nil || rec.Seq != 5 || !errors.Is(e.Err, store.ErrEndpointDisabled) || e.Queued {
		t.Fatalf("RecordEnqueue to a disabled endpoint = %+v, %+v, %v; want logged, refused", rec, e, err)
	}
	if evs, found, err := s.EventLog().After(ctx, "demo", "t1", "", 10); err != nil || !found || len(evs) != 5 {
		t.Fatalf("log holds %d events, %v, %v; want 5", len(evs), found, err)
	}
	if _, _, err := re.RecordEnqueue(ctx, "demo", "", "e6", []byte(`{}`), time.Now(), 0, again.Digest, n5, "", 0); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("RecordEnqueue without a task = %v, want ErrInvalidArgument", err)
	}
}

// TestEventLogNumbersLogsWrittenBefore: the ids hash keeps the last number
// given, and a log stored without it (as stored before it was kept) goes
// on from its last entry: no number is given twice, none is skipped, and
// the log reads back in order, trimmed or not.
func TestEventLogNumbersLogsWrittenBefore(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := store.NewRedis(client, store.Options{})
	logs := map[string]store.EventLog{"full": s.EventLog(), "trimmed": s.EventLog().Bounded(store.EventLogOptions{MaxEvents: 2})}
	for _, name := range []string{"full", "trimmed"} {
		l, task := logs[name], "task-"+name
		record := func(id string) int64 {
			t.Helper()
			rec, err := l.Record(ctx, "demo", task, id, []byte(`{"id":"`+id+`"}`), time.Now(), 0)
			if err != nil || !rec.Added {
				t.Fatalf("%s: Record %s = %+v, %v", name, id, rec, err)
			}
			return rec.Seq
		}
		for i, id := range []string{"e1", "e2", "e3"} {
			if seq := record(id); seq != int64(i+1) {
				t.Fatalf("%s: %s got seq %d, want %d", name, id, seq, i+1)
			}
		}
		keys, err := client.Keys(ctx, "*evid*"+task+"*").Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("%s: ids hash keys %v, %v", name, keys, err)
		}
		if n, err := client.HDel(ctx, keys[0], "").Result(); err != nil || n != 1 {
			t.Fatalf("%s: the ids hash kept no last number (%d, %v)", name, n, err)
		}
		if seq := record("e4"); seq != 4 {
			t.Fatalf("%s: e4 after a log without its last number got seq %d, want 4", name, seq)
		}
		if seq := record("e5"); seq != 5 {
			t.Fatalf("%s: e5 got seq %d, want 5", name, seq)
		}
		evs, found, err := l.After(ctx, "demo", task, "", 10)
		if err != nil || !found {
			t.Fatalf("%s: After = %v, %v", name, found, err)
		}
		first := int64(1)
		if name == "trimmed" {
			first = 4
		}
		if len(evs) != int(6-first) {
			t.Fatalf("%s: log holds %d events, want %d", name, len(evs), 6-first)
		}
		for i, ev := range evs {
			if want := first + int64(i); ev.Seq != want || ev.ID != "e"+strconv.FormatInt(want, 10) {
				t.Fatalf("%s: event %d is %s with seq %d, want e%d", name, i, ev.ID, ev.Seq, want)
			}
		}
	}
}
