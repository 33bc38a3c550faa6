package gateway_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// The attack suite: an agent that answers tenant B with tenant A's task id
// in every shape a reader could misread. It passes only if A's id never
// reaches B, in any byte, and B gets INVALID_AGENT_RESPONSE (TaskNotFound
// for an answer naming or referencing a task that is not B's; for an agent
// error, the gateway's own error for its code) with a log line.

// attackCall is one call of B's and what the agent knows of it.
type attackCall struct {
	v     a2a.Version
	rest  bool
	op    a2a.Method
	rpcID string // raw JSON
	ta    string // A's task
	tb    string // B's own task
}

// proto reports whether the call's results are protobuf JSON: member-name
// wrappers, enum states, no kind (1.0, and 0.3 over REST).
func (x *attackCall) proto() bool { return x.v == a2a.V10 || x.rest }

func (x *attackCall) state() string {
	if x.proto() {
		return "TASK_STATE_WORKING"
	}
	return "working"
}

// task is a task object of the call's version with the given members.
func (x *attackCall) task(members string) string {
	return x.taskWith(members, `{"state":"`+x.state()+`"}`)
}

func (x *attackCall) taskWith(members, status string) string {
	kind := ""
	if !x.proto() {
		kind = `"kind":"task",`
	}
	return `{` + kind + members + `,"status":` + status + `}`
}

func (x *attackCall) own() string { return x.task(`"id":"` + x.tb + `","contextId":"ctx-b"`) }

// message is a message of B's task referencing ref, as the call's result:
// wrapped in protobuf JSON, with kind otherwise.
func (x *attackCall) message(refs string) string {
	if x.proto() {
		return `{"message":{"messageId":"m","taskId":"` + x.tb + `","contextId":"ctx-b",` + refs + `}}`
	}
	return `{"kind":"message","messageId":"m","taskId":"` + x.tb + `","contextId":"ctx-b",` + refs + `}`
}

// statusEvent is a status update of B's task whose message has refs.
func (x *attackCall) statusEvent(refs string) string {
	status := `"taskId":"` + x.tb + `","contextId":"ctx-b","status":{"state":"` + x.state() + `","message":{"messageId":"m",` + refs + `}}`
	if x.proto() {
		return `{"statusUpdate":{` + status + `}}`
	}
	return `{"kind":"status-update",` + status + `,"final":false}`
}

// result frames a task as the operation's result: protobuf JSON wraps it
// for sends and stream events.
func (x *attackCall) result(task string) string {
	if x.proto() && (x.op == a2a.MethodSend || x.op == a2a.MethodStream) {
		return `{"task":` + task + `}`
	}
	return task
}

