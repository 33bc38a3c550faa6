package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// Attacks on the bridge one step off the paths it was built for.

// viaTwin sends rq to the unbridged second mount of the agent instead.
func viaTwin(env *gwtest.Env, rq request) request {
	rq.path = env.Gateway + "/agents/twin" + rq.path
	return rq
}

// withTwin mounts the demo agent a second time, unbridged, at the same
// URL: both mounts share the agent's records.
func withTwin(c *config.Config) {
	c.Agents = append(c.Agents, config.Agent{Name: "twin", URL: c.Agents[0].URL + "/"})
}

// Ownership is the agent's, not the mount's: a task created through the
// bridged mount is another tenant's TaskNotFound through the unbridged one
// and the other way round, and the owner reads it through both; a retry of
// a send through the other mount does not reach the agent twice.
func TestBridgeAttackTwoMounts(t *testing.T) {
	env := bridgedEnv(t, withTwin)
	owner, other := newCaller(t, env), newCaller(t, env)
	other.token = env.Token(t, "globex", "mallory")
	native := dialect{"1.0 JSON-RPC", a2a.V10, true}
	type mount struct {
		name string
		via  func(request) request
	}
	bridged := mount{"bridged", func(rq request) request { return rq }}
	twin := mount{"twin", func(rq request) request { return viaTwin(env, rq) }}
	for _, d := range bridgedDialects {
		for _, create := range []struct {
			m mount
			d dialect
		}{{bridged, d}, {twin, native}} {
			t.Run(d.name+"/created via "+create.m.name, func(t *testing.T) {
				msgID := owner.nextID("m")
				rq := create.m.via(create.d.send(owner, msgID, "complete hi"))
				resp, body := owner.do(t, rq)
				ev := create.d.answer(t, rq, resp, body)
				if ev.Kind != a2a.EventTask || ev.State != a2a.StateCompleted {
					t.Fatalf("send: HTTP %d %+v: %s", resp.StatusCode, ev, body)
				}
				task := ev.TaskID
				for _, read := range []struct {
					m mount
					d dialect
				}{{bridged, d}, {twin, native}} {
					rq := read.m.via(read.d.get(other, task))
					resp, body := other.do(t, rq)
					wantErrorCode(t, read.d, read.d.answer(t, rq, resp, body), a2a.ErrTaskNotFound, body)
					rq = read.m.via(read.d.get(owner, task))
					resp, body = owner.do(t, rq)
					if got := read.d.answer(t, rq, resp, body); got.Kind != a2a.EventTask || got.TaskID != task {
						t.Fatalf("the owner reads through %s: %+v: %s", read.m.name, got, body)
					}
				}
				// The retry through the other mount, in either form.
				for _, retry := range []struct {
					m mount
					d dialect
				}{{bridged, d}, {twin, native}} {
					rq := retry.m.via(retry.d.send(owner, msgID, "complete hi"))
					resp, body := owner.do(t, rq)
					if resp.StatusCode >= 500 {
						t.Fatalf("retry through %s: HTTP %d: %s", retry.m.name, resp.StatusCode, body)
					}
				}
				if n := sendsReaching(env, msgID); n != 1 {
					t.Fatalf("%d sends of %s reached the agent, want 1", n, msgID)
				}
			})
		}
	}
}

