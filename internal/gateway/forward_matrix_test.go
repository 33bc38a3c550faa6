package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// fixture is what a case needs to exist before it runs.
type fixture int

const (
	noFixture   fixture = iota
	taskFixture         // a task that works until canceled
	pushFixture         // such a task with the push config "cfg-1"
)

// fixtureConfig is the id of the push config of pushFixture.
const fixtureConfig = "cfg-1"

// answer is how the caller reads the agent's answer.
type answer int

const (
	unary     answer = iota
	toEnd            // a stream read to its end
	firstOnly        // a subscription: the first event, then the caller leaves
)

// fwdCase is one operation in one version and binding.
type fwdCase struct {
	name    string
	method  a2a.Method
	fixture fixture
	answer  answer
	// request builds the call; task is the fixture's task id.
	request func(c *caller, task, sink string) request
	// check inspects a unary answer's body, or the stream's events.
	check func(t *testing.T, task, sink string, body []byte, events []a2a.Event)
}

// The checks shared by the dialects.
func wantTaskIn(state a2a.State) func(*testing.T, string, string, []byte, []a2a.Event) {
	return func(t *testing.T, task, _ string, body []byte, events []a2a.Event) {
		t.Helper()
		ev := unaryEvent(t, body, events)
		if ev.Kind != a2a.EventTask || ev.State != state || (task != "" && ev.TaskID != task) {
			t.Fatalf("want task %q in %s, got %+v: %s", task, state, ev, body)
		}
	}
}

func wantContains(s string) func(*testing.T, string, string, []byte, []a2a.Event) {
	return func(t *testing.T, task, sink string, body []byte, events []a2a.Event) {
		t.Helper()
		want := strings.NewReplacer("{task}", task, "{sink}", sink).Replace(s)
		if ev := unaryEvent(t, body, events); ev.Kind == a2a.EventError || !bytes.Contains(body, []byte(want)) {
			t.Fatalf("want an answer naming %q, got %+v: %s", want, ev, body)
		}
	}
}

func wantNoError(t *testing.T, _, _ string, body []byte, events []a2a.Event) {
	t.Helper()
	if len(body) == 0 {
		return // 204: nothing to read
	}
	if ev := unaryEvent(t, body, events); ev.Kind == a2a.EventError {
		t.Fatalf("error answer: %s", body)
	}
}

// wantStream checks a stream that opens with first and ends completed.
func wantStream(first a2a.EventKind) func(*testing.T, string, string, []byte, []a2a.Event) {
	return func(t *testing.T, _, _ string, _ []byte, events []a2a.Event) {
		t.Helper()
		if len(events) < 2 || events[0].Kind != first {
			t.Fatalf("stream %+v does not open with a %s", events, first)
		}
		if last := events[len(events)-1]; last.Kind != a2a.EventStatusUpdate || last.State != a2a.StateCompleted {
			t.Fatalf("stream %+v does not end completed", events)
		}
	}
}

// wantSubscription checks that a subscription opens with the current task.
func wantSubscription(t *testing.T, task, _ string, _ []byte, events []a2a.Event) {
	t.Helper()
	if len(events) != 1 || events[0].Kind != a2a.EventTask || events[0].TaskID != task {
		t.Fatalf("subscription opens with %+v, want task %s", events, task)
	}
}

// unaryEvent is the parsed unary answer, which run put in events[0].
func unaryEvent(t *testing.T, body []byte, events []a2a.Event) a2a.Event {
	t.Helper()
	if len(events) != 1 {
		t.Fatalf("no readable answer: %s", body)
	}
	return events[0]
}

func rpcCase(name string, m a2a.Method, v a2a.Version, fx fixture, ans answer, params func(c *caller, task, sink string) string,
	check func(*testing.T, string, string, []byte, []a2a.Event)) fwdCase {
	var header http.Header
	if v == a2a.V10 {
		header = v10()
	}
	return fwdCase{name: name, method: m, fixture: fx, answer: ans, check: check,
		request: func(c *caller, task, sink string) request {
			return request{method: http.MethodPost, path: "/", header: header, rpc: true,
				body: rpcBody(m, v, c.nextID("req"), params(c, task, sink))}
		}}
}