// answer frames a result in the call's binding.
func (x *attackCall) answer(result string) string {
	if x.rest {
		return result
	}
	return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"result":` + result + `}`
}

// other is a result in the other dialect's shape.
func (x *attackCall) other(members string) string {
	if x.proto() {
		return `{"kind":"task",` + members + `,"status":{"state":"working"}}`
	}
	return `{"task":{` + members + `,"status":{"state":"TASK_STATE_WORKING"}}}`
}

func (x *attackCall) errorInfo(reason string) string {
	return `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"a2a-protocol.org","metadata":{"taskId":"` + x.ta + `"}}`
}

// attack is one misbehaving answer: its HTTP status and body, and the
// error B must get.
type attack struct {
	name   string
	status int
	body   func(x *attackCall) string
	want   *a2a.Error
	// streamOnly or jsonOnly limit an attack to one kind of answer.
	streamOnly, jsonOnly bool
	// reason, when set, is the reason the audit log must give.
	reason string
}

func attacks() []attack {
	bad := a2a.ErrInvalidAgentResponse
	const refused = "foreign_reference_in_answer"
	refs := func(ids ...string) string { return `"referenceTaskIds":["` + strings.Join(ids, `","`) + `"]` }
	return []attack{
		{name: "A's task referenced by a message result", body: func(x *attackCall) string {
			return x.answer(x.message(refs(x.tb, x.ta)))
		}, want: a2a.ErrTaskNotFound, reason: refused},
		{name: "an unknown task referenced by a message result", body: func(x *attackCall) string {
			return x.answer(x.message(refs(x.ta + "-unknown")))
		}, want: a2a.ErrTaskNotFound, reason: refused},
		{name: "A's task referenced by status.message", body: func(x *attackCall) string {
			return x.answer(x.result(x.taskWith(`"id":"`+x.tb+`","contextId":"ctx-b"`, `{"state":"`+x.state()+`","message":{"messageId":"m",`+refs(x.ta)+`}}`)))
		}, want: a2a.ErrTaskNotFound, reason: refused},
		{name: "A's task referenced in history", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","contextId":"ctx-b","history":[{"messageId":"m"},{"messageId":"n",` + refs(x.ta) + `}]`)))
		}, want: a2a.ErrTaskNotFound, reason: refused},
		{name: "A's task referenced in history, snake_case", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","contextId":"ctx-b","history":[{"messageId":"m","reference_task_ids":["` + x.ta + `"]}]`)))
		}, want: a2a.ErrTaskNotFound, reason: refused},
		{name: "A's task referenced by a status update event", body: func(x *attackCall) string {
			return x.answer(x.statusEvent(refs(x.ta)))
		}, want: a2a.ErrTaskNotFound, reason: refused, streamOnly: true},
		{name: "foreign task, plainly", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.ta + `","contextId":"ctx-b"`)))
		}, want: a2a.ErrTaskNotFound},
		{name: "duplicate id", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","id":"` + x.ta + `"`)))
		}, want: bad},
		{name: "duplicate id, foreign first", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.ta + `","id":"` + x.tb + `"`)))
		}, want: bad},
		{name: "ID case variant", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","ID":"` + x.ta + `"`)))
		}, want: bad},
		{name: "Id alone", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"Id":"` + x.ta + `"`)))
		}, want: bad},
		{name: "escaped duplicate id", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","\u0069d":"` + x.ta + `"`)))
		}, want: bad},
		{name: "Task member", body: func(x *attackCall) string {
			return x.answer(`{"Task":` + x.task(`"id":"`+x.ta+`"`) + `}`)
		}, want: bad},
		{name: "kind Task", body: func(x *attackCall) string {
			return x.answer(`{"kind":"Task","id":"` + x.ta + `","status":{"state":"` + x.state() + `"}}`)
		}, want: bad},
		{name: "the other dialect's shape", body: func(x *attackCall) string {
			return x.answer(x.other(`"id":"` + x.ta + `"`))
		}, want: bad},
		{name: "the other binding's shape", body: func(x *attackCall) string {
			if x.rest {
				return `{"jsonrpc":"2.0","id":1,"result":` + x.result(x.task(`"id":"`+x.ta+`"`)) + `}`
			}
			return x.result(x.task(`"id":"` + x.ta + `"`))
		}, want: bad},
		{name: "the other binding's error", body: func(x *attackCall) string {
			if x.rest {
				return `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"` + x.ta + `","data":{"taskId":"` + x.ta + `"}}}`
			}
			return `{"error":{"code":404,"status":"NOT_FOUND","message":"` + x.ta + `","details":[` + x.errorInfo("TASK_NOT_FOUND") + `]}}`
		}, want: bad},
		{name: "two results", body: func(x *attackCall) string {
			if x.rest {
				return strings.TrimSuffix(x.result(x.own()), "}") + `,"message":{"messageId":"m","taskId":"` + x.ta + `"}}`
			}
			return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"result":` + x.result(x.own()) + `,"result":` + x.result(x.task(`"id":"`+x.ta+`"`)) + `}`
		}, want: bad},
		{name: "escaped second result", body: func(x *attackCall) string {
			if x.rest {
				return strings.TrimSuffix(x.result(x.own()), "}") + `,"t\u0061sk":{"id":"` + x.ta + `"}}`
			}
			return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"result":` + x.result(x.own()) + `,"r\u0065sult":` + x.result(x.task(`"id":"`+x.ta+`"`)) + `}`
		}, want: bad},
		{name: "member the protocol does not define", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","taskId":"` + x.ta + `"`)))
		}, want: bad},
		{name: "envelope member the protocol does not define", body: func(x *attackCall) string {
			if x.rest {
				return strings.TrimSuffix(x.result(x.own()), "}") + `,"jsonrpc":"2.0"}`
			}
			return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"result":` + x.result(x.own()) + `,"data":{"taskId":"` + x.ta + `"}}`
		}, want: bad},
		{name: "another request's id", body: func(x *attackCall) string {
			if x.rest {
				return `{"jsonrpc":"2.0","id":"other","result":` + x.result(x.task(`"id":"`+x.ta+`"`)) + `}`
			}
			return `{"jsonrpc":"2.0","id":"other","result":` + x.result(x.task(`"id":"`+x.ta+`"`)) + `}`
		}, want: bad},
		{name: "history names A's task", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","history":[{"messageId":"m","role":"user","taskId":"` + x.ta + `","parts":[]}]`)))
		}, want: bad},
		{name: "status.message names A's task", body: func(x *attackCall) string {
			return x.answer(x.result(x.taskWith(`"id":"`+x.tb+`"`, `{"state":"`+x.state()+`","message":{"messageId":"m","taskId":"`+x.ta+`","parts":[]}}`)))
		}, want: bad},
		{name: "duplicate in status.message", body: func(x *attackCall) string {
			return x.answer(x.result(x.taskWith(`"id":"`+x.tb+`"`, `{"state":"`+x.state()+`","message":{"messageId":"m","taskId":"`+x.tb+`","taskId":"`+x.ta+`"}}`)))
		}, want: bad},
		{name: "duplicate deep in artifacts", body: func(x *attackCall) string {
			return x.answer(x.result(x.task(`"id":"` + x.tb + `","artifacts":[{"artifactId":"a","parts":[{"data":{"ref":"x","ref":"` + x.ta + `"}}]}]`)))
		}, want: bad},
		{name: "trailing value", body: func(x *attackCall) string {
			return x.answer(x.result(x.own())) + `{"id":"` + x.ta + `"}`
		}, want: bad},
		{name: "truncated", body: func(x *attackCall) string {
			a := x.answer(x.result(x.task(`"id":"` + x.ta + `"`)))
			return a[:len(a)-2]
		}, want: bad},
		{name: "A's id in error data or details", body: func(x *attackCall) string {
			if x.rest && x.v == a2a.V10 {
				return `{"error":{"code":404,"status":"NOT_FOUND","message":"task ` + x.ta + ` not found","details":[{"@type":"type.googleapis.com/google.rpc.ResourceInfo","resourceName":"` + x.ta + `"},` + x.errorInfo("TASK_NOT_FOUND") + `]}}`
			}
			if x.rest {
				return `{"code":-32001,"message":"task ` + x.ta + ` not found","data":{"taskId":"` + x.ta + `"}}`
			}
			return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"error":{"code":-32001,"message":"task ` + x.ta + ` not found","data":[` + x.errorInfo("TASK_NOT_FOUND") + `,{"taskId":"` + x.ta + `"}]}}`
		}, status: http.StatusNotFound, want: a2a.ErrTaskNotFound, jsonOnly: true},
		{name: "A's id in an unknown error", body: func(x *attackCall) string {
			if x.rest && x.v == a2a.V10 {
				return `{"error":{"code":500,"status":"INTERNAL","message":"` + x.ta + `","details":[]}}`
			}
			if x.rest {
				return `{"code":-32099,"message":"` + x.ta + `"}`
			}
			return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"error":{"code":-32099,"message":"` + x.ta + `","data":"` + x.ta + `"}}`
		}, status: http.StatusInternalServerError, want: a2a.AgentError(-32099), jsonOnly: true},
		{name: "duplicate in an error", body: func(x *attackCall) string {
			if x.rest && x.v == a2a.V10 {
				return `{"error":{"code":404,"details":[` + x.errorInfo("TASK_NOT_FOUND") + `],"details":[{"id":"` + x.ta + `"}]}}`
			}
			if x.rest {
				return `{"code":-32001,"code":-32099,"message":"` + x.ta + `"}`
			}
			return `{"jsonrpc":"2.0","id":` + x.rpcID + `,"error":{"code":-32001,"data":{"id":"x","id":"` + x.ta + `"}}}`
		}, status: http.StatusNotFound, want: bad, jsonOnly: true},
		{name: "not JSON", body: func(x *attackCall) string {
			return `<html><body>task ` + x.ta + ` failed</body></html>`
		}, status: http.StatusBadGateway, want: bad, jsonOnly: true},
	}
}

