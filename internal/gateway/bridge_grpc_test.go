package gateway_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// The gRPC legs of the bridge and the gateway's own calls to a bridged
// agent, in a whole gateway on a real Redis.

// TestBridgeGRPCTenantIsolation: gRPC callers of both versions reach the
// demo agent, which speaks 1.0 JSON-RPC only, through every stage: another
// tenant's task is NOT_FOUND over gRPC and TaskNotFound in the HTTP forms,
// as for an unbridged agent, and the owner reads it in every form.
func TestBridgeGRPCTenantIsolation(t *testing.T) {
	e := startGRPCOn(t, func(t testing.TB, opts ...gwtest.Option) *gwtest.Env { return bridgedEnv(t.(*testing.T), opts...) })
	owner, other := e.as(t, "acme"), e.as(t, "globex")
	res, err := e.c10.SendMessage(owner, &a2a10.SendMessageRequest{Message: msg10("bg-1", "complete hi")})
	if err != nil || res.GetTask().GetStatus().GetState() != a2a10.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("1.0 gRPC send: %v %v", res, err)
	}
	id10 := res.GetTask().GetId()
	res03, err := e.c03.SendMessage(owner, &a2a03.SendMessageRequest{Request: msg03("bg-2", "complete hi"), Configuration: &a2a03.SendMessageConfiguration{Blocking: true}})
	if err != nil || res03.GetTask().GetStatus().GetState() != a2a03.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("0.3 gRPC send: %v %v", res03, err)
	}
	id03 := res03.GetTask().GetId()

	for _, id := range []string{id10, id03} {
		_, err := e.c10.GetTask(other, &a2a10.GetTaskRequest{Id: id})
		wantCode(t, err, codes.NotFound)
		_, err = e.c03.GetTask(other, &a2a03.GetTaskRequest{Name: "tasks/" + id})
		wantCode(t, err, codes.NotFound)
		if got, err := e.c03.GetTask(owner, &a2a03.GetTaskRequest{Name: "tasks/" + id}); err != nil || got.GetId() != id {
			t.Fatalf("the owner's 0.3 gRPC read: %v %v", got, err)
		}
		intruder := newCaller(t, e.Env)
		intruder.token = e.Token(t, "globex", "mallory")
		for _, d := range append([]dialect{{"1.0 JSON-RPC", a2a.V10, true}}, bridgedDialects...) {
			rq := d.get(intruder, id)
			resp, body := intruder.do(t, rq)
			wantErrorCode(t, d, d.answer(t, rq, resp, body), a2a.ErrTaskNotFound, body)
		}
	}
	// The 1.0 gRPC caller's stream ends with the task's last state; the
	// 0.3 caller's with a status update marked final.
	st, err := e.c03.SendStreamingMessage(owner, &a2a03.SendMessageRequest{Request: msg03("bg-3", "stream 2")})
	if err != nil {
		t.Fatal(err)
	}
	events, err := recvAll(t, st)
	if err != nil || len(events) < 2 || !events[len(events)-1].GetStatusUpdate().GetFinal() {
		t.Fatalf("0.3 gRPC stream: %v %v", events, err)
	}
}

// TestBridgeHTTPCallersToGRPCAgent: callers of the HTTP forms reach a
// gRPC-only 1.0 agent through every stage, another tenant's task being
// TaskNotFound in the caller's form.
func TestBridgeHTTPCallersToGRPCAgent(t *testing.T) {
	e := startGRPCOn(t, func(t testing.TB, opts ...gwtest.Option) *gwtest.Env {
		return bridgedEnv(t.(*testing.T), append(opts, func(c *config.Config) {
			c.Agents[0].Bridge.Agent = config.BridgeInterface{Version: "1.0", Binding: "GRPC"}
		})...)
	})
	owner := newCaller(t, e.Env)
	intruder := newCaller(t, e.Env)
	intruder.token = e.Token(t, "globex", "mallory")
	for _, d := range append([]dialect{{"1.0 JSON-RPC", a2a.V10, true}}, bridgedDialects...) {
		t.Run(d.name, func(t *testing.T) {
			rq := d.send(owner, owner.nextID("m"), "hello")
			resp, body := owner.do(t, rq)
			ev := d.answer(t, rq, resp, body)
			if ev.Kind != a2a.EventTask || ev.TaskID == "" {
				t.Fatalf("send: HTTP %d %+v: %s", resp.StatusCode, ev, body)
			}
			rq = d.get(intruder, ev.TaskID)
			resp, body = intruder.do(t, rq)
			wantErrorCode(t, d, d.answer(t, rq, resp, body), a2a.ErrTaskNotFound, body)
			rq = d.get(owner, ev.TaskID)
			resp, body = owner.do(t, rq)
			if got := d.answer(t, rq, resp, body); got.Kind != a2a.EventTask || got.TaskID != ev.TaskID {
				t.Fatalf("the owner reads %+v: %s", got, body)
			}
			if md := e.agent.lastCall(t, "GetTask"); len(md.Get("authorization")) != 0 || strings.Join(md.Get("a2a-version"), ",") != "1.0" {
				t.Fatalf("the agent's metadata: %v", md)
			}
		})
	}
}