func restCase(name string, m a2a.Method, v a2a.Version, httpMethod string, fx fixture, ans answer, query string,
	body func(c *caller, task, sink string) string, check func(*testing.T, string, string, []byte, []a2a.Event)) fwdCase {
	var header http.Header
	if v == a2a.V10 {
		header = v10()
	}
	return fwdCase{name: name, method: m, fixture: fx, answer: ans, check: check,
		request: func(c *caller, task, sink string) request {
			_, path := a2a.RESTPath(m, v, task, fixtureConfig)
			if m == a2a.MethodPushConfigSet {
				_, path = a2a.RESTPath(m, v, task, "")
			}
			rq := request{method: httpMethod, path: path + query, header: header}
			if body != nil {
				rq.body = []byte(body(c, task, sink))
			}
			return rq
		}}
}

func fixed(s string) func(*caller, string, string) string {
	return func(*caller, string, string) string { return s }
}

func withTask(format string) func(*caller, string, string) string {
	return func(_ *caller, task, sink string) string {
		return strings.NewReplacer("{task}", task, "{sink}", sink, "{cfg}", fixtureConfig).Replace(format)
	}
}

func v10Cases() []fwdCase {
	v := a2a.V10
	send := func(text string) func(*caller, string, string) string {
		return func(c *caller, _, _ string) string { return `{"message":` + c.msg10(text) + `,` + future + `}` }
	}
	rpc := []fwdCase{
		rpcCase("send", a2a.MethodSend, v, noFixture, unary, send("complete"), wantTaskIn(a2a.StateCompleted)),
		rpcCase("stream", a2a.MethodStream, v, noFixture, toEnd, send("complete"), wantStream(a2a.EventTask)),
		rpcCase("get", a2a.MethodGetTask, v, taskFixture, unary, withTask(`{"id":"{task}","historyLength":0}`), wantTaskIn(a2a.StateWorking)),
		rpcCase("list", a2a.MethodListTasks, v, taskFixture, unary, fixed(`{"pageSize":100,`+future+`}`), wantContains(`"id":"{task}"`)),
		rpcCase("cancel", a2a.MethodCancelTask, v, taskFixture, unary, withTask(`{"id":"{task}"}`), wantTaskIn(a2a.StateCanceled)),
		rpcCase("subscribe", a2a.MethodSubscribe, v, taskFixture, firstOnly, withTask(`{"id":"{task}"}`), wantSubscription),
		rpcCase("push config create", a2a.MethodPushConfigSet, v, taskFixture, unary,
			withTask(`{"taskId":"{task}","id":"cfg-new","url":"{sink}","token":"tok"}`), wantContains(`{sink}`)),
		rpcCase("push config get", a2a.MethodPushConfigGet, v, pushFixture, unary, withTask(`{"taskId":"{task}","id":"{cfg}"}`), wantContains(`{sink}`)),
		rpcCase("push config list", a2a.MethodPushConfigList, v, pushFixture, unary, withTask(`{"taskId":"{task}"}`), wantContains(`{sink}`)),
		rpcCase("push config delete", a2a.MethodPushConfigDelete, v, pushFixture, unary, withTask(`{"taskId":"{task}","id":"{cfg}"}`), wantNoError),
		rpcCase("extended card", a2a.MethodExtendedCard, v, noFixture, unary, fixed(`{}`), wantContains(`"skills"`)),
	}
	post, get := http.MethodPost, http.MethodGet
	rest := []fwdCase{
		restCase("send", a2a.MethodSend, v, post, noFixture, unary, "", send("complete"), wantTaskIn(a2a.StateCompleted)),
		restCase("stream", a2a.MethodStream, v, post, noFixture, toEnd, "", send("complete"), wantStream(a2a.EventTask)),
		restCase("get", a2a.MethodGetTask, v, get, taskFixture, unary, "?historyLength=0", nil, wantTaskIn(a2a.StateWorking)),
		restCase("list", a2a.MethodListTasks, v, get, taskFixture, unary, "?pageSize=100", nil, wantContains(`"id":"{task}"`)),
		restCase("cancel", a2a.MethodCancelTask, v, post, taskFixture, unary, "", nil, wantTaskIn(a2a.StateCanceled)),
		restCase("subscribe GET", a2a.MethodSubscribe, v, get, taskFixture, firstOnly, "", nil, wantSubscription),
		restCase("subscribe POST", a2a.MethodSubscribe, v, post, taskFixture, firstOnly, "", nil, wantSubscription),
		restCase("push config create", a2a.MethodPushConfigSet, v, post, taskFixture, unary, "",
			withTask(`{"id":"cfg-new","url":"{sink}","token":"tok"}`), wantContains(`{sink}`)),
		restCase("push config get", a2a.MethodPushConfigGet, v, get, pushFixture, unary, "", nil, wantContains(`{sink}`)),
		restCase("push config list", a2a.MethodPushConfigList, v, get, pushFixture, unary, "", nil, wantContains(`{sink}`)),
		restCase("push config delete", a2a.MethodPushConfigDelete, v, http.MethodDelete, pushFixture, unary, "", nil, wantNoError),
		restCase("extended card", a2a.MethodExtendedCard, v, get, noFixture, unary, "", nil, wantContains(`"skills"`)),
	}
	return append(prefixed("jsonrpc 1.0/", rpc), prefixed("rest 1.0/", rest)...)
}

