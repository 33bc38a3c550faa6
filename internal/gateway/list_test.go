package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// listRecorder stands in front of a demo agent and records, for every
// ListTasks it serves, the page token it was given and the one it gave.
type listRecorder struct {
	agent *demoagent.Agent
	url   string

	mu       sync.Mutex
	received []string
	issued   map[string]bool
}

func newListRecorder(t *testing.T) *listRecorder {
	t.Helper()
	rec := &listRecorder{agent: demoagent.New(demoagent.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), issued: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	rec.agent.SetBaseURL(srv.URL)
	rec.url = srv.URL
	t.Cleanup(func() { rec.agent.Close(); srv.Close() })
	return rec
}

func (l *listRecorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var env struct {
		Method string `json:"method"`
		Params struct {
			PageToken string `json:"pageToken"`
		} `json:"params"`
	}
	rpc := r.Method == http.MethodPost && json.Unmarshal(body, &env) == nil && env.Method == "ListTasks"
	list := rpc || (r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tasks"))
	if !list {
		l.agent.ServeHTTP(w, r)
		return
	}
	token := env.Params.PageToken
	if !rpc {
		token = r.URL.Query().Get("pageToken")
	}
	out := httptest.NewRecorder()
	l.agent.ServeHTTP(out, r)
	var page struct {
		NextPageToken string `json:"nextPageToken"`
		Result        struct {
			NextPageToken string `json:"nextPageToken"`
		} `json:"result"`
	}
	_ = json.Unmarshal(out.Body.Bytes(), &page)
	l.mu.Lock()
	l.received = append(l.received, token)
	for _, tok := range []string{page.NextPageToken, page.Result.NextPageToken} {
		if tok != "" {
			l.issued[tok] = true
		}
	}
	l.mu.Unlock()
	for k, v := range out.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(out.Code)
	_, _ = w.Write(out.Body.Bytes())
}

// calls is the number of ListTasks the agent served.
func (l *listRecorder) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.received)
}

// foreignTokens are the page tokens the agent received without having
// issued them.
func (l *listRecorder) foreignTokens() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, tok := range l.received {
		if tok != "" && !l.issued[tok] {
			out = append(out, tok)
		}
	}
	return out
}

// newListWorld is an authorization world whose demo agent (also mounted
// as "other") sits behind a listRecorder.
func newListWorld(t *testing.T, opts ...gwtest.Option) (*azWorld, *azWorld, *listRecorder) {
	t.Helper()
	rec := newListRecorder(t)
	opts = append(opts, func(c *config.Config) {
		c.Agents[0].URL = rec.url
		c.Agents = append(c.Agents, config.Agent{Name: "other", URL: rec.url})
	})
	w := newAzWorld(t, authz.Policy{}, opts...)
	w.agent = rec.agent
	other := &azWorld{agent: rec.agent, base: strings.TrimSuffix(w.base, "/demo") + "/other", admin: w.admin, mint: w.mint, http: w.http}
	return w, other, rec
}

// pageTokenKey configures a page-token key held in the environment
// variable env.
func pageTokenKey(t *testing.T, env string, key byte) gwtest.Option {
	t.Setenv(env, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{key}, config.PageTokenKeyBytes)))
	return func(c *config.Config) { c.ListTasks.PageTokenKeyEnv = env }
}

// firstToken lists with page size 1 and returns the next page token.
func firstToken(t *testing.T, c *azClient, d azDialect) string {
	t.Helper()
	tok := azListPage(t, d, c.mustOK(t, d, c.w.listCall(t, d, 1, "", ""))).NextPageToken
	if tok == "" {
		t.Fatalf("%s %s: the first page of one task has no next page token", c, d.name)
	}
	return tok
}

