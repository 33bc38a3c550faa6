package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// The gRPC legs of the bridge: gRPC callers of both versions in front of
// a demo agent that is told to speak one form (and is checked to have
// been asked in that form only), and callers of the HTTP forms in front
// of a gRPC agent.

// grpcListener serves the gateway's gRPC listener for the agent on
// loopback (h2c) and returns its address.
func grpcListener(t testing.TB, gw *proxy.Gateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw.GRPCHandler(agentName), Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// grpcFront is a client connection to the gateway's gRPC listener.
func grpcFront(t testing.TB, gw *proxy.Gateway) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(grpcListener(t, gw), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func wantStatus(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if st, _ := status.FromError(err); st.Code() != want {
		t.Fatalf("%s: status %v (%q), want %v", what, st.Code(), st.Message(), want)
	}
}

// recvAll reads a server stream to its end: the messages, and the status
// that ended it (nil for OK).
func recvAll[T any](s grpc.ServerStreamingClient[T]) ([]*T, error) {
	var out []*T
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

func text10(id, text string) *a2a10.Message {
	return &a2a10.Message{MessageId: id, Role: a2a10.Role_ROLE_USER, Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: text}}}}
}

func text03(id, text string) *a2a03.Message {
	return &a2a03.Message{MessageId: id, Role: a2a03.Role_ROLE_USER, Content: []*a2a03.Part{{Part: &a2a03.Part_Text{Text: text}}}}
}

// TestBridgeGRPC10Caller: a 1.0 gRPC caller reaches an agent of every
// form: sends, reads, cancels, streams and subscriptions, and the agent's
// errors as the status of their code.
func TestBridgeGRPC10Caller(t *testing.T) {
	for _, form := range agentForms {
		t.Run(form.Version+" "+form.Binding, func(t *testing.T) {
			agent, e := bridgedDemo(t, demoagent.Options{}, form)
			c := a2a10.NewA2AServiceClient(grpcFront(t, e.gw))
			ctx := callCtx(t)

			res, err := c.SendMessage(ctx, &a2a10.SendMessageRequest{Message: text10("g10-1", "complete hi")})
			if err != nil {
				t.Fatal(err)
			}
			task := res.GetTask()
			if task.GetId() == "" || task.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_COMPLETED || len(task.GetArtifacts()) != 1 {
				t.Fatalf("send: %v", res)
			}
			got, err := c.GetTask(ctx, &a2a10.GetTaskRequest{Id: task.GetId()})
			if err != nil || got.GetId() != task.GetId() || got.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_COMPLETED {
				t.Fatalf("get: %v %v", got, err)
			}
			_, err = c.GetTask(ctx, &a2a10.GetTaskRequest{Id: "no-such-task"})
			wantStatus(t, "get of an unknown task", err, codes.NotFound)
			// 0.3 has no ListTasks: refused, not half served.
			list, err := c.ListTasks(ctx, &a2a10.ListTasksRequest{})
			if form.Version == "0.3" {
				wantReason(t, "list at a 0.3 agent", err, codes.FailedPrecondition, a2a.ErrUnsupportedOperation)
			} else if err != nil || len(list.GetTasks()) == 0 {
				t.Fatalf("list: %v %v", list, err)
			}

			st, err := c.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: text10("g10-2", "parts 2")})
			if err != nil {
				t.Fatal(err)
			}
			events, err := recvAll(st)
			if err != nil || len(events) < 3 {
				t.Fatalf("stream: %v %v", events, err)
			}
			last := events[len(events)-1].GetStatusUpdate()
			if last.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_COMPLETED {
				t.Fatalf("stream: last event %v", events[len(events)-1])
			}

			res, err = c.SendMessage(ctx, &a2a10.SendMessageRequest{Message: text10("g10-3", "wait"), Configuration: &a2a10.SendMessageConfiguration{ReturnImmediately: true}})
			if st := res.GetTask().GetStatus().GetState(); err != nil || st != a2a10.TaskState_TASK_STATE_SUBMITTED && st != a2a10.TaskState_TASK_STATE_WORKING {
				t.Fatalf("non-blocking send: %v %v", res, err)
			}
			id := res.GetTask().GetId()
			sub, err := c.SubscribeToTask(ctx, &a2a10.SubscribeToTaskRequest{Id: id})
			if err != nil {
				t.Fatal(err)
			}
			first, err := sub.Recv()
			if err != nil || first.GetTask().GetId() != id {
				t.Fatalf("subscription: first event %v %v, want the task", first, err)
			}
			canceled, err := c.CancelTask(ctx, &a2a10.CancelTaskRequest{Id: id})
			if err != nil || canceled.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_CANCELED {
				t.Fatalf("cancel: %v %v", canceled, err)
			}
			rest, err := recvAll(sub)
			if err != nil || len(rest) == 0 || rest[len(rest)-1].GetStatusUpdate().GetStatus().GetState() != a2a10.TaskState_TASK_STATE_CANCELED {
				t.Fatalf("subscription after the cancel: %v %v", rest, err)
			}
			_, err = c.CancelTask(ctx, &a2a10.CancelTaskRequest{Id: id})
			wantStatus(t, "second cancel", err, codes.FailedPrecondition)
			if form.Binding != "GRPC" {
				// The gRPC framing's headers mean nothing to an HTTP agent.
				for _, r := range agent.Requests() {
					for k := range r.Header {
						if strings.HasPrefix(k, "Grpc-") {
							t.Fatalf("the agent got %s: %v", k, r.Header)
						}
					}
				}
			}
			wantAgentForm(t, agent, form)
		})
	}
}