// misbehaving is a loopback agent: it answers honestly with the task ids
// it is told to create, or with the answer the test sets.
type misbehaving struct {
	mu   sync.Mutex
	next script
}

// script is the agent's next answer.
type script struct {
	honest string // the id of the task to create
	status int
	body   string
	// sse answers with an event stream: first (when set), then body.
	sse   bool
	first string
}

func (m *misbehaving) set(f func(s *script)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next = script{}
	f(&m.next)
}

func (m *misbehaving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(r.Body)
	_ = json.Unmarshal(body.Bytes(), &env)
	m.mu.Lock()
	sc := m.next
	m.mu.Unlock()
	honest, status, answer, sse, first := sc.honest, sc.status, sc.body, sc.sse, sc.first
	if honest != "" {
		x := attackCallOf(r, env.ID)
		x.op = a2a.MethodSend
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(x.answer(x.result(x.task(`"id":"` + honest + `","contextId":"ctx-` + honest + `"`)))))
		return
	}
	if sse {
		w.Header().Set("Content-Type", a2a.SSEContentType)
		w.WriteHeader(http.StatusOK)
		if first != "" {
			_, _ = w.Write([]byte("data: " + first + "\n\n"))
		}
		_, _ = w.Write([]byte("data: " + answer + "\n\n"))
		return
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(answer))
}

