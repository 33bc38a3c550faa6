package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

// The helpers of the lifecycle tests carry an "lc" prefix: other test
// files of this package define their own.

const lcOpsToken = "lifecycle-test-ops-token-0123456789"

// lcStart starts a gateway whose demo agent has a watchdog that cancels any
// task working longer than a millisecond, sweeping only when a test says
// so (the interval is an hour), with an ops token and an unreachable
// second agent "down".
func lcStart(t *testing.T) *gwtest.Env {
	t.Helper()
	t.Setenv("A2AGW_LIFECYCLE_TEST_OPS_TOKEN", lcOpsToken)
	return gwtest.Start(t, func(cfg *config.Config) {
		cfg.Lifecycle.SweepInterval = duration.Duration(time.Hour)
		cfg.Lifecycle.OrphanAfter = duration.Duration(time.Second)
		cfg.Lifecycle.OpsTokenEnv = "A2AGW_LIFECYCLE_TEST_OPS_TOKEN"
		cfg.Agents[0].Watchdog = config.WatchdogOptions{Working: duration.Duration(time.Millisecond), Action: config.WatchdogCancel}
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "down", URL: "http://127.0.0.1:1"})
	})
}

func lcFlush(t *testing.T, env *gwtest.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := env.GW.Lifecycle().Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func lcSweep(t *testing.T, env *gwtest.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := env.GW.Lifecycle().Sweep(ctx); err != nil {
		t.Fatal(err)
	}
}

// lcStream sends a 1.0 streaming message and reads events until stop says
// so or the stream ends; the stream is then closed.
func lcStream(t *testing.T, c *caller, msg string, stop func(a2a.Event) bool) []a2a.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := c.open(t, ctx, request{method: http.MethodPost, path: "/", header: v10(), rpc: true,
		body: rpcBody(a2a.MethodStream, a2a.V10, c.nextID("lc"), `{"message":`+msg+`}`)})
	defer s.close()
	var out []a2a.Event
	for {
		ev, err := s.next(t)
		if err != nil {
			return out
		}
		if ev.Kind == a2a.EventError {
			t.Fatalf("stream answered an error: %+v", ev)
		}
		out = append(out, ev)
		if stop != nil && stop(ev) {
			return out
		}
	}
}