// TestBridgeGRPC03Caller: a 0.3 gRPC caller likewise, its stream ending
// with a status update marked final.
func TestBridgeGRPC03Caller(t *testing.T) {
	for _, form := range agentForms {
		t.Run(form.Version+" "+form.Binding, func(t *testing.T) {
			agent, e := bridgedDemo(t, demoagent.Options{}, form)
			c := a2a03.NewA2AServiceClient(grpcFront(t, e.gw))
			ctx := callCtx(t)

			res, err := c.SendMessage(ctx, &a2a03.SendMessageRequest{Request: text03("g03-1", "complete hi"), Configuration: &a2a03.SendMessageConfiguration{Blocking: true}})
			if err != nil {
				t.Fatal(err)
			}
			task := res.GetTask()
			if task.GetId() == "" || task.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_COMPLETED || len(task.GetArtifacts()) != 1 {
				t.Fatalf("send: %v", res)
			}
			got, err := c.GetTask(ctx, &a2a03.GetTaskRequest{Name: "tasks/" + task.GetId()})
			if err != nil || got.GetId() != task.GetId() || got.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_COMPLETED {
				t.Fatalf("get: %v %v", got, err)
			}
			_, err = c.GetTask(ctx, &a2a03.GetTaskRequest{Name: "tasks/no-such-task"})
			wantStatus(t, "get of an unknown task", err, codes.NotFound)

			st, err := c.SendStreamingMessage(ctx, &a2a03.SendMessageRequest{Request: text03("g03-2", "parts 2")})
			if err != nil {
				t.Fatal(err)
			}
			events, err := recvAll(st)
			if err != nil || len(events) < 3 {
				t.Fatalf("stream: %v %v", events, err)
			}
			last := events[len(events)-1].GetStatusUpdate()
			if last.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_COMPLETED || !last.GetFinal() {
				t.Fatalf("stream: last event %v, want completed and final", events[len(events)-1])
			}
			for _, ev := range events[:len(events)-1] {
				if ev.GetStatusUpdate().GetFinal() {
					t.Fatalf("stream: an event before the last is final: %v", ev)
				}
			}

			res, err = c.SendMessage(ctx, &a2a03.SendMessageRequest{Request: text03("g03-3", "wait"), Configuration: &a2a03.SendMessageConfiguration{}})
			if st := res.GetTask().GetStatus().GetState(); err != nil || st != a2a03.TaskState_TASK_STATE_SUBMITTED && st != a2a03.TaskState_TASK_STATE_WORKING {
				t.Fatalf("non-blocking send: %v %v", res, err)
			}
			id := res.GetTask().GetId()
			canceled, err := c.CancelTask(ctx, &a2a03.CancelTaskRequest{Name: "tasks/" + id})
			if err != nil || canceled.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_CANCELLED {
				t.Fatalf("cancel: %v %v", canceled, err)
			}
			wantAgentForm(t, agent, form)
		})
	}
}