// A bridged request naming another tenant's task anywhere the caller's
// form lets it (the task, the message's taskId, referenceTaskIds) is
// TaskNotFound, and never reaches the agent.
func TestBridgeAttackForeignTaskInMessage(t *testing.T) {
	env := bridgedEnv(t)
	owner, other := newCaller(t, env), newCaller(t, env)
	other.token = env.Token(t, "globex", "mallory")
	native := dialect{"1.0 JSON-RPC", a2a.V10, true}
	rq := native.send(owner, owner.nextID("m"), "input")
	resp, body := owner.do(t, rq)
	ev := native.answer(t, rq, resp, body)
	if ev.Kind != a2a.EventTask || ev.TaskID == "" {
		t.Fatalf("send: %+v: %s", ev, body)
	}
	victim, victimCtx := ev.TaskID, ev.ContextID
	d := dialect{"0.3 JSON-RPC", a2a.V03, true}
	for name, msg := range map[string]string{
		"taskId":           `{"kind":"message","messageId":"MID","role":"user","parts":[{"kind":"text","text":"complete"}],"taskId":"` + victim + `"}`,
		"referenceTaskIds": `{"kind":"message","messageId":"MID","role":"user","parts":[{"kind":"text","text":"complete"}],"referenceTaskIds":["` + victim + `"]}`,
		"contextId":        `{"kind":"message","messageId":"MID","role":"user","parts":[{"kind":"text","text":"complete"}],"contextId":"` + victimCtx + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			env.Agent.ResetRequests()
			mid := other.nextID("m")
			params := `{"message":` + replaceMID(msg, mid) + `,"configuration":{"blocking":true}}`
			rq := request{method: http.MethodPost, path: "/", rpc: true, body: d.rpcRequest(a2a.MethodSend, other.nextID("r"), params)}
			resp, body := other.do(t, rq)
			wantErrorCode(t, d, d.answer(t, rq, resp, body), a2a.ErrTaskNotFound, body)
			if n := sendsReaching(env, mid); n != 0 {
				t.Fatalf("the send naming another tenant's %s reached the agent", name)
			}
		})
	}
}

func replaceMID(msg, id string) string {
	for i := 0; i+3 <= len(msg); i++ {
		if msg[i:i+3] == "MID" {
			return msg[:i] + id + msg[i+3:]
		}
	}
	return msg
}

// agentForm is the form a bridged misbehaving agent speaks: the attack
// suite's answers are spelled in it.
type agentForm struct {
	call
	binding string
}

var agentForms = []agentForm{
	{call{a2a.V10, false}, "JSONRPC"}, {call{a2a.V03, false}, "JSONRPC"},
	{call{a2a.V10, true}, "HTTP+JSON"}, {call{a2a.V03, true}, "HTTP+JSON"},
}

// errorOf reads the error a caller in form c got: the whole answer, or the
// last event of a stream.
func errorOf(t *testing.T, c call, resp *http.Response, body []byte, stream bool) (code int, raw []byte) {
	t.Helper()
	raw = body
	if stream && strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
		raw = bytes.TrimPrefix(lines[len(lines)-1], []byte("data: "))
	}
	if c.rest {
		ev, err := a2a.ReadRESTError(c.v, raw)
		if err != nil {
			t.Fatalf("not a %s error (%v): %s", c, err, body)
		}
		return ev.ErrorCode, raw
	}
	var got struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || got.Error == nil {
		t.Fatalf("not a JSON-RPC error (%v): %s", err, body)
	}
	return got.Error.Code, raw
}

// untranslatable is what the bridge says of an answer it cannot spell in
// the caller's form.
const untranslatable = "the agent's answer cannot be spelled in"

