package storetest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Durations the dedupe cases use. Short ones are waited out by polling with
// a deadline, never by asserting how long something took.
const (
	longLease  = time.Hour
	longTTL    = time.Hour
	shortLease = 200 * time.Millisecond
	shortTTL   = 200 * time.Millisecond
	pollEvery  = 20 * time.Millisecond
)

// RunDedupe runs the Dedupe conformance cases against newStore.
func RunDedupe(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, harness)
	}{
		{"ConcurrentClaimsOneWinner", testDedupeConcurrentClaims},
		{"SameHolderClaimsAgain", testDedupeSameHolder},
		{"OtherClaimsSeeTheRecord", testDedupeOtherClaims},
		{"LeaseExpiryAndTakeover", testDedupeTakeover},
		{"RenewExtendsTheLease", testDedupeRenew},
		{"SetTaskThenComplete", testDedupeComplete},
		{"OnlyTheHolderActs", testDedupeOnlyHolder},
		{"Release", testDedupeRelease},
		{"RecordsExpire", testDedupeExpiry},
		{"CompleteResetsTheExpiry", testDedupeCompleteExpiry},
		{"TakeoverResetsTheExpiry", testDedupeTakeoverExpiry},
		{"InFlightOutlivesATTLShorterThanItsLease", testDedupeLeaseOutlivesTTL},
		{"TenantsAreSeparate", testDedupeTenants},
		{"SeparatorsDoNotCollide", testDedupeSeparators},
		{"ArgumentLimits", testDedupeArgumentLimits},
		{"ClosedStoreIsUnavailable", testDedupeClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

func (h harness) dedupe(t *testing.T) store.Dedupe {
	t.Helper()
	return h.open(t, time.Hour).Dedupe()
}

func claimD(t *testing.T, d store.Dedupe, tenant, key, fp, holder string, lease, ttl time.Duration) (store.DedupeRecord, store.ClaimOutcome) {
	t.Helper()
	rec, out, err := d.Claim(context60(t), tenant, key, fp, holder, lease, ttl)
	if err != nil {
		t.Fatalf("Claim(%q, %q, %q, %q): %v", tenant, key, fp, holder, err)
	}
	return rec, out
}

func mustClaim(t *testing.T, d store.Dedupe, tenant, key, fp, holder string, lease, ttl time.Duration, want store.ClaimOutcome) store.DedupeRecord {
	t.Helper()
	rec, out := claimD(t, d, tenant, key, fp, holder, lease, ttl)
	if out != want {
		t.Fatalf("Claim(%q, %q, %q, %q) = %s with %+v, want %s", tenant, key, fp, holder, out, rec, want)
	}
	return rec
}

func getD(t *testing.T, d store.Dedupe, tenant, key string) (store.DedupeRecord, bool) {
	t.Helper()
	rec, ok, err := d.Get(context60(t), tenant, key)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", tenant, key, err)
	}
	return rec, ok
}

func mustGet(t *testing.T, d store.Dedupe, tenant, key string) store.DedupeRecord {
	t.Helper()
	rec, ok := getD(t, d, tenant, key)
	if !ok {
		t.Fatalf("Get(%q, %q): no record", tenant, key)
	}
	return rec
}

func assertRecord(t *testing.T, what string, got, want store.DedupeRecord) {
	t.Helper()
	if got.State != want.State || got.Fingerprint != want.Fingerprint || got.Holder != want.Holder ||
		got.LeaseExpired != want.LeaseExpired || got.TaskID != want.TaskID || !bytes.Equal(got.Result, want.Result) {
		t.Fatalf("%s: record = %s, want %s", what, describe(got), describe(want))
	}
	if want.State == store.DedupeInFlight && got.Result != nil {
		t.Fatalf("%s: in-flight record has a result %q", what, got.Result)
	}
}

func describe(r store.DedupeRecord) string {
	res := fmt.Sprintf("%q", r.Result)
	if len(r.Result) > 64 {
		res = fmt.Sprintf("%d bytes", len(r.Result))
	}
	return fmt.Sprintf("{%s fp=%q holder=%q leaseExpired=%v task=%q result=%s}", r.State, r.Fingerprint, r.Holder, r.LeaseExpired, r.TaskID, res)
}

func inFlight(fp, holder, task string) store.DedupeRecord {
	return store.DedupeRecord{State: store.DedupeInFlight, Fingerprint: fp, Holder: holder, TaskID: task}
}

// holderOps runs every holder-checked method and reports what each returned.
type holderOps struct {
	renew, setTask, complete, release bool
}

func tryAll(t *testing.T, d store.Dedupe, tenant, key, holder string) holderOps {
	t.Helper()
	ctx := context60(t)
	var got holderOps
	var err error
	if got.renew, err = d.Renew(ctx, tenant, key, holder, longLease); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if got.setTask, err = d.SetTask(ctx, tenant, key, holder, "task-by-"+holder); err != nil {
		t.Fatalf("SetTask: %v", err)
	}
	if got.complete, err = d.Complete(ctx, tenant, key, holder, []byte("result-by-"+holder), longTTL); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.release, err = d.Release(ctx, tenant, key, holder); err != nil {
		t.Fatalf("Release: %v", err)
	}
	return got
}

func complete(t *testing.T, d store.Dedupe, tenant, key, holder string, result []byte, ttl time.Duration) bool {
	t.Helper()
	ok, err := d.Complete(context60(t), tenant, key, holder, result, ttl)
	if err != nil {
		t.Fatalf("Complete(%q, %q, %q): %v", tenant, key, holder, err)
	}
	return ok
}

func setTask(t *testing.T, d store.Dedupe, tenant, key, holder, taskID string) bool {
	t.Helper()
	ok, err := d.SetTask(context60(t), tenant, key, holder, taskID)
	if err != nil {
		t.Fatalf("SetTask(%q, %q, %q): %v", tenant, key, holder, err)
	}
	return ok
}

func release(t *testing.T, d store.Dedupe, tenant, key, holder string) bool {
	t.Helper()
	ok, err := d.Release(context60(t), tenant, key, holder)
	if err != nil {
		t.Fatalf("Release(%q, %q, %q): %v", tenant, key, holder, err)
	}
	return ok
}

func renew(t *testing.T, d store.Dedupe, tenant, key, holder string, lease time.Duration) bool {
	t.Helper()
	ok, err := d.Renew(context60(t), tenant, key, holder, lease)
	if err != nil {
		t.Fatalf("Renew(%q, %q, %q): %v", tenant, key, holder, err)
	}
	return ok
}

// waitFor polls cond until it holds, failing after testTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %s for %s", testTimeout, what)
		}
		time.Sleep(pollEvery)
	}
}