// TestBridgeHTTPCallerToGRPCAgent: callers of the HTTP forms reach an
// agent that speaks gRPC only, in either version: answers, stream events
// (0.3 ones ending final) and the agent's errors in the caller's form.
func TestBridgeHTTPCallerToGRPCAgent(t *testing.T) {
	for _, form := range agentForms[4:] {
		t.Run(form.Version, func(t *testing.T) {
			agent, e := bridgedDemo(t, demoagent.Options{}, form)

			// 1.0 JSON-RPC.
			resp, body := e.do(t, request{method: http.MethodPost, path: "/", header: v10(),
				body: rpcBody(a2a.MethodSend, a2a.V10, `"r-1"`, `{"message":{"messageId":"h-1","role":"ROLE_USER","parts":[{"text":"complete hi"}]}}`)})
			ev, res, err := a2a.ParseRPCEventResult(body)
			if resp.StatusCode != http.StatusOK || err != nil || ev.Kind != a2a.EventTask || ev.State != a2a.StateCompleted || !strings.Contains(string(body), `"id":"r-1"`) {
				t.Fatalf("1.0 send: HTTP %d %s", resp.StatusCode, body)
			}
			id := ev.TaskID
			wantShape(t, "1.0 send", res, a2a.V10, id)
			resp, body = e.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodGetTask, a2a.V10, `"r-2"`, `{"id":"no-such-task"}`)})
			wantRPCError(t, resp, body, a2a.V10, `"r-2"`, a2a.ErrTaskNotFound)

			// 0.3 JSON-RPC: a kind object; its stream ends final.
			resp, body = e.do(t, request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodGetTask, a2a.V03, `7`, `{"id":"`+id+`"}`)})
			if ev, res, err := a2a.ParseRPCEventResult(body); resp.StatusCode != http.StatusOK || err != nil || ev.TaskID != id {
				t.Fatalf("0.3 get: HTTP %d %s", resp.StatusCode, body)
			} else {
				wantShape(t, "0.3 get", res, a2a.V03, id)
			}
			st := e.open(t, request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodStream, a2a.V03, `8`,
				`{"message":{"kind":"message","messageId":"h-2","role":"user","parts":[{"kind":"text","text":"parts 2"}]}}`)})
			var events []a2a.Event
			for {
				sse := st.next(t)
				ev, res, err := a2a.ParseRPCEventResult(sse.Data)
				if err != nil {
					t.Fatalf("0.3 stream event %s: %v", sse.Data, err)
				}
				wantShape(t, "0.3 stream event", res, a2a.V03, ev.TaskID)
				events = append(events, ev)
				if ev.Final {
					break
				}
			}
			st.wantCleanEnd(t)
			if last := events[len(events)-1]; len(events) < 3 || last.State != a2a.StateCompleted {
				t.Fatalf("0.3 stream: %+v", events)
			}

			// 1.0 HTTP+JSON, and 0.3 HTTP+JSON's error body.
			resp, body = e.do(t, request{method: http.MethodGet, path: "/tasks/" + id, header: v10()})
			if ev, _, err := a2a.ReadAnswer(&a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, Binding: a2a.BindingREST}, body); resp.StatusCode != http.StatusOK || err != nil || ev.TaskID != id {
				t.Fatalf("1.0 REST get: HTTP %d %s %v", resp.StatusCode, body, err)
			}
			resp, body = e.do(t, request{method: http.MethodGet, path: "/v1/tasks/no-such-task"})
			wantREST03Error(t, resp, body, a2a.ErrTaskNotFound)

			wantAgentForm(t, agent, form)
			for _, r := range agent.Requests() {
				t.Fatalf("unexpected request %v", r.Path)
			}
		})
	}
}

// TestBridgeGRPCMetadata: a caller's metadata reaches a gRPC agent of the
// other version without its credentials, with the agent's version and
// extensions under that version's name.
func TestBridgeGRPCMetadata(t *testing.T) {
	agent, e := bridgedDemo(t, demoagent.Options{}, config.BridgeInterface{Version: "0.3", Binding: "GRPC"})
	c := a2a10.NewA2AServiceClient(grpcFront(t, e.gw))
	ctx := metadata.AppendToOutgoingContext(callCtx(t), "authorization", "Bearer caller", "a2a-extensions", "https://example.com/ext", "x-trace-note", "kept")
	if _, err := c.SendMessage(ctx, &a2a10.SendMessageRequest{Message: text10("md-1", "complete hi")}); err != nil {
		t.Fatal(err)
	}
	got := agent.Requests()
	h := got[len(got)-1].Header
	if h.Get("Authorization") != "" || h.Get("A2a-Version") != "" || h.Get("A2a-Extensions") != "" ||
		h.Get("X-A2a-Extensions") != "https://example.com/ext" || h.Get("X-Trace-Note") != "kept" {
		t.Fatalf("the agent's metadata: %v", h)
	}
}