// attackCallOf tells the version and binding of a forwarded request.
func attackCallOf(r *http.Request, id json.RawMessage) *attackCall {
	x := &attackCall{v: a2a.V03, rpcID: string(id)}
	if r.Header.Get(a2a.VersionHeader) == "1.0" {
		x.v = a2a.V10
	}
	x.rest = len(id) == 0
	return x
}

// call is one of B's requests in a version and binding.
type call struct {
	v    a2a.Version
	rest bool
}

func (c call) String() string {
	b := "JSON-RPC"
	if c.rest {
		b = "REST"
	}
	return b + " " + c.v.String()
}

// request builds c's request for op on task (send and stream name none).
func (c call) request(op a2a.Method, task, rpcID string) request {
	h := header(a2a.VersionHeader, c.v.String())
	if c.rest {
		prefix := ""
		msg := `{"message":{"messageId":"` + rpcID + `","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
		if c.v != a2a.V10 {
			prefix = "/v1"
			msg = `{"message":{"messageId":"` + rpcID + `","role":"ROLE_USER","content":[{"text":"hi"}]}}`
		}
		switch op {
		case a2a.MethodSend:
			return request{method: http.MethodPost, path: prefix + "/message:send", header: h, body: []byte(msg)}
		case a2a.MethodStream:
			return request{method: http.MethodPost, path: prefix + "/message:stream", header: h, body: []byte(msg)}
		case a2a.MethodGetTask:
			return request{method: http.MethodGet, path: prefix + "/tasks/" + task, header: h}
		case a2a.MethodCancelTask:
			return request{method: http.MethodPost, path: prefix + "/tasks/" + task + ":cancel", header: h, body: []byte(`{}`)}
		case a2a.MethodListTasks:
			return request{method: http.MethodGet, path: prefix + "/tasks", header: h}
		}
	}
	params := `{"id":"` + task + `"}`
	switch op {
	case a2a.MethodSend, a2a.MethodStream:
		params = `{"message":{"messageId":"` + rpcID + `","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
		if c.v != a2a.V10 {
			params = `{"message":{"kind":"message","messageId":"` + rpcID + `","role":"user","parts":[{"kind":"text","text":"hi"}]}}`
		}
	case a2a.MethodListTasks:
		params = `{}`
	}
	return request{method: http.MethodPost, path: "/", header: h, body: rpcBody(op, c.v, rpcID, params), rpc: true}
}

// wantError is the exact answer B must get for e: the gateway's error in
// the call's shape.
func (c call) wantError(e *a2a.Error, rpcID string) (int, []byte) {
	if c.rest {
		return e.HTTPStatus, e.RESTErrorBody(c.v)
	}
	status := http.StatusOK
	return status, e.RPCErrorBody(c.v, json.RawMessage(`"`+rpcID+`"`))
}

// noForeignID fails if A's task id is anywhere in what B received.
func noForeignID(t *testing.T, ta string, resp *http.Response, body []byte) {
	t.Helper()
	if bytes.Contains(body, []byte(ta)) {
		t.Fatalf("A's task id reached B in the body: %s", body)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			if strings.Contains(v, ta) || strings.Contains(k, ta) {
				t.Fatalf("A's task id reached B in header %s: %s", k, v)
			}
		}
	}
}

func TestAgentAnswerAttacks(t *testing.T) {
	log := &syncBuffer{}
	agent := &misbehaving{}
	evil := httptest.NewServer(agent)
	t.Cleanup(evil.Close)
	env := gwtest.StartLogged(t, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo})), func(cfg *config.Config) {
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "evil", URL: evil.URL})
	})
	a := newCaller(t, env)
	a.token = env.Token(t, "tenant-a", "alice")
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	mount := env.Gateway + "/agents/evil"

	calls := []call{{a2a.V10, false}, {a2a.V03, false}, {a2a.V10, true}, {a2a.V03, true}}
	// create makes a task of the caller's through the gateway.
	create := func(t *testing.T, who *caller, c call, id string) {
		t.Helper()
		agent.set(func(m *script) { m.honest = id })
		rq := c.request(a2a.MethodSend, "", who.nextID("m"))
		rq.path = mount + rq.path
		resp, body := who.do(t, rq)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(id)) {
			t.Fatalf("creating %s: HTTP %d %s", id, resp.StatusCode, body)
		}
	}

	n := 0
	for _, c := range calls {
		ta, tb := "task-of-a-"+strings.ReplaceAll(c.String(), " ", "-"), "task-of-b-"+strings.ReplaceAll(c.String(), " ", "-")
		create(t, a, c, ta)
		create(t, b, c, tb)
		ops := []a2a.Method{a2a.MethodSend, a2a.MethodGetTask, a2a.MethodCancelTask, a2a.MethodStream}
		for _, op := range ops {
			for _, at := range attacks() {
				for _, mid := range []bool{false, true} {
					if mid && (op != a2a.MethodStream || at.jsonOnly) || at.streamOnly && op != a2a.MethodStream {
						continue
					}
					name := c.String() + "/" + op.String() + "/" + at.name
					if mid {
						name += "/after a first event"
					}
					t.Run(name, func(t *testing.T) {
						n++
						rpcID := b.nextID("r")
						x := &attackCall{v: c.v, rest: c.rest, op: op, rpcID: `"` + rpcID + `"`, ta: ta, tb: tb}
						agent.set(func(m *script) {
							m.status, m.body = at.status, at.body(x)
							if op == a2a.MethodStream && !at.jsonOnly {
								m.sse = true
								if mid {
									m.first = x.answer(x.result(x.own()))
								}
							}
						})
						log.Reset()
						task := ""
						if op == a2a.MethodGetTask || op == a2a.MethodCancelTask {
							task = tb
						}
						rq := c.request(op, task, rpcID)
						rq.path = mount + rq.path
						resp, body := b.do(t, rq)
						noForeignID(t, ta, resp, body)
						status, want := c.wantError(at.want, rpcID)
						if mid {
							// The stream had begun: it ends with the error as its last event.
							if !bytes.Contains(body, []byte(tb)) || !bytes.HasSuffix(body, append(append([]byte("data: "), want...), '\n', '\n')) {
								t.Fatalf("stream\n%s\nwant B's event, then data: %s", body, want)
							}
						} else if !c.rest && op == a2a.MethodStream {
							// A JSON-RPC stream refused before its first event is that one
							// error event, as SDK servers send it.
							if resp.StatusCode != http.StatusOK || !bytes.Equal(body, append(append([]byte("data: "), want...), '\n', '\n')) {
								t.Fatalf("HTTP %d %s\nwant HTTP 200 data: %s", resp.StatusCode, body, want)
							}
						} else if resp.StatusCode != status || !bytes.Equal(body, want) {
							t.Fatalf("HTTP %d %s\nwant HTTP %d %s", resp.StatusCode, body, status, want)
						}
						if at.want == a2a.ErrInvalidAgentResponse && !strings.Contains(log.String(), "agent answer refused") &&
							!strings.Contains(log.String(), "agent error answer refused") {
							t.Fatalf("no log line for the refused answer:\n%s", log.String())
						}
						if at.reason != "" && !strings.Contains(log.String(), "reason="+at.reason) {
							t.Fatalf("no log line with reason %s:\n%s", at.reason, log.String())
						}
					})
				}
			}
		}
		referenceOwn(t, agent, b, c, mount, tb, func(id string) { create(t, b, c, id) })
		otherTaskAttacks(t, agent, b, c, mount, tb, func(id string) { create(t, b, c, id) }, log)
		if c.v == a2a.V10 {
			listAttacks(t, agent, b, c, mount, ta, tb)
		}
	}
	if n < 300 {
		t.Fatalf("only %d probes ran", n)
	}
}

