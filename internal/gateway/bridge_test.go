package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/dedupe"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// The bridge in a whole gateway: the demo agent is declared to speak 1.0
// JSON-RPC only, and callers of the other forms reach it through the
// bridge, with every stage (authorization, dedupe, the lifecycle, the push
// relay's event log) in the path, on a real Redis.

// bridgedEnv starts the gateway with the demo agent bridged from 1.0
// JSON-RPC and the push relay's event log on, for resuming streams.
func bridgedEnv(t *testing.T, opts ...gwtest.Option) *gwtest.Env {
	t.Helper()
	srv := redistest.Start(t)
	key := resumeSigningKey(t)
	return gwtest.Start(t, append([]gwtest.Option{func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Push.Enabled = true
		c.Push.Signing.KeyFiles = []string{key}
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	}}, opts...)...)
}

// bridgedDialects are the callers' forms that go through the bridge.
var bridgedDialects = []dialect{
	{"1.0 REST", a2a.V10, false},
	{"0.3 JSON-RPC", a2a.V03, true},
	{"0.3 REST", a2a.V03, false},
}

// message is a message of the dialect's spelling, with only the members
// every form has (bridging refuses what it cannot carry).
func (d dialect) message(id, text string) string {
	switch {
	case d.version == a2a.V10:
		return `{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}`
	case d.rpc:
		return `{"kind":"message","messageId":"` + id + `","role":"user","parts":[{"kind":"text","text":"` + text + `"}]}`
	}
	return `{"messageId":"` + id + `","role":"ROLE_USER","content":[{"text":"` + text + `"}]}`
}

// rpc is a JSON-RPC request without members the bridge cannot carry.
func (d dialect) rpcRequest(m a2a.Method, id, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + a2a.RPCMethodName(m, d.version) + `","params":` + params + `}`)
}

// send is a blocking send of message msgID with text: 0.3 sends block
// only when they say so.
func (d dialect) send(c *caller, msgID, text string) request {
	params := `{"message":` + d.message(msgID, text) + `}`
	if d.version == a2a.V03 {
		params = `{"message":` + d.message(msgID, text) + `,"configuration":{"blocking":true}}`
	}
	if d.rpc {
		return request{method: http.MethodPost, path: "/", header: d.header(), rpc: true, body: d.rpcRequest(a2a.MethodSend, c.nextID("r"), params)}
	}
	method, path := a2a.RESTPath(a2a.MethodSend, d.version, "", "")
	return request{method: method, path: path, header: d.header(), body: []byte(params)}
}

// bridgedStream is a streaming send of text.
func (d dialect) bridgedStream(c *caller, text string) request {
	params := `{"message":` + d.message(c.nextID("m"), text) + `}`
	if d.rpc {
		return request{method: http.MethodPost, path: "/", header: d.header(), rpc: true, body: d.rpcRequest(a2a.MethodStream, c.nextID("r"), params)}
	}
	method, path := a2a.RESTPath(a2a.MethodStream, d.version, "", "")
	return request{method: method, path: path, header: d.header(), body: []byte(params)}
}

// get asks for task.
func (d dialect) get(c *caller, task string) request {
	if d.rpc {
		return request{method: http.MethodPost, path: "/", header: d.header(), rpc: true, body: d.rpcRequest(a2a.MethodGetTask, c.nextID("r"), `{"id":"`+task+`"}`)}
	}
	_, path := a2a.RESTPath(a2a.MethodGetTask, d.version, task, "")
	return request{method: http.MethodGet, path: path, header: d.header()}
}

// op is the operation the gateway classifies rq as, what its answer is
// read against.
func (d dialect) op(t *testing.T, rq request) *a2a.Operation {
	t.Helper()
	var op *a2a.Operation
	var err *a2a.Error
	if d.rpc {
		op, err = a2a.ClassifyRPC(rq.body, d.version, d.version == a2a.V10)
	} else {
		op, err = a2a.ClassifyREST(rq.method, rq.path, nil, rq.body, d.version, d.version == a2a.V10)
	}
	if err != nil {
		t.Fatalf("test request does not classify: %v", err)
	}
	return op
}

// answer reads an answer to rq strictly in the caller's form.
func (d dialect) answer(t *testing.T, rq request, resp *http.Response, body []byte) a2a.Event {
	t.Helper()
	if !d.rpc && resp.StatusCode >= 300 {
		ev, err := a2a.ReadRESTError(d.version, body)
		if err != nil {
			t.Fatalf("HTTP %d answer is not a %s error: %v: %s", resp.StatusCode, d.name, err, body)
		}
		return ev
	}
	ev, _, err := a2a.ReadAnswer(d.op(t, rq), body)
	if err != nil {
		t.Fatalf("answer does not read as %s: %v: %s", d.name, err, body)
	}
	return ev
}

