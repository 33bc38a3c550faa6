package storetest

import (
	"bytes"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunChallenges runs the Challenges conformance cases against newStore.
func RunChallenges(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, harness)
	}{
		{"OpenKeepsThePendingChallenge", testChallengeOpen},
		{"ReplaceAndReopen", testChallengeReplace},
		{"CompleteOnce", testChallengeCompleteOnce},
		{"UseOnce", testChallengeUseOnce},
		{"ConcurrentUseHandsOutOnce", testChallengeConcurrentUse},
		{"CredentialLifetime", testChallengeCredentialLifetime},
		{"ExpiryAndDue", testChallengeExpiry},
		{"DueLooksAheadWithoutDropping", testChallengeDueAhead},
		{"Close", testChallengeClose},
		{"OAuthStateIsSingleUse", testChallengeOAuth},
		{"TasksAndAgentsAreSeparate", testChallengeSeparation},
		{"ArgumentLimits", testChallengeLimits},
		{"ClosedStoreIsUnavailable", testChallengeClosedStore},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

// challengeAt is a challenge of task on agent "cal", created at now and
// expiring ten minutes later.
func challengeAt(task string, now time.Time) store.Challenge {
	return store.Challenge{
		ID: "ch-" + rand.Text(), Agent: "cal", TaskID: task, ContextID: "ctx-" + task,
		Tenant: "acme", Subject: "alice", Version: "1.0",
		Scheme: "oauth2", Scopes: []string{"calendar.read", "calendar.write"}, AuthorizationURL: "https://idp.example/authorize",
		Created: now, Expires: now.Add(10 * time.Minute),
	}
}

// ms is t at the store's precision.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

const keep = time.Hour

func openChallenge(t *testing.T, s store.Store, c store.Challenge) store.Challenge {
	t.Helper()
	got, created, err := s.Challenges().Open(context60(t), c, "", keep)
	if err != nil || !created {
		t.Fatalf("Open: created %v, %v", created, err)
	}
	return got
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func testChallengeOpen(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c1 := challengeAt("t1", now)
	got := openChallenge(t, s, c1)
	want := c1
	want.Status, want.Created, want.Expires = store.ChallengeOpen, ms(c1.Created), ms(c1.Expires)
	if !challengeEqual(got, want) {
		t.Fatalf("Open returned %+v, want %+v", got, want)
	}
	for _, read := range []func() (store.Challenge, bool, error){
		func() (store.Challenge, bool, error) { return s.Challenges().Get(ctx, c1.ID) },
		func() (store.Challenge, bool, error) { return s.Challenges().Current(ctx, "cal", "t1") },
	} {
		got, ok, err := read()
		if err != nil || !ok || !challengeEqual(got, want) {
			t.Fatalf("read back: %+v %v %v, want %+v", got, ok, err, want)
		}
	}
	// A second auth-required event finds the pending challenge, completed
	// or expired ones included.
	c2 := challengeAt("t1", now)
	for _, step := range []func(){
		func() {},
		func() {
			if _, err := s.Challenges().Complete(ctx, c1.ID, store.MethodDirect, []byte("sealed"), time.Hour, now); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if _, changed, err := s.Challenges().Expire(ctx, "cal", "t1", c1.ID, now.Add(11*time.Minute)); err != nil || !changed {
				t.Fatalf("Expire: %v %v", changed, err)
			}
		},
	} {
		step()
		got, created, err := s.Challenges().Open(ctx, c2, "", keep)
		if err != nil || created || got.ID != c1.ID {
			t.Fatalf("Open over a pending challenge: created %v id %q %v; want the first one", created, got.ID, err)
		}
	}
	if _, ok, err := s.Challenges().Get(ctx, c2.ID); err != nil || ok {
		t.Fatalf("Get of a challenge never opened: %v %v", ok, err)
	}
	if _, ok, err := s.Challenges().Current(ctx, "cal", "other"); err != nil || ok {
		t.Fatalf("Current of a task without one: %v %v", ok, err)
	}
}

func testChallengeReplace(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c1 := openChallenge(t, s, challengeAt("t1", now))
	c2 := challengeAt("t1", now)
	got, created, err := s.Challenges().Open(ctx, c2, c1.ID, keep)
	if err != nil || !created || got.ID != c2.ID {
		t.Fatalf("Open replacing: created %v id %q %v", created, got.ID, err)
	}
	if _, ok, _ := s.Challenges().Get(ctx, c1.ID); ok {
		t.Fatal("the replaced challenge is still found by its id")
	}
	// A racing second replacement of the same old id finds the new one.
	got, created, err = s.Challenges().Open(ctx, challengeAt("t1", now), c1.ID, keep)
	if err != nil || created || got.ID != c2.ID {
		t.Fatalf("second replacement: created %v id %q %v", created, got.ID, err)
	}
	// Used and closed challenges give way to a new one.
	if _, err := s.Challenges().Complete(ctx, c2.ID, store.MethodOAuth, []byte("sealed"), time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Challenges().Use(ctx, "cal", "t1", c2.ID, now); err != nil {
		t.Fatal(err)
	}
	c3 := openChallenge(t, s, challengeAt("t1", now))
	if _, found, err := s.Challenges().Close(ctx, "cal", "t1"); err != nil || !found {
		t.Fatalf("Close: %v %v", found, err)
	}
	c4 := openChallenge(t, s, challengeAt("t1", now))
	if c4.ID == c3.ID {
		t.Fatal("a closed challenge was kept")
	}
}

func testChallengeCompleteOnce(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	got, err := s.Challenges().Complete(ctx, c.ID, store.MethodDirect, []byte("sealed-1"), time.Hour, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.ChallengeCompleted || got.Method != store.MethodDirect || !got.CompletedAt.Equal(ms(now.Add(time.Second))) {
		t.Fatalf("completed challenge: %+v", got)
	}
	_, err = s.Challenges().Complete(ctx, c.ID, store.MethodOAuth, []byte("sealed-2"), time.Hour, now)
	wantErr(t, "second completion", err, store.ErrChallengeState)
	_, err = s.Challenges().Complete(ctx, "ch-unknown", store.MethodDirect, []byte("x"), time.Hour, now)
	wantErr(t, "unknown challenge", err, store.ErrChallengeNotFound)
	late := openChallenge(t, s, challengeAt("t2", now))
	_, err = s.Challenges().Complete(ctx, late.ID, store.MethodDirect, []byte("x"), time.Hour, late.Expires)
	wantErr(t, "completion at expiry", err, store.ErrChallengeExpired)
	// The first credential is the one handed out.
	_, cred, err := s.Challenges().Use(ctx, "cal", "t1", c.ID, now)
	if err != nil || string(cred) != "sealed-1" {
		t.Fatalf("Use: %q %v", cred, err)
	}
}

func testChallengeUseOnce(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	_, _, err := s.Challenges().Use(ctx, "cal", "t1", c.ID, now)
	wantErr(t, "use before completion", err, store.ErrChallengeState)
	sealed := []byte{0, 1, 2, 0xff, '|', '\n'}
	if _, err := s.Challenges().Complete(ctx, c.ID, store.MethodDirect, sealed, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Challenges().Use(ctx, "cal", "t1", "ch-other", now)
	wantErr(t, "use of another id", err, store.ErrChallengeNotFound)
	got, cred, err := s.Challenges().Use(ctx, "cal", "t1", c.ID, now.Add(time.Minute))
	if err != nil || !bytes.Equal(cred, sealed) {
		t.Fatalf("Use: %q %v", cred, err)
	}
	if got.Status != store.ChallengeUsed || !got.UsedAt.Equal(ms(now.Add(time.Minute))) {
		t.Fatalf("used challenge: %+v", got)
	}
	_, _, err = s.Challenges().Use(ctx, "cal", "t1", c.ID, now)
	wantErr(t, "second use", err, store.ErrChallengeState)
	if due, err := s.Challenges().Due(ctx, "cal", now.Add(time.Hour), 10); err != nil || len(due) != 0 {
		t.Fatalf("a used challenge is due: %v %v", due, err)
	}
}

func testChallengeConcurrentUse(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	if _, err := s.Challenges().Complete(ctx, c.ID, store.MethodDirect, []byte("sealed"), time.Hour, now); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, cred, err := s.Challenges().Use(ctx, "cal", "t1", c.ID, now)
			switch {
			case err == nil && string(cred) == "sealed":
				wins.Add(1)
			case !errors.Is(err, store.ErrChallengeState):
				t.Errorf("Use: %v", err)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("the credential was handed out %d times, want once", n)
	}
}

func testChallengeCredentialLifetime(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	const ttl = time.Minute
	now := time.Now()
	complete := func() store.Challenge {
		t.Helper()
		c := openChallenge(t, s, challengeAt("t1", now))
		if _, err := s.Challenges().Complete(ctx, c.ID, store.MethodOAuth, []byte("sealed"), ttl, now); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The token's lifetime ends before the challenge's, on the caller's
	// clock.
	c := complete()
	if _, _, err := s.Challenges().Use(ctx, "cal", "t1", c.ID, now.Add(ttl)); !errors.Is(err, store.ErrChallengeExpired) {
		t.Fatalf("Use after the credential's lifetime: %v, want ErrChallengeExpired", err)
	}
	within := now.Add(ttl - time.Second)
	if _, changed, err := s.Challenges().Expire(ctx, "cal", "t1", c.ID, within); err != nil || changed {
		t.Fatalf("Expire within the credential's lifetime: %v, %v", changed, err)
	}
	if _, cred, err := s.Challenges().Use(ctx, "cal", "t1", c.ID, within); err != nil || string(cred) != "sealed" {
		t.Fatalf("Use within the credential's lifetime: %q, %v", cred, err)
	}
	c = complete()
	got, changed, err := s.Challenges().Expire(ctx, "cal", "t1", c.ID, now.Add(ttl))
	if err != nil || !changed || got.Status != store.ChallengeExpired {
		t.Fatalf("Expire of a lapsed credential: %+v %v %v", got, changed, err)
	}
}

func testChallengeExpiry(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	early := challengeAt("t1", now)
	late := challengeAt("t2", now)
	late.Expires = now.Add(20 * time.Minute)
	openChallenge(t, s, late)
	openChallenge(t, s, early)
	if due, err := s.Challenges().Due(ctx, "cal", now, 10); err != nil || len(due) != 0 {
		t.Fatalf("Due before any expiry: %v %v", due, err)
	}
	if _, changed, err := s.Challenges().Expire(ctx, "cal", "t1", early.ID, now); err != nil || changed {
		t.Fatalf("Expire before the expiry: %v %v", changed, err)
	}
	due, err := s.Challenges().Due(ctx, "cal", now.Add(time.Hour), 10)
	want := []store.ChallengeRef{{Agent: "cal", TaskID: "t1", ID: early.ID}, {Agent: "cal", TaskID: "t2", ID: late.ID}}
	if err != nil || !slices.Equal(due, want) {
		t.Fatalf("Due: %v %v, want %v", due, err, want)
	}
	if due, _ := s.Challenges().Due(ctx, "cal", now.Add(time.Hour), 1); len(due) != 1 || due[0].ID != early.ID {
		t.Fatalf("Due with limit 1: %v", due)
	}
	at := now.Add(15 * time.Minute)
	got, changed, err := s.Challenges().Expire(ctx, "cal", "t1", early.ID, at)
	if err != nil || !changed || got.Status != store.ChallengeExpired {
		t.Fatalf("Expire: %+v %v %v", got, changed, err)
	}
	if _, changed, err := s.Challenges().Expire(ctx, "cal", "t1", early.ID, at); err != nil || changed {
		t.Fatalf("second Expire: %v %v", changed, err)
	}
	if due, _ := s.Challenges().Due(ctx, "cal", at, 10); len(due) != 0 {
		t.Fatalf("Due after expiring the only due challenge: %v", due)
	}
	_, err = s.Challenges().Complete(ctx, early.ID, store.MethodDirect, []byte("x"), time.Hour, now)
	wantErr(t, "completing an expired challenge", err, store.ErrChallengeExpired)
	_, _, err = s.Challenges().Expire(ctx, "cal", "t1", "ch-unknown", at)
	wantErr(t, "Expire of an unknown id", err, store.ErrChallengeNotFound)
	// The record stays readable, so answers can say it expired.
	if got, ok, err := s.Challenges().Get(ctx, early.ID); err != nil || !ok || got.Status != store.ChallengeExpired {
		t.Fatalf("Get of an expired challenge: %+v %v %v", got, ok, err)
	}
}

// Due's time is how far ahead to look: a listing far past the records'
// retention drops none of them.
func testChallengeDueAhead(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	due, err := s.Challenges().Due(ctx, "cal", now.Add(365*24*time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].ID != c.ID {
		t.Fatalf("Due a year ahead: %v %v", due, err)
	}
	if got, ok, err := s.Challenges().Current(ctx, "cal", "t1"); err != nil || !ok || got.ID != c.ID {
		t.Fatalf("Current after looking ahead: %+v %v %v", got, ok, err)
	}
}

func testChallengeClose(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	if _, err := s.Challenges().Complete(ctx, c.ID, store.MethodDirect, []byte("sealed"), time.Hour, now); err != nil {
		t.Fatal(err)
	}
	before, found, err := s.Challenges().Close(ctx, "cal", "t1")
	if err != nil || !found || before.Status != store.ChallengeCompleted || before.ID != c.ID {
		t.Fatalf("Close: %+v %v %v", before, found, err)
	}
	if _, found, err := s.Challenges().Close(ctx, "cal", "t1"); err != nil || found {
		t.Fatalf("second Close: %v %v", found, err)
	}
	if _, found, err := s.Challenges().Close(ctx, "cal", "none"); err != nil || found {
		t.Fatalf("Close without a challenge: %v %v", found, err)
	}
	_, _, err = s.Challenges().Use(ctx, "cal", "t1", c.ID, now)
	wantErr(t, "Use after Close", err, store.ErrChallengeState)
	if got, _, _ := s.Challenges().Get(ctx, c.ID); got.Status != store.ChallengeClosed {
		t.Fatalf("closed challenge reads %+v", got)
	}
	if due, _ := s.Challenges().Due(ctx, "cal", now.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("a closed challenge is due: %v", due)
	}
}

func testChallengeOAuth(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	if _, err := s.Challenges().BeginOAuth(ctx, c.ID, "digest-1", []byte("verifier-1"), now); err != nil {
		t.Fatal(err)
	}
	// A second start replaces the first binding.
	if _, err := s.Challenges().BeginOAuth(ctx, c.ID, "digest-2", []byte("verifier-2"), now); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Challenges().TakeOAuth(ctx, "digest-1", now)
	wantErr(t, "replaced state", err, store.ErrChallengeNotFound)
	got, verifier, err := s.Challenges().TakeOAuth(ctx, "digest-2", now)
	if err != nil || got.ID != c.ID || string(verifier) != "verifier-2" {
		t.Fatalf("TakeOAuth: %+v %q %v", got, verifier, err)
	}
	_, _, err = s.Challenges().TakeOAuth(ctx, "digest-2", now)
	wantErr(t, "replayed state", err, store.ErrChallengeNotFound)
	_, _, err = s.Challenges().TakeOAuth(ctx, "digest-never", now)
	wantErr(t, "unknown state", err, store.ErrChallengeNotFound)

	// A state bound to a challenge that expired meanwhile is consumed and refused.
	if _, err := s.Challenges().BeginOAuth(ctx, c.ID, "digest-3", []byte("verifier-3"), now); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Challenges().TakeOAuth(ctx, "digest-3", c.Expires)
	wantErr(t, "state of an expired challenge", err, store.ErrChallengeExpired)
	_, _, err = s.Challenges().TakeOAuth(ctx, "digest-3", now)
	wantErr(t, "state taken once", err, store.ErrChallengeNotFound)

	// A completed challenge takes no new binding.
	if _, err := s.Challenges().Complete(ctx, c.ID, store.MethodDirect, []byte("sealed"), time.Hour, now); err != nil {
		t.Fatal(err)
	}
	_, err = s.Challenges().BeginOAuth(ctx, c.ID, "digest-4", []byte("verifier-4"), now)
	wantErr(t, "BeginOAuth on a completed challenge", err, store.ErrChallengeState)
}

func testChallengeSeparation(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	a := challengeAt("x|y", now)
	a.Agent = "a"
	b := challengeAt("y", now)
	b.Agent = "a|x"
	openChallenge(t, s, a)
	openChallenge(t, s, b)
	for _, c := range []store.Challenge{a, b} {
		got, ok, err := s.Challenges().Current(ctx, c.Agent, c.TaskID)
		if err != nil || !ok || got.ID != c.ID {
			t.Fatalf("Current(%q, %q) = %q %v %v, want %q", c.Agent, c.TaskID, got.ID, ok, err, c.ID)
		}
		if got, ok, err := s.Challenges().Get(ctx, c.ID); err != nil || !ok || got.Agent != c.Agent || got.TaskID != c.TaskID {
			t.Fatalf("Get(%q) = %+v %v %v", c.ID, got, ok, err)
		}
		due, err := s.Challenges().Due(ctx, c.Agent, now.Add(time.Hour), 10)
		if err != nil || len(due) != 1 || due[0].ID != c.ID || due[0].TaskID != c.TaskID {
			t.Fatalf("Due(%q) = %v %v", c.Agent, due, err)
		}
	}
}

func testChallengeLimits(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	long := strings.Repeat("x", store.MaxNameBytes+1)
	bad := []store.Challenge{}
	for _, f := range []func(*store.Challenge){
		func(c *store.Challenge) { c.ID = "" },
		func(c *store.Challenge) { c.Agent = long },
		func(c *store.Challenge) { c.TaskID = "" },
		func(c *store.Challenge) { c.Tenant = "" },
		func(c *store.Challenge) { c.Subject = long },
		func(c *store.Challenge) { c.Scopes = []string{""} },
		func(c *store.Challenge) { c.AuthorizationURL = strings.Repeat("u", 4096) },
		func(c *store.Challenge) { c.Expires = c.Created },
	} {
		c := challengeAt("t1", now)
		f(&c)
		bad = append(bad, c)
	}
	for i, c := range bad {
		if _, _, err := s.Challenges().Open(ctx, c, "", keep); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Open of bad challenge %d: %v", i, err)
		}
	}
	c := openChallenge(t, s, challengeAt("t1", now))
	for name, err := range map[string]error{
		"empty credential":   second(s.Challenges().Complete(ctx, c.ID, store.MethodDirect, nil, time.Hour, now)),
		"huge credential":    second(s.Challenges().Complete(ctx, c.ID, store.MethodDirect, make([]byte, store.MaxSealedBytes+1), time.Hour, now)),
		"zero ttl":           second(s.Challenges().Complete(ctx, c.ID, store.MethodDirect, []byte("x"), 0, now)),
		"empty state digest": second(s.Challenges().BeginOAuth(ctx, c.ID, "", []byte("v"), now)),
		"due limit 0":        second(s.Challenges().Due(ctx, "cal", now, 0)),
		"due limit too big":  second(s.Challenges().Due(ctx, "cal", now, store.MaxChallengeListLimit+1)),
		"use without id":     third(s.Challenges().Use(ctx, "cal", "t1", "", now)),
	} {
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

func testChallengeClosedStore(t *testing.T, h harness) {
	s := h.open(t, time.Hour)
	ctx := context60(t)
	now := time.Now()
	c := openChallenge(t, s, challengeAt("t1", now))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Open":     third(s.Challenges().Open(ctx, challengeAt("t2", now), "", keep)),
		"Get":      third(s.Challenges().Get(ctx, c.ID)),
		"Complete": second(s.Challenges().Complete(ctx, c.ID, store.MethodDirect, []byte("x"), time.Hour, now)),
		"Use":      third(s.Challenges().Use(ctx, "cal", "t1", c.ID, now)),
		"Close":    third(s.Challenges().Close(ctx, "cal", "t1")),
		"Due":      second(s.Challenges().Due(ctx, "cal", now, 1)),
	} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want ErrUnavailable", name, err)
		}
	}
}

func second[A any](_ A, err error) error { return err }

func third[A, B any](_ A, _ B, err error) error { return err }

func challengeEqual(a, b store.Challenge) bool {
	return a.ID == b.ID && a.Agent == b.Agent && a.TaskID == b.TaskID && a.ContextID == b.ContextID &&
		a.Tenant == b.Tenant && a.Subject == b.Subject && a.Version == b.Version && a.Scheme == b.Scheme &&
		slices.Equal(a.Scopes, b.Scopes) && a.AuthorizationURL == b.AuthorizationURL && a.Status == b.Status &&
		a.Method == b.Method && a.Created.Equal(b.Created) && a.Expires.Equal(b.Expires) &&
		a.CompletedAt.Equal(b.CompletedAt) && a.UsedAt.Equal(b.UsedAt)
}
