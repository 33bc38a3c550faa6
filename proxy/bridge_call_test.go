package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// agentForms are the six forms a bridged agent may speak.
var agentForms = []config.BridgeInterface{
	{Version: "1.0", Binding: "JSONRPC"}, {Version: "0.3", Binding: "JSONRPC"},
	{Version: "1.0", Binding: "HTTP+JSON"}, {Version: "0.3", Binding: "HTTP+JSON"},
	{Version: "1.0", Binding: "GRPC"}, {Version: "0.3", Binding: "GRPC"},
}

// bridgedDemo starts a demo agent on HTTP and gRPC and a proxy in front of
// it whose bridge says the agent speaks form only.
func bridgedDemo(t *testing.T, o demoagent.Options, form config.BridgeInterface) (*demoagent.Agent, *env) {
	t.Helper()
	o.StepDelay = 5 * time.Millisecond
	agent := demoagent.New(o)
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := agent.GRPCServer()
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(func() { gs.Stop(); agent.Close(); srv.Close() })
	return agent, start(t, srv.URL, withConfig(func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0", Upstream: ln.Addr().String()}
		c.Agents[0].Bridge = &config.AgentBridge{Agent: form}
	}))
}

// wantAgentForm fails unless every request the agent received since the
// last reset was in form.
func wantAgentForm(t *testing.T, agent *demoagent.Agent, form config.BridgeInterface) {
	t.Helper()
	got := agent.Requests()
	if len(got) == 0 {
		t.Fatal("the agent received nothing")
	}
	for _, r := range got {
		if r.Op.Version.String() != form.Version || r.Op.Binding.CardName() != form.Binding {
			t.Fatalf("the agent received %s %s in %s over %s, want %s over %s", r.HTTPMethod, r.Path, r.Op.Version, r.Op.Binding.CardName(), form.Version, form.Binding)
		}
	}
	agent.ResetRequests()
}

// wantShape fails unless res is a result of version v's JSON-RPC form
// about task id.
func wantShape(t *testing.T, what string, res []byte, v a2a.Version, id string) a2a.Event {
	t.Helper()
	ev, shape, err := a2a.ParseResultShape(res)
	if err != nil || ev.TaskID != id || shape != v {
		t.Fatalf("%s: %s (%+v, %s, %v), want a %s result about %s", what, res, ev, shape, err, v, id)
	}
	return ev
}

