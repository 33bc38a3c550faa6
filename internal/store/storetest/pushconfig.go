package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunPushConfigs runs the PushConfigs conformance cases against newStore.
func RunPushConfigs(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	t.Run("PutGetListDelete", func(t *testing.T) {
		pc := h.open(t, time.Hour).PushConfigs()
		ctx := context60(t)
		// Names that need escaping in keys: they must not collide.
		agent, task := "demo|x", "task:1/{a} %"
		a := pcConfig(agent, task, "cfg-a", 1)
		a.Token, a.AuthScheme, a.AuthCredentials = "tok", "Basic", "dXNlcjpwdw=="
		b := pcConfig(agent, task, "cfg-b", 2)
		b.Version = a2a.V03
		for _, c := range []store.PushConfig{b, a} {
			if created, err := pc.Put(ctx, c); err != nil || !created {
				t.Fatalf("Put(%s) = %v, %v; want created", c.ID, created, err)
			}
		}
		got, ok, err := pc.Get(ctx, agent, task, "cfg-a")
		if err != nil || !ok || !reflect.DeepEqual(got, a) {
			t.Fatalf("Get = %+v, %v, %v; want %+v", got, ok, err, a)
		}
		list, err := pc.List(ctx, agent, task)
		if err != nil || !reflect.DeepEqual(list, []store.PushConfig{a, b}) {
			t.Fatalf("List = %+v, %v; want a then b (oldest first)", list, err)
		}
		for _, other := range [][2]string{{agent, "task:1"}, {"demo", task}, {"demo|x", "task:1/{a}"}} {
			if l, err := pc.List(ctx, other[0], other[1]); err != nil || len(l) != 0 {
				t.Fatalf("List(%q, %q) = %v, %v; want nothing", other[0], other[1], l, err)
			}
		}
		// Replacing keeps the id's creation time.
		a2 := a
		a2.URL, a2.Token, a2.Created = "https://hooks.example.com/other", "", time.Now().Add(time.Hour).UTC().Round(0)
		if created, err := pc.Put(ctx, a2); err != nil || created {
			t.Fatalf("Put(replacement) = %v, %v; want replaced", created, err)
		}
		a2.Created = a.Created
		if got, ok, err := pc.Get(ctx, agent, task, "cfg-a"); err != nil || !ok || !reflect.DeepEqual(got, a2) {
			t.Fatalf("Get after replace = %+v, %v, %v; want %+v", got, ok, err, a2)
		}
		if ok, err := pc.Delete(ctx, agent, task, "cfg-a"); err != nil || !ok {
			t.Fatalf("Delete = %v, %v", ok, err)
		}
		if ok, err := pc.Delete(ctx, agent, task, "cfg-a"); err != nil || ok {
			t.Fatalf("Delete again = %v, %v; want false", ok, err)
		}
		if _, ok, err := pc.Get(ctx, agent, task, "cfg-a"); err != nil || ok {
			t.Fatalf("Get after Delete = %v, %v", ok, err)
		}
		if list, err := pc.List(ctx, agent, task); err != nil || !reflect.DeepEqual(list, []store.PushConfig{b}) {
			t.Fatalf("List after Delete = %+v, %v", list, err)
		}
	})
	t.Run("BoundPerTask", func(t *testing.T) {
		pc := h.open(t, time.Hour).PushConfigs()
		ctx := context60(t)
		for i := range store.MaxPushConfigsPerTask {
			if _, err := pc.Put(ctx, pcConfig("demo", "t", fmt.Sprintf("c%d", i), i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pc.Put(ctx, pcConfig("demo", "t", "one-too-many", 0)); !errors.Is(err, store.ErrTooManyPushConfigs) {
			t.Fatalf("Put beyond the bound: %v; want ErrTooManyPushConfigs", err)
		}
		if created, err := pc.Put(ctx, pcConfig("demo", "t", "c3", 3)); err != nil || created {
			t.Fatalf("replacing at the bound: %v, %v", created, err)
		}
		if _, err := pc.Put(ctx, pcConfig("demo", "other", "c0", 0)); err != nil {
			t.Fatalf("another task is not bounded by this one: %v", err)
		}
	})
	t.Run("WatchedIndex", func(t *testing.T) {
		pc := h.open(t, time.Hour).PushConfigs()
		ctx := context60(t)
		watched := func(limit int) []store.TaskRef {
			t.Helper()
			refs, err := pc.Watched(ctx, limit)
			if err != nil {
				t.Fatal(err)
			}
			return refs
		}
		// Registered in the order t3, t1, t2 (by Created), from several
		// agents, with a second config on t3 that must not move it.
		for _, c := range []store.PushConfig{
			pcConfig("b", "t1", "c", 2), pcConfig("a", "t3", "c", 1), pcConfig("a", "t2", "c", 3), pcConfig("a", "t3", "d", 4),
		} {
			if _, err := pc.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		want := []store.TaskRef{ref("a", "t3"), ref("b", "t1"), ref("a", "t2")}
		if got := watched(10); !reflect.DeepEqual(got, want) {
			t.Fatalf("Watched = %v; want %v", got, want)
		}
		if got := watched(2); !reflect.DeepEqual(got, want[:2]) {
			t.Fatalf("Watched(2) = %v; want %v", got, want[:2])
		}
		if err := pc.Finish(ctx, "b", "t1"); err != nil {
			t.Fatal(err)
		}
		if err := pc.Finish(ctx, "nobody", "never-watched"); err != nil {
			t.Fatalf("Finish of an unwatched task: %v", err)
		}
		// Deleting configs leaves the task watched; the subscriber finishes it.
		if _, err := pc.Delete(ctx, "a", "t2", "c"); err != nil {
			t.Fatal(err)
		}
		if got := watched(10); !reflect.DeepEqual(got, []store.TaskRef{ref("a", "t3"), ref("a", "t2")}) {
			t.Fatalf("Watched after Finish = %v", got)
		}
		// A config registered after the task finished watches it again.
		if _, err := pc.Put(ctx, pcConfig("b", "t1", "late", 5)); err != nil {
			t.Fatal(err)
		}
		if got := watched(10); !reflect.DeepEqual(got, []store.TaskRef{ref("a", "t3"), ref("a", "t2"), ref("b", "t1")}) {
			t.Fatalf("Watched after a late Put = %v", got)
		}
	})
	t.Run("ArgumentsAndOutage", func(t *testing.T) {
		st := h.open(t, time.Hour)
		pc := st.PushConfigs()
		ctx := context60(t)
		for name, mutate := range map[string]func(*store.PushConfig){
			"no url":          func(c *store.PushConfig) { c.URL = "" },
			"no tenant":       func(c *store.PushConfig) { c.Tenant = "" },
			"no id":           func(c *store.PushConfig) { c.ID = "" },
			"legacy version":  func(c *store.PushConfig) { c.Version = a2a.VLegacy },
			"long id":         func(c *store.PushConfig) { c.ID = strings.Repeat("i", store.MaxPushConfigIDBytes+1) },
			"long url":        func(c *store.PushConfig) { c.URL = "https://x.example/" + strings.Repeat("p", store.MaxPushURLBytes) },
			"long token":      func(c *store.PushConfig) { c.Token = strings.Repeat("t", store.MaxPushSecretBytes+1) },
			"long task id":    func(c *store.PushConfig) { c.TaskID = strings.Repeat("t", store.MaxNameBytes+1) },
			"created in 1960": func(c *store.PushConfig) { c.Created = time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC) },
		} {
			c := pcConfig("demo", "t", "c", 0)
			mutate(&c)
			if _, err := pc.Put(ctx, c); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("Put with %s: %v; want ErrInvalidArgument", name, err)
			}
		}
		for _, limit := range []int{0, store.MaxWatchedListLimit + 1} {
			if _, err := pc.Watched(ctx, limit); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("Watched(%d): %v", limit, err)
			}
		}
		if _, _, err := pc.Get(ctx, "demo", "", "c"); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Get without a task: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := pc.List(ctx, "demo", "t"); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("closed store: %v", err)
		}
	})
}

func ref(agent, task string) store.TaskRef { return store.TaskRef{Agent: agent, TaskID: task} }

// pcConfig is a config created i seconds after a recent fixed time, to the
// nanosecond, so round trips compare exactly and the watched order is i's.
func pcConfig(agent, task, id string, i int) store.PushConfig {
	at := time.Now().Truncate(time.Hour).Add(-time.Hour).Add(time.Duration(i)*time.Second + 123456789)
	return store.PushConfig{
		Agent: agent, TaskID: task, ID: id, Tenant: "acme", Subject: "alice", Version: a2a.V10,
		URL: "https://hooks.example.com/a2a?k=" + id, Created: at.UTC(),
	}
}
