package console

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	requestctx "github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/push"
)

const (
	testOpsToken = "ops-token-0123456789-abcdef"
	testAgent    = "demo"
)

var testKey = []byte("0123456789abcdef0123456789abcdef-test-key")

// countingLifecycle counts the calls that reach the store and refuses
// every write: the console reads records and changes them only through
// Tasks.
type countingLifecycle struct {
	store.Lifecycle
	t                  *testing.T
	lists, gets, count atomic.Int64
	listed             atomic.Int64 // records returned by List
	maxLimit           atomic.Int64
}

func (c *countingLifecycle) List(ctx context.Context, f store.LifecycleFilter, cursor string, limit int) ([]store.TaskLifecycle, string, error) {
	c.lists.Add(1)
	if int64(limit) > c.maxLimit.Load() {
		c.maxLimit.Store(int64(limit))
	}
	recs, next, err := c.Lifecycle.List(ctx, f, cursor, limit)
	c.listed.Add(int64(len(recs)))
	return recs, next, err
}

func (c *countingLifecycle) Get(ctx context.Context, agent, taskID string) (store.TaskLifecycle, bool, error) {
	c.gets.Add(1)
	return c.Lifecycle.Get(ctx, agent, taskID)
}

func (c *countingLifecycle) CountByState(ctx context.Context, agent string) (map[string]int, error) {
	c.count.Add(1)
	return c.Lifecycle.CountByState(ctx, agent)
}

func (c *countingLifecycle) Save(context.Context, store.TaskLifecycle, time.Duration) (int64, bool, error) {
	c.t.Error("the console wrote a lifecycle record itself")
	return 0, false, store.ErrInvalidArgument
}

func (c *countingLifecycle) Delete(context.Context, string, string) (bool, error) {
	c.t.Error("the console deleted a lifecycle record")
	return false, store.ErrInvalidArgument
}

// fakeTasks stands in for the tracker: holds are saved to the store as
// the tracker does; cancels are only counted (the tracker's own tests
// cover the call to the agent).
type fakeTasks struct {
	st store.Lifecycle

	mu      sync.Mutex
	cancels []string
	holds   []string
}

func (f *fakeTasks) Agents() []string { return []string{"calendar", testAgent} }
func (f *fakeTasks) Orphan(rec store.TaskLifecycle, now time.Time) bool {
	return now.Sub(rec.LastActivity) > time.Hour
}
func (f *fakeTasks) OverBudget(store.TaskLifecycle, time.Time) bool { return false }
func (f *fakeTasks) OrphanAfter() time.Duration                     { return time.Hour }

func (f *fakeTasks) SetLegalHold(ctx context.Context, agent, taskID string, hold bool, by string) (store.TaskLifecycle, error) {
	f.mu.Lock()
	f.holds = append(f.holds, by+" "+agent+"/"+taskID)
	f.mu.Unlock()
	rec, found, err := f.st.Get(ctx, agent, taskID)
	if err != nil || !found {
		return rec, err
	}
	rec.LegalHold = hold
	_, _, err = f.st.Save(ctx, rec, 0)
	return rec, err
}

func (f *fakeTasks) Cancel(_ context.Context, agent, taskID, by string) (a2a.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, by+" "+agent+"/"+taskID)
	return a2a.StateCanceled, nil
}

// fixture is a console on the embedded store, with a recorded audit log.
type fixture struct {
	t       *testing.T
	st      store.Store
	life    *countingLifecycle
	tasks   *fakeTasks
	deliver *push.Deliverer
	c       *Console
	h       http.Handler
	audit   *bytes.Buffer
	auditMu sync.Mutex
}

type fixtureOption func(*Options)

