package authz

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

func taskRef(id string) store.Ref    { return store.Ref{Kind: store.RefTask, ID: id} }
func contextRef(id string) store.Ref { return store.Ref{Kind: store.RefContext, ID: id} }

func TestRefsOf(t *testing.T) {
	noClientContexts := false
	strict := &Policy{ClientContextIDs: &noClientContexts}
	open := &Policy{}
	cases := []struct {
		name    string
		op      a2a.Operation
		pol     *Policy
		lookups []store.Ref
		claims  []store.Ref
	}{
		{"get", a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, TaskID: "t1"}, open, []store.Ref{taskRef("t1")}, nil},
		{"cancel", a2a.Operation{Method: a2a.MethodCancelTask, Version: a2a.V03, TaskID: "t1"}, open, []store.Ref{taskRef("t1")}, nil},
		{"subscribe", a2a.Operation{Method: a2a.MethodSubscribe, Version: a2a.V10, TaskID: "t1"}, open, []store.Ref{taskRef("t1")}, nil},
		{"push config create", a2a.Operation{Method: a2a.MethodPushConfigSet, Version: a2a.V10, TaskID: "t1", PushConfigID: "c"}, open, []store.Ref{taskRef("t1")}, nil},
		{"push config delete", a2a.Operation{Method: a2a.MethodPushConfigDelete, Version: a2a.V03, TaskID: "t1", PushConfigID: "c"}, open, []store.Ref{taskRef("t1")}, nil},
		{"fresh send", a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, MessageID: "m"}, open, nil, nil},
		{"send to a task", a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, TaskID: "t1"}, open, []store.Ref{taskRef("t1")}, nil},
		{"stream to a task", a2a.Operation{Method: a2a.MethodStream, Version: a2a.V03, TaskID: "t1"}, open, []store.Ref{taskRef("t1")}, nil},
		{"send in a context", a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, ContextID: "c1"}, open, nil, []store.Ref{contextRef("c1")}},
		{"send in a context, agent-issued contexts only", a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, ContextID: "c1"}, strict, []store.Ref{contextRef("c1")}, nil},
		{"send with references", a2a.Operation{Method: a2a.MethodStream, Version: a2a.V10, TaskID: "t1", ContextID: "c1", ReferenceTaskIDs: []string{"r1", "r2"}}, open,
			[]store.Ref{taskRef("t1"), taskRef("r1"), taskRef("r2")}, []store.Ref{contextRef("c1")}},
		{"legacy send claims its task", a2a.Operation{Method: a2a.MethodSend, Version: a2a.VLegacy, TaskID: "t1", ContextID: "s1"}, open, nil, []store.Ref{taskRef("t1"), contextRef("s1")}},
		{"legacy send, agent-issued contexts only", a2a.Operation{Method: a2a.MethodStream, Version: a2a.VLegacy, TaskID: "t1", ContextID: "s1"}, strict, []store.Ref{contextRef("s1")}, []store.Ref{taskRef("t1")}},
		{"list", a2a.Operation{Method: a2a.MethodListTasks, Version: a2a.V10}, open, nil, nil},
		{"list in a context", a2a.Operation{Method: a2a.MethodListTasks, Version: a2a.V10, ContextID: "c1"}, open, []store.Ref{contextRef("c1")}, nil},
		{"extended card", a2a.Operation{Method: a2a.MethodExtendedCard, Version: a2a.V10}, open, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lookups, claims := refsOf(&tc.op, tc.pol)
			if !slices.Equal(lookups, tc.lookups) || !slices.Equal(claims, tc.claims) {
				t.Fatalf("refsOf = lookups %v claims %v; want lookups %v claims %v", lookups, claims, tc.lookups, tc.claims)
			}
		})
	}
}

const testAgent = "demo"

