package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunLifecycle runs the Lifecycle conformance cases against newStore.
func RunLifecycle(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, harness)
	}{
		{"CreateOnceThenCompareAndSet", testLifecycleCAS},
		{"ConcurrentSavesOneWinner", testLifecycleConcurrentSaves},
		{"RecordRoundTrips", testLifecycleRoundTrip},
		{"HistoryIsBounded", testLifecycleHistoryBound},
		{"ListFilters", testLifecycleListFilters},
		{"ListPagesEachRecordOnce", testLifecycleListPages},
		{"ListPagesAroundChangedRecords", testLifecycleListChanges},
		{"IndexesFollowChanges", testLifecycleIndexesFollow},
		{"CountByState", testLifecycleCount},
		{"DeleteAndLegalHold", testLifecycleDelete},
		{"RecordsExpire", testLifecycleExpiry},
		{"KeptAndHeldRecordsOutliveTheTTL", testLifecycleKept},
		{"Lease", testLifecycleLease},
		{"SeparatorsDoNotCollide", testLifecycleSeparators},
		{"ArgumentLimits", testLifecycleArgumentLimits},
		{"ClosedStoreIsUnavailable", testLifecycleClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

// lcEpoch is the LastActivity the cases count from: fixed, so that no case
// depends on the clock.
func lcEpoch() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

func (h harness) lifecycle(t *testing.T) store.Lifecycle {
	t.Helper()
	return h.open(t, time.Hour).Lifecycle()
}

// lcRecord is a record active at lcEpoch() plus active.
func lcRecord(agent, id, tenant, state string, active time.Duration) store.TaskLifecycle {
	at := lcEpoch().Add(active)
	return store.TaskLifecycle{
		Agent: agent, TaskID: id, Tenant: tenant, Subject: "alice", ContextID: "ctx-" + id, Version: a2a.V10.String(),
		State: state, StateSince: at, Created: lcEpoch(), LastActivity: at,
	}
}

func lcSave(t *testing.T, l store.Lifecycle, rec store.TaskLifecycle, ttl time.Duration) int64 {
	t.Helper()
	rev, ok, err := l.Save(context60(t), rec, ttl)
	if err != nil || !ok || rev <= 0 {
		t.Fatalf("Save(%q, %q, rev %d) = %d, %v, %v; want a new revision", rec.Agent, rec.TaskID, rec.Rev, rev, ok, err)
	}
	return rev
}

func lcGet(t *testing.T, l store.Lifecycle, agent, id string) (store.TaskLifecycle, bool) {
	t.Helper()
	rec, ok, err := l.Get(context60(t), agent, id)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", agent, id, err)
	}
	return rec, ok
}

func lcMustGet(t *testing.T, l store.Lifecycle, agent, id string) store.TaskLifecycle {
	t.Helper()
	rec, ok := lcGet(t, l, agent, id)
	if !ok {
		t.Fatalf("Get(%q, %q): no record", agent, id)
	}
	return rec
}

// lcListAll follows List's cursor to the end, failing on a runaway cursor.
func lcListAll(t *testing.T, l store.Lifecycle, f store.LifecycleFilter, limit int) (recs []store.TaskLifecycle, pages int) {
	t.Helper()
	cursor := ""
	for {
		page, next, err := l.List(context60(t), f, cursor, limit)
		if err != nil {
			t.Fatalf("List(%+v, limit %d): %v", f, limit, err)
		}
		if len(page) > limit {
			t.Fatalf("List(%+v, limit %d) returned %d records", f, limit, len(page))
		}
		recs = append(recs, page...)
		pages++
		if next == "" {
			return recs, pages
		}
		if pages > 1000 {
			t.Fatalf("List(%+v) still has a cursor after %d pages", f, pages)
		}
		cursor = next
	}
}

func lcIDs(recs []store.TaskLifecycle) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.TaskID
	}
	return ids
}