// The unbridged answer attack suite (answer_attack_test.go) through the
// bridge: an agent in each JSON form answering tenant B, through a bridged
// mount, with A's task id in every shape a reader could misread, in the
// agent's own form. B, calling in every other form, gets the error the
// unbridged suite wants (by its code, in B's form), never A's id.
func TestBridgeAnswerAttacks(t *testing.T) {
	agent := &misbehaving{}
	mounts := make([]string, len(agentForms))
	env := gwtest.Start(t, func(cfg *config.Config) {
		for i, af := range agentForms {
			// A server of its own per mount: the mounts keep their records apart.
			evil := httptest.NewServer(agent)
			t.Cleanup(evil.Close)
			mounts[i] = "evil-" + strconv.Itoa(i)
			cfg.Agents = append(cfg.Agents, config.Agent{Name: mounts[i], URL: evil.URL,
				Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: af.v.String(), Binding: af.binding}}})
		}
	})
	a := newCaller(t, env)
	a.token = env.Token(t, "tenant-a", "alice")
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	calls := []call{{a2a.V10, false}, {a2a.V03, false}, {a2a.V10, true}, {a2a.V03, true}}

	n := 0
	for i, af := range agentForms {
		mount := env.Gateway + "/agents/" + mounts[i]
		create := func(t *testing.T, who *caller, c call, id string) {
			t.Helper()
			agent.set(func(m *script) { m.honest = id })
			rq := c.request(a2a.MethodSend, "", who.nextID("m"))
			rq.path = mount + rq.path
			resp, body := who.do(t, rq)
			if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(id)) {
				t.Fatalf("creating %s through the bridge: HTTP %d %s", id, resp.StatusCode, body)
			}
		}
		for _, c := range calls {
			if c == af.call {
				continue // not bridged
			}
			name := "agent " + af.String() + "/caller " + c.String()
			slug := strings.NewReplacer(" ", "-", "/", "-").Replace(name)
			ta, tb := "task-of-a-"+slug, "task-of-b-"+slug
			create(t, a, c, ta)
			create(t, b, c, tb)
			for _, op := range []a2a.Method{a2a.MethodSend, a2a.MethodGetTask, a2a.MethodCancelTask, a2a.MethodStream} {
				for _, at := range append(attacks(), translatableAttacks()...) {
					for _, mid := range []bool{false, true} {
						if mid && (op != a2a.MethodStream || at.jsonOnly) || at.streamOnly && op != a2a.MethodStream {
							continue
						}
						sub := name + "/" + op.String() + "/" + at.name
						if mid {
							sub += "/after a first event"
						}
						t.Run(sub, func(t *testing.T) {
							n++
							rpcID := b.nextID("r")
							// The agent is asked with the caller's JSON-RPC id, or
							// the bridge's own for a caller without one.
							agentID := `1`
							if !c.rest {
								agentID = `"` + rpcID + `"`
							}
							x := &attackCall{v: af.v, rest: af.rest, op: op, rpcID: agentID, ta: ta, tb: tb}
							agent.set(func(m *script) {
								m.status, m.body = at.status, at.body(x)
								if op == a2a.MethodStream && !at.jsonOnly {
									m.sse = true
									if mid {
										m.first = x.answer(x.result(x.own()))
									}
								}
							})
							task := ""
							if op == a2a.MethodGetTask || op == a2a.MethodCancelTask {
								task = tb
							}
							rq := c.request(op, task, rpcID)
							rq.path = mount + rq.path
							resp, body := b.do(t, rq)
							noForeignID(t, ta, resp, body)
							if mid && !bytes.Contains(body, []byte(tb)) {
								t.Fatalf("stream\n%s\nwant B's event first", body)
							}
							status, want := c.wantError(at.want, rpcID)
							if op != a2a.MethodStream && resp.StatusCode != status && !bytes.Contains(body, []byte(untranslatable)) {
								t.Fatalf("HTTP %d %s\nwant HTTP %d %s", resp.StatusCode, body, status, want)
							}
							code, raw := errorOf(t, c, resp, body, op == a2a.MethodStream)
							wantCode, _ := errorOf(t, c, &http.Response{}, want, false)
							if at.want == a2a.ErrTaskNotFound && bytes.Contains(raw, []byte(untranslatable)) && !(at.reason == translatable && carriesReferences(af.call) && carriesReferences(c)) {
								// The bridge refused the answer's shape before its ids were
								// judged: that refusal says nothing of whose they are.
								return
							}
							if code != wantCode || c.rest && c.v == a2a.V10 && !bytes.Contains(raw, []byte(at.want.Reason)) {
								t.Fatalf("got error %d: %s\nwant %d: %s", code, body, wantCode, want)
							}
						})
					}
				}
			}
		}
	}
	if n < 600 {
		t.Fatalf("only %d probes ran", n)
	}
}

// translatable marks the attacks of translatableAttacks.
const translatable = "translatable"

// carriesReferences reports whether form c has a message's
// referenceTaskIds (0.3 protobuf JSON has none).
func carriesReferences(c call) bool { return c.v == a2a.V10 || !c.rest }