func v03Cases() []fwdCase {
	v := a2a.V03
	rpcSend := func(text string) func(*caller, string, string) string {
		return func(c *caller, _, _ string) string {
			return `{"message":` + c.msg03(text) + `,"configuration":{"blocking":true},` + future + `}`
		}
	}
	rpc := []fwdCase{
		rpcCase("send", a2a.MethodSend, v, noFixture, unary, rpcSend("complete"), wantTaskIn(a2a.StateCompleted)),
		rpcCase("stream", a2a.MethodStream, v, noFixture, toEnd, rpcSend("complete"), wantStream(a2a.EventTask)),
		rpcCase("get", a2a.MethodGetTask, v, taskFixture, unary, withTask(`{"id":"{task}"}`), wantTaskIn(a2a.StateWorking)),
		rpcCase("cancel", a2a.MethodCancelTask, v, taskFixture, unary, withTask(`{"id":"{task}"}`), wantTaskIn(a2a.StateCanceled)),
		rpcCase("resubscribe", a2a.MethodSubscribe, v, taskFixture, firstOnly, withTask(`{"id":"{task}"}`), wantSubscription),
		rpcCase("push config set", a2a.MethodPushConfigSet, v, taskFixture, unary,
			withTask(`{"taskId":"{task}","pushNotificationConfig":{"id":"cfg-new","url":"{sink}","token":"tok"}}`), wantContains(`{sink}`)),
		rpcCase("push config get", a2a.MethodPushConfigGet, v, pushFixture, unary, withTask(`{"id":"{task}","pushNotificationConfigId":"{cfg}"}`), wantContains(`{sink}`)),
		rpcCase("push config list", a2a.MethodPushConfigList, v, pushFixture, unary, withTask(`{"id":"{task}"}`), wantContains(`{sink}`)),
		rpcCase("push config delete", a2a.MethodPushConfigDelete, v, pushFixture, unary, withTask(`{"id":"{task}","pushNotificationConfigId":"{cfg}"}`), wantNoError),
		rpcCase("extended card", a2a.MethodExtendedCard, v, noFixture, unary, fixed(`{}`), wantContains(`"skills"`)),
	}
	restSend := func(text string) func(*caller, string, string) string {
		return func(c *caller, _, _ string) string {
			return `{"message":` + c.proto03(text) + `,"configuration":{"blocking":true},` + future + `}`
		}
	}
	post, get := http.MethodPost, http.MethodGet
	rest := []fwdCase{
		restCase("send", a2a.MethodSend, v, post, noFixture, unary, "", restSend("complete"), wantTaskIn(a2a.StateCompleted)),
		restCase("stream", a2a.MethodStream, v, post, noFixture, toEnd, "", restSend("complete"), wantStream(a2a.EventTask)),
		restCase("get", a2a.MethodGetTask, v, get, taskFixture, unary, "", nil, wantTaskIn(a2a.StateWorking)),
		restCase("cancel", a2a.MethodCancelTask, v, post, taskFixture, unary, "", nil, wantTaskIn(a2a.StateCanceled)),
		restCase("subscribe GET", a2a.MethodSubscribe, v, get, taskFixture, firstOnly, "", nil, wantSubscription),
		restCase("subscribe POST", a2a.MethodSubscribe, v, post, taskFixture, firstOnly, "", nil, wantSubscription),
		restCase("push config create", a2a.MethodPushConfigSet, v, post, taskFixture, unary, "",
			withTask(`{"name":"tasks/{task}/pushNotificationConfigs/cfg-new","pushNotificationConfig":{"id":"cfg-new","url":"{sink}"}}`), wantContains(`{sink}`)),
		restCase("push config get", a2a.MethodPushConfigGet, v, get, pushFixture, unary, "", nil, wantContains(`{sink}`)),
		restCase("push config list", a2a.MethodPushConfigList, v, get, pushFixture, unary, "", nil, wantContains(`{sink}`)),
		restCase("push config delete", a2a.MethodPushConfigDelete, v, http.MethodDelete, pushFixture, unary, "", nil, wantNoError),
		restCase("extended card", a2a.MethodExtendedCard, v, get, noFixture, unary, "", nil, wantContains(`"skills"`)),
	}
	return append(prefixed("jsonrpc 0.3/", rpc), prefixed("rest 0.3/", rest)...)
}