// lcMessage is a 1.0 message; ref names the task and context it answers.
func lcMessage(c *caller, text string, ref *a2a.Event, metadata string) string {
	m := `{"messageId":"` + c.nextID("m") + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]`
	if ref != nil {
		m += `,"taskId":"` + ref.TaskID + `","contextId":"` + ref.ContextID + `"`
	}
	if metadata != "" {
		m += `,"metadata":` + metadata
	}
	return m + `}`
}

// lcRecord reads a task's record through the ops API, as an operator
// would, failing the test when there is none.
func lcRecord(t *testing.T, env *gwtest.Env, taskID string) store.TaskLifecycle {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, env.Admin+"/ops/tasks/demo/"+taskID, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+lcOpsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Tenant, Subject, State, Version string
		ContextID                       string    `json:"context_id"`
		StateSince                      time.Time `json:"state_since"`
		Subscribers                     int
		EndedBy                         string `json:"ended_by"`
		History                         []struct{ From, To string }
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("record of %s: HTTP %d", taskID, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	rec := store.TaskLifecycle{Agent: "demo", TaskID: taskID, Tenant: v.Tenant, Subject: v.Subject, State: v.State,
		Version: v.Version, ContextID: v.ContextID, StateSince: v.StateSince, Subscribers: v.Subscribers, EndedBy: v.EndedBy}
	for _, h := range v.History {
		rec.History = append(rec.History, store.TaskTransition{From: h.From, To: h.To})
	}
	return rec
}

func lcPath(rec store.TaskLifecycle) string {
	if len(rec.History) == 0 {
		return ""
	}
	parts := []string{rec.History[0].From}
	for _, h := range rec.History {
		parts = append(parts, h.To)
	}
	return strings.Join(parts, ">")
}

// lcValue sums the samples of name with labels ("k=v"); histograms count
// their observations.
func lcValue(mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	mf := mfs[name]
	if mf == nil {
		return 0
	}
	sum := 0.0
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		match := true
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// lcScenario drives one demo scenario through the gateway and returns the
// task it created.
type lcScenario struct {
	name    string
	run     func(t *testing.T, env *gwtest.Env, c *caller) string
	path    string
	endedBy string
	// extra are metric deltas beyond the transitions of path.
	extra map[string]float64
}

func isState(s a2a.State) func(a2a.Event) bool {
	return func(ev a2a.Event) bool { return ev.State == s }
}

var lcScenarios = []lcScenario{
	{
		name: "complete",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			return lcStream(t, c, lcMessage(c, "complete hello", nil, ""), nil)[0].TaskID
		},
		path: "unknown>submitted>working>completed", endedBy: store.EndedByAgent,
		extra: map[string]float64{"lifetime/completed": 1, "left/submitted": 1, "left/working": 1},
	},
	{
		name: "input then resume",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			evs := lcStream(t, c, lcMessage(c, "input", nil, ""), nil)
			last := evs[len(evs)-1]
			if last.State != a2a.StateInputRequired {
				t.Fatalf("want input-required, got %+v", last)
			}
			lcStream(t, c, lcMessage(c, "42", &evs[0], ""), nil)
			return evs[0].TaskID
		},
		path: "unknown>submitted>working>input-required>working>completed", endedBy: store.EndedByAgent,
		extra: map[string]float64{
			"interruptions/input-required": 1, "resumes/input-required/resumed": 1, "left/input-required": 1, "lifetime/completed": 1,
		},
	},
	{
		name: "auth then resume",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			evs := lcStream(t, c, lcMessage(c, "auth", nil, ""), nil)
			if last := evs[len(evs)-1]; last.State != a2a.StateAuthRequired {
				t.Fatalf("want auth-required, got %+v", last)
			}
			lcStream(t, c, lcMessage(c, "here", &evs[0], `{"a2a-gateway/credential":"Bearer demo-credential"}`), nil)
			return evs[0].TaskID
		},
		path: "unknown>submitted>working>auth-required>working>completed", endedBy: store.EndedByAgent,
		extra: map[string]float64{
			"interruptions/auth-required": 1, "resumes/auth-required/resumed": 1, "lifetime/completed": 1,
		},
	},
	{
		name: "fail",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			return lcStream(t, c, lcMessage(c, "fail", nil, ""), nil)[0].TaskID
		},
		path: "unknown>submitted>working>failed", endedBy: store.EndedByAgent,
		extra: map[string]float64{"lifetime/failed": 1},
	},
	{
		name: "reject",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			return lcStream(t, c, lcMessage(c, "reject", nil, ""), nil)[0].TaskID
		},
		path: "unknown>submitted>rejected", endedBy: store.EndedByAgent,
		extra: map[string]float64{"lifetime/rejected": 1},
	},
	{
		name: "cancel of a wait task",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			evs := lcStream(t, c, lcMessage(c, "wait", nil, ""), isState(a2a.StateWorking))
			id := evs[0].TaskID
			resp, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(),
				body: rpcBody(a2a.MethodCancelTask, a2a.V10, c.nextID("lc"), `{"id":"`+id+`"}`)})
			if ev, err := a2a.ParseRPCEvent(b); resp.StatusCode != http.StatusOK || err != nil || ev.State != a2a.StateCanceled {
				t.Fatalf("cancel: HTTP %d %v: %s", resp.StatusCode, err, b)
			}
			return id
		},
		path: "unknown>submitted>working>canceled", endedBy: store.EndedByCancel,
		extra: map[string]float64{"lifetime/canceled": 1},
	},
	{
		name: "never, until the watchdog cancels it",
		run: func(t *testing.T, env *gwtest.Env, c *caller) string {
			working := 0
			evs := lcStream(t, c, lcMessage(c, "never", nil, ""), func(ev a2a.Event) bool {
				if ev.State == a2a.StateWorking {
					working++
				}
				return working == 2
			})
			id := evs[0].TaskID
			lcFlush(t, env)
			if rec := lcRecord(t, env, id); rec.State != "working" {
				t.Fatalf("before the sweep: %s", lcPath(rec))
			}
			before := len(env.Agent.Requests())
			eventually(t, "the task is over its millisecond budget", func() bool {
				return time.Since(lcRecord(t, env, id).StateSince) > time.Millisecond
			})
			lcSweep(t, env)
			canceled := 0
			for _, r := range env.Agent.Requests()[before:] {
				if r.Op.Method == a2a.MethodCancelTask && r.Op.TaskID == id {
					canceled++
				}
			}
			if canceled != 1 {
				t.Errorf("the agent saw %d CancelTask calls for the task, want 1", canceled)
			}
			return id
		},
		path: "unknown>submitted>working>canceled", endedBy: store.EndedByWatchdog,
		// Two events repeat working: the agent's second update and the
		// watchdog's re-read before it acts.
		extra: map[string]float64{"lifetime/canceled": 1, "watchdog/cancel/working": 1, "duplicate": 2},
	},
}

// lcRunScenarios runs every scenario as a subtest, checking the record's
// history and the metric deltas read back from the admin /metrics.
func lcRunScenarios(t *testing.T, env *gwtest.Env) map[string]string {
	t.Helper()
	c := newCaller(t, env)
	tasks := map[string]string{}
	for _, sc := range lcScenarios {
		t.Run(sc.name, func(t *testing.T) {
			before := scrape(t, env.Admin)
			id := sc.run(t, env, c)
			tasks[sc.name] = id
			lcFlush(t, env)
			rec := lcRecord(t, env, id)
			if got := lcPath(rec); got != sc.path {
				t.Errorf("history = %s, want %s", got, sc.path)
			}
			if rec.EndedBy != sc.endedBy || rec.Tenant != "acme" || rec.Subject != "alice" || rec.Version != "1.0" || rec.ContextID == "" {
				t.Errorf("record = %+v", rec)
			}
			eventually(t, "the streams on the task are counted closed", func() bool {
				lcFlush(t, env)
				return lcRecord(t, env, id).Subscribers == 0
			})
			after := scrape(t, env.Admin)
			want := map[string]float64{}
			states := strings.Split(sc.path, ">")
			for i := 1; i < len(states); i++ {
				want["transitions/"+states[i-1]+"/"+states[i]]++
			}
			for k, v := range sc.extra {
				want[k] += v
			}
			for series, w := range want {
				if got := lcDelta(before, after, series); got != w {
					t.Errorf("%s grew by %v, want %v", series, got, w)
				}
			}
		})
	}
	return tasks
}

// lcDelta is how much a series grew between two scrapes.
func lcDelta(before, after map[string]*dto.MetricFamily, series string) float64 {
	parts := strings.Split(series, "/")
	a := "agent=demo"
	var name string
	var labels []string
	switch parts[0] {
	case "transitions":
		name, labels = "a2agw_task_transitions_total", []string{a, "from=" + parts[1], "to=" + parts[2]}
	case "lifetime":
		name, labels = "a2agw_task_lifetime_seconds", []string{a, "state=" + parts[1]}
	case "left":
		name, labels = "a2agw_task_state_duration_seconds", []string{a, "state=" + parts[1]}
	case "interruptions":
		name, labels = "a2agw_task_interruptions_total", []string{a, "reason=" + parts[1]}
	case "resumes":
		name, labels = "a2agw_task_resumes_total", []string{a, "reason=" + parts[1], "outcome=" + parts[2]}
	case "watchdog":
		name, labels = "a2agw_watchdog_actions_total", []string{a, "action=" + parts[1], "state=" + parts[2]}
	case "duplicate":
		name, labels = "a2agw_task_events_duplicate_total", []string{a}
	default:
		panic("unknown series " + series)
	}
	return lcValue(after, name, labels...) - lcValue(before, name, labels...)
}

func TestLifecycleOfDemoScenarios(t *testing.T) {
	env := lcStart(t)
	lcRunScenarios(t, env)
}

func TestLifecycleGuardInThePipeline(t *testing.T) {
	env := lcStart(t)
	c := newCaller(t, env)
	done := lcStream(t, c, lcMessage(c, "complete hi", nil, ""), nil)[0]
	lcFlush(t, env)
	before := len(env.Agent.Requests())
	for _, tt := range []struct {
		m      a2a.Method
		params string
		code   int
	}{
		{a2a.MethodSend, `{"message":` + lcMessage(c, "more", &done, "") + `}`, a2a.ErrUnsupportedOperation.Code},
		{a2a.MethodCancelTask, `{"id":"` + done.TaskID + `"}`, a2a.ErrTaskNotCancelable.Code},
	} {
		_, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(tt.m, a2a.V10, c.nextID("lc"), tt.params)})
		if ev, err := a2a.ParseRPCEvent(b); err != nil || ev.ErrorCode != tt.code {
			t.Errorf("%s: %s, want error %d", tt.m, b, tt.code)
		}
	}
	if n := len(env.Agent.Requests()) - before; n != 0 {
		t.Errorf("the agent received %d refused requests", n)
	}
	// The ops API is on the admin listener, behind its token.
	for _, tt := range []struct {
		token string
		want  int
	}{{"", http.StatusUnauthorized}, {"wrong-token-0123456789", http.StatusUnauthorized}, {lcOpsToken, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodGet, env.Admin+"/ops/counts?agent=demo", nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("ops API with token %q: HTTP %d, want %d", tt.token, resp.StatusCode, tt.want)
		}
	}
	if resp, _ := env.Do(t, http.MethodGet, env.Gateway+"/ops/counts", "", "", nil); resp.StatusCode == http.StatusOK {
		t.Error("the ops API answers on the public listener")
	}
}

// Every a2agw_* metric the dashboard and the alert rules use must exist in
// a scrape once the scenarios ran: a renamed metric cannot silently leave a
// panel empty or an alert dead.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	root := filepath.Join("..", "..", "deploy")
	dashboards, _ := filepath.Glob(filepath.Join(root, "grafana", "*.json"))
	rules, _ := filepath.Glob(filepath.Join(root, "prometheus", "*.yaml"))
	if len(dashboards) == 0 || len(rules) == 0 {
		t.Fatalf("found dashboards %v and rules %v", dashboards, rules)
	}
	var exprs []string
	for _, f := range dashboards {
		exprs = append(exprs, lcDashboardExprs(t, f)...)
	}
	for _, f := range rules {
		exprs = append(exprs, lcRuleExprs(t, f)...)
	}

	env := lcStart(t)
	tasks := lcRunScenarios(t, env)
	c := newCaller(t, env)
	// An authorization denial: another tenant asks for acme's task.
	other := env.Token(t, "globex", "bob")
	_, b := c.do(t, request{method: http.MethodPost, path: "/", header: header("Authorization", "Bearer "+other, a2a.VersionHeader, "1.0"),
		body: rpcBody(a2a.MethodGetTask, a2a.V10, c.nextID("lc"), `{"id":"`+tasks["complete"]+`"}`)})
	if ev, _ := a2a.ParseRPCEvent(b); ev.Kind != a2a.EventError {
		t.Fatalf("another tenant read the task: %s", b)
	}
	// An upstream error: the agent "down" cannot be reached.
	c.do(t, request{method: http.MethodPost, path: env.Gateway + "/agents/down/", header: v10(),
		body: rpcBody(a2a.MethodSend, a2a.V10, c.nextID("lc"), `{"message":`+lcMessage(c, "hi", nil, "")+`}`)})
	// A late event, as a push notification could bring.
	if err := env.GW.Lifecycle().Record(context.Background(), lifecycle.TaskEvent{Agent: "demo", TaskID: tasks["complete"], State: a2a.StateWorking}); err != nil {
		t.Fatal(err)
	}
	// An orphan: a task that goes silent for longer than orphan_after. It
	// waits for input, which has no watchdog budget here: a working one
	// would be canceled by the watchdog (working: 1ms) and never orphaned.
	orphan := lcStream(t, c, lcMessage(c, "input", nil, ""), isState(a2a.StateInputRequired))[0].TaskID
	lcFlush(t, env)
	lcSweep(t, env)
	eventually(t, "the task is orphaned", func() bool {
		return time.Since(lcRecord(t, env, orphan).StateSince) > 2*time.Second
	})
	// The background sweep may hold the sweep lease when this one runs, so
	// the detection is waited for, not assumed after one sweep.
	var mfs map[string]*dto.MetricFamily
	eventually(t, "the orphan is detected", func() bool {
		lcSweep(t, env)
		lcFlush(t, env)
		mfs = scrape(t, env.Admin)
		return lcValue(mfs, "a2agw_task_orphans_detected_total", "agent=demo") >= 1
	})
	names := map[string]bool{}
	for _, e := range exprs {
		for _, n := range regexp.MustCompile(`a2agw_[a-z0-9_]+`).FindAllString(e, -1) {
			names[n] = true
		}
	}
	var missing []string
	for n := range names {
		if !lcExported(mfs, n) {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("used by the dashboard or alerts but not in the scrape: %v", missing)
	}
	for _, n := range []string{"a2agw_task_state_duration_seconds_bucket", "a2agw_task_resumes_total", "a2agw_task_orphans", "a2agw_requests_total"} {
		if !names[n] {
			t.Errorf("the dashboard and alerts never use %s", n)
		}
	}
}

// lcExported reports whether name is in the scrape, histogram series
// (_bucket, _sum, _count) included.
func lcExported(mfs map[string]*dto.MetricFamily, name string) bool {
	if mf := mfs[name]; mf != nil && len(mf.GetMetric()) > 0 {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if mf := mfs[base]; mf != nil && mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.GetMetric()) > 0 {
				return true
			}
		}
	}
	return false
}

// lcDashboardExprs checks that file is an importable dashboard model and
// returns the expressions of its panels' targets.
func lcDashboardExprs(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Inputs []struct {
			Name, Type, PluginID string
		} `json:"__inputs"`
		SchemaVersion int `json:"schemaVersion"`
		Title         string
		Panels        []struct {
			Type       string
			Title      string
			Datasource struct{ UID string }
			Targets    []struct {
				Expr       string
				Datasource struct{ UID string }
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if d.SchemaVersion != 39 || d.Title == "" || len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("%s: schemaVersion %d, inputs %+v", file, d.SchemaVersion, d.Inputs)
	}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("%s: panel %q has no targets or another datasource", file, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("%s: panel %q has a target without an expression or datasource", file, p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

// lcRuleExprs checks that file is a Prometheus rule file and returns its
// expressions.
func lcRuleExprs(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var exprs []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: rule %q lacks a name, expression, severity or summary", file, r.Alert)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: rule %q: for %q", file, r.Alert, r.For)
				}
			}
			exprs = append(exprs, r.Expr)
		}
	}
	return exprs
}