// translatableAttacks reference A's task from answers the bridge can spell
// in every form that has referenceTaskIds: the ownership check, not the
// translation, must refuse them, with TaskNotFound.
func translatableAttacks() []attack {
	msg := func(x *attackCall, refs string) string {
		switch {
		case x.v == a2a.V10:
			return `{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}],"taskId":"` + x.tb + `","contextId":"ctx-b","referenceTaskIds":[` + refs + `]}`
		case x.rest:
			return `{"messageId":"m","role":"ROLE_AGENT","content":[{"text":"x"}],"taskId":"` + x.tb + `","contextId":"ctx-b","referenceTaskIds":[` + refs + `]}`
		}
		return `{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"x"}],"taskId":"` + x.tb + `","contextId":"ctx-b","referenceTaskIds":[` + refs + `]}`
	}
	result := func(x *attackCall, m string) string {
		if x.op == a2a.MethodGetTask || x.op == a2a.MethodCancelTask {
			// These answer with a task: the message is its history.
			return x.task(`"id":"` + x.tb + `","contextId":"ctx-b","history":[` + m + `]`)
		}
		if x.proto() {
			return `{"message":` + m + `}`
		}
		return m
	}
	return []attack{
		{name: "A's task referenced by a whole message (or history)", body: func(x *attackCall) string {
			return x.answer(result(x, msg(x, `"`+x.ta+`"`)))
		}, want: a2a.ErrTaskNotFound, reason: translatable},
		{name: "A's task referenced, escaped, by a whole message", body: func(x *attackCall) string {
			return x.answer(result(x, msg(x, `"`+strings.Replace(x.ta, "t", `\u0074`, 1)+`"`)))
		}, want: a2a.ErrTaskNotFound, reason: translatable},
		{name: "A's task referenced in a whole task's status message", body: func(x *attackCall) string {
			return x.answer(x.result(x.taskWith(`"id":"`+x.tb+`","contextId":"ctx-b"`, `{"state":"`+x.state()+`","message":`+msg(x, `"`+x.ta+`"`)+`}`)))
		}, want: a2a.ErrTaskNotFound, reason: translatable},
	}
}

// streamAgent is a loopback agent whose every answer is the test's
// handler.
type streamAgent struct {
	mu sync.Mutex
	h  http.HandlerFunc
}

func (s *streamAgent) set(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h = h
}

func (s *streamAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h(w, r)
}

// sseOpen starts an agent's event stream.
func sseOpen(w http.ResponseWriter) {
	w.Header().Set("Content-Type", a2a.SSEContentType)
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sseWrite(w http.ResponseWriter, s string) bool {
	if _, err := io.WriteString(w, s); err != nil {
		return false
	}
	w.(http.Flusher).Flush()
	return true
}

// Bridged streams are bounded as unbridged ones: an agent that sends only
// keep-alives, or an event over the size limit, or an error naming another
// tenant's task mid-stream, gets the caller's stream ended with the
// gateway's own error in the caller's form, and nothing of the agent's
// error reaches the caller.
func TestBridgeAttackStreams(t *testing.T) {
	agent := &streamAgent{}
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	const maxEvent = 4096
	log := &syncBuffer{}
	env := gwtest.StartLogged(t, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo})), func(cfg *config.Config) {
		cfg.Limits.MaxEventBytes = maxEvent
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "streams", URL: srv.URL,
			Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: "0.3", Binding: "JSONRPC"}}})
		cfg.Agents[len(cfg.Agents)-1].Timeouts.StreamIdle = duration.Duration(300 * time.Millisecond)
	})
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	mount := env.Gateway + "/agents/streams"
	// The agent's first event, in 0.3 JSON-RPC: a task of B's. Read before
	// the stream opens: the request's body is gone once the answer starts.
	first := func(r *http.Request) string {
		var env struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&env)
		return `{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"kind":"task","id":"task-b-stream","contextId":"ctx-b","status":{"state":"working"}}}`
	}
	const secret = "task-of-tenant-a-secret"
	for _, sc := range []struct {
		name    string
		handler http.HandlerFunc
		want    *a2a.Error
	}{
		{"keep-alives only", func(w http.ResponseWriter, r *http.Request) {
			sseOpen(w)
			for sseWrite(w, ":\n\n") {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}, a2a.ErrUpstreamTimeout},
		{"keep-alives after an event", func(w http.ResponseWriter, r *http.Request) {
			line := first(r)
			sseOpen(w)
			sseWrite(w, "data: "+line+"\n\n")
			for sseWrite(w, ":\n\n") {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}, a2a.ErrUpstreamTimeout},
		{"an event over the size limit", func(w http.ResponseWriter, r *http.Request) {
			line := first(r)
			sseOpen(w)
			sseWrite(w, "data: "+line+"\n\n")
			sseWrite(w, `data: {"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"task-b-stream","contextId":"ctx-b","status":{"state":"working"},"final":false,"metadata":{"pad":"`+strings.Repeat("x", 2*maxEvent)+`","ref":"`+secret+`"}}}`+"\n\n")
		}, a2a.ErrInvalidAgentResponse},
		{"an error mid-stream naming another tenant's task", func(w http.ResponseWriter, r *http.Request) {
			line := first(r)
			sseOpen(w)
			sseWrite(w, "data: "+line+"\n\n")
			id := line[len(`{"jsonrpc":"2.0","id":`):strings.Index(line, `,"result"`)]
			sseWrite(w, `data: {"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32001,"message":"task `+secret+` not found","data":{"taskId":"`+secret+`"}}}`+"\n\n")
		}, a2a.ErrTaskNotFound},
	} {
		for _, c := range []call{{a2a.V10, false}, {a2a.V10, true}, {a2a.V03, true}} {
			t.Run(sc.name+"/"+c.String(), func(t *testing.T) {
				agent.set(sc.handler)
				rpcID := b.nextID("r")
				rq := c.request(a2a.MethodStream, "", rpcID)
				rq.path = mount + rq.path
				resp, body := b.do(t, rq) // do bounds the call by testTimeout: a stream that never ends fails it
				if bytes.Contains(body, []byte(secret)) {
					t.Fatalf("the agent's error reached the caller: %s", body)
				}
				code, raw := errorOf(t, c, resp, body, true)
				_, want := c.wantError(sc.want, rpcID)
				wantCode, _ := errorOf(t, c, &http.Response{}, want, false)
				if code != wantCode {
					t.Fatalf("the stream ends with %d: %s\nwant %d: %s\n%s", code, raw, wantCode, want, log.String())
				}
			})
		}
	}
}

// A push config given inline with a bridged send, in any version's
// spelling, is the gateway's: checked against the tenant's URL policy and
// taken out, never translated into the agent's form and handed over.
func TestBridgeAttackPushSpellings(t *testing.T) {
	env := startPush(t, func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	})
	var bridged []inlineDialect
	for _, d := range inlineDialects {
		if d.v != a2a.V10 || d.rest {
			d.known = true
			bridged = append(bridged, d)
		}
	}
	pushSpellingsNeverReachTheAgent(t, env, bridged)
}

