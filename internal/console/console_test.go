package console

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

func memStore(t *testing.T) store.Store {
	t.Helper()
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// pages are every GET page, with what it needs in the store.
func pages(task string) []string {
	return []string{
		Prefix, Prefix + "tasks?agent=demo", Prefix + "tasks/demo/" + task, Prefix + "dead-letters",
		Prefix + "dead-letters/ep/n1", Prefix + "endpoints", Prefix + "challenges?agent=demo",
	}
}

// actions are every POST action.
func actions(task string) []string {
	return []string{
		Prefix + "tasks/demo/" + task + "/hold", Prefix + "tasks/demo/" + task + "/cancel",
		Prefix + "dead-letters/act", Prefix + "logout",
	}
}

func TestEveryPageNeedsASession(t *testing.T) {
	f := newFixture(t, memStore(t))
	addTask(t, f.st, testAgent, "t1", "acme", "working")
	c := f.client()
	for _, p := range pages("t1") {
		resp, _ := c.get(p)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix+"login" {
			t.Errorf("GET %s without a session: %d %s, want a redirect to the sign-in page", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, p := range actions("t1") {
		if resp, _ := c.post(p, url.Values{"hold": {"1"}, "action": {"discard"}}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without a session: %d, want 401", p, resp.StatusCode)
		}
	}
	if len(f.tasks.cancels)+len(f.tasks.holds) != 0 {
		t.Fatalf("an action ran without a session: %v %v", f.tasks.cancels, f.tasks.holds)
	}
	// A forged or tampered cookie is no session either.
	c.signIn(t, testOpsToken)
	for name, ck := range c.cookies {
		v := []byte(ck.Value)
		v[3] ^= 1
		c.cookies[name] = &http.Cookie{Name: name, Value: string(v)}
	}
	if resp, _ := c.get(Prefix); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a tampered session cookie was accepted: %d", resp.StatusCode)
	}
}

func TestSignIn(t *testing.T) {
	f := newFixture(t, memStore(t), func(o *Options) { o.Authenticate = fakeAuthenticate })
	for _, tc := range []struct {
		name, token string
		want        int
		operator    string
	}{
		{"ops token", testOpsToken, http.StatusSeeOther, "ops-token"},
		{"JWT with the ops scope", "jwt-with-scope", http.StatusSeeOther, "corp:carol"},
		{"JWT without the ops scope", "jwt-without-scope", http.StatusUnauthorized, ""},
		{"wrong token", testOpsToken + "x", http.StatusUnauthorized, ""},
		{"no token", "", http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.client()
			_, html := c.get(Prefix + "login")
			resp, _ := c.post(Prefix+"login", url.Values{"csrf": {csrfOf(t, html)}, "token": {tc.token}})
			if resp.StatusCode != tc.want {
				t.Fatalf("sign-in answered %d, want %d", resp.StatusCode, tc.want)
			}
			ck := c.cookies[sessionCookie]
			if tc.operator == "" {
				if ck != nil {
					t.Fatal("a session cookie was set for a refused sign-in")
				}
				return
			}
			if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.Path != "/" {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP", ck)
			}
			if _, page := c.get(Prefix); !strings.Contains(page, tc.operator) {
				t.Fatalf("the overview does not name the operator %q", tc.operator)
			}
			if !strings.Contains(f.auditLog(), "operator="+tc.operator) {
				t.Fatalf("the sign-in is not in the audit log:\n%s", f.auditLog())
			}
		})
	}
	if strings.Contains(f.auditLog(), testOpsToken) || strings.Contains(f.auditLog(), "jwt-with-scope") {
		t.Fatal("a token is in the audit log")
	}
}

func TestSignInRefusesTokensOutsideTheFormBody(t *testing.T) {
	f := newFixture(t, memStore(t))
	c := f.client()
	_, html := c.get(Prefix + "login")
	// In the query string, even with a valid CSRF token in the body.
	resp, _ := c.post(Prefix+"login?token="+url.QueryEscape(testOpsToken), url.Values{"csrf": {csrfOf(t, html)}})
	if resp.StatusCode != http.StatusUnauthorized || c.cookies[sessionCookie] != nil {
		t.Fatalf("a token in the URL signed in: %d", resp.StatusCode)
	}
	// Without the sign-in form's CSRF token (a form posted from elsewhere).
	c2 := f.client()
	resp, _ = c2.post(Prefix+"login", url.Values{"token": {testOpsToken}})
	if resp.StatusCode != http.StatusForbidden || c2.cookies[sessionCookie] != nil {
		t.Fatalf("a sign-in without the form's CSRF token: %d", resp.StatusCode)
	}
	// With the CSRF token of another browser's form.
	c3 := f.client()
	c3.get(Prefix + "login")
	resp, _ = c3.post(Prefix+"login", url.Values{"csrf": {csrfOf(t, html)}, "token": {testOpsToken}})
	if resp.StatusCode != http.StatusForbidden || c3.cookies[sessionCookie] != nil {
		t.Fatalf("a sign-in with another form's CSRF token: %d", resp.StatusCode)
	}
}

func TestCookiesAreSecureOnTLSAndBehindHTTPS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secure bool
		tls    bool
	}{{"over TLS", false, true}, {"public_url https", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, memStore(t), func(o *Options) { o.Secure = tc.secure })
			r := httptest.NewRequest(http.MethodGet, Prefix+"login", nil)
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, r)
			cks := w.Result().Cookies()
			if len(cks) != 1 || !cks[0].Secure || cks[0].Name != "__Host-"+loginCookie {
				t.Fatalf("cookies %+v: want one Secure __Host- cookie", cks)
			}
		})
	}
}

