package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// The bridge between the HTTP forms: real loopback agents that speak one
// form only (they classify every request with the gateway's own classifier
// and refuse any other form) behind a gateway, and callers in every form.

var (
	form10RPC  = a2a.Form{Version: a2a.V10, Binding: a2a.BindingJSONRPC}
	form10REST = a2a.Form{Version: a2a.V10, Binding: a2a.BindingREST}
	form03RPC  = a2a.Form{Version: a2a.V03, Binding: a2a.BindingJSONRPC}
	form03REST = a2a.Form{Version: a2a.V03, Binding: a2a.BindingREST}
	httpForms  = []a2a.Form{form10RPC, form10REST, form03RPC, form03REST}
)

// spelling is how one form's objects are written: 1.0 protobuf JSON, 0.3
// JSON-RPC kind objects, 0.3 protobuf JSON.
type spelling uint8

const (
	spell10 spelling = iota
	spell03
	spell03Proto
)

func spellingOf(f a2a.Form) spelling {
	switch {
	case f.Version == a2a.V10:
		return spell10
	case f.Binding == a2a.BindingJSONRPC:
		return spell03
	}
	return spell03Proto
}

func (sp spelling) state(st a2a.State) string {
	if sp == spell03 {
		return st.Wire(a2a.V03)
	}
	return st.Wire(a2a.V10)
}

// task is the bare task t-1 in state st.
func (sp spelling) task(st a2a.State) string {
	kind := ""
	if sp == spell03 {
		kind = `"kind":"task",`
	}
	return `{` + kind + `"id":"t-1","contextId":"c-1","status":{"state":"` + sp.state(st) + `"}}`
}

// wrapped is a send result or stream event: 0.3 JSON-RPC objects carry
// their kind, the others sit under a member naming it.
func (sp spelling) wrapped(member, obj string) string {
	if sp == spell03 {
		return obj
	}
	return `{"` + member + `":` + obj + `}`
}

func (sp spelling) statusUpdate(st a2a.State) string {
	switch sp {
	case spell03:
		final := st.Terminal() || st.Interrupted()
		return `{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"` + sp.state(st) + `"},"final":` + boolText(final) + `}`
	case spell03Proto:
		final := st.Terminal() || st.Interrupted()
		return sp.wrapped("statusUpdate", `{"taskId":"t-1","contextId":"c-1","status":{"state":"`+sp.state(st)+`"},"final":`+boolText(final)+`}`)
	}
	return sp.wrapped("statusUpdate", `{"taskId":"t-1","contextId":"c-1","status":{"state":"`+sp.state(st)+`"}}`)
}