// referenceOwn: answers that reference another task of B's own reach B
// unchanged.
func referenceOwn(t *testing.T, agent *misbehaving, b *caller, c call, mount, tb string, create func(id string)) {
	ref := tb + "-referenced"
	create(ref)
	refs := `"referenceTaskIds":["` + ref + `"]`
	for _, shape := range []struct {
		name   string
		result func(x *attackCall) string
	}{
		{"message result", func(x *attackCall) string { return x.message(refs) }},
		{"history", func(x *attackCall) string {
			return x.result(x.task(`"id":"` + tb + `","contextId":"ctx-b","history":[{"messageId":"m",` + refs + `}]`))
		}},
	} {
		t.Run(c.String()+"/send/B's own task referenced by "+shape.name, func(t *testing.T) {
			rpcID := b.nextID("r")
			x := &attackCall{v: c.v, rest: c.rest, op: a2a.MethodSend, rpcID: `"` + rpcID + `"`, tb: tb}
			answer := x.answer(shape.result(x))
			agent.set(func(m *script) { m.body = answer })
			rq := c.request(a2a.MethodSend, "", rpcID)
			rq.path = mount + rq.path
			resp, body := b.do(t, rq)
			if resp.StatusCode != http.StatusOK || string(body) != answer {
				t.Fatalf("HTTP %d %s\nwant HTTP 200 %s", resp.StatusCode, body, answer)
			}
		})
	}
}