// authzFixture is an Authorizer over a fresh memory store.
type authzFixture struct {
	z      *Authorizer
	st     store.Store
	m      *metrics.Metrics
	audit  *lockedBuffer
	owners store.Ownership
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newAuthzFixture(t *testing.T, pol Policy) *authzFixture {
	t.Helper()
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	f := &authzFixture{st: st, owners: st.Ownership(), m: metrics.New(prometheus.NewRegistry()), audit: &lockedBuffer{}}
	log := slog.New(slog.NewJSONHandler(f.audit, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.z = NewAuthorizer(st.Ownership(), map[string]Policy{testAgent: pol}, f.m, log)
	return f
}

// owner is who the store has on record for ref.
func (f *authzFixture) owner(t *testing.T, ref store.Ref) store.Owner {
	t.Helper()
	got, err := f.owners.Lookup(context.Background(), testAgent, []store.Ref{ref})
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

func (f *authzFixture) claim(t *testing.T, p *request.Principal, refs ...store.Ref) {
	t.Helper()
	if _, err := f.owners.Claim(context.Background(), testAgent, refs, store.Owner{Tenant: p.Tenant, Subject: p.Subject}); err != nil {
		t.Fatal(err)
	}
}

func (f *authzFixture) denials(t *testing.T, op, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := f.m.AuthzDenials.WithLabelValues(testAgent, op, reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// wantA2AError checks that err is the protocol error want (by code: the
// Authorizer returns copies with specific messages).
func wantA2AError(t *testing.T, err error, want *a2a.Error) {
	t.Helper()
	var ae *a2a.Error
	if !errors.As(err, &ae) || ae.Code != want.Code || ae.HTTPStatus != want.HTTPStatus {
		t.Fatalf("error %v, want %s (%d)", err, want.Reason, want.Code)
	}
}

var (
	alice = &request.Principal{Tenant: "acme", Subject: "alice", Issuer: "test"}
	carol = &request.Principal{Tenant: "acme", Subject: "carol", Issuer: "test"}
	bob   = &request.Principal{Tenant: "globex", Subject: "bob", Issuer: "test"}
)

func TestAuthorizeOwnership(t *testing.T) {
	ctx := context.Background()
	get := func(id string) *a2a.Operation {
		return &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, TaskID: id}
	}
	for _, perSubject := range []bool{false, true} {
		pol := Policy{}
		if perSubject {
			pol.Ownership = config.OwnerSubject
		}
		t.Run("ownership="+pol.Ownership, func(t *testing.T) {
			f := newAuthzFixture(t, pol)
			f.claim(t, alice, taskRef("t-alice"))
			cases := []struct {
				name string
				p    *request.Principal
				id   string
				ok   bool
			}{
				{"owner", alice, "t-alice", true},
				{"same tenant, other subject", carol, "t-alice", !perSubject},
				{"other tenant", bob, "t-alice", false},
				{"unknown id", alice, "t-nobody", false},
			}
			for _, tc := range cases {
				g, err := f.z.Authorize(ctx, tc.p, testAgent, testAgent, get(tc.id))
				if tc.ok {
					if err != nil || g == nil || g.Principal() != tc.p {
						t.Errorf("%s: Authorize = %v, %v; want a grant", tc.name, g, err)
					}
					continue
				}
				if g != nil || !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Errorf("%s: Authorize = %v, %v; want exactly TaskNotFound", tc.name, g, err)
				}
			}
			// Foreign and unknown ids are both not_owner: nothing tells them apart.
			want := 2.0
			if perSubject {
				want = 3
			}
			if got := f.denials(t, "get", "not_owner"); got != want {
				t.Errorf("denials{get,not_owner} = %v, want %v", got, want)
			}
		})
	}
}

func TestAuthorizeClaimsAndLookups(t *testing.T) {
	ctx := context.Background()
	noClientContexts := false
	t.Run("legacy send claims the client-chosen task id", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{})
		op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.VLegacy, TaskID: "legacy-1", ContextID: "session-1"}
		if _, err := f.z.Authorize(ctx, alice, testAgent, testAgent, op); err != nil {
			t.Fatal(err)
		}
		for _, ref := range []store.Ref{taskRef("legacy-1"), contextRef("session-1")} {
			if got := f.owner(t, ref); got != (store.Owner{Tenant: "acme", Subject: "alice"}) {
				t.Errorf("%v owned by %+v after the legacy send", ref, got)
			}
		}
		// Reusing the id from another tenant is refused.
		if _, err := f.z.Authorize(ctx, bob, testAgent, testAgent, op); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("another tenant's legacy send to the same id: %v, want TaskNotFound", err)
		}
	})
	t.Run("1.0 send to an unknown task claims nothing", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{})
		op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, TaskID: "future-task", MessageID: "m1"}
		if _, err := f.z.Authorize(ctx, bob, testAgent, testAgent, op); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("send to an unknown task: %v, want TaskNotFound", err)
		}
		if got := f.owner(t, taskRef("future-task")); !got.IsZero() {
			t.Fatalf("the refused send reserved the task id for %+v", got)
		}
	})
	t.Run("client context ids are reserved by default", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{})
		op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, ContextID: "my-context", MessageID: "m1"}
		if _, err := f.z.Authorize(ctx, alice, testAgent, testAgent, op); err != nil {
			t.Fatal(err)
		}
		if got := f.owner(t, contextRef("my-context")); got.Tenant != "acme" {
			t.Fatalf("context owned by %+v, want acme", got)
		}
		if _, err := f.z.Authorize(ctx, bob, testAgent, testAgent, op); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("another tenant in the reserved context: %v, want TaskNotFound", err)
		}
	})
	t.Run("client_context_ids false refuses unknown contexts", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{ClientContextIDs: &noClientContexts})
		op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, ContextID: "guessed-context", MessageID: "m1"}
		if _, err := f.z.Authorize(ctx, alice, testAgent, testAgent, op); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("unknown context: %v, want TaskNotFound", err)
		}
		if got := f.owner(t, contextRef("guessed-context")); !got.IsZero() {
			t.Fatalf("the refused send reserved the context for %+v", got)
		}
		f.claim(t, alice, contextRef("issued-context"))
		op.ContextID = "issued-context"
		if _, err := f.z.Authorize(ctx, alice, testAgent, testAgent, op); err != nil {
			t.Fatalf("the owner's own context: %v", err)
		}
	})
	t.Run("a foreign reference refuses the whole send", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{})
		f.claim(t, alice, taskRef("t-alice"))
		f.claim(t, bob, taskRef("t-bob"))
		op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, MessageID: "m1", ReferenceTaskIDs: []string{"t-bob", "t-alice"}}
		if _, err := f.z.Authorize(ctx, bob, testAgent, testAgent, op); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("send referencing a foreign task: %v, want TaskNotFound", err)
		}
	})
}