// Every token the caller may not use is refused before the agent is
// asked, with the same answer whatever is wrong with it, so the answer
// tells nothing about the token, its owner or its agent.
func TestListTasksPageTokensAuthenticated(t *testing.T) {
	w, other, rec := newListWorld(t)
	alice := w.client("tenant-a", "alice")
	aliceAgain := w.client("tenant-a", "alice")
	carol := w.client("tenant-a", "carol")
	bob := w.client("tenant-b", "bob")
	aliceOther := other.client("tenant-a", "alice")
	for i := range 3 {
		alice.create(t, azRPC10, "complete "+strconv.Itoa(i))
	}
	gw1 := func(cursor string) string { return "gw1." + base64.RawURLEncoding.EncodeToString([]byte(cursor)) }
	agentToken := base64.RawURLEncoding.EncodeToString([]byte("after:2"))
	for _, d := range azListDialects {
		t.Run(d.name, func(t *testing.T) {
			valid := firstToken(t, alice, d)
			// The same caller (another token of hers) continues the list.
			if p := azListPage(t, d, aliceAgain.mustOK(t, d, w.listCall(t, d, 1, "", valid))); len(p.Tasks) != 1 {
				t.Errorf("a valid token: %d tasks, want 1", len(p.Tasks))
			}
			reference := w.listCall(t, d, 1, "", "garbage")
			ref := alice.unreached(t, reference)
			if !ref.is(d.binding, a2a.ErrInvalidParams) {
				t.Fatalf("pageToken garbage: want InvalidParams, got %s", ref)
			}
			same := func(name string, c *azClient, call azCall) {
				t.Helper()
				got := c.unreached(t, call)
				if got.status != ref.status || !bytes.Equal(normalized(got, call), normalized(ref, reference)) {
					t.Errorf("%s: answered\n  %s\nwant the same answer as for garbage:\n  %s", name, got, ref)
				}
			}
			for name, tok := range map[string]string{
				"old format":          gw1(`{"u":"forged"}`),
				"old format, offset":  gw1(`{"k":1}`),
				"agent's own token":   agentToken,
				"no body":             "gw2.",
				"not base64":          "gw2.!!!",
				"prefix only in case": "GW2." + strings.TrimPrefix(valid, "gw2."),
				"truncated":           valid[:len(valid)-1],
				"extended":            valid + "A",
			} {
				same(name, alice, w.listCall(t, d, 1, "", tok))
			}
			for i := range valid {
				c := byte('A')
				if valid[i] == c {
					c = 'B'
				}
				same("byte "+strconv.Itoa(i)+" changed", alice, w.listCall(t, d, 1, "", valid[:i]+string(c)+valid[i+1:]))
			}
			same("another subject of the tenant", carol, w.listCall(t, d, 1, "", valid))
			same("another tenant", bob, w.listCall(t, d, 1, "", valid))
			same("another agent", aliceOther, other.listCall(t, d, 1, "", valid))
		})
	}
	if f := rec.foreignTokens(); len(f) != 0 {
		t.Errorf("the agent received page tokens it never issued: %q", f)
	}
}

// A configured key makes tokens work on every replica that has it, and a
// changed key refuses the tokens of the old one; without a key each
// process has its own.
func TestListTasksPageTokenKeys(t *testing.T) {
	issuer := newAzWorld(t, authz.Policy{}, pageTokenKey(t, "A2AGW_TEST_PAGE_KEY_A", 1))
	alice := issuer.client("tenant-a", "alice")
	for i := range 2 {
		alice.create(t, azRPC10, "complete "+strconv.Itoa(i))
	}
	replica := newAzWorld(t, authz.Policy{}, pageTokenKey(t, "A2AGW_TEST_PAGE_KEY_A2", 1))
	rotated := newAzWorld(t, authz.Policy{}, pageTokenKey(t, "A2AGW_TEST_PAGE_KEY_B", 2))
	unkeyed := newAzWorld(t, authz.Policy{})
	unkeyedAgain := newAzWorld(t, authz.Policy{})
	for _, d := range azListDialects {
		t.Run(d.name, func(t *testing.T) {
			tok := firstToken(t, alice, d)
			replica.client("tenant-a", "alice").mustOK(t, d, replica.listCall(t, d, 1, "", tok))
			if r := rotated.client("tenant-a", "alice").unreached(t, rotated.listCall(t, d, 1, "", tok)); !r.is(d.binding, a2a.ErrInvalidParams) {
				t.Errorf("a token of the old key: want InvalidParams, got %s", r)
			}
			u := unkeyed.client("tenant-a", "alice")
			u.create(t, azRPC10, "complete one")
			u.create(t, azRPC10, "complete two")
			utok := firstToken(t, u, d)
			u.mustOK(t, d, unkeyed.listCall(t, d, 1, "", utok))
			if r := unkeyedAgain.client("tenant-a", "alice").unreached(t, unkeyedAgain.listCall(t, d, 1, "", utok)); !r.is(d.binding, a2a.ErrInvalidParams) {
				t.Errorf("another process's token without a configured key: want InvalidParams, got %s", r)
			}
		})
	}
}