// wantReason fails unless err is a status of code carrying the ErrorInfo
// of want, and not the agent's message.
func wantReason(t *testing.T, what string, err error, code codes.Code, want *a2a.Error) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || strings.Contains(st.Message(), "agent-secret") {
		t.Fatalf("%s: status %v %q, want %v", what, st.Code(), st.Message(), code)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == want.Reason {
			return
		}
	}
	t.Fatalf("%s: status details %v, want ErrorInfo %s", what, st.Details(), want.Reason)
}

// scriptedRPCAgent is a 1.0 JSON-RPC agent that answers each method as
// script says, with the request's id.
func scriptedRPCAgent(t *testing.T, script func(w http.ResponseWriter, method, id string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil || r.Header.Get(a2a.VersionHeader) != "1.0" {
			http.Error(w, "a 1.0 JSON-RPC agent", http.StatusBadRequest)
			return
		}
		script(w, req.Method, string(req.ID))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBridgeGRPCCallerErrors: a JSON-RPC agent's errors reach a gRPC
// caller as the status of their code, before or during a stream, never
// with the agent's message; an answer that cannot be translated is
// INVALID_AGENT_RESPONSE; a 0.3 caller's stream that the agent ends on a
// terminal state ends with a status update marked final.
func TestBridgeGRPCCallerErrors(t *testing.T) {
	const task = `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}`
	var subscribed atomic.Int32
	url := scriptedRPCAgent(t, func(w http.ResponseWriter, method, id string) {
		switch method {
		case "GetTask":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32001,"message":"agent-secret t-9"}}`)
		case "CancelTask":
			// A member no form knows.
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_CANCELED"},"x-agent":1}}`)
		case "SendStreamingMessage":
			sseHeader(w)
			writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"task":`+task+`}}`+"\n\n")
			writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32001,"message":"agent-secret t-9"}}`+"\n\n")
		case "SubscribeToTask":
			sseHeader(w)
			if subscribed.Add(1) > 1 {
				// The task, already ended: no status update says so.
				writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"task":`+strings.Replace(task, "WORKING", "FAILED", 1)+`}}`+"\n\n")
				return
			}
			writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"task":`+task+`}}`+"\n\n")
			writeFlush(w, `data: {"jsonrpc":"2.0","id":`+id+`,"result":{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}}}`+"\n\n")
		default:
			http.Error(w, "unexpected", http.StatusNotFound)
		}
	})
	e := start(t, url, withConfig(func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0"}
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	}))
	conn := grpcFront(t, e.gw)
	c10, c03 := a2a10.NewA2AServiceClient(conn), a2a03.NewA2AServiceClient(conn)
	ctx := callCtx(t)

	_, err := c10.GetTask(ctx, &a2a10.GetTaskRequest{Id: "t-1"})
	wantReason(t, "1.0 get", err, codes.NotFound, a2a.ErrTaskNotFound)
	_, err = c03.GetTask(ctx, &a2a03.GetTaskRequest{Name: "tasks/t-1"})
	wantStatus(t, "0.3 get", err, codes.NotFound)
	_, err = c10.CancelTask(ctx, &a2a10.CancelTaskRequest{Id: "t-1"})
	wantReason(t, "1.0 cancel answered with an unknown member", err, codes.Internal, a2a.ErrInvalidAgentResponse)

	st, err := c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: text10("e-1", "hi")})
	if err != nil {
		t.Fatal(err)
	}
	events, err := recvAll(st)
	if len(events) != 1 || events[0].GetTask().GetId() != "t-1" {
		t.Fatalf("stream: %v", events)
	}
	wantReason(t, "stream ended by the agent's error", err, codes.NotFound, a2a.ErrTaskNotFound)

	sub, err := c03.TaskSubscription(ctx, &a2a03.TaskSubscriptionRequest{Name: "tasks/t-1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := recvAll(sub)
	if err != nil || len(got) != 2 || got[0].GetTask().GetId() != "t-1" {
		t.Fatalf("0.3 subscription: %v %v", got, err)
	}
	if last := got[1].GetStatusUpdate(); last.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_COMPLETED || !last.GetFinal() {
		t.Fatalf("0.3 subscription: last %v, want completed and final", got[1])
	}
	// A stream the agent ends on the task's terminal state alone ends, for
	// a 0.3 caller, with the status update that says so.
	sub, err = c03.TaskSubscription(ctx, &a2a03.TaskSubscriptionRequest{Name: "tasks/t-1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = recvAll(sub)
	if err != nil || len(got) != 2 || got[0].GetTask().GetStatus().GetState() != a2a03.TaskState_TASK_STATE_FAILED {
		t.Fatalf("0.3 subscription to an ended task: %v %v", got, err)
	}
	if last := got[1].GetStatusUpdate(); last.GetTaskId() != "t-1" || last.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_FAILED || !last.GetFinal() {
		t.Fatalf("0.3 subscription to an ended task: last %v, want failed and final", got[1])
	}
}

// scriptedGRPCAgent is a 1.0 gRPC agent on loopback (h2c) that answers
// each call (its path names the method) as script says: messages, then
// trailers.
func scriptedGRPCAgent(t testing.TB, script func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Protocols: new(http.Protocols), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get(a2a.VersionHeader) != "1.0" {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "3")
			return
		}
		script(w, r)
	})}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// grpcMessages writes the header of a gRPC answer and its messages.