// An HTTP+JSON agent answering a forwarded push-config call with an empty
// body, which a REST reader lets through for a delete, is no answer to a
// bridged JSON-RPC caller's get or list: INVALID_AGENT_RESPONSE, not a
// result of nothing. A delete answered so is the caller's empty result.
func TestBridgeAttackEmptyAnswer(t *testing.T) {
	agent := &misbehaving{}
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	env := gwtest.Start(t, func(cfg *config.Config) {
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "empty", URL: srv.URL, Push: config.AgentPush{ForwardConfigs: true},
			Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "HTTP+JSON"}}})
	})
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	mount := env.Gateway + "/agents/empty"
	for _, c := range []call{{a2a.V10, false}, {a2a.V03, false}} {
		task := "task-empty-" + c.v.String()
		agent.set(func(m *script) { m.honest = task })
		rq := c.request(a2a.MethodSend, "", b.nextID("m"))
		rq.path = mount + rq.path
		if resp, body := b.do(t, rq); resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(task)) {
			t.Fatalf("creating %s: HTTP %d %s", task, resp.StatusCode, body)
		}
		for _, m := range []a2a.Method{a2a.MethodPushConfigGet, a2a.MethodPushConfigList, a2a.MethodPushConfigDelete} {
			t.Run(c.String()+"/"+m.String(), func(t *testing.T) {
				agent.set(func(s *script) { s.status = http.StatusOK })
				params := `{"taskId":"` + task + `","id":"cfg-1"}`
				switch {
				case c.v == a2a.V03 && m == a2a.MethodPushConfigList:
					params = `{"id":"` + task + `"}`
				case c.v == a2a.V03:
					params = `{"id":"` + task + `","pushNotificationConfigId":"cfg-1"}`
				case m == a2a.MethodPushConfigList:
					params = `{"taskId":"` + task + `"}`
				}
				rpcID := b.nextID("r")
				rq := request{method: http.MethodPost, path: mount + "/", header: header(a2a.VersionHeader, c.v.String()), rpc: true,
					body: []byte(`{"jsonrpc":"2.0","id":"` + rpcID + `","method":"` + a2a.RPCMethodName(m, c.v) + `","params":` + params + `}`)}
				resp, body := b.do(t, rq)
				if !json.Valid(body) {
					t.Fatalf("HTTP %d: the caller got no JSON: %q", resp.StatusCode, body)
				}
				if m == a2a.MethodPushConfigDelete {
					if _, code, err := a2a.UnwrapRPC(body); err != nil || code != 0 {
						t.Fatalf("delete: %s", body)
					}
					return
				}
				if code, _ := errorOf(t, c, resp, body, false); code != a2a.ErrInvalidAgentResponse.Code {
					t.Fatalf("an empty answer to %s: %s", m, body)
				}
			})
		}
	}
}

