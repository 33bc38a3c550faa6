package lifecycle_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

const opsToken = "ops-token-0123456789abcdef"

// opsAPI serves a tracker's ops handler on loopback.
type opsAPI struct {
	*tracked
	url string
}

func startOps(t *testing.T, setups ...trackerSetup) *opsAPI {
	t.Helper()
	t.Setenv("LIFECYCLE_TEST_OPS_TOKEN", opsToken)
	setups = append([]trackerSetup{withConfig(func(o *config.LifecycleOptions) { o.OpsTokenEnv = "LIFECYCLE_TEST_OPS_TOKEN" })}, setups...)
	k := newTracked(t, memoryStore(t).Lifecycle(), setups...)
	srv := httptest.NewServer(k.tr.OpsHandler())
	t.Cleanup(srv.Close)
	return &opsAPI{tracked: k, url: srv.URL}
}

// call makes one ops request with token (none when empty) and decodes the
// JSON answer into out when it is not nil.
func (o *opsAPI) call(t *testing.T, method, path, token string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, o.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: content type %q", method, path, ct)
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

type taskJSON struct {
	TaskID     string `json:"task_id"`
	Tenant     string `json:"tenant"`
	State      string `json:"state"`
	LegalHold  bool   `json:"legal_hold"`
	Orphan     bool   `json:"orphan"`
	OverBudget bool   `json:"over_budget"`
	History    []struct {
		From, To string
	} `json:"history"`
}

type pageJSON struct {
	Tasks      []taskJSON `json:"tasks"`
	NextCursor string     `json:"next_cursor"`
}

func TestOpsAPIRefusesWithoutTheToken(t *testing.T) {
	o := startOps(t)
	for _, tt := range []struct{ name, token string }{{"no token", ""}, {"wrong token", "ops-token-0123456789abcdeX"}, {"prefix of the token", opsToken[:10]}} {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range []string{"/ops/tasks?agent=" + agentName, "/ops/counts", "/ops/tasks/" + agentName + "/x", "/ops/nothing"} {
				if code := o.call(t, http.MethodGet, p, tt.token, nil); code != http.StatusUnauthorized {
					t.Errorf("GET %s: HTTP %d, want 401", p, code)
				}
			}
		})
	}
	// Without a token configured, nothing gets in.
	closed := newTracked(t, memoryStore(t).Lifecycle())
	srv := httptest.NewServer(closed.tr.OpsHandler())
	t.Cleanup(srv.Close)
	for _, tok := range []string{"", opsToken, " "} {
		o2 := &opsAPI{tracked: closed, url: srv.URL}
		if code := o2.call(t, http.MethodGet, "/ops/counts", tok, nil); code != http.StatusUnauthorized {
			t.Errorf("no token configured, bearer %q: HTTP %d, want 401", tok, code)
		}
	}
}