func grpcMessages(t testing.TB, w http.ResponseWriter, msgs ...proto.Message) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	w.WriteHeader(http.StatusOK)
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = w.Write(grpcwire.AppendMessage(nil, b))
		flush(w)
	}
}

// TestBridgeHTTPCallerErrorsFromGRPC: a gRPC agent's statuses reach HTTP
// callers as the error of their code in the caller's form: a status alone,
// a status that ends a stream (the stream's last event), and a message
// that cannot be read (INVALID_AGENT_RESPONSE).
func TestBridgeHTTPCallerErrorsFromGRPC(t *testing.T) {
	task := &a2a10.Task{Id: "t-1", ContextId: "c-1", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_WORKING}}
	addr := scriptedGRPCAgent(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/lf.a2a.v1.A2AService/GetTask":
			// Trailers-only.
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "5")
			w.Header().Set("Grpc-Message", "agent-secret t-9")
		case "/lf.a2a.v1.A2AService/CancelTask":
			grpcMessages(t, w)
			_, _ = w.Write([]byte{0, 0, 0, 0, 3, 0xff, 0xff, 0xff})
			w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
		case "/lf.a2a.v1.A2AService/SubscribeToTask":
			grpcMessages(t, w, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Task{Task: task}})
			w.Header().Set("Grpc-Status", "5")
			w.Header().Set("Grpc-Message", "agent-secret t-9")
		default:
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "12")
		}
	})
	e := start(t, "http://127.0.0.1:1", withConfig(func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0", Upstream: addr}
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "GRPC"}}
	}))

	resp, body := e.do(t, request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodGetTask, a2a.V03, `3`, `{"id":"t-1"}`)})
	wantRPCError(t, resp, body, a2a.V03, `3`, a2a.ErrTaskNotFound)
	resp, body = e.do(t, request{method: http.MethodGet, path: "/tasks/t-1", header: v10()})
	wantRESTError(t, resp, body, a2a.ErrTaskNotFound, "NOT_FOUND")
	if bytes.Contains(body, []byte("agent-secret")) {
		t.Fatalf("the agent's message reached the caller: %s", body)
	}
	resp, body = e.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodCancelTask, a2a.V10, `"c"`, `{"id":"t-1"}`)})
	wantRPCError(t, resp, body, a2a.V10, `"c"`, a2a.ErrInvalidAgentResponse)

	st := e.open(t, request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodSubscribe, a2a.V03, `4`, `{"id":"t-1"}`)})
	if ev, err := a2a.ParseRPCEvent(st.next(t).Data); err != nil || ev.Kind != a2a.EventTask || ev.TaskID != "t-1" {
		t.Fatalf("first event: %+v %v", ev, err)
	}
	last := st.next(t)
	wantRPCErrorBody(t, last.Data, a2a.V03, `4`, a2a.ErrTaskNotFound)
	st.wantCleanEnd(t)

	st = e.open(t, request{method: http.MethodPost, path: "/tasks/t-1:subscribe", header: v10()})
	st.next(t)
	if ev := st.next(t); ev.Event != "error" {
		t.Fatalf("REST stream's last event %q, want an error event", ev.Raw)
	} else {
		wantRESTErrorBody(t, ev.Data, a2a.ErrTaskNotFound, "NOT_FOUND")
	}
}

