package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunPushSources runs the PushSources conformance cases against newStore.
func RunPushSources(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, harness)
	}{
		{"PutGetReplaceDelete", testPushSourceRoundTrip},
		{"Expiry", testPushSourceExpiry},
		{"TasksAndAgentsAreSeparate", testPushSourceSeparation},
		{"ArgumentLimits", testPushSourceLimits},
		{"ClosedStoreIsUnavailable", testPushSourceClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

func getSource(t *testing.T, ps store.PushSources, agent, task string) (store.PushSource, bool) {
	t.Helper()
	s, ok, err := ps.Get(context60(t), agent, task)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", agent, task, err)
	}
	return s, ok
}

func putSource(t *testing.T, ps store.PushSources, s store.PushSource, ttl time.Duration) {
	t.Helper()
	if err := ps.Put(context60(t), s, ttl); err != nil {
		t.Fatalf("Put(%+v): %v", s, err)
	}
}

func testPushSourceRoundTrip(t *testing.T, h harness) {
	ps := h.open(t, time.Hour).PushSources()
	if _, ok := getSource(t, ps, "demo", "t1"); ok {
		t.Fatal("a record before any Put")
	}
	sum := sha256.Sum256([]byte("secret"))
	putSource(t, ps, store.PushSource{Agent: "demo", TaskID: "t1", Holder: "replica-a", SecretHash: sum[:]}, time.Hour)
	got, ok := getSource(t, ps, "demo", "t1")
	if !ok || got.Agent != "demo" || got.TaskID != "t1" || got.Holder != "replica-a" || !bytes.Equal(got.SecretHash, sum[:]) {
		t.Fatalf("Get = %+v, %t", got, ok)
	}
	got.SecretHash[0] ^= 0xff // the caller's copy, not the store's
	putSource(t, ps, store.PushSource{Agent: "demo", TaskID: "t1", Holder: "replica-b"}, time.Hour)
	if got, _ := getSource(t, ps, "demo", "t1"); got.Holder != "replica-b" || got.SecretHash != nil {
		t.Fatalf("after the replacing Put: %+v", got)
	}
	if err := ps.Delete(context60(t), "demo", "t1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := getSource(t, ps, "demo", "t1"); ok {
		t.Fatal("a record after Delete")
	}
	if err := ps.Delete(context60(t), "demo", "t1"); err != nil {
		t.Fatalf("deleting nothing: %v", err)
	}
}

func testPushSourceExpiry(t *testing.T, h harness) {
	ps := h.open(t, time.Hour).PushSources()
	putSource(t, ps, store.PushSource{Agent: "demo", TaskID: "short", Holder: "a"}, 50*time.Millisecond)
	putSource(t, ps, store.PushSource{Agent: "demo", TaskID: "long", Holder: "a"}, time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := getSource(t, ps, "demo", "short"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a record outlived its ttl")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := getSource(t, ps, "demo", "long"); !ok {
		t.Fatal("a record expired early")
	}
}

func testPushSourceSeparation(t *testing.T, h harness) {
	ps := h.open(t, time.Hour).PushSources()
	refs := [][2]string{{"demo", "t"}, {"demo", "t2"}, {"other", "t"}, {"demo:t", "x"}, {"demo", "t:x"}}
	for i, r := range refs {
		putSource(t, ps, store.PushSource{Agent: r[0], TaskID: r[1], Holder: strings.Repeat("h", i+1)}, time.Hour)
	}
	for i, r := range refs {
		if got, ok := getSource(t, ps, r[0], r[1]); !ok || got.Holder != strings.Repeat("h", i+1) {
			t.Fatalf("%v: %+v, %t", r, got, ok)
		}
	}
}

func testPushSourceLimits(t *testing.T, h harness) {
	ps := h.open(t, time.Hour).PushSources()
	ctx := context60(t)
	long := strings.Repeat("x", store.MaxNameBytes+1)
	for _, tc := range []struct {
		name string
		s    store.PushSource
		ttl  time.Duration
	}{
		{"no agent", store.PushSource{TaskID: "t", Holder: "h"}, time.Hour},
		{"no task", store.PushSource{Agent: "demo", Holder: "h"}, time.Hour},
		{"no holder", store.PushSource{Agent: "demo", TaskID: "t"}, time.Hour},
		{"long task id", store.PushSource{Agent: "demo", TaskID: long, Holder: "h"}, time.Hour},
		{"not a digest", store.PushSource{Agent: "demo", TaskID: "t", Holder: "h", SecretHash: []byte("short")}, time.Hour},
		{"no ttl", store.PushSource{Agent: "demo", TaskID: "t", Holder: "h"}, 0},
	} {
		if err := ps.Put(ctx, tc.s, tc.ttl); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: Put = %v", tc.name, err)
		}
	}
	if _, _, err := ps.Get(ctx, "demo", long); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Get with a long id: %v", err)
	}
	if err := ps.Delete(ctx, "", "t"); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Delete without an agent: %v", err)
	}
}

func testPushSourceClosed(t *testing.T, h harness) {
	st := h.open(t, time.Hour)
	ps := st.PushSources()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context60(t)
	if _, _, err := ps.Get(ctx, "demo", "t"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get: %v", err)
	}
	if err := ps.Put(ctx, store.PushSource{Agent: "demo", TaskID: "t", Holder: "h"}, time.Hour); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Put: %v", err)
	}
	if err := ps.Delete(ctx, "demo", "t"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Delete: %v", err)
	}
}