func TestAuthorizePolicyComesFirst(t *testing.T) {
	ctx := context.Background()
	f := newAuthzFixture(t, Policy{Tenants: []string{"acme"}, Scopes: map[string][]string{"cancel": {"a2a:tasks.cancel"}}})
	// A denied legacy send must not reserve its task id.
	op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.VLegacy, TaskID: "legacy-1"}
	_, err := f.z.Authorize(ctx, bob, testAgent, testAgent, op)
	wantA2AError(t, err, a2a.ErrPermissionDenied)
	if got := f.owner(t, taskRef("legacy-1")); !got.IsZero() {
		t.Fatalf("a send refused by policy reserved its task id for %+v", got)
	}
	f.claim(t, alice, taskRef("t1"))
	cancel := &a2a.Operation{Method: a2a.MethodCancelTask, Version: a2a.V10, TaskID: "t1"}
	_, err = f.z.Authorize(ctx, alice, testAgent, testAgent, cancel)
	wantA2AError(t, err, a2a.ErrPermissionDenied)
	withScope := &request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"a2a:tasks.cancel"}}
	if _, err := f.z.Authorize(ctx, withScope, testAgent, testAgent, cancel); err != nil {
		t.Fatalf("cancel with the scope: %v", err)
	}
	if got := f.denials(t, "send", "tenant_not_allowed"); got != 1 {
		t.Errorf("denials{send,tenant_not_allowed} = %v, want 1", got)
	}
	if got := f.denials(t, "cancel", "missing_scope"); got != 1 {
		t.Errorf("denials{cancel,missing_scope} = %v, want 1", got)
	}
	for _, want := range []string{`"decision":"deny"`, `"reason":"missing_scope"`, `"operation":"cancel"`, `"task_id":"t1"`, `"tenant":"acme"`, `"subject":"alice"`, `"agent":"demo"`} {
		if !strings.Contains(f.audit.String(), want) {
			t.Errorf("audit log lacks %s:\n%s", want, f.audit)
		}
	}
}

func TestAuthorizeStoreFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("closed store is unavailable", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{})
		_ = f.st.Close()
		for _, op := range []*a2a.Operation{
			{Method: a2a.MethodGetTask, Version: a2a.V10, TaskID: "t1"},
			{Method: a2a.MethodSend, Version: a2a.VLegacy, TaskID: "legacy-1"},
			{Method: a2a.MethodListTasks, Version: a2a.V10, ContextID: "c1"},
		} {
			_, err := f.z.Authorize(ctx, alice, testAgent, testAgent, op)
			wantA2AError(t, err, a2a.ErrUnavailable)
		}
		if got := f.denials(t, "get", "store_unavailable"); got != 1 {
			t.Errorf("denials{get,store_unavailable} = %v, want 1", got)
		}
	})
	t.Run("an id the store refuses is not found", func(t *testing.T) {
		f := newAuthzFixture(t, Policy{})
		op := &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, TaskID: strings.Repeat("x", store.MaxNameBytes+1)}
		_, err := f.z.Authorize(ctx, alice, testAgent, testAgent, op)
		wantA2AError(t, err, a2a.ErrTaskNotFound)
		if got := f.denials(t, "get", "store_error"); got != 1 {
			t.Errorf("denials{get,store_error} = %v, want 1", got)
		}
	})
}

func TestGrantRecord(t *testing.T) {
	ctx := context.Background()
	f := newAuthzFixture(t, Policy{})
	f.claim(t, bob, taskRef("t-bob"), contextRef("c-bob"))
	fresh := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, MessageID: "m1"}
	g, err := f.z.Authorize(ctx, alice, testAgent, testAgent, fresh)
	if err != nil {
		t.Fatal(err)
	}

	if err := g.Record(ctx, a2a.Event{Kind: a2a.EventTask, TaskID: "t-new", ContextID: "c-new"}); err != nil {
		t.Fatalf("recording a new task: %v", err)
	}
	for _, ref := range []store.Ref{taskRef("t-new"), contextRef("c-new")} {
		if got := f.owner(t, ref); got.Tenant != "acme" || got.Subject != "alice" {
			t.Errorf("%v owned by %+v after the answer, want acme/alice", ref, got)
		}
	}
	// An answer naming another tenant's task or context is withheld.
	for _, ev := range []a2a.Event{
		{Kind: a2a.EventTask, TaskID: "t-bob", ContextID: "c-new"},
		{Kind: a2a.EventStatusUpdate, TaskID: "t-new", ContextID: "c-bob"},
	} {
		if err := g.Record(ctx, ev); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("answer %+v: %v, want TaskNotFound", ev, err)
		}
	}
	if got := f.owner(t, taskRef("t-bob")); got.Tenant != "globex" {
		t.Errorf("the withheld answer changed the owner of t-bob to %+v", got)
	}
	if got := f.denials(t, "answer", "foreign_in_answer"); got != 2 {
		t.Errorf("denials{answer,foreign_in_answer} = %v, want 2", got)
	}
	if err := g.Record(ctx, a2a.Event{Kind: a2a.EventNone}); err != nil {
		t.Errorf("an answer without ids: %v", err)
	}

	// Ids already recorded for this grant cost no store round trip: a
	// stream keeps flowing for known ids even while the store is down,
	// and new ids fail closed.
	_ = f.st.Close()
	if err := g.Record(ctx, a2a.Event{Kind: a2a.EventStatusUpdate, TaskID: "t-new", ContextID: "c-new"}); err != nil {
		t.Errorf("a known task after the store closed: %v", err)
	}
	err = g.Record(ctx, a2a.Event{Kind: a2a.EventTask, TaskID: "t-other", ContextID: "c-new"})
	wantA2AError(t, err, a2a.ErrUnavailable)
}