func newFixture(t *testing.T, st store.Store, opts ...fixtureOption) *fixture {
	t.Helper()
	f := &fixture{t: t, st: st, audit: &bytes.Buffer{}}
	f.life = &countingLifecycle{Lifecycle: st.Lifecycle(), t: t}
	f.tasks = &fakeTasks{st: st.Lifecycle()}
	attempts, ok := store.OperatorConcerns(st)
	if !ok {
		t.Fatal("not a store of package store")
	}
	f.deliver = push.NewDeliverer(st.Delivery(), nil, push.DeliveryOptions{Log: attempts}, nil, nil)
	cfg := config.ConsoleOptions{Enabled: true, SessionKeyEnv: "X", OpsScope: "gateway:ops"}
	cfg.ApplyDefaults()
	o := Options{
		Config: cfg, SessionKey: testKey, OpsToken: testOpsToken,
		Lifecycle: f.life, Challenges: st.Challenges(), PushConfigs: st.PushConfigs(), Events: st.EventLog(),
		Tasks: f.tasks, DeadLetters: st.Delivery(), Deliveries: f.deliver, Attempts: attempts,
		Audit: slog.New(slog.NewTextHandler(lockedWriter{f}, nil)),
	}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.c, f.h = c, c.Handler()
	return f
}

type lockedWriter struct{ f *fixture }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.f.auditMu.Lock()
	defer w.f.auditMu.Unlock()
	return w.f.audit.Write(p)
}

func (f *fixture) auditLog() string {
	f.auditMu.Lock()
	defer f.auditMu.Unlock()
	return f.audit.String()
}

// client is a browser: it keeps cookies.
type client struct {
	f       *fixture
	cookies map[string]*http.Cookie
}

func (f *fixture) client() *client { return &client{f: f, cookies: map[string]*http.Cookie{}} }

func (c *client) do(r *http.Request) *http.Response {
	for _, ck := range c.cookies {
		r.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	c.f.h.ServeHTTP(w, r)
	resp := w.Result()
	for _, ck := range resp.Cookies() {
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	return resp
}

func (c *client) get(path string) (*http.Response, string) {
	resp := c.do(httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *client) post(path string, form url.Values) (*http.Response, string) {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := c.do(r)
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf is the CSRF token in a page's forms.
func csrfOf(t *testing.T, html string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", html)
	}
	return m[1]
}

// signIn signs c in with token and returns the CSRF token of the session.
func (c *client) signIn(t *testing.T, token string) string {
	t.Helper()
	_, html := c.get(Prefix + "login")
	resp, body := c.post(Prefix+"login", url.Values{"csrf": {csrfOf(t, html)}, "token": {token}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix {
		t.Fatalf("sign-in: %d %s\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	_, html = c.get(Prefix)
	return csrfOf(t, html)
}

// addTask saves a record as the tracker would.
func addTask(t *testing.T, st store.Store, agent, id, tenant, state string, hist ...store.TaskTransition) store.TaskLifecycle {
	t.Helper()
	now := time.Now().UTC()
	rec := store.TaskLifecycle{Agent: agent, TaskID: id, Tenant: tenant, Subject: "alice", ContextID: "ctx-" + id,
		Version: "1.0", State: state, StateSince: now, Created: now.Add(-time.Minute), LastActivity: now, History: hist}
	if _, ok, err := st.Lifecycle().Save(context.Background(), rec, 0); err != nil || !ok {
		t.Fatalf("save %s: %v, %v", id, ok, err)
	}
	return rec
}

// fakeAuthenticate accepts "jwt-with-scope" and "jwt-without-scope".
func fakeAuthenticate(_ context.Context, bearer string) (*requestctx.Principal, error) {
	switch bearer {
	case "jwt-with-scope":
		return &requestctx.Principal{Tenant: "ops", Subject: "carol", Issuer: "corp", Scopes: []string{"read", "gateway:ops"}}, nil
	case "jwt-without-scope":
		return &requestctx.Principal{Tenant: "ops", Subject: "dave", Issuer: "corp", Scopes: []string{"read"}}, nil
	}
	return nil, &authz.AuthError{Reason: "invalid token"}
}