func TestSessionsWorkAcrossReplicas(t *testing.T) {
	st := memStore(t)
	a, b := newFixture(t, st), newFixture(t, st)
	c := a.client()
	c.signIn(t, testOpsToken)
	c.f = b
	if resp, _ := c.get(Prefix); resp.StatusCode != http.StatusOK {
		t.Fatalf("another replica with the same key refused the session: %d", resp.StatusCode)
	}
	other := newFixture(t, st, func(o *Options) { o.SessionKey = []byte("another key, another deployment, 32+ bytes") })
	c.f = other
	if resp, _ := c.get(Prefix); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a replica with another key accepted the session: %d", resp.StatusCode)
	}
}

func TestSessionsExpire(t *testing.T) {
	f := newFixture(t, memStore(t))
	s := session{Kind: kindSession, Operator: "ops-token", CSRF: "x", Expires: time.Now().Add(-time.Second).Unix()}
	r := httptest.NewRequest(http.MethodGet, Prefix, nil)
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: f.c.sign.encode(s)})
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("an expired session was accepted: %d", w.Code)
	}
	// A sign-in form's cookie is no session.
	s.Kind, s.Expires = kindLogin, time.Now().Add(time.Hour).Unix()
	r = httptest.NewRequest(http.MethodGet, Prefix, nil)
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: f.c.sign.encode(s)})
	w = httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("a sign-in cookie was accepted as a session: %d", w.Code)
	}
}