// TestGrantRecordReferences: every task an answer's messages reference must
// be the caller's. A foreign one and an unknown one withhold the answer
// alike, and neither is ever claimed.
func TestGrantRecordReferences(t *testing.T) {
	ctx := context.Background()
	for _, pol := range []Policy{{Ownership: config.OwnerTenant}, {Ownership: config.OwnerSubject}} {
		t.Run(string(pol.Ownership), func(t *testing.T) {
			perSubject := pol.Ownership == config.OwnerSubject
			f := newAuthzFixture(t, pol)
			f.claim(t, alice, taskRef("t-alice"))
			f.claim(t, carol, taskRef("t-carol"))
			f.claim(t, bob, taskRef("t-bob"))
			named := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, MessageID: "m1", ReferenceTaskIDs: []string{"t-alice"}}
			g, err := f.z.Authorize(ctx, alice, testAgent, testAgent, named)
			if err != nil {
				t.Fatal(err)
			}
			answer := func(refs ...string) a2a.Event {
				return a2a.Event{Kind: a2a.EventTask, TaskID: "t-new", ContextID: "c-new", ReferenceTaskIDs: refs}
			}
			if err := g.Record(ctx, answer("t-alice", "t-new")); err != nil {
				t.Fatalf("references to the caller's task and to the answer's own: %v", err)
			}
			withheld := []string{"t-bob", "t-unknown"}
			if perSubject {
				withheld = append(withheld, "t-carol")
			} else if err := g.Record(ctx, answer("t-carol")); err != nil {
				t.Errorf("a reference to a task of the caller's tenant: %v", err)
			}
			for _, ref := range withheld {
				if err := g.Record(ctx, answer("t-alice", ref)); !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Errorf("reference to %s: %v, want TaskNotFound", ref, err)
				}
			}
			if got := f.owner(t, taskRef("t-unknown")); !got.IsZero() {
				t.Errorf("a reference claimed t-unknown for %+v", got)
			}
			if got := f.owner(t, taskRef("t-bob")); got.Tenant != "globex" {
				t.Errorf("a reference changed the owner of t-bob to %+v", got)
			}
			if got := f.denials(t, "answer", "foreign_reference_in_answer"); got != float64(len(withheld)) {
				t.Errorf("denials{answer,foreign_reference_in_answer} = %v, want %d", got, len(withheld))
			}
			if log := f.audit.String(); !strings.Contains(log, `"reason":"foreign_reference_in_answer"`) {
				t.Errorf("no audit line for a withheld reference: %s", log)
			}

			// Tasks the request named or an earlier answer proved cost no
			// round trip; a new reference fails closed without the store.
			_ = f.st.Close()
			if err := g.Record(ctx, answer("t-alice", "t-new")); err != nil {
				t.Errorf("known references after the store closed: %v", err)
			}
			wantA2AError(t, g.Record(ctx, answer("t-other")), a2a.ErrUnavailable)
		})
	}
}