// TestBridgePushSourceNative: the push relay follows a task of a bridged,
// natively pushing agent: it registers its own webhook at the agent in the
// agent's form (a caller's push-config request never reaches the agent,
// but the gateway's own registration must), and relays what the agent
// pushes to the consumer in the consumer's version.
func TestBridgePushSourceNative(t *testing.T) {
	agent, native := sourceAgent(t, "native", demoagent.Options{Push: true, StepDelay: 20 * time.Millisecond}, config.PushSourceAuto)
	form := config.BridgeInterface{Version: "1.0", Binding: "HTTP+JSON"}
	env := startPush(t, native, func(c *config.Config) {
		c.Agents[len(c.Agents)-1].Bridge = &config.AgentBridge{Agent: form}
	})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			rcv := newWebhook(t)
			c := env.acme
			var params string
			h := http.Header{}
			if v == a2a.V10 {
				h = v10()
				params = `{"message":{"messageId":"` + c.nextID("m") + `","role":"ROLE_USER","parts":[{"text":"parts 4 100ms"}]},"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"url":"` + rcv.url() + `","token":"consumer-token"}}}`
			} else {
				params = `{"message":{"kind":"message","messageId":"` + c.nextID("m") + `","role":"user","parts":[{"kind":"text","text":"parts 4 100ms"}]},"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + rcv.url() + `","token":"consumer-token"}}}`
			}
			resp, b := c.do(t, request{method: http.MethodPost, path: env.Gateway + "/agents/native/", header: h, body: rpcBody(a2a.MethodSend, v, c.nextID("send"), params)})
			ev, err := a2a.ParseRPCEvent(b)
			if resp.StatusCode != http.StatusOK || err != nil || ev.Kind != a2a.EventTask || ev.State.Terminal() {
				t.Fatalf("send with a push config: HTTP %d %v: %s", resp.StatusCode, err, b)
			}
			wantAllParts(t, v, rcv, 4)
			regs := registrations(t, agent, ev.TaskID)
			if len(regs) == 0 {
				t.Fatal("the gateway registered no webhook at the bridged agent")
			}
			for _, r := range regs {
				if !strings.HasPrefix(r.url, env.Gateway+push.InboundPath+"native/") || len(r.token) < 20 {
					t.Fatalf("the agent got push configs %+v", regs)
				}
			}
			for _, r := range agent.Requests() {
				if r.Op.Method == 0 {
					continue // the card
				}
				if r.Op.Version.String() != form.Version || r.Op.Binding.CardName() != form.Binding {
					t.Fatalf("the agent was asked %s %s in %s over %s", r.HTTPMethod, r.Path, r.Op.Version, r.Op.Binding.CardName())
				}
				if bytes.Contains(r.Body, []byte(rcv.srv.URL)) || bytes.Contains(r.Body, []byte("consumer-token")) {
					t.Fatalf("the consumer's webhook reached the agent: %s", r.Body)
				}
			}
			if n := subscribes(agent, ev.TaskID); n != 0 {
				t.Fatalf("the gateway subscribed %d times to a task the agent pushes", n)
			}
		})
	}
}

// TestBridgeGRPCDedupe: a gRPC caller's retried message id through the
// bridge reaches the agent once and is answered with the first answer; a
// retry in another form is refused, naming the first form.
func TestBridgeGRPCDedupe(t *testing.T) {
	e := startGRPCOn(t, func(t testing.TB, opts ...gwtest.Option) *gwtest.Env { return bridgedEnv(t.(*testing.T), opts...) })
	ctx := e.as(t, "acme")
	first, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("bdup-1", "complete hi")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("bdup-1", "complete hi")})
	if err != nil || !proto.Equal(first, again) {
		t.Fatalf("retry: %v %v, want %v", again, err, first)
	}
	sends := 0
	for _, r := range e.Env.Agent.Requests() {
		if r.Op.Method == a2a.MethodSend && r.Op.MessageID == "bdup-1" {
			sends++
		}
	}
	if sends != 1 {
		t.Fatalf("the agent got the message %d times", sends)
	}
	_, err = e.c03.SendMessage(ctx, &a2a03.SendMessageRequest{Request: msg03("bdup-1", "complete hi"), Configuration: &a2a03.SendMessageConfiguration{Blocking: true}})
	st := wantCode(t, err, codes.AlreadyExists)
	if !strings.Contains(st.Message(), "first sent in 1.0 over GRPC") {
		t.Fatalf("the refusal does not name the first form: %q", st.Message())
	}
}