// A 0.3 agent whose stream leaves its task completed without marking the
// status update final still ends a bridged 0.3 caller's stream with a
// final status update; one that marks a working state final gets no
// second one.
func TestBridgeAttackFinalFlag(t *testing.T) {
	agent := &streamAgent{}
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	env := gwtest.Start(t, func(cfg *config.Config) {
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "final", URL: srv.URL,
			Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: "0.3", Binding: "JSONRPC"}}})
	})
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	for _, sc := range []struct {
		name, state, final string
		wantFinals         int
	}{
		{"completed, not final", "completed", "false", 1},
		{"completed, final", "completed", "true", 1},
		{"working, final", "working", "true", 1},
	} {
		t.Run(sc.name, func(t *testing.T) {
			task := b.nextID("task-final")
			agent.set(func(w http.ResponseWriter, r *http.Request) {
				var rpc struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.NewDecoder(r.Body).Decode(&rpc)
				sseOpen(w)
				id := string(rpc.ID)
				sseWrite(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"task","id":"`+task+`","contextId":"ctx","status":{"state":"working"}}}`+"\n\n")
				sseWrite(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"`+task+`","contextId":"ctx","status":{"state":"`+sc.state+`"},"final":`+sc.final+`}}`+"\n\n")
			})
			rq := call{a2a.V03, true}.request(a2a.MethodStream, "", b.nextID("m"))
			rq.path = env.Gateway + "/agents/final" + rq.path
			resp, body := b.do(t, rq)
			var finals int
			var last []byte
			for _, line := range bytes.Split(body, []byte("\n")) {
				if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
					last = data
					if bytes.Contains(data, []byte(`"final":true`)) {
						finals++
					}
				}
			}
			if resp.StatusCode != http.StatusOK || finals != sc.wantFinals || !bytes.Contains(last, []byte(`"final":true`)) {
				t.Fatalf("HTTP %d, %d final status updates, the last event %s, want %d final and last:\n%s", resp.StatusCode, finals, last, sc.wantFinals, body)
			}
		})
	}
}

// An event stream is no answer to a unary call: it is refused in the
// caller's form, never relayed as a stream, whether the mount bridges the
// call (a 0.3 JSON-RPC agent) or forwards it in the caller's own form.
func TestBridgeAttackStreamToUnary(t *testing.T) {
	agent := &streamAgent{}
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	env := gwtest.Start(t, func(cfg *config.Config) {
		cfg.Agents = append(cfg.Agents,
			config.Agent{Name: "unary", URL: srv.URL,
				Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: "0.3", Binding: "JSONRPC"}}},
			config.Agent{Name: "unary-plain", URL: srv.URL})
	})
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	agent.set(func(w http.ResponseWriter, r *http.Request) {
		var rpc struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&rpc)
		if rpc.ID == nil {
			rpc.ID = json.RawMessage(`1`)
		}
		sseOpen(w)
		sseWrite(w, `data: {"jsonrpc":"2.0","id":`+string(rpc.ID)+`,"result":{"kind":"task","id":"task-unary","contextId":"ctx","status":{"state":"completed"}}}`+"\n\n")
	})
	mounts := []struct {
		name  string
		calls []call
	}{
		// The bridged mount's own form (0.3 JSON-RPC) is not bridged.
		{"unary", []call{{a2a.V10, false}, {a2a.V10, true}, {a2a.V03, true}}},
		{"unary-plain", []call{{a2a.V10, false}, {a2a.V10, true}, {a2a.V03, false}, {a2a.V03, true}}},
	}
	for _, m := range mounts {
		for _, c := range m.calls {
			t.Run(m.name+"/"+c.String(), func(t *testing.T) {
				rpcID := b.nextID("r")
				rq := c.request(a2a.MethodSend, "", rpcID)
				rq.path = env.Gateway + "/agents/" + m.name + rq.path
				resp, body := b.do(t, rq)
				status, want := c.wantError(a2a.ErrInvalidAgentResponse, rpcID)
				if resp.StatusCode != status || !bytes.Equal(body, want) {
					t.Fatalf("HTTP %d %s\nwant HTTP %d %s", resp.StatusCode, body, status, want)
				}
			})
		}
	}
}