// wantErrorCode checks an error answer: its code, as the caller's form
// carries it.
func wantErrorCode(t *testing.T, d dialect, ev a2a.Event, want *a2a.Error, body []byte) {
	t.Helper()
	// A 1.0 REST error names its reason, every other form its code.
	if ev.Kind != a2a.EventError || (d.rpc || d.version == a2a.V03) && ev.ErrorCode != want.Code || !bytes.Contains(body, []byte(want.Reason)) && d.version == a2a.V10 {
		t.Fatalf("%s: got %+v, want %s: %s", d.name, ev, want.Reason, body)
	}
}

// A bridged request for another tenant's task is TaskNotFound in the
// caller's form, exactly as unbridged; the owner reads it in any form.
func TestBridgeTenantIsolation(t *testing.T) {
	env := bridgedEnv(t)
	owner := newCaller(t, env)
	other := newCaller(t, env)
	other.token = env.Token(t, "globex", "mallory")
	for _, d := range bridgedDialects {
		t.Run(d.name, func(t *testing.T) {
			rq := d.send(owner, owner.nextID("m"), "complete hi")
			resp, body := owner.do(t, rq)
			ev := d.answer(t, rq, resp, body)
			if ev.Kind != a2a.EventTask || ev.State != a2a.StateCompleted {
				t.Fatalf("bridged send: HTTP %d %+v: %s", resp.StatusCode, ev, body)
			}
			task := ev.TaskID
			for _, rd := range append([]dialect{{"1.0 JSON-RPC", a2a.V10, true}}, bridgedDialects...) {
				rq := rd.get(other, task)
				resp, body := other.do(t, rq)
				wantErrorCode(t, rd, rd.answer(t, rq, resp, body), a2a.ErrTaskNotFound, body)
				if !rd.rpc && resp.StatusCode != http.StatusNotFound {
					t.Fatalf("%s: HTTP %d, want 404", rd.name, resp.StatusCode)
				}
				rq = rd.get(owner, task)
				resp, body = owner.do(t, rq)
				if got := rd.answer(t, rq, resp, body); got.Kind != a2a.EventTask || got.TaskID != task || got.State != a2a.StateCompleted {
					t.Fatalf("%s: the owner reads %+v: %s", rd.name, got, body)
				}
			}
		})
	}
}

// A retry of a bridged send in the first's form is replayed in that form;
// in another form it is refused, naming the form to use.
func TestBridgeDedupeRetry(t *testing.T) {
	env := bridgedEnv(t)
	c := newCaller(t, env)
	for _, d := range bridgedDialects {
		t.Run(d.name, func(t *testing.T) {
			msgID := c.nextID("m")
			rq := d.send(c, msgID, "complete hi")
			resp, body := c.do(t, rq)
			first := d.answer(t, rq, resp, body)
			if first.Kind != a2a.EventTask {
				t.Fatalf("first send: %+v: %s", first, body)
			}
			retry := d.send(c, msgID, "complete hi")
			resp, body = c.do(t, retry)
			again := d.answer(t, retry, resp, body)
			if resp.Header.Get(dedupe.ReplayHeader) != "true" || again.TaskID != first.TaskID {
				t.Fatalf("retry in the same form: %+v (replayed %q), want the first's task %s: %s", again, resp.Header.Get(dedupe.ReplayHeader), first.TaskID, body)
			}
			for _, od := range append([]dialect{{"1.0 JSON-RPC", a2a.V10, true}}, bridgedDialects...) {
				if od == d {
					continue
				}
				rq := od.send(c, msgID, "complete hi")
				resp, body := c.do(t, rq)
				wantErrorCode(t, od, od.answer(t, rq, resp, body), a2a.ErrIdempotencyConflict, body)
				if !bytes.Contains(body, []byte("first sent in "+a2a.Form{Version: d.version, Binding: bindingOf(d)}.String())) {
					t.Fatalf("%s: the refusal does not name the first form: %s", od.name, body)
				}
			}
		})
	}
}

func bindingOf(d dialect) a2a.Binding {
	if d.rpc {
		return a2a.BindingJSONRPC
	}
	return a2a.BindingREST
}