// artifactUpdate carries parts; extra goes into the first part (an
// untranslatable member, for the tests that need one).
func (sp spelling) artifactUpdate(extra string) string {
	part := `{"text":"hello"` + extra + `}`
	if sp == spell03 {
		return `{"kind":"artifact-update","taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a-1","parts":[{"kind":"text","text":"hello"` + extra + `}]}}`
	}
	return sp.wrapped("artifactUpdate", `{"taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a-1","parts":[`+part+`]}}`)
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// message is the caller's message m-1.
func (sp spelling) message() string {
	switch sp {
	case spell03:
		return `{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	case spell03Proto:
		return `{"messageId":"m-1","role":"ROLE_USER","content":[{"text":"hi"}]}`
	}
	return `{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
}

// agentMode scripts a formAgent's answers.
type agentMode uint8

const (
	answerOK agentMode = iota
	// answerError refuses every request with TaskNotFound, in the form.
	answerError
	// answerUntranslatable streams and answers an artifact whose part has
	// a member no form defines.
	answerUntranslatable
	// answerEndsWithTask ends its stream with the completed task, not a
	// status update (as 1.0 agents may).
	answerEndsWithTask
)

// formAgent is an agent that speaks one form: a request in any other is
// a test failure.
type formAgent struct {
	t    *testing.T
	form a2a.Form
	srv  *httptest.Server

	mu   sync.Mutex
	mode agentMode
	ops  []*a2a.Operation
	hdrs []http.Header
}

func newFormAgent(t *testing.T, f a2a.Form) *formAgent {
	t.Helper()
	fa := &formAgent{t: t, form: f}
	fa.srv = httptest.NewServer(http.HandlerFunc(fa.serve))
	t.Cleanup(fa.srv.Close)
	return fa
}

func (fa *formAgent) setMode(m agentMode) {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	fa.mode = m
}

// last is the last request the agent classified.
func (fa *formAgent) last(t *testing.T) (*a2a.Operation, http.Header) {
	t.Helper()
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if len(fa.ops) == 0 {
		t.Fatal("the agent got no request")
	}
	return fa.ops[len(fa.ops)-1], fa.hdrs[len(fa.hdrs)-1]
}

func (fa *formAgent) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	v, explicit, verr := a2a.NegotiateVersion(r)
	var op *a2a.Operation
	var cerr *a2a.Error
	switch {
	case verr != nil:
		cerr = verr
	case fa.form.Binding == a2a.BindingJSONRPC && r.Method == http.MethodPost && r.URL.Path == "/":
		op, cerr = a2a.ClassifyRPC(body, v, explicit)
	case fa.form.Binding == a2a.BindingREST:
		op, cerr = a2a.ClassifyREST(r.Method, r.URL.EscapedPath(), r.URL.Query(), body, v, explicit)
	default:
		cerr = a2a.ErrMethodNotFound
	}
	if cerr == nil && a2a.FormOf(op) != fa.form {
		cerr = a2a.ErrInvalidRequest.WithMessage("request in " + a2a.FormOf(op).String())
	}
	if cerr != nil {
		fa.t.Errorf("agent in %s got a request it does not read (%s %s %s): %v", fa.form, r.Method, r.URL, body, cerr)
		http.Error(w, "wrong form", http.StatusBadRequest)
		return
	}
	fa.mu.Lock()
	fa.ops = append(fa.ops, op)
	fa.hdrs = append(fa.hdrs, r.Header.Clone())
	mode := fa.mode
	fa.mu.Unlock()
	sp := spellingOf(fa.form)
	if mode == answerError {
		fa.writeError(w, op)
		return
	}
	extra := ""
	if mode == answerUntranslatable {
		extra = `,"bogus":1`
	}
	switch op.Method {
	case a2a.MethodStream, a2a.MethodSubscribe:
		events := []string{sp.wrapped("task", sp.task(a2a.StateWorking)), sp.statusUpdate(a2a.StateWorking), sp.artifactUpdate(extra)}
		if mode == answerEndsWithTask {
			events = append(events, sp.wrapped("task", sp.task(a2a.StateCompleted)))
		} else {
			events = append(events, sp.statusUpdate(a2a.StateCompleted))
		}
		sseHeader(w)
		for _, e := range events {
			writeFlush(w, "data: "+fa.frame(op, e)+"\n\n")
		}
	case a2a.MethodSend:
		result := sp.wrapped("task", sp.task(a2a.StateCompleted))
		if mode == answerUntranslatable {
			result = sp.artifactUpdate(extra) // not even a send result
		}
		fa.writeJSON(w, op, result)
	default:
		fa.writeJSON(w, op, sp.task(a2a.StateCompleted))
	}
}

// frame puts a result in the form's envelope.
func (fa *formAgent) frame(op *a2a.Operation, result string) string {
	if fa.form.Binding == a2a.BindingJSONRPC {
		return `{"jsonrpc":"2.0","id":` + string(op.RPCID) + `,"result":` + result + `}`
	}
	return result
}

func (fa *formAgent) writeJSON(w http.ResponseWriter, op *a2a.Operation, result string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, fa.frame(op, result))
}

// writeError refuses with TaskNotFound as the form spells it, with a
// message the caller must never see.
func (fa *formAgent) writeError(w http.ResponseWriter, op *a2a.Operation) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case fa.form.Binding == a2a.BindingJSONRPC:
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(op.RPCID)+`,"error":{"code":-32001,"message":"agent secret"}}`)
	case fa.form.Version == a2a.V10:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":404,"status":"NOT_FOUND","message":"agent secret","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"code":-32001,"message":"agent secret"}`)
	}
}

// bridgeTo starts a gateway in front of agent with a bridge section for
// the agent's form, offering offer (nil: the default, every HTTP form).
func bridgeTo(t *testing.T, agent *formAgent, offer ...a2a.Form) *env {
	t.Helper()
	iface := func(f a2a.Form) config.BridgeInterface {
		return config.BridgeInterface{Version: f.Version.String(), Binding: f.Binding.CardName()}
	}
	return start(t, agent.srv.URL, withConfig(func(c *config.Config) {
		b := &config.AgentBridge{Agent: iface(agent.form)}
		for _, f := range offer {
			b.Offer = append(b.Offer, iface(f))
		}
		c.Agents[0].Bridge = b
	}))
}

// callerRequest is a request of method m in form f, with the operation the
// gateway classifies it as (what the caller's answer is read against).
func callerRequest(t *testing.T, f a2a.Form, m a2a.Method) (request, *a2a.Operation) {
	t.Helper()
	sp := spellingOf(f)
	var params, path, httpMethod string
	var restBody []byte
	switch m {
	case a2a.MethodSend, a2a.MethodStream:
		params = `{"message":` + sp.message() + `}`
		restBody = []byte(params)
		httpMethod, path = a2a.RESTPath(m, f.Version, "", "")
	default:
		params = `{"id":"t-1"}`
		httpMethod, path = a2a.RESTPath(m, f.Version, "t-1", "")
		if httpMethod == http.MethodPost {
			// 0.3 names the task in the path only.
			restBody = []byte(params)
			if f.Version == a2a.V03 {
				restBody = []byte(`{}`)
			}
		}
	}
	h := http.Header{}
	if f.Version == a2a.V10 {
		h = v10()
	}
	rq := request{method: httpMethod, path: path, header: h, body: restBody}
	if f.Binding == a2a.BindingJSONRPC {
		rq = request{method: http.MethodPost, path: "/", header: h, body: rpcBody(m, f.Version, `"r-1"`, params)}
	}
	var op *a2a.Operation
	var cerr *a2a.Error
	explicit := f.Version == a2a.V10
	if f.Binding == a2a.BindingJSONRPC {
		op, cerr = a2a.ClassifyRPC(rq.body, f.Version, explicit)
	} else {
		op, cerr = a2a.ClassifyREST(rq.method, rq.path, nil, rq.body, f.Version, explicit)
	}
	if cerr != nil || a2a.FormOf(op) != f {
		t.Fatalf("test request in %s does not classify: %v %+v", f, cerr, op)
	}
	return rq, op
}

// readAs reads one answer or stream event as strictly as the gateway reads
// agents, in the caller's form.
func readAs(t *testing.T, op *a2a.Operation, payload []byte) a2a.Event {
	t.Helper()
	ev, _, err := a2a.ReadAnswer(op, payload)
	if err != nil {
		t.Fatalf("answer does not read in %s: %v: %s", a2a.FormOf(op), err, payload)
	}
	return ev
}

// bridgePairs runs f for every agent form and every other caller form.
func bridgePairs(t *testing.T, f func(t *testing.T, agent, caller a2a.Form)) {
	for _, af := range httpForms {
		for _, cf := range httpForms {
			if af == cf {
				continue
			}
			t.Run(strings.ReplaceAll(cf.String()+" to "+af.String(), " ", "_"), func(t *testing.T) { f(t, af, cf) })
		}
	}
}

func TestBridgeUnary(t *testing.T) {
	bridgePairs(t, func(t *testing.T, af, cf a2a.Form) {
		agent := newFormAgent(t, af)
		e := bridgeTo(t, agent)
		for _, m := range []a2a.Method{a2a.MethodSend, a2a.MethodGetTask, a2a.MethodCancelTask} {
			rq, op := callerRequest(t, cf, m)
			resp, body := e.do(t, rq)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: HTTP %d: %s", m, resp.StatusCode, body)
			}
			ev := readAs(t, op, body)
			if ev.Kind != a2a.EventTask || ev.TaskID != "t-1" || ev.ContextID != "c-1" || ev.State != a2a.StateCompleted {
				t.Fatalf("%s: caller read %+v from %s", m, ev, body)
			}
			got, hdr := agent.last(t)
			if got.Method != m || got.TaskID != op.TaskID || got.MessageID != op.MessageID {
				t.Fatalf("%s: agent got %+v, want the caller's operation %+v", m, got, op)
			}
			if hdr.Get("Authorization") != "" {
				t.Fatal("the caller's credentials reached the agent")
			}
		}
	})
}

func TestBridgeStream(t *testing.T) {
	for _, mode := range []agentMode{answerOK, answerEndsWithTask} {
		bridgePairs(t, func(t *testing.T, af, cf a2a.Form) {
			agent := newFormAgent(t, af)
			agent.setMode(mode)
			e := bridgeTo(t, agent)
			rq, op := callerRequest(t, cf, a2a.MethodStream)
			st := e.open(t, rq)
			var kinds []a2a.EventKind
			var last a2a.Event
			var lastData []byte
			for {
				ev, err := st.rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("stream broke: %v", err)
				}
				if ev.KeepAlive() {
					continue
				}
				last = readAs(t, op, ev.Data)
				lastData = append([]byte(nil), ev.Data...)
				kinds = append(kinds, last.Kind)
				if cf.Version == a2a.V10 && bytes.Contains(ev.Data, []byte(`"final"`)) {
					t.Fatalf("a 1.0 caller got a final flag: %s", ev.Data)
				}
			}
			want := []a2a.EventKind{a2a.EventTask, a2a.EventStatusUpdate, a2a.EventArtifactUpdate}
			switch {
			case mode == answerOK:
				want = append(want, a2a.EventStatusUpdate)
			case cf.Version == a2a.V03:
				// The agent ended with the task (as 1.0 agents do): the 0.3
				// caller's stream still ends with a status update marked
				// final.
				want = append(want, a2a.EventTask, a2a.EventStatusUpdate)
			default:
				want = append(want, a2a.EventTask)
			}
			if !equalKinds(kinds, want) {
				t.Fatalf("caller read %v, want %v", kinds, want)
			}
			if last.State != a2a.StateCompleted || last.TaskID != "t-1" {
				t.Fatalf("last event %+v", last)
			}
			if cf.Version == a2a.V03 && last.Kind == a2a.EventStatusUpdate && !last.Final {
				t.Fatalf("a 0.3 caller's stream ends without final: %s", lastData)
			}
		})
	}
}

func equalKinds(a, b []a2a.EventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantCallerError checks that an answer is err in the caller's form, the
// agent's own message nowhere.
func wantCallerError(t *testing.T, cf a2a.Form, op *a2a.Operation, resp *http.Response, body []byte, want *a2a.Error) {
	t.Helper()
	if bytes.Contains(body, []byte("agent secret")) {
		t.Fatalf("the agent's error was passed through: %s", body)
	}
	if cf.Binding == a2a.BindingREST {
		if resp.StatusCode != want.HTTPStatus {
			t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, want.HTTPStatus, body)
		}
		ev, err := a2a.ReadRESTError(cf.Version, body)
		if err != nil || a2a.AgentError(ev.ErrorCode).Code != want.Code {
			t.Fatalf("not %s in %s: %v %s", want.Reason, cf, err, body)
		}
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		ev, err := a2a.NewSSEReader(bytes.NewReader(body), 1<<20).Next()
		if err != nil {
			t.Fatalf("stream error answer: %v %s", err, body)
		}
		body = ev.Data
	}
	ev := readAs(t, op, body)
	if ev.Kind != a2a.EventError || ev.ErrorCode != want.Code {
		t.Fatalf("got %+v, want %s: %s", ev, want.Reason, body)
	}
	if cf.Version == a2a.V10 && !bytes.Contains(body, []byte(want.Reason)) {
		t.Fatalf("a 1.0 caller's error lacks its reason %s: %s", want.Reason, body)
	}
}

func TestBridgeAgentErrors(t *testing.T) {
	bridgePairs(t, func(t *testing.T, af, cf a2a.Form) {
		agent := newFormAgent(t, af)
		agent.setMode(answerError)
		e := bridgeTo(t, agent)
		for _, m := range []a2a.Method{a2a.MethodSend, a2a.MethodGetTask, a2a.MethodStream} {
			rq, op := callerRequest(t, cf, m)
			resp, body := e.do(t, rq)
			wantCallerError(t, cf, op, resp, body, a2a.ErrTaskNotFound)
		}
	})
}

func TestBridgeRefusesUntranslatable(t *testing.T) {
	bridgePairs(t, func(t *testing.T, af, cf a2a.Form) {
		if spellingOf(af) == spellingOf(cf) {
			return // the same spelling: nothing to translate, the agent's bytes go on
		}
		agent := newFormAgent(t, af)
		agent.setMode(answerUntranslatable)
		e := bridgeTo(t, agent)
		rq, op := callerRequest(t, cf, a2a.MethodSend)
		resp, body := e.do(t, rq)
		wantCallerError(t, cf, op, resp, body, a2a.ErrInvalidAgentResponse)
		e.logs.wantLog(t, "WARN", "agent exchange failed", map[string]any{"reason": "invalid_response", "bridged_to": af.String()})

		// In a stream the events before it reach the caller; it ends the
		// stream with the error.
		rq, op = callerRequest(t, cf, a2a.MethodStream)
		st := e.open(t, rq)
		var evs []a2a.SSEEvent
		for {
			ev, err := st.rd.Next()
			if err != nil {
				break
			}
			evs = append(evs, a2a.SSEEvent{Event: ev.Event, Data: append([]byte(nil), ev.Data...)})
		}
		if len(evs) != 3 {
			t.Fatalf("want task, status update and the error, got %d events", len(evs))
		}
		for _, ev := range evs[:2] {
			readAs(t, op, ev.Data)
		}
		if bytes.Contains(evs[2].Data, []byte("bogus")) || !bytes.Contains(evs[2].Data, []byte(itoa(a2a.ErrInvalidAgentResponse.Code))) && !bytes.Contains(evs[2].Data, []byte("INVALID_AGENT_RESPONSE")) {
			t.Fatalf("last event is not the gateway's error: %s", evs[2].Data)
		}
	})
}

func TestBridgeRefusesUnofferedForms(t *testing.T) {
	agent := newFormAgent(t, form10RPC)
	e := bridgeTo(t, agent, form10RPC, form03RPC)
	for _, tc := range []struct {
		caller a2a.Form
		want   *a2a.Error
	}{
		{form10REST, a2a.ErrUnsupportedOperation},
		{form03REST, a2a.ErrUnsupportedOperation},
	} {
		rq, op := callerRequest(t, tc.caller, a2a.MethodSend)
		resp, body := e.do(t, rq)
		wantCallerError(t, tc.caller, op, resp, body, tc.want)
		if !bytes.Contains(body, []byte("JSONRPC")) {
			t.Fatalf("the refusal does not name the offered forms: %s", body)
		}
	}
	e.logs.wantLog(t, "INFO", "request refused", map[string]any{"code": float64(a2a.ErrUnsupportedOperation.Code)})

	only10 := bridgeTo(t, agent, form10RPC, form10REST)
	rq, op := callerRequest(t, form03RPC, a2a.MethodSend)
	resp, body := only10.do(t, rq)
	wantCallerError(t, form03RPC, op, resp, body, a2a.ErrVersionNotSupported)
	agent.mu.Lock()
	defer agent.mu.Unlock()
	if len(agent.ops) != 0 {
		t.Fatalf("a refused request reached the agent: %+v", agent.ops[0])
	}
}

// A caller in the agent's own form is forwarded as without a bridge: the
// agent's bytes, white space and all.
func TestBridgeSameFormUnchanged(t *testing.T) {
	const answer = "{ \"jsonrpc\": \"2.0\",\n \"id\": \"r-1\", \"result\": {\"task\": {\"id\":\"t-1\",\"contextId\":\"c-1\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}} }"
	u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	})
	e := start(t, u.url, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	}))
	rq, _ := callerRequest(t, form10RPC, a2a.MethodSend)
	resp, got := e.do(t, rq)
	if resp.StatusCode != http.StatusOK || string(got) != answer {
		t.Fatalf("HTTP %d %q, want the agent's bytes", resp.StatusCode, got)
	}
}

// ListTasks has no 0.3 equivalent: a 1.0 caller's list to a 0.3 agent is
// refused in the caller's form and never reaches the agent.
func TestBridgeListTasksTo03Refused(t *testing.T) {
	for _, af := range []a2a.Form{form03RPC, form03REST} {
		agent := newFormAgent(t, af)
		e := bridgeTo(t, agent)
		for _, cf := range []a2a.Form{form10RPC, form10REST} {
			rq := request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodListTasks, a2a.V10, `"r-1"`, `{}`)}
			if cf.Binding == a2a.BindingREST {
				method, path := a2a.RESTPath(a2a.MethodListTasks, a2a.V10, "", "")
				rq = request{method: method, path: path, header: v10()}
			}
			resp, body := e.do(t, rq)
			op := &a2a.Operation{Method: a2a.MethodListTasks, Version: a2a.V10, Binding: cf.Binding, RPCID: []byte(`"r-1"`)}
			wantCallerError(t, cf, op, resp, body, a2a.ErrUnsupportedOperation)
		}
		agent.mu.Lock()
		n := len(agent.ops)
		agent.mu.Unlock()
		if n != 0 {
			t.Fatalf("a refused list reached the %s agent", af)
		}
	}
}

// The extended card through a bridge is the card stage's to spell: its
// observers see the agent's card as the agent wrote it, and without that
// stage the caller gets no card in the agent's form.
func TestBridgeExtendedCardLeftToTheCardStage(t *testing.T) {
	agent := newFormAgent(t, form10RPC)
	var observed []byte
	e := start(t, agent.srv.URL, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	}), withStage(func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			s.AddObserver(proxy.ObserverFunc(func(context.Context, *proxy.Scope, a2a.Event, []byte) error {
				observed = append([]byte(nil), s.Result()...)
				return nil
			}))
			return next(w, r, s)
		}
	}))
	rq := request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodExtendedCard, a2a.V03, `"r-1"`, `{}`)}
	resp, body := e.do(t, rq)
	op := &a2a.Operation{Method: a2a.MethodExtendedCard, Version: a2a.V03, Binding: a2a.BindingJSONRPC, RPCID: []byte(`"r-1"`)}
	wantCallerError(t, form03RPC, op, resp, body, a2a.ErrInvalidAgentResponse)
	if want := spell10.task(a2a.StateCompleted); string(observed) != want {
		t.Fatalf("observed %s, want the agent's card %s", observed, want)
	}
}

// An HTTP+JSON agent's stream error event and keep-alives, through the
// bridge: the keep-alive is passed on, the error becomes the gateway's in
// the caller's form and ends the stream.
func TestBridgeRESTStreamError(t *testing.T) {
	u := newUpstream(t, func(_ *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, "data: "+spell10.statusUpdate(a2a.StateWorking)+"\n\n")
		writeFlush(w, ": keep-alive\n\n")
		writeFlush(w, `event: error`+"\n"+`data: {"error":{"code":404,"status":"NOT_FOUND","message":"agent secret","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`+"\n\n")
		writeFlush(w, "data: "+spell10.statusUpdate(a2a.StateCompleted)+"\n\n")
	})
	e := start(t, u.url, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "HTTP+JSON"}}
	}))
	rq, op := callerRequest(t, form03RPC, a2a.MethodStream)
	st := e.open(t, rq)
	if ev := readAs(t, op, st.next(t).Data); ev.Kind != a2a.EventStatusUpdate || ev.State != a2a.StateWorking {
		t.Fatalf("first event %+v", ev)
	}
	if ka := st.next(t); !ka.KeepAlive() {
		t.Fatalf("want the keep-alive, got %q", ka.Raw)
	}
	last := st.next(t)
	if ev := readAs(t, op, last.Data); ev.Kind != a2a.EventError || ev.ErrorCode != a2a.ErrTaskNotFound.Code || bytes.Contains(last.Data, []byte("agent secret")) {
		t.Fatalf("want the gateway's TaskNotFound, got %s", last.Data)
	}
	st.wantCleanEnd(t)
}

// A bridged stream the agent falls silent on ends like an unbridged one:
// with the timeout as its last event in the caller's form, the agent's
// connection and the stream slot released.
func TestBridgeStreamIdle(t *testing.T) {
	released := make(chan struct{})
	u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, "data: "+spell10.statusUpdate(a2a.StateWorking)+"\n\n")
		holdOpen(u, r, released)
	})
	e := start(t, u.url, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "HTTP+JSON"}}
		c.Agents[0].Timeouts.StreamIdle = duration.Duration(250 * time.Millisecond)
	}))
	rq, op := callerRequest(t, form03RPC, a2a.MethodStream)
	st := e.open(t, rq)
	if ev := readAs(t, op, st.next(t).Data); ev.Kind != a2a.EventStatusUpdate {
		t.Fatalf("first event %+v", ev)
	}
	if ev := readAs(t, op, st.next(t).Data); ev.Kind != a2a.EventError || ev.ErrorCode != a2a.ErrUpstreamTimeout.Code {
		t.Fatalf("want the timeout, got %+v", ev)
	}
	st.wantCleanEnd(t)
	waitUntil(t, "the agent's connection is released", released)
	eventually(t, "the stream is released", func() bool { return e.gw.OpenStreams() == 0 })
}