func testDedupeConcurrentClaims(t *testing.T, h harness) {
	d := h.dedupe(t)
	const claimants = 100
	ctx := context60(t)
	holders := make([]string, claimants)
	for i := range holders {
		holders[i] = fmt.Sprintf("holder-%d", i)
	}
	recs := make([]store.DedupeRecord, claimants)
	outs := make([]store.ClaimOutcome, claimants)
	errs := make([]error, claimants)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range claimants {
		wg.Go(func() {
			<-start
			recs[i], outs[i], errs[i] = d.Claim(ctx, "acme", "msg-1", "fp", holders[i], longLease, longTTL)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	winner := -1
	for i, out := range outs {
		switch out {
		case store.ClaimNew:
			if winner >= 0 {
				t.Fatalf("claimants %d and %d both got ClaimNew", winner, i)
			}
			winner = i
		case store.ClaimExisting:
		default:
			t.Fatalf("claimant %d got %s", i, out)
		}
	}
	if winner < 0 {
		t.Fatal("no claimant got ClaimNew")
	}
	want := inFlight("fp", holders[winner], "")
	for i, rec := range recs {
		assertRecord(t, fmt.Sprintf("claimant %d", i), rec, want)
	}
	assertRecord(t, "Get after the race", mustGet(t, d, "acme", "msg-1"), want)
}

// testDedupeSameHolder checks that a claim retried with its own token, as
// after a lost reply, is answered as the first one was and changes nothing.
func testDedupeSameHolder(t *testing.T, h harness) {
	d := h.dedupe(t)
	first := mustClaim(t, d, "acme", "m", "fp", "h1", longLease, longTTL, store.ClaimNew)
	assertRecord(t, "first claim", first, inFlight("fp", "h1", ""))
	if !setTask(t, d, "acme", "m", "h1", "task-1") {
		t.Fatal("SetTask by the holder: false")
	}
	// A different, tiny lease on the retry must not replace the first one.
	again := mustClaim(t, d, "acme", "m", "fp", "h1", time.Millisecond, time.Millisecond, store.ClaimNew)
	want := inFlight("fp", "h1", "task-1")
	assertRecord(t, "repeated claim", again, want)
	time.Sleep(50 * time.Millisecond)
	assertRecord(t, "Get after the repeated claim", mustGet(t, d, "acme", "m"), want)
}

func testDedupeOtherClaims(t *testing.T, h harness) {
	d := h.dedupe(t)
	mustClaim(t, d, "acme", "m", "fp-a", "h1", longLease, longTTL, store.ClaimNew)
	want := inFlight("fp-a", "h1", "")
	assertRecord(t, "other fingerprint",
		mustClaim(t, d, "acme", "m", "fp-b", "h2", longLease, longTTL, store.ClaimExisting), want)
	assertRecord(t, "same fingerprint, lease running",
		mustClaim(t, d, "acme", "m", "fp-a", "h3", longLease, longTTL, store.ClaimExisting), want)
	assertRecord(t, "Get", mustGet(t, d, "acme", "m"), want)
}

func testDedupeTakeover(t *testing.T, h harness) {
	d := h.dedupe(t)
	mustClaim(t, d, "acme", "m", "fp", "old", shortLease, longTTL, store.ClaimNew)
	if !setTask(t, d, "acme", "m", "old", "task-1") {
		t.Fatal("SetTask by the holder: false")
	}
	waitFor(t, "the lease to expire", func() bool { return mustGet(t, d, "acme", "m").LeaseExpired })
	expired := inFlight("fp", "old", "task-1")
	expired.LeaseExpired = true
	assertRecord(t, "Get after the lease", mustGet(t, d, "acme", "m"), expired)

	// An expired lease is no reason to hand the record to another request.
	assertRecord(t, "claim with another fingerprint",
		mustClaim(t, d, "acme", "m", "fp-other", "intruder", longLease, longTTL, store.ClaimExisting), expired)

	took := mustClaim(t, d, "acme", "m", "fp", "new", longLease, longTTL, store.ClaimTakeover)
	after := inFlight("fp", "new", "task-1")
	assertRecord(t, "takeover", took, after)
	assertRecord(t, "Get after the takeover", mustGet(t, d, "acme", "m"), after)
	// The new holder's lease runs, so nobody takes it over in turn.
	mustClaim(t, d, "acme", "m", "fp", "third", longLease, longTTL, store.ClaimExisting)
	// A lost takeover reply retried with the same token is still a takeover.
	assertRecord(t, "repeated takeover",
		mustClaim(t, d, "acme", "m", "fp", "new", longLease, longTTL, store.ClaimTakeover), after)

	if got := tryAll(t, d, "acme", "m", "old"); got != (holderOps{}) {
		t.Fatalf("the old holder after the takeover: %+v, want every method false", got)
	}
	assertRecord(t, "Get after the old holder tried", mustGet(t, d, "acme", "m"), after)

	if !complete(t, d, "acme", "m", "new", []byte("answer"), longTTL) {
		t.Fatal("Complete by the new holder: false")
	}
	assertRecord(t, "Get after completion", mustGet(t, d, "acme", "m"),
		store.DedupeRecord{State: store.DedupeDone, Fingerprint: "fp", Holder: "new", TaskID: "task-1", Result: []byte("answer")})
}

func testDedupeRenew(t *testing.T, h harness) {
	d := h.dedupe(t)
	claimed := time.Now()
	mustClaim(t, d, "acme", "m", "fp", "h1", shortLease, longTTL, store.ClaimNew)
	if renew(t, d, "acme", "m", "h2", longLease) {
		t.Fatal("Renew by a non-holder: true")
	}
	if !renew(t, d, "acme", "m", "h1", longLease) {
		t.Fatal("Renew by the holder: false")
	}
	// Well past the end of the first lease, the renewed one still runs.
	time.Sleep(time.Until(claimed.Add(2 * shortLease)))
	assertRecord(t, "Get after the first lease would have ended", mustGet(t, d, "acme", "m"), inFlight("fp", "h1", ""))
	mustClaim(t, d, "acme", "m", "fp", "h3", longLease, longTTL, store.ClaimExisting)

	// A holder whose lease ran out but whom nobody replaced still holds the
	// record, and renewing makes the lease current again.
	mustClaim(t, d, "acme", "late", "fp", "h1", shortLease, longTTL, store.ClaimNew)
	waitFor(t, "the lease to expire", func() bool { return mustGet(t, d, "acme", "late").LeaseExpired })
	if !renew(t, d, "acme", "late", "h1", longLease) {
		t.Fatal("Renew of an expired lease nobody took over: false")
	}
	assertRecord(t, "Get after the late renewal", mustGet(t, d, "acme", "late"), inFlight("fp", "h1", ""))
	mustClaim(t, d, "acme", "late", "fp", "h3", longLease, longTTL, store.ClaimExisting)
}

func testDedupeComplete(t *testing.T, h harness) {
	d := h.dedupe(t)
	large := make([]byte, 1<<20)
	if _, err := rand.Read(large); err != nil {
		t.Fatal(err)
	}
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\r', '\n', 0, '"', '\\', '{', '}', 0x80}
	tests := []struct {
		name    string
		taskID  string
		result  []byte
		wantRes []byte
	}{
		{name: "text", taskID: "task-1", result: []byte(`{"jsonrpc":"2.0","result":{}}`)},
		{name: "binary", taskID: "task-2", result: binary},
		{name: "empty body", taskID: "task-3", result: []byte{}},
		{name: "nil body", taskID: "task-4", result: nil},
		{name: "no task id", result: []byte("message, not task")},
		{name: "one MiB", taskID: "task-5", result: large},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "m-" + tt.name
			mustClaim(t, d, "acme", key, "fp", "h1", longLease, longTTL, store.ClaimNew)
			if tt.taskID != "" && !setTask(t, d, "acme", key, "h1", tt.taskID) {
				t.Fatal("SetTask by the holder: false")
			}
			assertRecord(t, "Get in flight", mustGet(t, d, "acme", key), inFlight("fp", "h1", tt.taskID))
			if complete(t, d, "acme", key, "h2", []byte("forged"), longTTL) {
				t.Fatal("Complete by a non-holder: true")
			}
			result := bytes.Clone(tt.result)
			if !complete(t, d, "acme", key, "h1", result, longTTL) {
				t.Fatal("Complete by the holder: false")
			}
			// The store must have kept its own copy.
			if len(result) > 0 {
				result[0] ^= 0xff
			}
			done := store.DedupeRecord{State: store.DedupeDone, Fingerprint: "fp", Holder: "h1", TaskID: tt.taskID, Result: tt.result}
			got := mustGet(t, d, "acme", key)
			assertRecord(t, "Get when done", got, done)
			if got.Result == nil {
				t.Fatal("a done record's Result is nil, want an empty slice at least")
			}
			if len(got.Result) > 0 {
				got.Result[0] ^= 0xff
			}
			assertRecord(t, "Get after changing a returned result", mustGet(t, d, "acme", key), done)
			// Duplicates find the result to replay.
			assertRecord(t, "claim of a done record",
				mustClaim(t, d, "acme", key, "fp", "h3", longLease, longTTL, store.ClaimExisting), done)
			assertRecord(t, "claim of a done record by its holder",
				mustClaim(t, d, "acme", key, "fp", "h1", longLease, longTTL, store.ClaimExisting), done)

			// A repeated Complete, as after a lost reply, reports success
			// and changes nothing; nothing else acts on a done record.
			if !complete(t, d, "acme", key, "h1", []byte("second"), longTTL) {
				t.Fatal("repeated Complete by the holder: false")
			}
			if renew(t, d, "acme", key, "h1", longLease) || setTask(t, d, "acme", key, "h1", "other") || release(t, d, "acme", key, "h1") {
				t.Fatal("Renew, SetTask or Release acted on a done record")
			}
			assertRecord(t, "Get after acting on a done record", mustGet(t, d, "acme", key), done)
		})
	}
}

// testDedupeOnlyHolder checks that a non-holder changes nothing while the
// holder is in flight, and that nothing acts on a missing record.
func testDedupeOnlyHolder(t *testing.T, h harness) {
	d := h.dedupe(t)
	mustClaim(t, d, "acme", "m", "fp", "h1", longLease, longTTL, store.ClaimNew)
	if !setTask(t, d, "acme", "m", "h1", "task-1") {
		t.Fatal("SetTask by the holder: false")
	}
	if got := tryAll(t, d, "acme", "m", "h2"); got != (holderOps{}) {
		t.Fatalf("a non-holder: %+v, want every method false", got)
	}
	assertRecord(t, "Get", mustGet(t, d, "acme", "m"), inFlight("fp", "h1", "task-1"))
	if got := tryAll(t, d, "acme", "missing", "h1"); got != (holderOps{}) {
		t.Fatalf("on a missing record: %+v, want every method false", got)
	}
	if _, ok := getD(t, d, "acme", "missing"); ok {
		t.Fatal("acting on a missing record created it")
	}
}

func testDedupeRelease(t *testing.T, h harness) {
	d := h.dedupe(t)
	mustClaim(t, d, "acme", "m", "fp", "h1", longLease, longTTL, store.ClaimNew)
	if release(t, d, "acme", "m", "h2") {
		t.Fatal("Release by a non-holder: true")
	}
	mustGet(t, d, "acme", "m")
	if !release(t, d, "acme", "m", "h1") {
		t.Fatal("Release by the holder: false")
	}
	if rec, ok := getD(t, d, "acme", "m"); ok {
		t.Fatalf("Get after Release: %s, want none", describe(rec))
	}
	if release(t, d, "acme", "m", "h1") {
		t.Fatal("second Release: true")
	}
	// The retry goes ahead as if the first request never came.
	assertRecord(t, "claim after Release",
		mustClaim(t, d, "acme", "m", "fp", "h2", longLease, longTTL, store.ClaimNew), inFlight("fp", "h2", ""))
}

func testDedupeExpiry(t *testing.T, h harness) {
	d := h.dedupe(t)
	mustClaim(t, d, "acme", "in-flight", "fp", "h1", shortLease, shortTTL, store.ClaimNew)
	mustClaim(t, d, "acme", "done", "fp", "h1", longLease, longTTL, store.ClaimNew)
	if !complete(t, d, "acme", "done", "h1", []byte("r"), shortTTL) {
		t.Fatal("Complete by the holder: false")
	}
	for _, key := range []string{"in-flight", "done"} {
		waitFor(t, key+" record to expire", func() bool { _, ok := getD(t, d, "acme", key); return !ok })
		assertRecord(t, "claim after expiry of "+key,
			mustClaim(t, d, "acme", key, "fp-2", "h2", longLease, longTTL, store.ClaimNew), inFlight("fp-2", "h2", ""))
	}
}

// testDedupeCompleteExpiry checks that Complete replaces the claim's expiry
// with its own ttl, also when that is longer.
func testDedupeCompleteExpiry(t *testing.T, h harness) {
	d := h.dedupe(t)
	const claimTTL = 2 * time.Second
	// A machine that stalls for longer than claimTTL between Claim and
	// Complete lets the claim expire first; try again rather than fail.
	for attempt := range 5 {
		key := fmt.Sprintf("m-%d", attempt)
		claimed := time.Now()
		mustClaim(t, d, "acme", key, "fp", "h1", shortLease, claimTTL, store.ClaimNew)
		if !complete(t, d, "acme", key, "h1", []byte("r"), longTTL) {
			continue
		}
		time.Sleep(time.Until(claimed.Add(claimTTL + shortTTL)))
		if _, ok := getD(t, d, "acme", key); !ok {
			t.Fatal("a record completed with a one-hour ttl expired with its claim's ttl")
		}
		return
	}
	t.Fatal("every claim expired before it could be completed")
}

// testDedupeTakeoverExpiry checks that a takeover gives the record the
// new claim's ttl rather than leaving it to expire with the old one.
func testDedupeTakeoverExpiry(t *testing.T, h harness) {
	d := h.dedupe(t)
	const claimTTL = time.Second
	// A machine that stalls for longer than claimTTL lets the first claim
	// expire before the takeover; try again rather than fail.
	for attempt := range 5 {
		key := fmt.Sprintf("m-%d", attempt)
		claimed := time.Now()
		mustClaim(t, d, "acme", key, "fp", "old", shortLease, claimTTL, store.ClaimNew)
		waitFor(t, "the lease to expire or the record to vanish", func() bool {
			rec, ok := getD(t, d, "acme", key)
			return !ok || rec.LeaseExpired
		})
		if _, out := claimD(t, d, "acme", key, "fp", "new", longLease, longTTL); out != store.ClaimTakeover {
			continue
		}
		time.Sleep(time.Until(claimed.Add(claimTTL + shortTTL)))
		assertRecord(t, "Get past the first claim's ttl", mustGet(t, d, "acme", key), inFlight("fp", "new", ""))
		return
	}
	t.Fatal("every claim expired before it could be taken over")
}

// testDedupeLeaseOutlivesTTL checks that an in-flight record lives as long
// as its lease, from Claim or from Renew, even past a shorter ttl.
func testDedupeLeaseOutlivesTTL(t *testing.T, h harness) {
	d := h.dedupe(t)
	const ttl = time.Second
	// A machine that stalls for longer than ttl between Claim and Renew lets
	// the record expire first; try again rather than fail.
	for attempt := range 5 {
		claimed, renewed := fmt.Sprintf("claimed-%d", attempt), fmt.Sprintf("renewed-%d", attempt)
		start := time.Now()
		mustClaim(t, d, "acme", claimed, "fp", "h1", longLease, ttl, store.ClaimNew)
		mustClaim(t, d, "acme", renewed, "fp", "h1", shortLease, ttl, store.ClaimNew)
		if !renew(t, d, "acme", renewed, "h1", longLease) {
			continue
		}
		time.Sleep(time.Until(start.Add(ttl + shortTTL)))
		assertRecord(t, "Get past the ttl, inside the lease", mustGet(t, d, "acme", claimed), inFlight("fp", "h1", ""))
		assertRecord(t, "Get past the ttl, inside the renewed lease", mustGet(t, d, "acme", renewed), inFlight("fp", "h1", ""))
		return
	}
	t.Fatal("every record expired before it could be renewed")
}

func testDedupeTenants(t *testing.T, h harness) {
	d := h.dedupe(t)
	mustClaim(t, d, "acme", "m", "fp-acme", "h-acme", longLease, longTTL, store.ClaimNew)
	mustClaim(t, d, "globex", "m", "fp-globex", "h-globex", longLease, longTTL, store.ClaimNew)
	if !complete(t, d, "acme", "m", "h-acme", []byte("acme's"), longTTL) {
		t.Fatal("Complete in acme: false")
	}
	if complete(t, d, "globex", "m", "h-acme", []byte("cross"), longTTL) || release(t, d, "globex", "m", "h-acme") {
		t.Fatal("a holder of acme's record acted on globex's")
	}
	assertRecord(t, "acme", mustGet(t, d, "acme", "m"),
		store.DedupeRecord{State: store.DedupeDone, Fingerprint: "fp-acme", Holder: "h-acme", Result: []byte("acme's")})
	assertRecord(t, "globex", mustGet(t, d, "globex", "m"), inFlight("fp-globex", "h-globex", ""))
	if !release(t, d, "globex", "m", "h-globex") {
		t.Fatal("Release in globex: false")
	}
	mustGet(t, d, "acme", "m")
	if _, ok := getD(t, d, "initech", "m"); ok {
		t.Fatal("a third tenant sees a record")
	}
}

func testDedupeSeparators(t *testing.T, h harness) {
	d := h.dedupe(t)
	// Pairs that a naive "tenant:key" key would merge, or whose braces would
	// move a Cluster hash tag.
	cases := []struct{ tenant, key string }{
		{"a:b", "c"},
		{"a", "b:c"},
		{"a%3Ab", "c"},
		{"a}", "{b"},
		{"a", "}{b"},
		{"a{", "b}"},
		{"a|b", "c"},
		{"a", "b|c"},
		{"a\x00b", "c"},
		{"a", "b\x00c"},
		{"x y", "ü\n"},
	}
	for i, c := range cases {
		mustClaim(t, d, c.tenant, c.key, fmt.Sprintf("fp-%d", i), fmt.Sprintf("h-%d", i), longLease, longTTL, store.ClaimNew)
	}
	for i, c := range cases {
		assertRecord(t, fmt.Sprintf("case %d (%q, %q)", i, c.tenant, c.key), mustGet(t, d, c.tenant, c.key),
			inFlight(fmt.Sprintf("fp-%d", i), fmt.Sprintf("h-%d", i), ""))
	}
}

func testDedupeArgumentLimits(t *testing.T, h harness) {
	d := h.dedupe(t)
	ctx := context60(t)
	long := strings.Repeat("x", store.MaxNameBytes+1)
	at := strings.Repeat("y", store.MaxNameBytes)
	tooBig := make([]byte, store.MaxDedupeResultBytes+1)

	// At the limits everything works.
	mustClaim(t, d, at, at, at, at, longLease, longTTL, store.ClaimNew)
	if !setTask(t, d, at, at, at, at) || !renew(t, d, at, at, at, longLease) || !complete(t, d, at, at, at, nil, longTTL) {
		t.Fatal("a holder-checked method at the name limits returned false")
	}
	assertRecord(t, "Get at the limits", mustGet(t, d, at, at),
		store.DedupeRecord{State: store.DedupeDone, Fingerprint: at, Holder: at, TaskID: at, Result: []byte{}})

	type call func() error
	claimWith := func(tenant, key, fp, holder string, lease, ttl time.Duration) call {
		return func() error { _, _, err := d.Claim(ctx, tenant, key, fp, holder, lease, ttl); return err }
	}
	tests := []struct {
		name string
		call call
	}{
		{"Claim empty tenant", claimWith("", "k", "fp", "h", longLease, longTTL)},
		{"Claim oversize tenant", claimWith(long, "k", "fp", "h", longLease, longTTL)},
		{"Claim empty key", claimWith("t", "", "fp", "h", longLease, longTTL)},
		{"Claim oversize key", claimWith("t", long, "fp", "h", longLease, longTTL)},
		{"Claim empty fingerprint", claimWith("t", "k", "", "h", longLease, longTTL)},
		{"Claim oversize fingerprint", claimWith("t", "k", long, "h", longLease, longTTL)},
		{"Claim empty holder", claimWith("t", "k", "fp", "", longLease, longTTL)},
		{"Claim oversize holder", claimWith("t", "k", "fp", long, longLease, longTTL)},
		{"Claim zero lease", claimWith("t", "k", "fp", "h", 0, longTTL)},
		{"Claim negative lease", claimWith("t", "k", "fp", "h", -time.Second, longTTL)},
		{"Claim zero ttl", claimWith("t", "k", "fp", "h", longLease, 0)},
		{"Claim negative ttl", claimWith("t", "k", "fp", "h", longLease, -time.Second)},
		{"Get empty tenant", func() error { _, _, err := d.Get(ctx, "", "k"); return err }},
		{"Get oversize key", func() error { _, _, err := d.Get(ctx, "t", long); return err }},
		{"Renew empty holder", func() error { _, err := d.Renew(ctx, "t", "k", "", longLease); return err }},
		{"Renew oversize tenant", func() error { _, err := d.Renew(ctx, long, "k", "h", longLease); return err }},
		{"Renew zero lease", func() error { _, err := d.Renew(ctx, "t", "k", "h", 0); return err }},
		{"SetTask empty task id", func() error { _, err := d.SetTask(ctx, "t", "k", "h", ""); return err }},
		{"SetTask oversize task id", func() error { _, err := d.SetTask(ctx, "t", "k", "h", long); return err }},
		{"SetTask empty key", func() error { _, err := d.SetTask(ctx, "t", "", "h", "task"); return err }},
		{"Complete oversize result", func() error { _, err := d.Complete(ctx, "t", "k", "h", tooBig, longTTL); return err }},
		{"Complete zero ttl", func() error { _, err := d.Complete(ctx, "t", "k", "h", nil, 0); return err }},
		{"Complete oversize holder", func() error { _, err := d.Complete(ctx, "t", "k", long, nil, longTTL); return err }},
		{"Release empty tenant", func() error { _, err := d.Release(ctx, "", "k", "h"); return err }},
		{"Release oversize holder", func() error { _, err := d.Release(ctx, "t", "k", long); return err }},
	}
	// Each rejected call targets ("t", "k") where it can; none may create
	// or change it.
	mustClaim(t, d, "t", "k", "fp", "h", longLease, longTTL, store.ClaimNew)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLimit(t, tt.name, tt.call(), true)
		})
	}
	assertRecord(t, "after rejected calls", mustGet(t, d, "t", "k"), inFlight("fp", "h", ""))
	if _, ok := getD(t, d, long[:store.MaxNameBytes], "k"); ok {
		t.Fatal("a rejected oversize tenant was stored truncated")
	}
}

func testDedupeClosed(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	d := s.Dedupe()
	mustClaim(t, d, "acme", "m", "fp", "h1", longLease, longTTL, store.ClaimNew)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context60(t)
	ops := map[string]func() error{
		"Claim":    func() error { _, _, err := d.Claim(ctx, "acme", "m2", "fp", "h2", longLease, longTTL); return err },
		"Get":      func() error { _, _, err := d.Get(ctx, "acme", "m"); return err },
		"Renew":    func() error { _, err := d.Renew(ctx, "acme", "m", "h1", longLease); return err },
		"SetTask":  func() error { _, err := d.SetTask(ctx, "acme", "m", "h1", "task"); return err },
		"Complete": func() error { _, err := d.Complete(ctx, "acme", "m", "h1", []byte("r"), longTTL); return err },
		"Release":  func() error { _, err := d.Release(ctx, "acme", "m", "h1"); return err },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s after Close: err = %v, want ErrUnavailable", name, err)
		}
	}
}