// A resubscription the agent answers with events of a task the caller did
// not name (another tenant's, or one nobody has seen) ends the same
// through the bridge as without it: the same error, by code, or none, and
// another tenant's task id never reaches the caller.
func TestBridgeAttackSubscribeForeignTask(t *testing.T) {
	var (
		mu     sync.Mutex
		create string // the task a send creates
		target string // the task the subscription's second event names
	)
	agent := &streamAgent{}
	agent.set(func(w http.ResponseWriter, r *http.Request) {
		var rpc struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ID string `json:"id"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&rpc)
		mu.Lock()
		c, tg := create, target
		mu.Unlock()
		id := string(rpc.ID)
		if rpc.Method == "tasks/get" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"task","id":"`+rpc.Params.ID+`","contextId":"ctx-`+rpc.Params.ID+`","status":{"state":"working"}}}`)
			return
		}
		if rpc.Method == "message/send" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"task","id":"`+c+`","contextId":"ctx-`+c+`","status":{"state":"working"}}}`)
			return
		}
		sseOpen(w)
		sseWrite(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"`+rpc.Params.ID+`","contextId":"ctx-`+rpc.Params.ID+`","status":{"state":"working"},"final":false}}`+"\n\n")
		sseWrite(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"`+tg+`","contextId":"ctx-`+tg+`","status":{"state":"completed"},"final":true}}`+"\n\n")
	})
	plain, bridged := httptest.NewServer(agent), httptest.NewServer(agent)
	t.Cleanup(plain.Close)
	t.Cleanup(bridged.Close)
	env := gwtest.Start(t, func(cfg *config.Config) {
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "sub-plain", URL: plain.URL},
			config.Agent{Name: "sub-bridged", URL: bridged.URL,
				Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: "0.3", Binding: "JSONRPC"}}})
	})
	a, b := newCaller(t, env), newCaller(t, env)
	a.token = env.Token(t, "tenant-a", "alice")
	b.token = env.Token(t, "tenant-b", "bob")
	rpc03 := call{a2a.V03, false}
	newTask := func(t *testing.T, who *caller, mount, id string) {
		t.Helper()
		mu.Lock()
		create = id
		mu.Unlock()
		rq := rpc03.request(a2a.MethodSend, "", who.nextID("m"))
		rq.path = env.Gateway + "/agents/" + mount + rq.path
		if resp, body := who.do(t, rq); resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(id)) {
			t.Fatalf("creating %s: HTTP %d %s", id, resp.StatusCode, body)
		}
	}
	subscribe := func(t *testing.T, c call, mount, task, other string) (int, []byte) {
		t.Helper()
		mu.Lock()
		target = other
		mu.Unlock()
		rpcID := b.nextID("r")
		var rq request
		switch {
		case c.rest:
			rq = request{method: http.MethodGet, path: "/tasks/" + task + ":subscribe", header: header(a2a.VersionHeader, c.v.String())}
			if c.v == a2a.V03 {
				rq = request{method: http.MethodPost, path: "/v1/tasks/" + task + ":subscribe", header: header(a2a.VersionHeader, c.v.String()), body: []byte(`{}`)}
			}
		default:
			rq = request{method: http.MethodPost, path: "/", header: header(a2a.VersionHeader, c.v.String()), rpc: true,
				body: []byte(`{"jsonrpc":"2.0","id":"` + rpcID + `","method":"` + a2a.RPCMethodName(a2a.MethodSubscribe, c.v) + `","params":{"id":"` + task + `"}}`)}
		}
		rq.path = env.Gateway + "/agents/" + mount + rq.path
		resp, body := b.do(t, rq)
		if strings.HasPrefix(other, "task-a-") && bytes.Contains(body, []byte(other)) {
			t.Fatalf("another tenant's task id reached the caller: %s", body)
		}
		if !bytes.Contains(body, []byte(`error`)) {
			return 0, body // the stream ended without an error
		}
		code, _ := errorOf(t, c, resp, body, true)
		return code, body
	}
	for _, mount := range []string{"sub-plain", "sub-bridged"} {
		newTask(t, a, mount, "task-a-"+mount)
		newTask(t, b, mount, "task-b-"+mount)
	}
	for _, other := range []string{"task-a-", "task-nobody-"} {
		t.Run(other, func(t *testing.T) {
			want, plainBody := subscribe(t, rpc03, "sub-plain", "task-b-sub-plain", other+"sub-plain")
			for _, c := range []call{{a2a.V10, false}, {a2a.V10, true}, {a2a.V03, true}} {
				if got, body := subscribe(t, c, "sub-bridged", "task-b-sub-bridged", other+"sub-bridged"); got != want {
					t.Errorf("%s through the bridge ends with %d:\n%s\nwithout the bridge with %d:\n%s", c, got, body, want, plainBody)
				}
			}
		})
	}
}

// An agent that never finishes a bridged answer (its headers, or a body
// begun and never ended) is cut off by the agent's request timeout, as
// unbridged (0.3 JSON-RPC, for comparison): the caller gets the gateway's
// timeout error in its form.
func TestBridgeAttackUnfinishedAnswers(t *testing.T) {
	agent := &streamAgent{}
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	env := gwtest.Start(t, func(cfg *config.Config) {
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "slow", URL: srv.URL,
			Bridge: &config.AgentBridge{Agent: config.BridgeInterface{Version: "0.3", Binding: "JSONRPC"}}})
		cfg.Agents[len(cfg.Agents)-1].Timeouts.Request = duration.Duration(300 * time.Millisecond)
		cfg.Agents = append(cfg.Agents, config.Agent{Name: "slow-plain", URL: srv.URL + "/plain"})
		cfg.Agents[len(cfg.Agents)-1].Timeouts.Request = duration.Duration(300 * time.Millisecond)
	})
	b := newCaller(t, env)
	b.token = env.Token(t, "tenant-b", "bob")
	// A unary send the caller was answered for may go on at the agent
	// (unbridged alike): the handlers are let go when the test ends.
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	hang := func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
	for _, sc := range []struct {
		name    string
		op      a2a.Method
		handler http.HandlerFunc
	}{
		{"send, no headers", a2a.MethodSend, func(w http.ResponseWriter, r *http.Request) { hang(r) }},
		{"send, a body begun", a2a.MethodSend, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			sseWrite(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"task-slow",`)
			hang(r)
		}},
		{"stream, no headers", a2a.MethodStream, func(w http.ResponseWriter, r *http.Request) { hang(r) }},
	} {
		for _, c := range []call{{a2a.V10, false}, {a2a.V10, true}, {a2a.V03, false}} {
			t.Run(sc.name+"/"+c.String(), func(t *testing.T) {
				agent.set(sc.handler)
				rpcID := b.nextID("r")
				rq := c.request(sc.op, "", rpcID)
				mount := "/agents/slow"
				if c.v == a2a.V03 && !c.rest {
					mount = "/agents/slow-plain" // unbridged, for comparison
				}
				rq.path = env.Gateway + mount + rq.path
				resp, body := b.do(t, rq) // bounded by testTimeout: an answer never cut off fails here
				code, raw := errorOf(t, c, resp, body, sc.op == a2a.MethodStream)
				_, want := c.wantError(a2a.ErrUpstreamTimeout, rpcID)
				if wantCode, _ := errorOf(t, c, &http.Response{}, want, false); code != wantCode {
					t.Fatalf("got %d: %s\nwant %d: %s", code, raw, wantCode, want)
				}
			})
		}
	}
}