// TestCallBridged: the gateway's own calls reach a bridged agent in its
// own form, whatever version they are asked in, and come back in the
// JSON-RPC form of that version: reads, cancels, subscriptions, the push
// relay's registration of its webhook (which callers never send to the
// agent: the gateway holds their configs) and the agent's errors.
func TestCallBridged(t *testing.T) {
	for _, form := range agentForms {
		t.Run(form.Version+" "+form.Binding, func(t *testing.T) {
			agent, e := bridgedDemo(t, demoagent.Options{Push: true}, form)
			for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
				ctx := context.Background()
				id := startTask(t, e.gw, "wait")
				res, err := e.gw.Call(ctx, agentName, v, a2a.MethodGetTask, a2a.TaskParams{ID: id})
				if err != nil {
					t.Fatalf("%s get: %v", v, err)
				}
				if ev := wantShape(t, v.String()+" get", res, v, id); ev.Kind != a2a.EventTask || ev.State != a2a.StateWorking {
					t.Fatalf("%s get: %s", v, res)
				}

				var params any = map[string]any{"taskId": id, "pushNotificationConfig": map[string]any{"id": "a2a-gateway", "url": "https://gw.example/push/in", "token": "s3cret"}}
				if v == a2a.V10 {
					params = map[string]any{"taskId": id, "id": "a2a-gateway", "url": "https://gw.example/push/in", "token": "s3cret"}
				}
				if _, err := e.gw.Call(ctx, agentName, v, a2a.MethodPushConfigSet, params); err != nil {
					t.Fatalf("%s push config set: %v", v, err)
				}
				set := agent.Requests()
				if last := set[len(set)-1]; last.Op.Method != a2a.MethodPushConfigSet || last.Op.TaskID != id || !strings.Contains(string(last.Op.PushConfig), "https://gw.example/push/in") {
					t.Fatalf("%s push config set: the agent got %+v", v, last.Op)
				}

				res, err = e.gw.Call(ctx, agentName, v, a2a.MethodCancelTask, a2a.TaskParams{ID: id})
				if err != nil {
					t.Fatalf("%s cancel: %v", v, err)
				}
				if ev := wantShape(t, v.String()+" cancel", res, v, id); ev.State != a2a.StateCanceled {
					t.Fatalf("%s cancel: %s", v, res)
				}
				_, err = e.gw.Call(ctx, agentName, v, a2a.MethodGetTask, a2a.TaskParams{ID: "no-such-task"})
				var ae *a2a.Error
				if !errors.As(err, &ae) || ae.Code != a2a.ErrTaskNotFound.Code {
					t.Fatalf("%s get of an unknown task: %v, want the agent's TaskNotFound", v, err)
				}

				id = startTask(t, e.gw, "parts 2")
				var got []a2a.Event
				err = e.gw.CallStream(ctx, agentName, v, a2a.MethodSubscribe, a2a.TaskParams{ID: id}, func(ev a2a.Event, res []byte) error {
					wantShape(t, v.String()+" event", res, v, id)
					got = append(got, ev)
					return nil
				})
				if err != nil {
					t.Fatalf("%s subscribe: %v", v, err)
				}
				if len(got) < 2 || (v == a2a.V10 && got[0].Kind != a2a.EventTask) {
					t.Fatalf("%s subscribe: %+v", v, got)
				}
				last := got[len(got)-1]
				if last.Kind != a2a.EventStatusUpdate || last.State != a2a.StateCompleted || last.Final != (v == a2a.V03) {
					t.Fatalf("%s subscribe: last event %+v", v, last)
				}
				wantAgentForm(t, agent, form)
			}
		})
	}
}