func legacyCases() []fwdCase {
	v := a2a.VLegacy
	send := func(c *caller, _, _ string) string {
		return `{"id":"` + c.nextID("legacy-task") + `","sessionId":"` + c.nextID("session") + `","message":` + legacyMsg("complete") + `}`
	}
	return prefixed("jsonrpc 0.1/", []fwdCase{
		rpcCase("tasks/send", a2a.MethodSend, v, noFixture, unary, send, wantTaskIn(a2a.StateCompleted)),
		rpcCase("tasks/sendSubscribe", a2a.MethodStream, v, noFixture, toEnd, send, wantStream(a2a.EventStatusUpdate)),
	})
}

func prefixed(p string, cases []fwdCase) []fwdCase {
	for i := range cases {
		cases[i].name = p + cases[i].name
	}
	return cases
}

// TestForwardMatrix sends every operation of every version and binding
// through the gateway: each is recognised, reaches the agent as the same
// bytes without the caller's credentials and with X-Forwarded-For, the
// caller gets the agent's answer, and the request is counted.
func TestForwardMatrix(t *testing.T) {
	env := gwtest.Start(t)
	c := newCaller(t, env)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sink.Close)
	counts := tally{}

	var cases []fwdCase
	cases = append(cases, v10Cases()...)
	cases = append(cases, v03Cases()...)
	cases = append(cases, legacyCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var task string
			if tc.fixture != noFixture {
				task = c.waitingTask(t)
				counts.add(a2a.MethodSend, "ok")
			}
			if tc.fixture == pushFixture {
				c.pushConfig(t, task, fixtureConfig, sink.URL)
				counts.add(a2a.MethodPushConfigSet, "ok")
			}
			env.Agent.ResetRequests()
			rq := tc.request(c, task, sink.URL)
			body, events := c.exchange(t, rq, tc.answer)
			counts.add(tc.method, "ok")
			tc.check(t, task, sink.URL, body, events)
			wantForwarded(t, env, rq, tc.method)
			counts.wait(t, env.Admin)
		})
	}
}

// exchange makes the call and reads the answer as the case expects. A
// unary answer is also parsed into the single event returned.
func (c *caller) exchange(t *testing.T, rq request, ans answer) ([]byte, []a2a.Event) {
	t.Helper()
	switch ans {
	case toEnd:
		return nil, c.open(t, context.Background(), rq).all(t)
	case firstOnly:
		s := c.open(t, context.Background(), rq)
		defer s.close()
		ev, err := s.next(t)
		if err != nil {
			t.Fatalf("subscription ended before its first event: %v", err)
		}
		return nil, []a2a.Event{ev}
	}
	resp, body := c.do(t, rq)
	if resp.StatusCode == http.StatusNoContent && !rq.rpc && rq.method == http.MethodDelete {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
	}
	ev, err := parse(body, rq.rpc)
	if errors.Is(err, a2a.ErrNotA2A) {
		// A result that is no task or message (a list of push configs)
		// must still be a result, not an error.
		if rq.rpc {
			res, code, uerr := a2a.UnwrapRPC(body)
			if uerr != nil || res == nil {
				t.Fatalf("not a JSON-RPC result (code %d, %v): %s", code, uerr, body)
			}
		} else if !json.Valid(body) {
			t.Fatalf("not JSON: %s", body)
		}
		ev, err = a2a.Event{Kind: a2a.EventNone}, nil
	}
	if err != nil {
		t.Fatalf("unreadable answer: %v: %s", err, body)
	}
	return body, []a2a.Event{ev}
}