// TestBridgeGRPCCallerDeadline: a gRPC caller's deadline bounds its
// bridged call to an HTTP agent, and its passing is the agent's timeout,
// not the caller leaving.
func TestBridgeGRPCCallerDeadline(t *testing.T) {
	released := make(chan struct{})
	url := scriptedRPCAgent(t, func(w http.ResponseWriter, method, id string) {
		<-released // answers once the test is over
	})
	t.Cleanup(func() { close(released) })
	e := start(t, url, withConfig(func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0"}
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	}))
	// A raw call, which unlike a gRPC library's does not give up at its
	// own deadline: the gateway's answer is what it gets.
	msg, err := proto.Marshal(&a2a10.GetTaskRequest{Id: "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+grpcListener(t, e.gw)+"/lf.a2a.v1.A2AService/GetTask", bytes.NewReader(grpcwire.AppendMessage(nil, msg)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("Grpc-Timeout", "200m")
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: testTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("Grpc-Status"); got != "4" {
		t.Fatalf("grpc-status %q (trailer %q), want 4 DEADLINE_EXCEEDED", got, resp.Trailer.Get("Grpc-Status"))
	}
	e.wantCounter(t, "upstream_errors_total", map[string]string{"agent": agentName, "reason": "timeout"}, 1)
}

// TestBridgeGRPCStreamIdle: a bridged stream the agent falls silent on
// ends like an unbridged one, across gRPC either way: with the timeout in
// the caller's form, the agent's call or connection released.
func TestBridgeGRPCStreamIdle(t *testing.T) {
	idle := withConfig(func(c *config.Config) { c.Agents[0].Timeouts.StreamIdle = duration.Duration(250 * time.Millisecond) })
	t.Run("HTTP caller, gRPC agent", func(t *testing.T) {
		released := make(chan struct{})
		update := &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_StatusUpdate{StatusUpdate: &a2a10.TaskStatusUpdateEvent{
			TaskId: "t-1", ContextId: "c-1", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_WORKING}}}}
		addr := scriptedGRPCAgent(t, func(w http.ResponseWriter, r *http.Request) {
			grpcMessages(t, w, update)
			<-r.Context().Done()
			close(released)
		})
		e := start(t, "http://127.0.0.1:1", idle, withConfig(func(c *config.Config) {
			c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0", Upstream: addr}
			c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "GRPC"}}
		}))
		st := e.open(t, request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodSubscribe, a2a.V03, `5`, `{"id":"t-1"}`)})
		if ev, err := a2a.ParseRPCEvent(st.next(t).Data); err != nil || ev.Kind != a2a.EventStatusUpdate {
			t.Fatalf("first event %+v %v", ev, err)
		}
		wantRPCErrorBody(t, st.next(t).Data, a2a.V03, `5`, a2a.ErrUpstreamTimeout)
		st.wantCleanEnd(t)
		waitUntil(t, "the agent's call is released", released)
		eventually(t, "the stream is released", func() bool { return e.gw.OpenStreams() == 0 })
	})
	t.Run("gRPC caller, HTTP agent", func(t *testing.T) {
		released := make(chan struct{})
		u := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeFlush(w, `data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}}`+"\n\n")
			holdOpen(u, r, released)
		})
		e := start(t, u.url, idle, withConfig(func(c *config.Config) {
			c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0"}
			c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
		}))
		sub, err := a2a03.NewA2AServiceClient(grpcFront(t, e.gw)).TaskSubscription(callCtx(t), &a2a03.TaskSubscriptionRequest{Name: "tasks/t-1"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := recvAll(sub)
		if len(got) != 1 || got[0].GetStatusUpdate().GetTaskId() != "t-1" {
			t.Fatalf("events %v", got)
		}
		wantStatus(t, "silent stream", err, codes.DeadlineExceeded)
		waitUntil(t, "the agent's connection is released", released)
		eventually(t, "the stream is released", func() bool { return e.gw.OpenStreams() == 0 })
	})
}