// TestCallBridgedSubscribeStartsWithTheTask: a 0.3 agent's resubscribe
// stream may start with an update, but a 1.0 subscription starts with
// the task: the gateway reads it once, in the agent's form, and hands it
// over first. When the task cannot be read, the stream ends with an error
// that says so instead of starting without it.
func TestCallBridgedSubscribeStartsWithTheTask(t *testing.T) {
	var mu sync.Mutex // the agent's handler and the test share the script
	getFails := false
	var methods []string
	asked := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(methods, ",")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "not JSON-RPC", http.StatusBadRequest)
			return
		}
		mu.Lock()
		methods = append(methods, req.Method)
		fail := getFails
		mu.Unlock()
		id := string(req.ID)
		switch {
		case req.Method == "tasks/get" && fail:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"down"}}`)
		case req.Method == "tasks/get":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"working"}}}`)
		case req.Method == "tasks/resubscribe":
			sseHeader(w)
			writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"working"},"final":false}}`+"\n\n")
			writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"completed"},"final":true}}`+"\n\n")
		default:
			http.Error(w, "unexpected", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	e := start(t, srv.URL, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "0.3", Binding: "JSONRPC"}}
	}))
	var kinds []a2a.EventKind
	collect := func(ev a2a.Event, res []byte) error {
		wantShape(t, "event", res, a2a.V10, "t-1")
		kinds = append(kinds, ev.Kind)
		return nil
	}
	if err := e.gw.CallStream(context.Background(), agentName, a2a.V10, a2a.MethodSubscribe, a2a.TaskParams{ID: "t-1"}, collect); err != nil {
		t.Fatal(err)
	}
	want := []a2a.EventKind{a2a.EventTask, a2a.EventStatusUpdate, a2a.EventStatusUpdate}
	if len(kinds) != len(want) || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if asked() != "tasks/resubscribe,tasks/get" {
		t.Fatalf("the agent was asked %v", methods)
	}

	// So does a 1.0 caller's subscription through the gateway.
	mu.Lock()
	methods = nil
	mu.Unlock()
	st := e.open(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSubscribe, a2a.V10, `"sub-1"`, `{"id":"t-1"}`)})
	for i, want := range want {
		ev, res, err := a2a.ParseRPCEventResult(st.next(t).Data)
		if err != nil || ev.Kind != want || ev.TaskID != "t-1" {
			t.Fatalf("forwarded event %d: %s %+v %v, want a %s", i, res, ev, err, want)
		}
		wantShape(t, "forwarded event", res, a2a.V10, "t-1")
	}
	st.wantCleanEnd(t)
	// The task is read alongside the subscription, in either order.
	if got := asked(); got != "tasks/resubscribe,tasks/get" && got != "tasks/get,tasks/resubscribe" {
		t.Fatalf("the agent was asked %v", got)
	}

	// A 0.3 subscription needs no task first.
	kinds = nil
	mu.Lock()
	methods = nil
	mu.Unlock()
	err := e.gw.CallStream(context.Background(), agentName, a2a.V03, a2a.MethodSubscribe, a2a.TaskParams{ID: "t-1"}, func(ev a2a.Event, res []byte) error {
		kinds = append(kinds, ev.Kind)
		return nil
	})
	if err != nil || len(kinds) != 2 || asked() != "tasks/resubscribe" {
		t.Fatalf("0.3 subscription: %v %v %v", kinds, methods, err)
	}

	kinds = nil
	mu.Lock()
	getFails = true
	mu.Unlock()
	err = e.gw.CallStream(context.Background(), agentName, a2a.V10, a2a.MethodSubscribe, a2a.TaskParams{ID: "t-1"}, collect)
	if !errors.Is(err, proxy.ErrStreamEnded) || !strings.Contains(err.Error(), "does not start with the task") || len(kinds) != 0 {
		t.Fatalf("task unreadable: %v, events %v", err, kinds)
	}
	resp, body := e.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSubscribe, a2a.V10, `"sub-2"`, `{"id":"t-1"}`)})
	wantRPCStreamError(t, resp, body, a2a.V10, `"sub-2"`, a2a.ErrInvalidAgentResponse)
}

// TestCallBridgedRESTErrors: an HTTP+JSON agent's errors reach the
// gateway's own calls with their code: an error answer where a stream was
// asked for, and the error event that ends a stream.
func TestCallBridgedRESTErrors(t *testing.T) {
	notFound := string(a2a.ErrTaskNotFound.RESTErrorBody(a2a.V10))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/tasks/gone:subscribe":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, notFound)
		case "/tasks/t-1:subscribe":
			sseHeader(w)
			writeFlush(w, `data: {"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`+"\n\n")
			writeFlush(w, "event: error\ndata: "+notFound+"\n\n")
		default:
			http.Error(w, "unexpected", http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	e := start(t, srv.URL, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "HTTP+JSON"}}
	}))
	var ae *a2a.Error
	err := e.gw.CallStream(context.Background(), agentName, a2a.V03, a2a.MethodSubscribe, a2a.TaskParams{ID: "gone"}, func(a2a.Event, []byte) error { return nil })
	if !errors.As(err, &ae) || ae.Code != a2a.ErrTaskNotFound.Code {
		t.Fatalf("an error answer: %v, want the agent's TaskNotFound", err)
	}
	n := 0
	err = e.gw.CallStream(context.Background(), agentName, a2a.V03, a2a.MethodSubscribe, a2a.TaskParams{ID: "t-1"}, func(ev a2a.Event, res []byte) error {
		wantShape(t, "event", res, a2a.V03, "t-1")
		n++
		return nil
	})
	if !errors.As(err, &ae) || ae.Code != a2a.ErrTaskNotFound.Code || n != 1 {
		t.Fatalf("a stream's error event: %v after %d events, want the agent's TaskNotFound after one", err, n)
	}
}