func TestGrantOwnedTasks(t *testing.T) {
	ctx := context.Background()
	f := newAuthzFixture(t, Policy{Ownership: config.OwnerSubject})
	f.claim(t, alice, taskRef("t-alice"))
	f.claim(t, carol, taskRef("t-carol"))
	f.claim(t, bob, taskRef("t-bob"))
	g, err := f.z.Authorize(ctx, alice, testAgent, testAgent, &a2a.Operation{Method: a2a.MethodListTasks, Version: a2a.V10})
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.OwnedTasks(ctx, []string{"t-alice", "t-carol", "t-bob", "t-unknown", "t-alice"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, false, false, true}; !slices.Equal(got, want) {
		t.Fatalf("OwnedTasks = %v, want %v", got, want)
	}
	_ = f.st.Close()
	_, err = g.OwnedTasks(ctx, []string{"t-alice"})
	wantA2AError(t, err, a2a.ErrUnavailable)
}

// Ownership records are kept under the record key, whatever mount the
// request came through; the policy and the metric labels are the mount's.
func TestAuthorizeKeepsRecordsUnderTheRecordKey(t *testing.T) {
	ctx := context.Background()
	const twin, other = "twin", "other"
	f := newAuthzFixture(t, Policy{})
	legacy := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.VLegacy, TaskID: "invoice-11707", ContextID: "session-1"}
	if _, err := f.z.Authorize(ctx, alice, testAgent, testAgent, legacy); err != nil {
		t.Fatal(err)
	}
	get := &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, TaskID: "invoice-11707"}
	for _, op := range []*a2a.Operation{legacy, get} {
		if _, err := f.z.Authorize(ctx, bob, twin, testAgent, op); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("%s through another mount with the same record key: %v, want TaskNotFound", op.Method, err)
		}
		if _, err := f.z.Authorize(ctx, alice, twin, testAgent, op); err != nil {
			t.Errorf("the owner's %s through another mount with the same record key: %v", op.Method, err)
		}
	}
	// Another record key is another agent: the id is unknown there.
	if _, err := f.z.Authorize(ctx, bob, other, other, legacy); err != nil {
		t.Errorf("the same legacy id at another agent: %v", err)
	}
	var m dto.Metric
	if err := f.m.AuthzDenials.WithLabelValues(twin, a2a.MethodSend.String(), "not_owner").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("denials on the mount twin: %v (%v), want 1", m.GetCounter().GetValue(), err)
	}
}

// TestGrantRecordOtherTask: an answer to an operation on one task (get,
// cancel, subscribe) that names another task is withheld, whether the
// other is another tenant's, unknown, or even the caller's own, and the
// other task is never claimed. A send's answer names whatever task it
// created.
func TestGrantRecordOtherTask(t *testing.T) {
	ctx := context.Background()
	f := newAuthzFixture(t, Policy{})
	f.claim(t, alice, taskRef("t-alice"), taskRef("t-alice-2"))
	f.claim(t, bob, taskRef("t-bob"))
	denied := 0
	for _, m := range []a2a.Method{a2a.MethodGetTask, a2a.MethodCancelTask, a2a.MethodSubscribe} {
		g, err := f.z.Authorize(ctx, alice, testAgent, testAgent, &a2a.Operation{Method: m, Version: a2a.V10, TaskID: "t-alice"})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Record(ctx, a2a.Event{Kind: a2a.EventTask, TaskID: "t-alice"}); err != nil {
			t.Errorf("%v: the task asked for: %v", m, err)
		}
		for _, other := range []string{"t-bob", "t-unknown", "t-alice-2"} {
			if err := g.Record(ctx, a2a.Event{Kind: a2a.EventStatusUpdate, TaskID: other}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("%v answered about %s: %v, want TaskNotFound", m, other, err)
			}
			denied++
		}
	}
	if got := f.owner(t, taskRef("t-unknown")); got.Tenant != "" {
		t.Errorf("the withheld answer claimed t-unknown for %+v", got)
	}
	if got := f.denials(t, "answer", "other_task_in_answer"); got != float64(denied) {
		t.Errorf("denials{answer,other_task_in_answer} = %v, want %d", got, denied)
	}
	send, err := f.z.Authorize(ctx, alice, testAgent, testAgent, &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, MessageID: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := send.Record(ctx, a2a.Event{Kind: a2a.EventTask, TaskID: "t-created"}); err != nil {
		t.Errorf("a send's new task: %v", err)
	}
}