func lcAssertIDs(t *testing.T, what string, recs []store.TaskLifecycle, want ...string) {
	t.Helper()
	if got := lcIDs(recs); !slices.Equal(got, want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

// lcAssertOrdered checks that recs are ordered by LastActivity, oldest first.
func lcAssertOrdered(t *testing.T, what string, recs []store.TaskLifecycle) {
	t.Helper()
	for i := 1; i < len(recs); i++ {
		if recs[i].LastActivity.Before(recs[i-1].LastActivity) {
			t.Fatalf("%s: %q (active %s) comes after %q (active %s)", what,
				recs[i].TaskID, recs[i].LastActivity, recs[i-1].TaskID, recs[i-1].LastActivity)
		}
	}
}

// lcAssertRecord compares every field but Rev, times with Equal.
func lcAssertRecord(t *testing.T, what string, got, want store.TaskLifecycle) {
	t.Helper()
	same := got.Agent == want.Agent && got.TaskID == want.TaskID && got.Tenant == want.Tenant &&
		got.Subject == want.Subject && got.ContextID == want.ContextID && got.Version == want.Version &&
		got.State == want.State && got.StateSince.Equal(want.StateSince) && got.Created.Equal(want.Created) &&
		got.LastActivity.Equal(want.LastActivity) && got.Subscribers == want.Subscribers &&
		got.EndedBy == want.EndedBy && got.Escalated == want.Escalated && got.LegalHold == want.LegalHold &&
		slices.EqualFunc(got.History, want.History, func(a, b store.TaskTransition) bool {
			return a.From == b.From && a.To == b.To && a.At.Equal(b.At)
		})
	if !same {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func testLifecycleCAS(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ctx := context60(t)
	first := lcRecord("agent", "t1", "acme", a2a.StateSubmitted.String(), 0)
	rev1 := lcSave(t, l, first, 0)

	second := lcRecord("agent", "t1", "globex", a2a.StateWorking.String(), time.Second)
	if rev, ok, err := l.Save(ctx, second, 0); err != nil || ok || rev != 0 {
		t.Fatalf("second create = %d, %v, %v; want 0, false, nil", rev, ok, err)
	}
	got := lcMustGet(t, l, "agent", "t1")
	lcAssertRecord(t, "after the refused create", got, first)
	if got.Rev != rev1 {
		t.Fatalf("Rev = %d, want %d", got.Rev, rev1)
	}

	second.Rev = rev1
	rev2 := lcSave(t, l, second, 0)
	if rev2 <= rev1 {
		t.Fatalf("revision after an update = %d, want above %d", rev2, rev1)
	}
	// A writer still holding rev1 lost the race and must not overwrite.
	stale := lcRecord("agent", "t1", "acme", a2a.StateFailed.String(), 2*time.Second)
	stale.Rev = rev1
	if rev, ok, err := l.Save(ctx, stale, 0); err != nil || ok || rev != 0 {
		t.Fatalf("save on a stale revision = %d, %v, %v; want 0, false, nil", rev, ok, err)
	}
	got = lcMustGet(t, l, "agent", "t1")
	lcAssertRecord(t, "after the refused update", got, second)
	if got.Rev != rev2 {
		t.Fatalf("Rev = %d, want %d", got.Rev, rev2)
	}

	// A revision for a record that does not exist is stale too.
	ghost := lcRecord("agent", "ghost", "acme", a2a.StateWorking.String(), 0)
	ghost.Rev = rev2
	if rev, ok, err := l.Save(ctx, ghost, 0); err != nil || ok || rev != 0 {
		t.Fatalf("save of a missing record with a revision = %d, %v, %v; want 0, false, nil", rev, ok, err)
	}
	if _, ok := lcGet(t, l, "agent", "ghost"); ok {
		t.Fatal("a refused save created a record")
	}
}

func testLifecycleConcurrentSaves(t *testing.T, h harness) {
	l := h.lifecycle(t)
	base := lcRecord("agent", "contested", "acme", a2a.StateWorking.String(), 0)
	base.Rev = lcSave(t, l, base, 0)
	const writers = 20
	ctx := context60(t)
	revs := make([]int64, writers)
	oks := make([]bool, writers)
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			rec := base
			rec.Subscribers = i + 1
			<-start
			revs[i], oks[i], errs[i] = l.Save(ctx, rec, 0)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Save: %v", err)
	}
	winner := -1
	for i, ok := range oks {
		if !ok {
			continue
		}
		if winner >= 0 {
			t.Fatalf("writers %d and %d both saved on revision %d", winner, i, base.Rev)
		}
		winner = i
	}
	if winner < 0 {
		t.Fatal("no writer saved")
	}
	got := lcMustGet(t, l, "agent", "contested")
	if got.Subscribers != winner+1 || got.Rev != revs[winner] {
		t.Fatalf("stored subscribers %d rev %d; the winner wrote %d and got rev %d", got.Subscribers, got.Rev, winner+1, revs[winner])
	}
}

func testLifecycleRoundTrip(t *testing.T, h harness) {
	l := h.lifecycle(t)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	rec := store.TaskLifecycle{
		Agent: "agent", TaskID: "t1", Tenant: "acme", Subject: "alice@example.com", ContextID: "ctx-1", Version: a2a.V03.String(),
		State:        a2a.StateCanceled.String(),
		StateSince:   time.Date(2026, 1, 2, 3, 4, 5, 123456789, zone),
		Created:      time.Date(2026, 1, 2, 3, 0, 0, 1, time.UTC),
		LastActivity: time.Date(2026, 1, 2, 3, 4, 5, 987654321, zone),
		History: []store.TaskTransition{
			{From: "", To: a2a.StateSubmitted.String(), At: time.Date(2026, 1, 2, 3, 0, 0, 1, time.UTC)},
			{From: a2a.StateSubmitted.String(), To: a2a.StateWorking.String(), At: time.Date(2026, 1, 2, 3, 1, 0, 500, zone)},
			{From: a2a.StateWorking.String(), To: a2a.StateCanceled.String(), At: time.Date(2026, 1, 2, 3, 4, 5, 123456789, zone)},
		},
		Subscribers: 3, EndedBy: store.EndedByCancel, Escalated: true,
	}
	saved := rec
	saved.History = slices.Clone(rec.History)
	rev := lcSave(t, l, rec, 0)
	// The caller's slice is the caller's: changing it changes nothing stored.
	rec.History[0].To = a2a.StateRejected.String()

	got := lcMustGet(t, l, "agent", "t1")
	lcAssertRecord(t, "Get", got, saved)
	if got.Rev != rev {
		t.Fatalf("Rev = %d, want %d", got.Rev, rev)
	}
	for _, at := range []time.Time{got.StateSince, got.Created, got.LastActivity, got.History[1].At} {
		if at.Location() != time.UTC {
			t.Fatalf("time %s is not in UTC", at)
		}
	}
	got.History[1].To = a2a.StateFailed.String()
	lcAssertRecord(t, "Get after changing a returned record", lcMustGet(t, l, "agent", "t1"), saved)

	listed, _ := lcListAll(t, l, store.LifecycleFilter{Agent: "agent"}, 10)
	if len(listed) != 1 {
		t.Fatalf("List returned %d records, want 1", len(listed))
	}
	lcAssertRecord(t, "List", listed[0], saved)
	if listed[0].Rev != rev {
		t.Fatalf("listed Rev = %d, want %d", listed[0].Rev, rev)
	}

	// Zero times, no history and the legacy version round-trip as well.
	bare := store.TaskLifecycle{Agent: "agent", TaskID: "bare", Tenant: "acme", State: a2a.StateUnknown.String(), Version: a2a.VLegacy.String(), LegalHold: true}
	lcSave(t, l, bare, 0)
	lcAssertRecord(t, "bare record", lcMustGet(t, l, "agent", "bare"), bare)
}

func testLifecycleHistoryBound(t *testing.T, h harness) {
	l := h.lifecycle(t)
	rec := lcRecord("agent", "chatty", "acme", a2a.StateWorking.String(), 0)
	const n = store.MaxLifecycleHistory + 6
	for i := range n {
		from, to := a2a.StateWorking.String(), a2a.StateInputRequired.String()
		if i%2 == 1 {
			from, to = to, from
		}
		rec.History = append(rec.History, store.TaskTransition{From: from, To: to, At: lcEpoch().Add(time.Duration(i) * time.Second)})
	}
	lcSave(t, l, rec, 0)
	if len(rec.History) != n {
		t.Fatalf("Save changed the caller's history to %d entries", len(rec.History))
	}
	got := lcMustGet(t, l, "agent", "chatty")
	want := rec
	want.History = rec.History[n-store.MaxLifecycleHistory:]
	lcAssertRecord(t, "Get", got, want)
}

// lcSeed saves records of agent "a1" (and one of "a2") for the filter cases.
func lcSeed(t *testing.T, l store.Lifecycle) {
	t.Helper()
	for _, r := range []store.TaskLifecycle{
		lcRecord("a1", "t1", "acme", a2a.StateWorking.String(), 1*time.Second),
		lcRecord("a1", "t2", "acme", a2a.StateCompleted.String(), 2*time.Second),
		lcRecord("a1", "t3", "globex", a2a.StateWorking.String(), 3*time.Second),
		lcRecord("a1", "t4", "acme", a2a.StateInputRequired.String(), 4*time.Second),
		lcRecord("a1", "t5", "globex", a2a.StateFailed.String(), 5*time.Second),
		lcRecord("a1", "t6", "acme", a2a.StateSubmitted.String(), 6*time.Second),
		lcRecord("a2", "t1", "acme", a2a.StateWorking.String(), 0),
	} {
		lcSave(t, l, r, 0)
	}
}

func testLifecycleListFilters(t *testing.T, h harness) {
	l := h.lifecycle(t)
	lcSeed(t, l)
	at := func(d time.Duration) time.Time { return lcEpoch().Add(d) }
	tests := []struct {
		name string
		f    store.LifecycleFilter
		want []string
	}{
		{"agent", store.LifecycleFilter{Agent: "a1"}, []string{"t1", "t2", "t3", "t4", "t5", "t6"}},
		{"other agent", store.LifecycleFilter{Agent: "a2"}, []string{"t1"}},
		{"unknown agent", store.LifecycleFilter{Agent: "a3"}, nil},
		{"tenant", store.LifecycleFilter{Agent: "a1", Tenant: "acme"}, []string{"t1", "t2", "t4", "t6"}},
		{"unknown tenant", store.LifecycleFilter{Agent: "a1", Tenant: "initech"}, nil},
		{"state", store.LifecycleFilter{Agent: "a1", State: a2a.StateWorking.String()}, []string{"t1", "t3"}},
		{"state without records", store.LifecycleFilter{Agent: "a1", State: a2a.StateCanceled.String()}, nil},
		{"open", store.LifecycleFilter{Agent: "a1", State: store.LifecycleOpen}, []string{"t1", "t3", "t4", "t6"}},
		{"tenant and state", store.LifecycleFilter{Agent: "a1", Tenant: "acme", State: a2a.StateCompleted.String()}, []string{"t2"}},
		{"tenant and other state", store.LifecycleFilter{Agent: "a1", Tenant: "globex", State: a2a.StateFailed.String()}, []string{"t5"}},
		{"tenant and open", store.LifecycleFilter{Agent: "a1", Tenant: "acme", State: store.LifecycleOpen}, []string{"t1", "t4", "t6"}},
		{"inactive since", store.LifecycleFilter{Agent: "a1", InactiveSince: at(4 * time.Second)}, []string{"t1", "t2", "t3"}},
		{"inactive since, a nanosecond later", store.LifecycleFilter{Agent: "a1", InactiveSince: at(4*time.Second + 1)}, []string{"t1", "t2", "t3", "t4"}},
		{"open and inactive", store.LifecycleFilter{Agent: "a1", State: store.LifecycleOpen, InactiveSince: at(4 * time.Second)}, []string{"t1", "t3"}},
		{"all filters", store.LifecycleFilter{Agent: "a1", Tenant: "acme", State: store.LifecycleOpen, InactiveSince: at(5 * time.Second)}, []string{"t1", "t4"}},
		{"inactive since before everything", store.LifecycleFilter{Agent: "a1", InactiveSince: at(0)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, limit := range []int{1, 2, store.MaxLifecycleListLimit} {
				got, _ := lcListAll(t, l, tt.f, limit)
				lcAssertIDs(t, fmt.Sprintf("limit %d", limit), got, tt.want...)
				for _, r := range got {
					if r.Agent != tt.f.Agent {
						t.Fatalf("record %q has agent %q, want %q", r.TaskID, r.Agent, tt.f.Agent)
					}
				}
			}
		})
	}
}

// lcPagedSet saves n records whose activity repeats in threes, so pages end
// inside groups of equal LastActivity.
func lcPagedSet(t *testing.T, l store.Lifecycle, n int) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		tenant := "acme"
		if i%4 == 3 {
			tenant = "globex"
		}
		lcSave(t, l, lcRecord("pg", id, tenant, a2a.StateWorking.String(), time.Duration(i/3)*time.Second), 0)
		ids[id] = true
	}
	return ids
}

func testLifecycleListPages(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ids := lcPagedSet(t, l, 25)
	ctx := context60(t)
	seen := map[string]int{}
	var all []store.TaskLifecycle
	cursor := ""
	for page := 1; page <= 3; page++ {
		recs, next, err := l.List(ctx, store.LifecycleFilter{Agent: "pg"}, cursor, 10)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if want := min(10, 25-10*(page-1)); len(recs) != want {
			t.Fatalf("page %d has %d records, want %d", page, len(recs), want)
		}
		if (next == "") != (page == 3) {
			t.Fatalf("page %d: cursor %q", page, next)
		}
		for _, r := range recs {
			seen[r.TaskID]++
		}
		all = append(all, recs...)
		cursor = next
	}
	lcAssertOrdered(t, "three pages", all)
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("record %s listed %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(ids) {
		t.Fatalf("listed %d distinct records, want %d", len(seen), len(ids))
	}

	// The same through a filtered index, with pages of every size.
	for _, limit := range []int{1, 2, 3, 4, 7} {
		got, _ := lcListAll(t, l, store.LifecycleFilter{Agent: "pg", Tenant: "globex", State: store.LifecycleOpen}, limit)
		lcAssertIDs(t, fmt.Sprintf("globex, limit %d", limit), got, "r03", "r07", "r11", "r15", "r19", "r23")
	}
}

// testLifecycleListChanges changes and deletes records, among them the one
// a cursor points at, between pages: the changed ones may be skipped or
// repeated once, every other one is listed exactly once.
func testLifecycleListChanges(t *testing.T, h harness) {
	for _, change := range []string{"activity", "state", "delete"} {
		t.Run(change, func(t *testing.T) {
			l := h.lifecycle(t)
			ids := lcPagedSet(t, l, 25)
			ctx := context60(t)
			f := store.LifecycleFilter{Agent: "pg", State: a2a.StateWorking.String()}
			// 11 records end the first page inside a group of three of equal
			// activity (r09, r10, r11).
			page, cursor, err := l.List(ctx, f, "", 11)
			if err != nil || len(page) != 11 || cursor == "" {
				t.Fatalf("first page: %d records, cursor %q, %v", len(page), cursor, err)
			}
			// The last record of the page, which the cursor names, and one
			// further on.
			changed := map[string]bool{page[10].TaskID: true, "r17": true}
			for id := range changed {
				rec := lcMustGet(t, l, "pg", id)
				switch change {
				case "activity":
					rec.LastActivity = lcEpoch().Add(time.Hour)
					lcSave(t, l, rec, 0)
				case "state":
					rec.State = a2a.StateCompleted.String()
					lcSave(t, l, rec, 0)
				case "delete":
					if ok, err := l.Delete(ctx, "pg", id); err != nil || !ok {
						t.Fatalf("Delete(%s) = %v, %v", id, ok, err)
					}
				}
			}
			seen := map[string]int{}
			for _, r := range page {
				seen[r.TaskID]++
			}
			for pages := 1; cursor != ""; pages++ {
				if pages > 100 {
					t.Fatal("cursor never ends")
				}
				page, cursor, err = l.List(ctx, f, cursor, 10)
				if err != nil {
					t.Fatalf("List: %v", err)
				}
				for _, r := range page {
					seen[r.TaskID]++
				}
			}
			for id := range ids {
				switch n := seen[id]; {
				case changed[id] && n > 2:
					t.Errorf("changed record %s listed %d times, want at most twice", id, n)
				case !changed[id] && n != 1:
					t.Errorf("unchanged record %s listed %d times, want once", id, n)
				}
			}
		})
	}
}

func testLifecycleIndexesFollow(t *testing.T, h harness) {
	l := h.lifecycle(t)
	listIDs := func(f store.LifecycleFilter) []string {
		t.Helper()
		recs, _ := lcListAll(t, l, f, 10)
		return lcIDs(recs)
	}
	expect := func(what string, f store.LifecycleFilter, want ...string) {
		t.Helper()
		if got := listIDs(f); !slices.Equal(got, want) {
			t.Fatalf("%s: List(%+v) = %q, want %q", what, f, got, want)
		}
	}
	f := func(tenant, state string) store.LifecycleFilter {
		return store.LifecycleFilter{Agent: "agent", Tenant: tenant, State: state}
	}
	rec := lcRecord("agent", "t", "acme", a2a.StateWorking.String(), 0)
	other := lcRecord("agent", "u", "acme", a2a.StateWorking.String(), time.Second)
	lcSave(t, l, other, 0)
	rec.Rev = lcSave(t, l, rec, 0)
	expect(a2a.StateWorking.String(), f("", a2a.StateWorking.String()), "t", "u")

	rec.State, rec.LastActivity = a2a.StateCompleted.String(), lcEpoch().Add(2*time.Second)
	rec.Rev = lcSave(t, l, rec, 0)
	expect("after completing, working", f("", a2a.StateWorking.String()), "u")
	expect("after completing, open", f("", store.LifecycleOpen), "u")
	expect("after completing, tenant's open", f("acme", store.LifecycleOpen), "u")
	expect("after completing, tenant's working", f("acme", a2a.StateWorking.String()), "u")
	expect("after completing, completed", f("", a2a.StateCompleted.String()), "t")
	expect("after completing, tenant's completed", f("acme", a2a.StateCompleted.String()), "t")
	expect("after completing, everything by activity", f("", ""), "u", "t")

	rec.Tenant = "globex"
	rec.Rev = lcSave(t, l, rec, 0)
	expect("after moving tenant, old tenant", f("acme", ""), "u")
	expect("after moving tenant, old tenant's completed", f("acme", a2a.StateCompleted.String()))
	expect("after moving tenant, new tenant", f("globex", ""), "t")
	expect("after moving tenant, new tenant's completed", f("globex", a2a.StateCompleted.String()), "t")

	rec.State, rec.LastActivity = a2a.StateWorking.String(), lcEpoch().Add(-time.Second)
	lcSave(t, l, rec, 0)
	expect("after reopening, open", f("", store.LifecycleOpen), "t", "u")
	expect("after reopening, completed", f("", a2a.StateCompleted.String()))
	counts, err := l.CountByState(context60(t), "agent")
	if err != nil || !maps.Equal(counts, map[string]int{a2a.StateWorking.String(): 2}) {
		t.Fatalf("CountByState = %v, %v; want working 2", counts, err)
	}
}

func testLifecycleCount(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ctx := context60(t)
	if counts, err := l.CountByState(ctx, "a1"); err != nil || len(counts) != 0 {
		t.Fatalf("CountByState with no records = %v, %v; want empty", counts, err)
	}
	lcSeed(t, l)
	lcSave(t, l, lcRecord("a1", "t7", "initech", a2a.StateWorking.String(), 0), 0)
	lcSave(t, l, lcRecord("a1", "t8", "initech", a2a.StateUnknown.String(), 0), 0)
	want := map[string]int{a2a.StateWorking.String(): 3, a2a.StateCompleted.String(): 1, a2a.StateInputRequired.String(): 1, a2a.StateFailed.String(): 1, a2a.StateSubmitted.String(): 1, a2a.StateUnknown.String(): 1}
	if counts, err := l.CountByState(ctx, "a1"); err != nil || !maps.Equal(counts, want) {
		t.Fatalf("CountByState(a1) = %v, %v; want %v", counts, err, want)
	}
	if counts, err := l.CountByState(ctx, "a2"); err != nil || !maps.Equal(counts, map[string]int{a2a.StateWorking.String(): 1}) {
		t.Fatalf("CountByState(a2) = %v, %v; want working 1", counts, err)
	}
}

func testLifecycleDelete(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ctx := context60(t)
	del := func(id string) bool {
		t.Helper()
		ok, err := l.Delete(ctx, "agent", id)
		if err != nil {
			t.Fatalf("Delete(%s): %v", id, err)
		}
		return ok
	}
	gone := lcRecord("agent", "gone", "acme", a2a.StateCompleted.String(), 0)
	goneRev := lcSave(t, l, gone, 0)
	held := lcRecord("agent", "held", "acme", a2a.StateFailed.String(), time.Second)
	held.LegalHold = true
	held.Rev = lcSave(t, l, held, 0)

	if !del("gone") {
		t.Fatal("Delete of a record = false")
	}
	if _, ok := lcGet(t, l, "agent", "gone"); ok {
		t.Fatal("the deleted record is still there")
	}
	if del("gone") {
		t.Fatal("second Delete = true")
	}
	if del("never") {
		t.Fatal("Delete of an unknown record = true")
	}
	if del("held") {
		t.Fatal("Delete of a record under legal hold = true")
	}
	lcAssertRecord(t, "held record", lcMustGet(t, l, "agent", "held"), held)
	recs, _ := lcListAll(t, l, store.LifecycleFilter{Agent: "agent"}, 10)
	lcAssertIDs(t, "List after the deletes", recs, "held")
	if counts, err := l.CountByState(ctx, "agent"); err != nil || !maps.Equal(counts, map[string]int{a2a.StateFailed.String(): 1}) {
		t.Fatalf("CountByState = %v, %v; want failed 1", counts, err)
	}

	// Lifting the hold lets retention delete it.
	held.LegalHold = false
	lcSave(t, l, held, 0)
	if !del("held") {
		t.Fatal("Delete after lifting the hold = false")
	}

	// A record created again after a delete never reuses a revision, so a
	// writer that read the old record cannot overwrite the new one.
	again := lcRecord("agent", "gone", "globex", a2a.StateWorking.String(), 2*time.Second)
	if rev := lcSave(t, l, again, 0); rev == goneRev {
		t.Fatalf("the new record has the deleted record's revision %d", rev)
	}
	gone.Rev = goneRev
	if _, ok, err := l.Save(ctx, gone, 0); err != nil || ok {
		t.Fatalf("Save on the deleted record's revision = %v, %v; want false", ok, err)
	}
	lcAssertRecord(t, "the record created again", lcMustGet(t, l, "agent", "gone"), again)
}

// lcWaitGone polls until the record is gone, failing after testTimeout.
func lcWaitGone(t *testing.T, l store.Lifecycle, agent, id string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		if _, ok := lcGet(t, l, agent, id); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %s/%s still there after %s", agent, id, testTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testLifecycleExpiry(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ctx := context60(t)
	lcSave(t, l, lcRecord("agent", "short", "acme", a2a.StateWorking.String(), 0), 200*time.Millisecond)
	lcSave(t, l, lcRecord("agent", "long", "acme", a2a.StateWorking.String(), time.Second), time.Hour)
	lcWaitGone(t, l, "agent", "short")
	recs, _ := lcListAll(t, l, store.LifecycleFilter{Agent: "agent", State: a2a.StateWorking.String()}, 10)
	lcAssertIDs(t, "List after the expiry", recs, "long")
	deadline := time.Now().Add(testTimeout)
	for {
		counts, err := l.CountByState(ctx, "agent")
		if err != nil {
			t.Fatal(err)
		}
		if maps.Equal(counts, map[string]int{a2a.StateWorking.String(): 1}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CountByState = %v long after the expiry, want working 1", counts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Once expired, the task may be created anew.
	lcSave(t, l, lcRecord("agent", "short", "globex", a2a.StateSubmitted.String(), 0), 0)
}

// testLifecycleKept checks that a later Save with ttl 0, or a legal hold,
// keeps a record that an earlier ttl would have expired.
func testLifecycleKept(t *testing.T, h harness) {
	l := h.lifecycle(t)
	const ttl = 200 * time.Millisecond
	kept := lcRecord("agent", "kept", "acme", a2a.StateWorking.String(), 0)
	kept.Rev = lcSave(t, l, kept, ttl)
	lcSave(t, l, kept, 0)
	held := lcRecord("agent", "held", "acme", a2a.StateWorking.String(), 0)
	held.LegalHold = true
	lcSave(t, l, held, ttl)
	// Saved last with the same ttl, so it expires after the others would.
	lcSave(t, l, lcRecord("agent", "witness", "acme", a2a.StateWorking.String(), 0), ttl)
	lcWaitGone(t, l, "agent", "witness")
	lcMustGet(t, l, "agent", "kept")
	lcMustGet(t, l, "agent", "held")
}

func testLifecycleLease(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ctx := context60(t)
	lease := func(name, holder string, ttl time.Duration) bool {
		t.Helper()
		ok, err := l.Lease(ctx, name, holder, ttl)
		if err != nil {
			t.Fatalf("Lease(%q, %q): %v", name, holder, err)
		}
		return ok
	}
	const short = 200 * time.Millisecond
	if !lease("watchdog", "replica-a", short) {
		t.Fatal("the first holder did not get a free lease")
	}
	if lease("watchdog", "replica-b", short) {
		t.Fatal("a second holder got a held lease")
	}
	if !lease("watchdog", "replica-a", short) {
		t.Fatal("the holder could not renew")
	}
	if !lease("gauges", "replica-b", time.Hour) {
		t.Fatal("a lease of another name is not free")
	}
	deadline := time.Now().Add(testTimeout)
	for !lease("watchdog", "replica-b", time.Hour) {
		if time.Now().After(deadline) {
			t.Fatalf("the lease never passed to a second holder after its %s ttl", short)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lease("watchdog", "replica-a", short) {
		t.Fatal("the former holder got the lease back while it is held")
	}

	// Renewal with a longer ttl outlasts the first one.
	if !lease("sweep", "replica-a", short) || !lease("sweep", "replica-a", time.Hour) {
		t.Fatal("could not take and renew a free lease")
	}
	time.Sleep(2 * short)
	if lease("sweep", "replica-b", short) {
		t.Fatal("a renewed lease ran out with its first ttl")
	}
}

func testLifecycleSeparators(t *testing.T, h harness) {
	l := h.lifecycle(t)
	// Pairs that a naive "agent:id" key, or "tenant:state" index, would
	// merge, or whose braces would move a Cluster hash tag.
	cases := []struct{ agent, id, tenant string }{
		{"a:b", "c", "x"},
		{"a", "b:c", "x"},
		{"a", "t:b", "x:y"},
		{"a%3Ab", "c", "x%3Ay"},
		{"a}", "{b", "{x}"},
		{"a", "}{b", "x:completed"},
		{"a{", "b}", "open"},
		{"a", "b|c", "x|1"},
		{"a", "b c\x00", "ü"},
	}
	for i, c := range cases {
		rec := lcRecord(c.agent, c.id, c.tenant, a2a.StateWorking.String(), time.Duration(i)*time.Second)
		rec.Subscribers = i
		lcSave(t, l, rec, 0)
	}
	lcSave(t, l, lcRecord("a", "done", "x", a2a.StateCompleted.String(), time.Hour), 0)
	for i, c := range cases {
		got := lcMustGet(t, l, c.agent, c.id)
		if got.Subscribers != i || got.Tenant != c.tenant {
			t.Errorf("case %d (%q, %q): got subscribers %d tenant %q", i, c.agent, c.id, got.Subscribers, got.Tenant)
		}
	}
	tests := []struct {
		f    store.LifecycleFilter
		want []string
	}{
		{store.LifecycleFilter{Agent: "a"}, []string{"b:c", "t:b", "}{b", "b|c", "b c\x00", "done"}},
		{store.LifecycleFilter{Agent: "a", Tenant: "x"}, []string{"b:c", "done"}},
		{store.LifecycleFilter{Agent: "a", Tenant: "x", State: a2a.StateCompleted.String()}, []string{"done"}},
		{store.LifecycleFilter{Agent: "a", Tenant: "x:completed"}, []string{"}{b"}},
		{store.LifecycleFilter{Agent: "a", Tenant: "x:y"}, []string{"t:b"}},
		{store.LifecycleFilter{Agent: "a", State: store.LifecycleOpen}, []string{"b:c", "t:b", "}{b", "b|c", "b c\x00"}},
		{store.LifecycleFilter{Agent: "a{", Tenant: "open"}, []string{"b}"}},
		{store.LifecycleFilter{Agent: "a:b"}, []string{"c"}},
		{store.LifecycleFilter{Agent: "a%3Ab"}, []string{"c"}},
	}
	for _, tt := range tests {
		recs, _ := lcListAll(t, l, tt.f, 2)
		lcAssertIDs(t, fmt.Sprintf("List(%+v)", tt.f), recs, tt.want...)
	}
	ctx := context60(t)
	for _, name := range []string{"a:b", "a", "a%3Ab", "{a}"} {
		if ok, err := l.Lease(ctx, name, "holder-"+name, time.Hour); err != nil || !ok {
			t.Fatalf("Lease(%q) = %v, %v; want a free lease", name, ok, err)
		}
	}
}

func testLifecycleArgumentLimits(t *testing.T, h harness) {
	l := h.lifecycle(t)
	ctx := context60(t)
	long := strings.Repeat("x", store.MaxNameBytes+1)
	atLimit := strings.Repeat("y", store.MaxNameBytes)

	ok := lcRecord(atLimit, atLimit, atLimit, a2a.StateWorking.String(), 0)
	ok.Subject, ok.ContextID = atLimit, atLimit
	lcSave(t, l, ok, 0)
	lcAssertRecord(t, "record at the limits", lcMustGet(t, l, atLimit, atLimit), ok)
	if _, _, err := l.List(ctx, store.LifecycleFilter{Agent: atLimit, Tenant: atLimit}, "", store.MaxLifecycleListLimit); err != nil {
		t.Fatalf("List at the limits: %v", err)
	}

	bad := func(change func(*store.TaskLifecycle)) store.TaskLifecycle {
		r := lcRecord("agent", "t", "acme", a2a.StateWorking.String(), 0)
		change(&r)
		return r
	}
	saves := []struct {
		name string
		rec  store.TaskLifecycle
		ttl  time.Duration
	}{
		{"empty agent", bad(func(r *store.TaskLifecycle) { r.Agent = "" }), 0},
		{"oversize agent", bad(func(r *store.TaskLifecycle) { r.Agent = long }), 0},
		{"empty task id", bad(func(r *store.TaskLifecycle) { r.TaskID = "" }), 0},
		{"oversize task id", bad(func(r *store.TaskLifecycle) { r.TaskID = long }), 0},
		{"empty tenant", bad(func(r *store.TaskLifecycle) { r.Tenant = "" }), 0},
		{"oversize tenant", bad(func(r *store.TaskLifecycle) { r.Tenant = long }), 0},
		{"oversize subject", bad(func(r *store.TaskLifecycle) { r.Subject = long }), 0},
		{"oversize context id", bad(func(r *store.TaskLifecycle) { r.ContextID = long }), 0},
		{"unknown version", bad(func(r *store.TaskLifecycle) { r.Version = "2.0" }), 0},
		{"empty state", bad(func(r *store.TaskLifecycle) { r.State = "" }), 0},
		{"wire spelling of a state", bad(func(r *store.TaskLifecycle) { r.State = a2a.StateWorking.Wire(a2a.V10) }), 0},
		{"capitalised state", bad(func(r *store.TaskLifecycle) { r.State = "Working" }), 0},
		{"open as a state", bad(func(r *store.TaskLifecycle) { r.State = store.LifecycleOpen }), 0},
		{"unknown ended by", bad(func(r *store.TaskLifecycle) { r.EndedBy = "operator" }), 0},
		{"negative subscribers", bad(func(r *store.TaskLifecycle) { r.Subscribers = -1 }), 0},
		{"negative revision", bad(func(r *store.TaskLifecycle) { r.Rev = -1 }), 0},
		{"time past year 9999", bad(func(r *store.TaskLifecycle) { r.LastActivity = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }), 0},
		{"history to no state", bad(func(r *store.TaskLifecycle) {
			r.History = []store.TaskTransition{{From: a2a.StateWorking.String(), To: "done", At: lcEpoch()}}
		}), 0},
		{"history from no state", bad(func(r *store.TaskLifecycle) {
			r.History = []store.TaskTransition{{From: a2a.StateSubmitted.Wire(a2a.V10), To: a2a.StateWorking.String(), At: lcEpoch()}}
		}), 0},
		{"negative ttl", bad(func(*store.TaskLifecycle) {}), -time.Second},
	}
	for _, tt := range saves {
		if _, _, err := l.Save(ctx, tt.rec, tt.ttl); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Save with %s: err = %v, want ErrInvalidArgument", tt.name, err)
		}
	}
	if _, ok := lcGet(t, l, "agent", "t"); ok {
		t.Fatal("a refused Save stored a record")
	}

	valid := store.LifecycleFilter{Agent: "agent"}
	calls := []struct {
		name string
		call func() error
	}{
		{"Get empty agent", func() error { _, _, err := l.Get(ctx, "", "t"); return err }},
		{"Get oversize task id", func() error { _, _, err := l.Get(ctx, "agent", long); return err }},
		{"Delete empty task id", func() error { _, err := l.Delete(ctx, "agent", ""); return err }},
		{"Delete oversize agent", func() error { _, err := l.Delete(ctx, long, "t"); return err }},
		{"CountByState empty agent", func() error { _, err := l.CountByState(ctx, ""); return err }},
		{"List empty agent", func() error { _, _, err := l.List(ctx, store.LifecycleFilter{}, "", 10); return err }},
		{"List oversize tenant", func() error {
			_, _, err := l.List(ctx, store.LifecycleFilter{Agent: "agent", Tenant: long}, "", 10)
			return err
		}},
		{"List unknown state", func() error {
			_, _, err := l.List(ctx, store.LifecycleFilter{Agent: "agent", State: "closed"}, "", 10)
			return err
		}},
		{"List limit 0", func() error { _, _, err := l.List(ctx, valid, "", 0); return err }},
		{"List limit over the maximum", func() error { _, _, err := l.List(ctx, valid, "", store.MaxLifecycleListLimit+1); return err }},
		{"List malformed cursor", func() error { _, _, err := l.List(ctx, valid, "not a cursor!", 10); return err }},
		{"List oversize cursor", func() error { _, _, err := l.List(ctx, valid, strings.Repeat("A", 4096), 10); return err }},
		{"Lease empty name", func() error { _, err := l.Lease(ctx, "", "h", time.Second); return err }},
		{"Lease oversize holder", func() error { _, err := l.Lease(ctx, "n", long, time.Second); return err }},
		{"Lease zero ttl", func() error { _, err := l.Lease(ctx, "n", "h", 0); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", c.name, err)
		}
	}
}

func testLifecycleClosed(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	l := s.Lifecycle()
	rec := lcRecord("agent", "t", "acme", a2a.StateWorking.String(), 0)
	lcSave(t, l, rec, 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context60(t)
	calls := map[string]func() error{
		"Get":  func() error { _, _, err := l.Get(ctx, "agent", "t"); return err },
		"Save": func() error { _, _, err := l.Save(ctx, rec, 0); return err },
		"List": func() error {
			_, _, err := l.List(ctx, store.LifecycleFilter{Agent: "agent"}, "", 10)
			return err
		},
		"CountByState": func() error { _, err := l.CountByState(ctx, "agent"); return err },
		"Delete":       func() error { _, err := l.Delete(ctx, "agent", "t"); return err },
		"Lease":        func() error { _, err := l.Lease(ctx, "n", "h", time.Second); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s after Close: err = %v, want ErrUnavailable", name, err)
		}
	}
}
