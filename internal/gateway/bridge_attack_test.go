package gateway_test

import (
	"net/http"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
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