// listAttacks answers B's ListTasks with A's task hidden in each shape.
func listAttacks(t *testing.T, agent *misbehaving, b *caller, c call, mount, ta, tb string) {
	x := &attackCall{v: c.v, rest: c.rest, op: a2a.MethodListTasks, ta: ta, tb: tb}
	page := func(tasks string) string { return `{"tasks":[` + tasks + `],"nextPageToken":""}` }
	refers := func(ref string) string {
		return x.task(`"id":"` + tb + `","contextId":"ctx-b","history":[{"messageId":"m","taskId":"` + tb + `","referenceTaskIds":["` + ref + `"]}]`)
	}
	cases := []struct {
		name   string
		result string
		want   *a2a.Error // nil: a page with B's task only
		// leftOut: B's own task is left out of the page, since it
		// references a task B does not own.
		leftOut bool
	}{
		{"A's task listed plainly", page(x.own() + `,` + x.task(`"id":"`+ta+`"`)), nil, false},
		{"B's task references A's", page(refers(ta)), nil, true},
		{"B's task references an unknown task", page(refers("never-seen-task")), nil, true},
		{"duplicate id", page(x.task(`"id":"` + tb + `","id":"` + ta + `"`)), a2a.ErrInvalidAgentResponse, false},
		{"ID case variant", page(x.task(`"id":"` + tb + `","ID":"` + ta + `"`)), a2a.ErrInvalidAgentResponse, false},
		{"escaped duplicate id", page(x.task(`"id":"` + tb + `","\u0069d":"` + ta + `"`)), a2a.ErrInvalidAgentResponse, false},
		{"duplicate tasks", `{"tasks":[` + x.own() + `],"tasks":[` + x.task(`"id":"`+ta+`"`) + `]}`, a2a.ErrInvalidAgentResponse, false},
		{"Tasks case variant", `{"tasks":[` + x.own() + `],"Tasks":[` + x.task(`"id":"`+ta+`"`) + `]}`, a2a.ErrInvalidAgentResponse, false},
		{"wrapped task", page(`{"task":` + x.task(`"id":"`+ta+`"`) + `}`), a2a.ErrInvalidAgentResponse, false},
		{"kind on 1.0", page(`{"kind":"task","id":"` + ta + `","status":{"state":"working"}}`), a2a.ErrInvalidAgentResponse, false},
		{"history names A's task", page(x.task(`"id":"` + tb + `","history":[{"messageId":"m","taskId":"` + ta + `"}]`)), a2a.ErrInvalidAgentResponse, false},
		{"a task without an id", page(x.own() + `,{"Id":"` + ta + `","status":{}}`), a2a.ErrInvalidAgentResponse, false},
		{"member the protocol does not define", `{"tasks":[` + x.own() + `],"hidden":[` + x.task(`"id":"`+ta+`"`) + `]}`, a2a.ErrInvalidAgentResponse, false},
	}
	for _, tc := range cases {
		t.Run(c.String()+"/list/"+tc.name, func(t *testing.T) {
			rpcID := b.nextID("r")
			x.rpcID = `"` + rpcID + `"`
			agent.set(func(m *script) { m.body = x.answer(tc.result) })
			rq := c.request(a2a.MethodListTasks, "", rpcID)
			rq.path = mount + rq.path
			resp, body := b.do(t, rq)
			noForeignID(t, ta, resp, body)
			if tc.want == nil {
				if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(tb)) != !tc.leftOut {
					t.Fatalf("HTTP %d %s, want B's page (B's task left out: %v)", resp.StatusCode, body, tc.leftOut)
				}
				return
			}
			status, want := c.wantError(tc.want, rpcID)
			if resp.StatusCode != status || !bytes.Equal(body, want) {
				t.Fatalf("HTTP %d %s\nwant HTTP %d %s", resp.StatusCode, body, status, want)
			}
		})
	}
}