// A bridged stream carries the gateway's event ids, and a caller resuming
// with Last-Event-ID through the bridge gets exactly the events after it,
// in its form; a 0.3 caller's stream ends with a final status update.
func TestBridgeStreamResume(t *testing.T) {
	env := bridgedEnv(t)
	for _, d := range bridgedDialects {
		t.Run(d.name, func(t *testing.T) {
			c := resumeCaller(t, env)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			first := c.open(t, ctx, d.bridgedStream(c, "parts 3")).readToEnd(t)
			if len(first) < 5 || first[0].ev.Kind != a2a.EventTask {
				t.Fatalf("bridged stream: %s", strings.Join(ids(first), "\n"))
			}
			named := slices.DeleteFunc(slices.Clone(first), func(e sseEvent) bool { return e.id == "" })
			wantEventIDs(t, named)
			last := first[len(first)-1]
			if !last.ev.State.Terminal() || d.version == a2a.V03 && !(last.ev.Kind == a2a.EventStatusUpdate && last.ev.Final) {
				t.Fatalf("the stream ends with %s (final %v)", last, last.ev.Final)
			}
			if d.version == a2a.V10 && bytes.Contains(last.result, []byte(`"final"`)) {
				t.Fatalf("a 1.0 caller's event carries final: %s", last.result)
			}
			task := first[0].ev.TaskID
			resumed := c.open(t, ctx, d.subscribe(c, task, named[1].id)).readToEnd(t)
			if want := named[2:]; !slices.Equal(ids(resumed), ids(want)) {
				t.Fatalf("resumed\n%s\nwant\n%s", strings.Join(ids(resumed), "\n"), strings.Join(ids(want), "\n"))
			}
			for i, e := range resumed {
				if !bytes.Equal(e.result, named[2+i].result) {
					t.Fatalf("resumed event %d\n%s\nwant as first relayed\n%s", i, e.result, named[2+i].result)
				}
			}
		})
	}
}

// A bridged task's lifecycle is recorded as an unbridged one's: the same
// owner, context, states and transitions; only the version is the
// caller's.
func TestBridgeLifecycle(t *testing.T) {
	t.Setenv("A2AGW_LIFECYCLE_TEST_OPS_TOKEN", lcOpsToken)
	env := bridgedEnv(t, func(c *config.Config) { c.Lifecycle.OpsTokenEnv = "A2AGW_LIFECYCLE_TEST_OPS_TOKEN" })
	c := newCaller(t, env)
	record := func(d dialect) store.TaskLifecycle {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		evs := c.open(t, ctx, d.bridgedStream(c, "parts 2")).readToEnd(t)
		lcFlush(t, env)
		return lcRecord(t, env, evs[0].ev.TaskID)
	}
	native := record(dialect{"1.0 JSON-RPC", a2a.V10, true})
	if native.State != "completed" || lcPath(native) == "" {
		t.Fatalf("unbridged record %+v", native)
	}
	for _, d := range bridgedDialects {
		got := record(d)
		if got.Tenant != native.Tenant || got.Subject != native.Subject || got.State != native.State || got.EndedBy != native.EndedBy ||
			lcPath(got) != lcPath(native) || got.ContextID == "" || got.Version != d.version.String() {
			t.Fatalf("%s: bridged record %+v (path %s), want as unbridged %+v (path %s) in version %s", d.name, got, lcPath(got), native, lcPath(native), d.version)
		}
	}
}

// With tenant_routing, a 0.3 caller's request, which has no tenant, reaches
// the 1.0 agent through the bridge with the caller's.
func TestBridgeTenantRouting(t *testing.T) {
	env := bridgedEnv(t, func(c *config.Config) { c.Agents[0].TenantRouting = true })
	c := newCaller(t, env)
	for _, d := range bridgedDialects {
		env.Agent.ResetRequests()
		rq := d.send(c, c.nextID("m"), "complete hi")
		resp, body := c.do(t, rq)
		if ev := d.answer(t, rq, resp, body); ev.Kind != a2a.EventTask {
			t.Fatalf("%s: %+v: %s", d.name, ev, body)
		}
		reqs := env.Agent.Requests()
		if len(reqs) != 1 || !bytes.Contains(reqs[0].Body, []byte(`"tenant":"acme"`)) {
			t.Fatalf("%s: the agent got %+v, want one 1.0 request routed to tenant acme", d.name, reqs)
		}
	}
}

// ListTasks, 1.0 only, is bridged between the 1.0 forms and filtered to the
// caller's tasks as unbridged.
func TestBridgeListTasks(t *testing.T) {
	env := bridgedEnv(t)
	owner, other := newCaller(t, env), newCaller(t, env)
	other.token = env.Token(t, "globex", "mallory")
	rest := dialect{"1.0 REST", a2a.V10, false}
	var mine []string
	for _, c := range []*caller{owner, owner, other} {
		rq := rest.send(c, c.nextID("m"), "complete hi")
		resp, body := c.do(t, rq)
		ev := rest.answer(t, rq, resp, body)
		if ev.Kind != a2a.EventTask {
			t.Fatalf("send: %+v: %s", ev, body)
		}
		if c == owner {
			mine = append(mine, ev.TaskID)
		}
	}
	method, path := a2a.RESTPath(a2a.MethodListTasks, a2a.V10, "", "")
	rq := request{method: method, path: path, header: v10()}
	resp, body := owner.do(t, rq)
	ev := rest.answer(t, rq, resp, body)
	var got []string
	for _, lt := range ev.Listed {
		got = append(got, lt.ID)
	}
	slices.Sort(got)
	slices.Sort(mine)
	if resp.StatusCode != http.StatusOK || !slices.Equal(got, mine) {
		t.Fatalf("HTTP %d: listed %v, want the caller's %v: %s", resp.StatusCode, got, mine, body)
	}
}