func TestListTasksPageTokensExpire(t *testing.T) {
	w := newAzWorld(t, authz.Policy{}, func(c *config.Config) { c.ListTasks.PageTokenTTL = duration.Duration(time.Second) })
	alice := w.client("tenant-a", "alice")
	alice.create(t, azRPC10, "complete one")
	alice.create(t, azRPC10, "complete two")
	for _, d := range azListDialects {
		t.Run(d.name, func(t *testing.T) {
			call := w.listCall(t, d, 1, "", firstToken(t, alice, d))
			reference := w.listCall(t, d, 1, "", "garbage")
			ref := alice.unreached(t, reference)
			var last azReply
			eventually(t, "the page token expired", func() bool {
				last = alice.do(t, call)
				return !last.ok(d.binding)
			})
			if !last.is(d.binding, a2a.ErrInvalidParams) || last.status != ref.status || !bytes.Equal(normalized(last, call), normalized(ref, reference)) {
				t.Errorf("expired token answered\n  %s\nwant the answer to garbage:\n  %s", last, ref)
			}
		})
	}
}

// One ListTasks reads at most max_upstream_pages pages from the agent,
// however few of them are the caller's; the caller pages on and finds
// every task of its own once.
func TestListTasksUpstreamPagesBounded(t *testing.T) {
	const maxPages = 3
	w, _, rec := newListWorld(t, func(c *config.Config) { c.ListTasks.MaxUpstreamPages = maxPages })
	alice := w.client("tenant-a", "alice")
	bob := w.client("tenant-b", "bob")
	mine := []string{alice.create(t, azRPC10, "complete a").id}
	// The agent lists newest first: bob's tasks hide alice's first one
	// behind more pages than one call may read.
	for i := range 3 * maxPages {
		bob.create(t, azRPC10, "complete b"+strconv.Itoa(i))
	}
	mine = append(mine, alice.create(t, azRPC10, "complete a2").id)
	for _, d := range azListDialects {
		t.Run(d.name, func(t *testing.T) {
			var got []string
			token, calls := "", 0
			for range 100 {
				before := rec.calls()
				page := azListPage(t, d, alice.mustOK(t, d, w.listCall(t, d, 1, "", token)))
				n := rec.calls() - before
				if n < 1 || n > maxPages {
					t.Fatalf("one ListTasks made %d agent calls, want 1 to %d", n, maxPages)
				}
				calls++
				for _, tk := range page.Tasks {
					got = append(got, tk.ID)
				}
				if token = page.NextPageToken; token == "" {
					break
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(mine))) {
				t.Errorf("pages held %v, want each of %v once", got, mine)
			}
			if calls < 3 {
				t.Errorf("%d ListTasks calls read the whole list; the bound was never reached", calls)
			}
		})
	}
	if f := rec.foreignTokens(); len(f) != 0 {
		t.Errorf("the agent received page tokens it never issued: %q", f)
	}
}