// otherTaskAttacks: an answer to a get or cancel of B's task that names
// another task, one nobody owns or another of B's own, is withheld as
// TaskNotFound with its reason logged, and the task nobody owned does not
// become B's.
func otherTaskAttacks(t *testing.T, agent *misbehaving, b *caller, c call, mount, tb string, create func(id string), log *syncBuffer) {
	t.Helper()
	unknown, second := tb+"-nobody", tb+"-second"
	create(second)
	answerAbout := func(op a2a.Method, rpcID, id string) {
		x := &attackCall{v: c.v, rest: c.rest, op: op, rpcID: `"` + rpcID + `"`, tb: tb}
		agent.set(func(m *script) { m.body = x.answer(x.result(x.task(`"id":"` + id + `","contextId":"ctx-b"`))) })
	}
	for _, op := range []a2a.Method{a2a.MethodGetTask, a2a.MethodCancelTask} {
		for _, other := range []string{unknown, second} {
			t.Run(c.String()+"/"+op.String()+"/an answer about "+other, func(t *testing.T) {
				rpcID := b.nextID("r")
				answerAbout(op, rpcID, other)
				log.Reset()
				rq := c.request(op, tb, rpcID)
				rq.path = mount + rq.path
				resp, body := b.do(t, rq)
				if status, want := c.wantError(a2a.ErrTaskNotFound, rpcID); resp.StatusCode != status || !bytes.Equal(body, want) {
					t.Fatalf("HTTP %d %s\nwant HTTP %d %s", resp.StatusCode, body, status, want)
				}
				if !strings.Contains(log.String(), "reason=other_task_in_answer") {
					t.Fatalf("no log line with reason other_task_in_answer:\n%s", log.String())
				}
			})
		}
	}
	t.Run(c.String()+"/the other task stays unowned", func(t *testing.T) {
		rpcID := b.nextID("r")
		answerAbout(a2a.MethodGetTask, rpcID, unknown)
		rq := c.request(a2a.MethodGetTask, unknown, rpcID)
		rq.path = mount + rq.path
		resp, body := b.do(t, rq)
		if status, want := c.wantError(a2a.ErrTaskNotFound, rpcID); resp.StatusCode != status || !bytes.Equal(body, want) {
			t.Fatalf("reading %s: HTTP %d %s\nwant HTTP %d %s", unknown, resp.StatusCode, body, status, want)
		}
	})
}
