// Package storetest is the conformance suite every store implementation
// must pass, so the Redis and memory stores cannot drift apart.
package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// testTimeout only keeps a broken implementation from hanging the suite.
const testTimeout = 60 * time.Second

// NewStore opens a store of the implementation under test with options o.
// The suite gives every store a fresh o.KeyPrefix, so stores that share one
// Redis do not see each other's records, and closes the store itself.
type NewStore func(t *testing.T, o store.Options) store.Store

// harness opens stores for one subtest.
type harness struct {
	newStore NewStore
}

func (h harness) open(t *testing.T, ttl time.Duration) store.Store {
	t.Helper()
	o := store.Options{KeyPrefix: "st-" + strings.ToLower(rand.Text()[:12]), OwnershipTTL: duration.Duration(ttl)}
	s := h.newStore(t, o)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func context60(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// RunOwnership runs the Ownership conformance cases against newStore.
func RunOwnership(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, harness)
	}{
		{"PingAndKind", testPingAndKind},
		{"FirstClaimWins", testFirstClaimWins},
		{"ResultsFollowInputOrder", testResultsFollowInputOrder},
		{"ConcurrentClaimsAgree", testConcurrentClaimsAgree},
		{"UnknownRefs", testUnknownRefs},
		{"TaskAndContextAreSeparate", testTaskAndContextAreSeparate},
		{"AgentsAreSeparate", testAgentsAreSeparate},
		{"SeparatorsDoNotCollide", testSeparatorsDoNotCollide},
		{"RecordsExpire", testRecordsExpire},
		{"ArgumentLimits", testArgumentLimits},
		{"ClosedStoreIsUnavailable", testClosedStoreIsUnavailable},
		{"ResolveLooksUpAndClaims", testResolve},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

var (
	alice = store.Owner{Tenant: "acme", Subject: "alice"}
	bob   = store.Owner{Tenant: "globex", Subject: "bob"}
)

func task(id string) store.Ref  { return store.Ref{Kind: store.RefTask, ID: id} }
func cntxt(id string) store.Ref { return store.Ref{Kind: store.RefContext, ID: id} }

func claim(t *testing.T, o store.Ownership, agent string, owner store.Owner, refs ...store.Ref) []store.Owner {
	t.Helper()
	got, err := o.Claim(context60(t), agent, refs, owner)
	if err != nil {
		t.Fatalf("Claim(%q, %v, %v): %v", agent, refs, owner, err)
	}
	if len(got) != len(refs) {
		t.Fatalf("Claim returned %d owners for %d refs", len(got), len(refs))
	}
	return got
}

func lookup(t *testing.T, o store.Ownership, agent string, refs ...store.Ref) []store.Owner {
	t.Helper()
	got, err := o.Lookup(context60(t), agent, refs)
	if err != nil {
		t.Fatalf("Lookup(%q, %v): %v", agent, refs, err)
	}
	if len(got) != len(refs) {
		t.Fatalf("Lookup returned %d owners for %d refs", len(got), len(refs))
	}
	return got
}

func assertOwners(t *testing.T, what string, got []store.Owner, want ...store.Owner) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d owners %v, want %v", what, len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: owner %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

func testPingAndKind(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	if err := s.Ping(context60(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if k := s.Kind(); k != store.KindRedis && k != store.KindMemory {
		t.Fatalf("Kind() = %q, want %q or %q", k, store.KindRedis, store.KindMemory)
	}
}

func testFirstClaimWins(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	assertOwners(t, "first claim", claim(t, o, "agent", alice, task("t1")), alice)
	assertOwners(t, "second claim", claim(t, o, "agent", bob, task("t1")), alice)
	assertOwners(t, "lookup", lookup(t, o, "agent", task("t1")), alice)
	// The same owner claiming again is answered like anyone else.
	assertOwners(t, "repeat claim", claim(t, o, "agent", alice, task("t1")), alice)
	// A subject is optional; a tenant alone round-trips.
	tenantOnly := store.Owner{Tenant: "acme"}
	assertOwners(t, "tenant-only claim", claim(t, o, "agent", tenantOnly, cntxt("c1")), tenantOnly)
	assertOwners(t, "tenant-only lookup", lookup(t, o, "agent", cntxt("c1")), tenantOnly)
}

func testResultsFollowInputOrder(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	claim(t, o, "agent", alice, task("t1"), cntxt("c2"))
	got := claim(t, o, "agent", bob, cntxt("c1"), task("t1"), task("t2"), cntxt("c2"))
	assertOwners(t, "mixed claim", got, bob, alice, bob, alice)
	got = lookup(t, o, "agent", task("t2"), task("unknown"), cntxt("c1"), task("t1"))
	assertOwners(t, "mixed lookup", got, bob, store.Owner{}, bob, alice)
}

func testConcurrentClaimsAgree(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	const claimants = 50
	ctx := context60(t)
	results := make([]store.Owner, claimants)
	errs := make([]error, claimants)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range claimants {
		wg.Go(func() {
			<-start
			owner := store.Owner{Tenant: fmt.Sprintf("tenant-%d", i), Subject: "s"}
			got, err := o.Claim(ctx, "agent", []store.Ref{task("contested")}, owner)
			if err == nil && len(got) != 1 {
				err = fmt.Errorf("got %d owners for one ref", len(got))
			}
			if err == nil {
				results[i] = got[0]
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	winner := results[0]
	if !strings.HasPrefix(winner.Tenant, "tenant-") {
		t.Fatalf("winner %+v is none of the claimants", winner)
	}
	for i, r := range results {
		if r != winner {
			t.Errorf("claimant %d saw owner %+v, claimant 0 saw %+v", i, r, winner)
		}
	}
	assertOwners(t, "lookup after the race", lookup(t, o, "agent", task("contested")), winner)
}

func testUnknownRefs(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	assertOwners(t, "unknown", lookup(t, o, "agent", task("nope"), cntxt("nope")), store.Owner{}, store.Owner{})
	assertOwners(t, "no refs lookup", lookup(t, o, "agent"))
	assertOwners(t, "no refs claim", claim(t, o, "agent", alice))
	if got := lookup(t, o, "agent", task("nope")); !got[0].IsZero() {
		t.Fatalf("unknown ref owner %+v is not zero", got[0])
	}
}

func testTaskAndContextAreSeparate(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	assertOwners(t, "task", claim(t, o, "agent", alice, task("same")), alice)
	assertOwners(t, "context", claim(t, o, "agent", bob, cntxt("same")), bob)
	assertOwners(t, "lookup", lookup(t, o, "agent", task("same"), cntxt("same")), alice, bob)
}

func testAgentsAreSeparate(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	assertOwners(t, "agent a", claim(t, o, "agent-a", alice, task("t")), alice)
	assertOwners(t, "agent b", claim(t, o, "agent-b", bob, task("t")), bob)
	assertOwners(t, "lookup a", lookup(t, o, "agent-a", task("t")), alice)
	assertOwners(t, "lookup b", lookup(t, o, "agent-b", task("t")), bob)
	assertOwners(t, "unclaimed agent", lookup(t, o, "agent-c", task("t")), store.Owner{})
}

func testSeparatorsDoNotCollide(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	// Pairs that a naive "agent:kind:id" key or "tenant|subject" value
	// would merge.
	type claimCase struct {
		agent string
		ref   store.Ref
		owner store.Owner
	}
	cases := []claimCase{
		{"a:t", task("b"), store.Owner{Tenant: "x|y", Subject: "z"}},
		{"a", task("t:b"), store.Owner{Tenant: "x", Subject: "y|z"}},
		{"a", task("t%3Ab"), store.Owner{Tenant: "x%7Cy", Subject: "z"}},
		{"a}", task("{b"), store.Owner{Tenant: "{x}", Subject: "%"}},
		{"a", task("}{b"), store.Owner{Tenant: "x", Subject: "|"}},
		{"a", task("b c\x00\n"), store.Owner{Tenant: "x y", Subject: "ünï\x00"}},
		{"a", cntxt("c:b"), store.Owner{Tenant: "1|x", Subject: ""}},
		{"a:c", task("b"), store.Owner{Tenant: "1", Subject: "x|"}},
	}
	for i, c := range cases {
		got := claim(t, o, c.agent, c.owner, c.ref)
		assertOwners(t, fmt.Sprintf("claim %d (%q %v)", i, c.agent, c.ref), got, c.owner)
	}
	for i, c := range cases {
		got := lookup(t, o, c.agent, c.ref)
		assertOwners(t, fmt.Sprintf("lookup %d (%q %v)", i, c.agent, c.ref), got, c.owner)
	}
}

func testRecordsExpire(t *testing.T, h harness) {
	o := h.open(t, 200*time.Millisecond).Ownership()
	assertOwners(t, "claim", claim(t, o, "agent", alice, task("short")), alice)
	deadline := time.Now().Add(testTimeout)
	for !lookup(t, o, "agent", task("short"))[0].IsZero() {
		if time.Now().After(deadline) {
			t.Fatalf("record still present %s after a 200ms TTL", testTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Once expired, the id is free to be claimed again.
	assertOwners(t, "claim after expiry", claim(t, o, "agent", bob, task("short")), bob)
}

func testArgumentLimits(t *testing.T, h harness) {
	o := h.open(t, time.Hour).Ownership()
	long := strings.Repeat("x", store.MaxNameBytes+1)
	atLimit := strings.Repeat("y", store.MaxNameBytes)
	tooMany := make([]store.Ref, store.MaxRefsPerCall+1)
	for i := range tooMany {
		tooMany[i] = task(fmt.Sprint(i))
	}
	tests := []struct {
		name       string
		agent      string
		refs       []store.Ref
		owner      store.Owner
		lookupToo  bool // the case is about agent or refs, which Lookup checks too
		wantReject bool
	}{
		{name: "ok at the limits", agent: atLimit, refs: []store.Ref{task(atLimit)}, owner: store.Owner{Tenant: atLimit, Subject: atLimit}, lookupToo: true},
		{name: "empty agent", agent: "", refs: []store.Ref{task("t")}, owner: alice, lookupToo: true, wantReject: true},
		{name: "oversize agent", agent: long, refs: []store.Ref{task("t")}, owner: alice, lookupToo: true, wantReject: true},
		{name: "oversize id", agent: "a", refs: []store.Ref{task("t"), cntxt(long)}, owner: alice, lookupToo: true, wantReject: true},
		{name: "empty id", agent: "a", refs: []store.Ref{task("")}, owner: alice, lookupToo: true, wantReject: true},
		{name: "zero kind", agent: "a", refs: []store.Ref{{ID: "t"}}, owner: alice, lookupToo: true, wantReject: true},
		{name: "unknown kind", agent: "a", refs: []store.Ref{{Kind: 9, ID: "t"}}, owner: alice, lookupToo: true, wantReject: true},
		{name: "too many refs", agent: "a", refs: tooMany, owner: alice, lookupToo: true, wantReject: true},
		{name: "empty tenant", agent: "a", refs: []store.Ref{task("t")}, owner: store.Owner{Subject: "s"}, wantReject: true},
		{name: "oversize tenant", agent: "a", refs: []store.Ref{task("t")}, owner: store.Owner{Tenant: long}, wantReject: true},
		{name: "oversize subject", agent: "a", refs: []store.Ref{task("t")}, owner: store.Owner{Tenant: "t", Subject: long}, wantReject: true},
	}
	ctx := context60(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := o.Claim(ctx, tt.agent, tt.refs, tt.owner)
			checkLimit(t, "Claim", err, tt.wantReject)
			if !tt.wantReject {
				assertOwners(t, "claim at the limits", got, tt.owner)
			}
			if tt.lookupToo {
				got, err := o.Lookup(ctx, tt.agent, tt.refs)
				checkLimit(t, "Lookup", err, tt.wantReject)
				if !tt.wantReject {
					assertOwners(t, "lookup at the limits", got, tt.owner)
				}
			}
		})
	}
	// A rejected call must not have recorded anything.
	assertOwners(t, "after rejected claims", lookup(t, o, "a", task("t")), store.Owner{})
}

func checkLimit(t *testing.T, op string, err error, wantReject bool) {
	t.Helper()
	switch {
	case wantReject && !errors.Is(err, store.ErrInvalidArgument):
		t.Fatalf("%s: err = %v, want ErrInvalidArgument", op, err)
	case !wantReject && err != nil:
		t.Fatalf("%s: %v", op, err)
	}
}

func testClosedStoreIsUnavailable(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	claim(t, s.Ownership(), "agent", alice, task("t"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context60(t)
	if _, err := s.Ownership().Claim(ctx, "agent", []store.Ref{task("t")}, alice); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Claim after Close: err = %v, want ErrUnavailable", err)
	}
	if _, err := s.Ownership().Lookup(ctx, "agent", []store.Ref{task("t")}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Lookup after Close: err = %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping after Close: err = %v, want ErrUnavailable", err)
	}
}

// testResolve checks that Resolve reads lookups without creating them and
// claims claims, in one call, as Lookup and Claim would.
func testResolve(t *testing.T, h harness) {
	st := h.open(t, time.Hour)
	o := st.Ownership()
	claim(t, o, "agent", alice, task("t-alice"))
	claim(t, o, "agent", bob, cntxt("c-bob"))
	found, claimed, err := o.Resolve(context60(t), "agent",
		[]store.Ref{task("t-alice"), task("t-unknown")},
		[]store.Ref{cntxt("c-new"), cntxt("c-bob")}, alice)
	if err != nil {
		t.Fatal(err)
	}
	assertOwners(t, "found", found, alice, store.Owner{})
	assertOwners(t, "claimed", claimed, alice, bob)
	assertOwners(t, "after", lookup(t, o, "agent", task("t-unknown"), cntxt("c-new")), store.Owner{}, alice)
}