// wantForwarded checks the one request the agent received.
func wantForwarded(t *testing.T, env *gwtest.Env, rq request, m a2a.Method) {
	t.Helper()
	got := env.Agent.Requests()
	if len(got) != 1 {
		t.Fatalf("the agent received %d requests, want 1", len(got))
	}
	r := got[0]
	path, _, _ := strings.Cut(rq.path, "?")
	if r.HTTPMethod != rq.method || r.Path != path {
		t.Fatalf("the agent received %s %s, want %s %s", r.HTTPMethod, r.Path, rq.method, path)
	}
	if r.Op.Method != m {
		t.Fatalf("the agent read the request as %s, want %s", r.Op.Method, m)
	}
	// The gateway pages ListTasks itself and splices its paging into the
	// caller's bytes: a first page of the size the agent pages by (100)
	// reaches it as sent, like every other body.
	if !bytes.Equal(r.Body, rq.body) {
		t.Fatalf("the body changed on the way:\n got %s\nwant %s", r.Body, rq.body)
	}
	if v := r.Header.Values("Authorization"); len(v) != 0 {
		t.Fatalf("the caller's Authorization reached the agent: %q", v)
	}
	if got := r.Header.Get("X-Forwarded-For"); got != "127.0.0.1" {
		t.Fatalf("X-Forwarded-For = %q, want 127.0.0.1", got)
	}
	if got, want := r.Header.Get(a2a.VersionHeader), rq.header.Get(a2a.VersionHeader); got != want {
		t.Fatalf("%s = %q, want %q", a2a.VersionHeader, got, want)
	}
}

// TestForwardedHeaders: the forwarding headers a caller sends reach the
// agent only through a trusted proxy, extended by it; from anyone else the
// agent is told what the gateway saw. Method overrides never reach it.
func TestForwardedHeaders(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		trusted                   []string
		wantFor, wantHost, wantIP string
	}{
		{"untrusted peer", nil, "127.0.0.1", "", "127.0.0.1"},
		{"untrusted, a trusted list without the peer", []string{"10.0.0.0/8", "::1"}, "127.0.0.1", "", "127.0.0.1"},
		{"trusted peer", []string{"10.0.0.0/8", "127.0.0.1"}, "203.0.113.9, 127.0.0.1", "public.example", "203.0.113.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := gwtest.Start(t, func(c *config.Config) { c.TrustedProxies = tc.trusted })
			c := newCaller(t, env)
			env.Agent.ResetRequests()
			rq := request{method: http.MethodGet, path: "/extendedAgentCard", header: header(
				"X-Forwarded-For", "203.0.113.9", "X-Forwarded-Host", "public.example", "X-Real-IP", "203.0.113.9",
				"X-HTTP-Method-Override", "DELETE", "X-HTTP-Method", "DELETE", "X-Method-Override", "DELETE")}
			if resp, body := c.do(t, rq); resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
			}
			got := env.Agent.Requests()
			if len(got) != 1 {
				t.Fatalf("the agent received %d requests", len(got))
			}
			h := got[0].Header
			wantHost := tc.wantHost
			if wantHost == "" {
				wantHost = strings.TrimPrefix(env.Gateway, "http://")
			}
			if h.Get("X-Forwarded-For") != tc.wantFor || h.Get("X-Forwarded-Host") != wantHost || h.Get("X-Real-Ip") != tc.wantIP {
				t.Errorf("the agent was told X-Forwarded-For %q, X-Forwarded-Host %q, X-Real-IP %q; want %q, %q, %q",
					h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Host"), h.Get("X-Real-Ip"), tc.wantFor, wantHost, tc.wantIP)
			}
			for _, name := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"} {
				if v := h.Values(name); len(v) != 0 {
					t.Errorf("%s = %q reached the agent", name, v)
				}
			}
		})
	}
}

// The gateway classifies and authorizes a request by its own method: an
// override header does not turn a POST into a GetTask.
func TestMethodOverrideNotHonoured(t *testing.T) {
	env := gwtest.Start(t)
	c := newCaller(t, env)
	task := c.waitingTask(t)
	env.Agent.ResetRequests()
	for _, name := range []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"} {
		rq := request{method: http.MethodPost, path: "/tasks/" + task, header: header(name, http.MethodGet, a2a.VersionHeader, "1.0"), body: []byte(`{}`)}
		resp, body := c.do(t, rq)
		if resp.StatusCode == http.StatusOK || !strings.Contains(string(body), "METHOD_NOT_FOUND") {
			t.Errorf("POST with %s: GET was honoured or the answer is not MethodNotFound: HTTP %d %s", name, resp.StatusCode, body)
		}
	}
	if n := len(env.Agent.Requests()); n != 0 {
		t.Errorf("the agent received %d requests", n)
	}
}