func TestOpsAPI(t *testing.T) {
	o := startOps(t,
		withWatchdog(config.WatchdogOptions{Working: duration.Duration(time.Hour)}),
		func(o *lifecycle.Options) {
			o.Caller = lifecycle.CallerFunc(func(context.Context, string, a2a.Version, a2a.Method, any) ([]byte, error) {
				return nil, errors.New("no agent in this test")
			})
		},
		withConfig(func(c *config.LifecycleOptions) { c.OrphanAfter = duration.Duration(30 * time.Minute) }))
	now := time.Now()
	seed := []struct {
		id, tenant string
		states     []a2a.State
		ago        time.Duration
	}{
		{"w-old", "acme", []a2a.State{a2a.StateWorking}, 2 * time.Hour}, // an orphan, over budget
		{"w-new", "acme", []a2a.State{a2a.StateWorking}, time.Minute},
		{"i-1", "beta", []a2a.State{a2a.StateWorking, a2a.StateInputRequired}, 40 * time.Minute}, // an orphan
		{"c-1", "acme", []a2a.State{a2a.StateWorking, a2a.StateCompleted}, 3 * time.Hour},
		{"id/with slash", "beta", []a2a.State{a2a.StateSubmitted}, 5 * time.Minute},
	}
	for _, s := range seed {
		for i, st := range s.states {
			o.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: s.id, Tenant: s.tenant, State: st, At: now.Add(-s.ago).Add(time.Duration(i) * time.Second)})
		}
	}

	list := func(query string) []string {
		t.Helper()
		var ids []string
		cursor := ""
		for page := 0; ; page++ {
			var p pageJSON
			q := "/ops/tasks?agent=" + agentName + "&limit=2" + query + "&cursor=" + url.QueryEscape(cursor)
			if code := o.call(t, http.MethodGet, q, opsToken, &p); code != http.StatusOK {
				t.Fatalf("GET %s: HTTP %d", q, code)
			}
			for _, tk := range p.Tasks {
				ids = append(ids, tk.TaskID)
			}
			if p.NextCursor == "" {
				return ids
			}
			if page > 10 {
				t.Fatal("paging does not end")
			}
			cursor = p.NextCursor
		}
	}
	tests := []struct {
		query string
		want  []string // oldest activity first
	}{
		{"", []string{"c-1", "w-old", "i-1", "id/with slash", "w-new"}},
		{"&tenant=beta", []string{"i-1", "id/with slash"}},
		{"&state=working", []string{"w-old", "w-new"}},
		{"&state=TASK_STATE_WORKING", []string{"w-old", "w-new"}},
		{"&state=open", []string{"w-old", "i-1", "id/with slash", "w-new"}},
		{"&orphans=1", []string{"w-old", "i-1"}},
		{"&orphans=1&tenant=acme", []string{"w-old"}},
		{"&over_budget=1", []string{"w-old"}},
	}
	for _, tt := range tests {
		if got := list(tt.query); strconv.Quote(join(got)) != strconv.Quote(join(tt.want)) {
			t.Errorf("list%s = %v, want %v", tt.query, got, tt.want)
		}
	}
	for _, bad := range []string{"?agent=nope", "?agent=" + agentName + "&state=bogus", "?agent=" + agentName + "&limit=0",
		"?agent=" + agentName + "&limit=501", "?agent=" + agentName + "&cursor=garbage", "?agent=" + agentName + "&orphans=1&state=completed"} {
		if code := o.call(t, http.MethodGet, "/ops/tasks"+bad, opsToken, nil); code != http.StatusBadRequest {
			t.Errorf("GET /ops/tasks%s: HTTP %d, want 400", bad, code)
		}
	}

	var one taskJSON
	if code := o.call(t, http.MethodGet, "/ops/tasks/"+agentName+"/i-1", opsToken, &one); code != http.StatusOK {
		t.Fatalf("GET one: HTTP %d", code)
	}
	if one.State != "input-required" || !one.Orphan || len(one.History) != 2 || one.History[1].To != "input-required" {
		t.Errorf("GET one = %+v", one)
	}
	if code := o.call(t, http.MethodGet, "/ops/tasks/"+agentName+"/"+url.PathEscape("id/with slash"), opsToken, &one); code != http.StatusOK || one.TaskID != "id/with slash" {
		t.Errorf("GET an id with a slash: HTTP %d, %+v", code, one)
	}
	for _, p := range []string{"/ops/tasks/" + agentName + "/missing", "/ops/tasks/nope/i-1"} {
		if code := o.call(t, http.MethodGet, p, opsToken, nil); code != http.StatusNotFound {
			t.Errorf("GET %s: HTTP %d, want 404", p, code)
		}
	}

	var c struct {
		Counts map[string]map[string]int `json:"counts"`
	}
	if code := o.call(t, http.MethodGet, "/ops/counts?agent="+agentName, opsToken, &c); code != http.StatusOK {
		t.Fatalf("counts: HTTP %d", code)
	}
	want := map[string]int{"working": 2, "input-required": 1, "completed": 1, "submitted": 1, "failed": 0}
	for s, n := range want {
		if c.Counts[agentName][s] != n {
			t.Errorf("count of %s = %d, want %d (all: %v)", s, c.Counts[agentName][s], n, c.Counts)
		}
	}

	// Legal hold on, then off.
	holdPath := "/ops/tasks/" + agentName + "/c-1/hold"
	if code := o.call(t, http.MethodPut, holdPath, opsToken, &one); code != http.StatusOK || !one.LegalHold {
		t.Errorf("PUT hold: HTTP %d, %+v", code, one)
	}
	if !getRecord(t, o.st, "c-1").LegalHold {
		t.Error("hold not stored")
	}
	if code := o.call(t, http.MethodDelete, holdPath, opsToken, &one); code != http.StatusOK || one.LegalHold {
		t.Errorf("DELETE hold: HTTP %d, %+v", code, one)
	}
	if code := o.call(t, http.MethodPut, "/ops/tasks/"+agentName+"/missing/hold", opsToken, nil); code != http.StatusNotFound {
		t.Errorf("PUT hold of a missing record: HTTP %d, want 404", code)
	}
}

func join(ids []string) string {
	out := ""
	for _, id := range ids {
		out += id + "|"
	}
	return out
}

func TestRetentionSparesLegalHolds(t *testing.T) {
	o := startOps(t, withConfig(func(c *config.LifecycleOptions) {
		c.RecordRetention = duration.Duration(time.Hour)
		c.TenantRetention = map[string]duration.Duration{"short": duration.Duration(time.Minute), "long": duration.Duration(10 * time.Hour)}
	}))
	now := time.Now()
	for _, s := range []struct {
		id, tenant string
		ago        time.Duration
	}{
		{"acme-old", "acme", 2 * time.Hour},
		{"acme-new", "acme", 30 * time.Minute},
		{"acme-held", "acme", 2 * time.Hour},
		{"short-old", "short", 2 * time.Minute},
		{"long-old", "long", 2 * time.Hour},
	} {
		o.record(t, lifecycle.TaskEvent{Agent: agentName, TaskID: s.id, Tenant: s.tenant, State: a2a.StateCompleted, At: now.Add(-s.ago)})
	}
	if code := o.call(t, http.MethodPut, "/ops/tasks/"+agentName+"/acme-held/hold", opsToken, nil); code != http.StatusOK {
		t.Fatalf("PUT hold: HTTP %d", code)
	}
	o.sweep(t)
	kept := map[string]bool{"acme-old": false, "acme-new": true, "acme-held": true, "short-old": false, "long-old": true}
	for id, want := range kept {
		_, found, err := o.st.Get(context.Background(), agentName, id)
		if err != nil || found != want {
			t.Errorf("%s kept = %v (err %v), want %v", id, found, err, want)
		}
	}
	if code := o.call(t, http.MethodDelete, "/ops/tasks/"+agentName+"/acme-held/hold", opsToken, nil); code != http.StatusOK {
		t.Fatalf("DELETE hold: HTTP %d", code)
	}
	o.sweep(t)
	if _, found, _ := o.st.Get(context.Background(), agentName, "acme-held"); found {
		t.Error("a record past retention survived once its hold was cleared")
	}
}