// deadLetter makes a dead letter on endpoint ep for task.
func deadLetter(t *testing.T, st store.Store, ep, id, task string) {
	t.Helper()
	ctx := context.Background()
	if _, errs := st.Delivery().EnqueueAll(ctx, []store.Delivery{{ID: id, Endpoint: ep, TaskID: task, Payload: []byte("not a payload")}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	atts := []store.Attempt{{At: time.Now(), Status: 503, Err: "receiver answered 503 Service Unavailable"}}
	if err := st.Delivery().DeadLetter(ctx, ep, id, "no 2xx after 1 attempts", atts); err != nil {
		t.Fatal(err)
	}
}

func TestActionsRefuseWithoutTheCSRFToken(t *testing.T) {
	f := newFixture(t, memStore(t))
	addTask(t, f.st, testAgent, "t1", "acme", "working")
	deadLetter(t, f.st, "ep", "n1", "t1")
	c := f.client()
	csrf := c.signIn(t, testOpsToken)
	for _, p := range actions("t1") {
		for _, bad := range []url.Values{
			{"hold": {"1"}, "action": {"discard"}, "sel": {"ep n1"}},
			{"hold": {"1"}, "action": {"discard"}, "sel": {"ep n1"}, "csrf": {csrf + "x"}},
		} {
			if resp, _ := c.post(p, bad); resp.StatusCode != http.StatusForbidden {
				t.Errorf("POST %s with csrf %q: %d, want 403", p, bad.Get("csrf"), resp.StatusCode)
			}
		}
	}
	// The CSRF token in the query string does not count either.
	if resp, _ := c.post(Prefix+"tasks/demo/t1/hold?csrf="+csrf, url.Values{"hold": {"1"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a CSRF token in the URL was accepted: %d", resp.StatusCode)
	}
	if len(f.tasks.cancels)+len(f.tasks.holds) != 0 {
		t.Fatalf("an action ran without its CSRF token: %v %v", f.tasks.cancels, f.tasks.holds)
	}
	if _, ok, _ := f.st.Delivery().GetDeadLetter(context.Background(), "ep", "n1"); !ok {
		t.Fatal("a dead letter was discarded without the CSRF token")
	}
	if !strings.Contains(f.auditLog(), "CSRF") {
		t.Fatalf("the refusals are not in the audit log:\n%s", f.auditLog())
	}
	// Still signed in: the session cookie survives a refused action.
	if resp, _ := c.get(Prefix); resp.StatusCode != http.StatusOK {
		t.Fatalf("overview after refusals: %d", resp.StatusCode)
	}
}

func TestTaskActions(t *testing.T) {
	f := newFixture(t, memStore(t))
	addTask(t, f.st, testAgent, "t1", "acme", "working")
	c := f.client()
	csrf := c.signIn(t, testOpsToken)
	ctx := context.Background()

	resp, _ := c.post(Prefix+"tasks/demo/t1/hold", url.Values{"csrf": {csrf}, "hold": {"1"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix+"tasks/demo/t1?done=hold-set" {
		t.Fatalf("set hold: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if rec, _, _ := f.st.Lifecycle().Get(ctx, testAgent, "t1"); !rec.LegalHold {
		t.Fatal("the legal hold is not set")
	}
	if _, page := c.get(Prefix + "tasks/demo/t1?done=hold-set"); !strings.Contains(page, "Legal hold set.") || !strings.Contains(page, "Clear legal hold") {
		t.Fatal("the task page does not show the hold")
	}
	c.post(Prefix+"tasks/demo/t1/hold", url.Values{"csrf": {csrf}, "hold": {"0"}})
	if rec, _, _ := f.st.Lifecycle().Get(ctx, testAgent, "t1"); rec.LegalHold {
		t.Fatal("the legal hold is not cleared")
	}
	resp, _ = c.post(Prefix+"tasks/demo/t1/cancel", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || len(f.tasks.cancels) != 1 || f.tasks.cancels[0] != "ops-token demo/t1" {
		t.Fatalf("cancel: %d, calls %v", resp.StatusCode, f.tasks.cancels)
	}
	if resp, _ := c.post(Prefix+"tasks/other/t1/cancel", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("cancel at an unknown agent: %d", resp.StatusCode)
	}
	log := f.auditLog()
	for _, want := range []string{"action=legal_hold agent=demo task_id=t1 legal_hold=true", "legal_hold=false", "action=cancel agent=demo task_id=t1"} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %q:\n%s", want, log)
		}
	}
}

func TestDeadLetterActions(t *testing.T) {
	f := newFixture(t, memStore(t))
	for i := range 4 {
		deadLetter(t, f.st, "demo/demo/t1/cfg", fmt.Sprintf("n%d", i), "t1")
	}
	c := f.client()
	csrf := c.signIn(t, testOpsToken)
	ctx := context.Background()
	_, page := c.get(Prefix + "dead-letters")
	if n := strings.Count(page, `name="sel"`); n != 4 {
		t.Fatalf("the list shows %d dead letters, want 4", n)
	}
	resp, _ := c.post(Prefix+"dead-letters/act", url.Values{"csrf": {csrf}, "action": {"redeliver"},
		"sel": {"demo/demo/t1/cfg n0"}, "back": {Prefix + "dead-letters"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("redeliver: %d", resp.StatusCode)
	}
	if n, _, _ := f.st.Delivery().Depth(ctx, "demo/demo/t1/cfg"); n != 1 {
		t.Fatalf("after redelivery the endpoint's queue holds %d, want 1", n)
	}
	resp, _ = c.post(Prefix+"dead-letters/act", url.Values{"csrf": {csrf}, "action": {"discard"},
		"sel": {"demo/demo/t1/cfg n1", "demo/demo/t1/cfg n2"}, "back": {"https://elsewhere.example/"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix+"dead-letters?done=discarded" {
		t.Fatalf("discard: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	dls, _, _ := f.st.Delivery().DeadLetters(ctx, "", 10)
	if len(dls) != 1 || dls[0].ID != "n3" {
		t.Fatalf("dead letters left: %+v, want n3", dls)
	}
	if resp, body := c.post(Prefix+"dead-letters/act", url.Values{"csrf": {csrf}, "action": {"discard"}, "sel": {"demo/demo/t1/cfg n1"}}); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "no such dead letter") {
		t.Fatalf("discarding one already gone: %d", resp.StatusCode)
	}
	if resp, _ := c.post(Prefix+"dead-letters/act", url.Values{"csrf": {csrf}, "action": {"delete-everything"}, "sel": {"demo/demo/t1/cfg n3"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown action: %d", resp.StatusCode)
	}
	log := f.auditLog()
	for _, want := range []string{"action=dead_letter_redeliver endpoint=demo/demo/t1/cfg id=n0", "action=dead_letter_discard endpoint=demo/demo/t1/cfg id=n1",
		"action=dead_letter_discard endpoint=demo/demo/t1/cfg id=n2"} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %q:\n%s", want, log)
		}
	}
}

// inline finds script and style that a strict CSP would block.
var inline = regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>[^<]|<script>|\sstyle=|<style|\son[a-z]+=|javascript:`)

func TestPagesShowNoSecretAndLoadNothingInline(t *testing.T) {
	st := memStore(t)
	f := newFixture(t, st)
	ctx := context.Background()
	addTask(t, st, testAgent, "t1", "acme", "auth-required",
		store.TaskTransition{From: "submitted", To: "working", At: time.Now().Add(-50 * time.Second)},
		store.TaskTransition{From: "working", To: "auth-required", At: time.Now().Add(-10 * time.Second)})
	secrets := []string{"push-token-SECRET", "push-credentials-SECRET", "sealed-credential-SECRET", testOpsToken, string(testKey)}
	if _, err := st.PushConfigs().Put(ctx, store.PushConfig{Agent: testAgent, TaskID: "t1", ID: "cfg", Tenant: "acme", Subject: "alice",
		Version: a2a.V10, URL: "https://hooks.example/cb", Token: secrets[0], AuthScheme: "Bearer", AuthCredentials: secrets[1]}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ch := store.Challenge{ID: "challenge-id-0123456789abcdef", Agent: testAgent, TaskID: "t1", ContextID: "ctx-t1", Tenant: "acme", Subject: "alice",
		Version: "1.0", Scheme: "oauth2", Created: now, Expires: now.Add(time.Hour)}
	if _, _, err := st.Challenges().Open(ctx, ch, "", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Challenges().Complete(ctx, ch.ID, store.MethodDirect, []byte(secrets[2]), time.Hour, now); err != nil {
		t.Fatal(err)
	}
	deadLetter(t, st, "ep", "n1", "t1")
	c := f.client()
	c.signIn(t, testOpsToken)
	for _, ck := range c.cookies {
		secrets = append(secrets, ck.Value)
	}
	for _, p := range append(pages("t1"), Prefix+"login") {
		resp, page := c.get(p)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
			t.Errorf("GET %s: %d\n%s", p, resp.StatusCode, page)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != csp {
			t.Errorf("GET %s: CSP %q", p, got)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: headers %v", p, resp.Header)
		}
		for _, s := range secrets {
			if strings.Contains(page, s) {
				t.Errorf("GET %s shows a secret (%.12s…)", p, s)
			}
		}
		if m := inline.FindString(page); m != "" {
			t.Errorf("GET %s has inline script or style: %q", p, m)
		}
	}
	// What an operator must see is there: the push config's URL and the
	// challenge with its expiry.
	if _, page := c.get(Prefix + "tasks/demo/t1"); !strings.Contains(page, "https://hooks.example/cb") || !strings.Contains(page, "Bearer (set)") {
		t.Error("the task page does not show the push config's URL and that it has credentials")
	}
	if _, page := c.get(Prefix + "challenges?agent=demo"); !strings.Contains(page, "/console/tasks/demo/t1") || !strings.Contains(page, "completed") {
		t.Error("the challenges page does not list the open challenge")
	}
}

func TestTimelineIsToScale(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := store.TaskLifecycle{State: "completed", Created: t0, StateSince: t0.Add(100 * time.Second), History: []store.TaskTransition{
		{From: "unknown", To: "submitted", At: t0},
		{From: "submitted", To: "working", At: t0.Add(10 * time.Second)},
		{From: "working", To: "input-required", At: t0.Add(20 * time.Second)},
		{From: "input-required", To: "working", At: t0.Add(80 * time.Second)},
		{From: "working", To: "completed", At: t0.Add(100 * time.Second)},
	}}
	tl := buildTimeline(rec, t0.Add(time.Hour))
	if tl.Total != 100*time.Second || tl.Interruptions != 1 || tl.Resumes != 1 || len(tl.Segments) != 5 {
		t.Fatalf("timeline %+v", tl)
	}
	wantWidth := []float64{10, 10, 60, 20, minWidth}
	wantEvent := []string{"", "", "interrupted", "resumed", "ended"}
	for i, s := range tl.Segments {
		if s.Width != wantWidth[i] || s.Event != wantEvent[i] {
			t.Errorf("segment %d (%s): width %v, event %q; want %v, %q", i, s.State, s.Width, s.Event, wantWidth[i], wantEvent[i])
		}
	}
	if tl.Segments[2].X != 20 || tl.Segments[2].Dwell != time.Minute {
		t.Errorf("the input-required segment starts at %v%% for %v, want 20%% for 1m", tl.Segments[2].X, tl.Segments[2].Dwell)
	}
}

func TestSignOut(t *testing.T) {
	f := newFixture(t, memStore(t))
	c := f.client()
	csrf := c.signIn(t, testOpsToken)
	resp, _ := c.post(Prefix+"logout", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || c.cookies[sessionCookie] != nil {
		t.Fatalf("sign-out: %d, cookie %v", resp.StatusCode, c.cookies[sessionCookie])
	}
	if resp, _ := c.get(Prefix); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after sign-out the overview answered %d", resp.StatusCode)
	}
	if !strings.Contains(f.auditLog(), "console: signed out") {
		t.Fatal("the sign-out is not in the audit log")
	}
}

// What agents and callers choose (task ids, tenants, error texts) is
// escaped wherever it is shown.
func TestPagesEscapeWhatCallersChose(t *testing.T) {
	st := memStore(t)
	f := newFixture(t, st)
	const evil = `x"><script>alert(1)</script>`
	addTask(t, st, testAgent, evil, "acme"+evil, "working")
	deadLetter(t, st, "ep", "n1", evil)
	c := f.client()
	c.signIn(t, testOpsToken)
	for _, p := range []string{Prefix + "tasks?agent=demo", Prefix + "tasks/demo/" + url.PathEscape(evil), Prefix + "dead-letters", Prefix + "?done=" + url.QueryEscape(evil)} {
		resp, page := c.get(p)
		if resp.StatusCode != http.StatusOK || strings.Contains(page, "<script>alert") {
			t.Errorf("GET %s: %d, unescaped: %v", p, resp.StatusCode, strings.Contains(page, "<script>alert"))
		}
	}
}
