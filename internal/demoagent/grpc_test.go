package demoagent_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	pb03 "github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	pb10 "github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// grpcEnv is an env whose agent also serves gRPC on a loopback listener.
type grpcEnv struct {
	*env
	addr string
	c10  pb10.A2AServiceClient
	c03  pb03.A2AServiceClient
}

func newGRPCEnv(t *testing.T, o demoagent.Options) *grpcEnv {
	t.Helper()
	e := newEnv(t, o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.agent.GRPCServer()
	go func() { _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	// Registered after newEnv's cleanup, so this runs first: the agent
	// closes after its gRPC server stops.
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	e.agent.SetGRPCAddress(ln.Addr().String())
	return &grpcEnv{env: e, addr: ln.Addr().String(), c10: pb10.NewA2AServiceClient(conn), c03: pb03.NewA2AServiceClient(conn)}
}

func grpcCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func (e *grpcEnv) msg10(text, taskID string) *pb10.Message {
	return &pb10.Message{MessageId: e.nextID("msg"), TaskId: taskID, Role: pb10.Role_ROLE_USER,
		Parts: []*pb10.Part{{Content: &pb10.Part_Text{Text: text}}}}
}

func (e *grpcEnv) msg03(text, taskID string) *pb03.Message {
	return &pb03.Message{MessageId: e.nextID("msg"), TaskId: taskID, Role: pb03.Role_ROLE_USER,
		Content: []*pb03.Part{{Part: &pb03.Part_Text{Text: text}}}}
}

// wantStatus checks a call's gRPC code and, for 1.0, its ErrorInfo reason.
func wantStatus(t *testing.T, err error, code codes.Code, reason string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("want %v, got %v", code, err)
	}
	var got []string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			got = append(got, info.GetReason()+"@"+info.GetDomain())
		}
	}
	var want []string
	if reason != "" {
		want = []string{reason + "@a2a-protocol.org"}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ErrorInfo %v, want %v", got, want)
	}
}

// kinds10 names the events of a 1.0 stream in order.
func kinds10(t *testing.T, s grpc.ServerStreamingClient[pb10.StreamResponse]) []string {
	t.Helper()
	var out []string
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch p := r.GetPayload().(type) {
		case *pb10.StreamResponse_Task:
			out = append(out, "task:"+p.Task.GetStatus().GetState().String())
		case *pb10.StreamResponse_StatusUpdate:
			out = append(out, "status:"+p.StatusUpdate.GetStatus().GetState().String())
		case *pb10.StreamResponse_ArtifactUpdate:
			out = append(out, "artifact:"+p.ArtifactUpdate.GetArtifact().GetParts()[0].GetText())
		case *pb10.StreamResponse_Message:
			out = append(out, "message")
		}
	}
}

func TestGRPC10SendIsVisibleOverJSONRPC(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	ctx := metadata.AppendToOutgoingContext(grpcCtx(t), "authorization", "Bearer grpc-token")
	res, err := e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("complete hello there", "")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.GetTask()
	if task.GetStatus().GetState() != pb10.TaskState_TASK_STATE_COMPLETED || task.GetArtifacts()[0].GetParts()[0].GetText() != "complete hello there" {
		t.Fatalf("send answered %v", res)
	}

	got := taskOf(t, mustResult(t, e.rpc(t, a2a.V10, a2a.MethodGetTask, map[string]any{"id": task.GetId()}, nil)))
	if got.State != a2a.StateCompleted || got.ContextID != task.GetContextId() {
		t.Fatalf("JSON-RPC reads %+v", got)
	}

	reqs := e.agent.Requests()
	first := reqs[0]
	if first.Path != "/lf.a2a.v1.A2AService/SendMessage" || first.Op.Method != a2a.MethodSend || first.Op.Version != a2a.V10 || first.Op.Binding != a2a.BindingGRPC ||
		first.Header.Get("Authorization") != "Bearer grpc-token" {
		t.Fatalf("recorded %+v", first)
	}
	var sent pb10.SendMessageRequest
	if err := proto.Unmarshal(first.Body, &sent); err != nil || sent.GetMessage().GetParts()[0].GetText() != "complete hello there" {
		t.Fatalf("recorded body %v %v", &sent, err)
	}
}

func TestGRPC10Stream(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	s, err := e.c10.SendStreamingMessage(grpcCtx(t), &pb10.SendMessageRequest{Message: e.msg10("stream 2", "")})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds10(t, s)
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact:chunk 1 of 2", "artifact:chunk 2 of 2", "status:TASK_STATE_COMPLETED"}
	if !slices.Equal(got, want) {
		t.Fatalf("stream %v, want %v", got, want)
	}
}

func TestGRPC10MessageScenario(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	res, err := e.c10.SendMessage(grpcCtx(t), &pb10.SendMessageRequest{Message: e.msg10("message hi", "")})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetMessage().GetRole() != pb10.Role_ROLE_AGENT || res.GetMessage().GetParts()[0].GetText() != "Hello from the demo agent. You said: message hi" {
		t.Fatalf("answered %v", res)
	}
}

func TestGRPC10InputCancelSubscribeList(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	ctx := grpcCtx(t)
	res, err := e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("input", "")})
	if err != nil || res.GetTask().GetStatus().GetState() != pb10.TaskState_TASK_STATE_INPUT_REQUIRED {
		t.Fatalf("input: %v %v", res, err)
	}
	id := res.GetTask().GetId()
	res, err = e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("forty-two", id)})
	if err != nil || res.GetTask().GetStatus().GetState() != pb10.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("answer: %v %v", res, err)
	}
	one := int32(1)
	got, err := e.c10.GetTask(ctx, &pb10.GetTaskRequest{Id: id, HistoryLength: &one})
	if err != nil || len(got.GetHistory()) != 1 {
		t.Fatalf("get with historyLength 1: %v %v", got, err)
	}

	// A waiting task: subscribe, then cancel; the subscription ends with
	// the canceled status.
	res, err = e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("wait", ""),
		Configuration: &pb10.SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	waiting := res.GetTask().GetId()
	sub, err := e.c10.SubscribeToTask(ctx, &pb10.SubscribeToTaskRequest{Id: waiting})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := sub.Recv(); err != nil || first.GetTask().GetId() != waiting {
		t.Fatalf("subscription opened with %v %v", first, err)
	}
	canceled, err := e.c10.CancelTask(ctx, &pb10.CancelTaskRequest{Id: waiting})
	if err != nil || canceled.GetStatus().GetState() != pb10.TaskState_TASK_STATE_CANCELED {
		t.Fatalf("cancel: %v %v", canceled, err)
	}
	if rest := kinds10(t, sub); !slices.Contains(rest, "status:TASK_STATE_CANCELED") {
		t.Fatalf("subscription went on with %v", rest)
	}
	_, err = e.c10.CancelTask(ctx, &pb10.CancelTaskRequest{Id: waiting})
	wantStatus(t, err, codes.FailedPrecondition, "TASK_NOT_CANCELABLE")

	two := int32(2)
	list, err := e.c10.ListTasks(ctx, &pb10.ListTasksRequest{PageSize: &two, Status: pb10.TaskState_TASK_STATE_CANCELED})
	if err != nil || len(list.GetTasks()) != 1 || list.GetTasks()[0].GetId() != waiting || list.GetTotalSize() != 1 {
		t.Fatalf("list canceled: %v %v", list, err)
	}
}

func TestGRPC10Errors(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	ctx := grpcCtx(t)
	_, err := e.c10.GetTask(ctx, &pb10.GetTaskRequest{Id: "no-such-task"})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	_, err = e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("more", "no-such-task")})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
	_, err = e.c10.GetTask(ctx, &pb10.GetTaskRequest{})
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS")
	_, err = e.c10.CreateTaskPushNotificationConfig(ctx, &pb10.TaskPushNotificationConfig{TaskId: "t", Url: "http://127.0.0.1:1/hook"})
	wantStatus(t, err, codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED")
}

func TestGRPC10PushConfigs(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{Push: true})
	hook := newReceiver(t, 0)
	ctx := grpcCtx(t)
	res, err := e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("wait", ""),
		Configuration: &pb10.SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.GetTask().GetId()
	cfg, err := e.c10.CreateTaskPushNotificationConfig(ctx, &pb10.TaskPushNotificationConfig{TaskId: id, Id: "cfg-1", Url: hook.url, Token: "tok"})
	if err != nil || cfg.GetId() != "cfg-1" || cfg.GetTaskId() != id || cfg.GetToken() != "tok" {
		t.Fatalf("create: %v %v", cfg, err)
	}
	got, err := e.c10.GetTaskPushNotificationConfig(ctx, &pb10.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"})
	if err != nil || got.GetUrl() != hook.url {
		t.Fatalf("get: %v %v", got, err)
	}
	list, err := e.c10.ListTaskPushNotificationConfigs(ctx, &pb10.ListTaskPushNotificationConfigsRequest{TaskId: id})
	if err != nil || len(list.GetConfigs()) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if _, err := e.c10.CancelTask(ctx, &pb10.CancelTaskRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	if p := hook.wait(t, 1); p[0].header.Get("X-A2A-Notification-Token") != "tok" {
		t.Fatalf("push headers %v", p[0].header)
	}
	if _, err := e.c10.DeleteTaskPushNotificationConfig(ctx, &pb10.DeleteTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c10.GetTaskPushNotificationConfig(ctx, &pb10.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"})
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND")
}

func TestGRPCCards(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	ctx := grpcCtx(t)
	c10, err := e.c10.GetExtendedAgentCard(ctx, &pb10.GetExtendedAgentCardRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var grpc10 []string
	for _, i := range c10.GetSupportedInterfaces() {
		if i.GetProtocolBinding() == "GRPC" {
			grpc10 = append(grpc10, i.GetUrl()+" "+i.GetProtocolVersion())
		}
	}
	if !slices.Equal(grpc10, []string{e.addr + " 1.0", e.addr + " 0.3"}) {
		t.Fatalf("1.0 card's gRPC interfaces: %v", grpc10)
	}
	c03, err := e.c03.GetAgentCard(ctx, &pb03.GetAgentCardRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c03.GetAdditionalInterfaces()); n != 3 || c03.GetAdditionalInterfaces()[2].GetTransport() != "GRPC" || c03.GetAdditionalInterfaces()[2].GetUrl() != e.addr {
		t.Fatalf("0.3 card's interfaces: %v", c03.GetAdditionalInterfaces())
	}
	code, _, body := e.rest(t, http.MethodGet, "/.well-known/agent-card.json", noVersion, nil)
	card := decode(t, body)
	if code != http.StatusOK || path(t, card, "additionalInterfaces", 2, "url") != e.addr || path(t, card, "supportedInterfaces", 4, "protocolBinding") != "GRPC" {
		t.Fatalf("HTTP card %d %s", code, body)
	}
}

func TestGRPC03SendStreamAndNames(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	ctx := grpcCtx(t)
	res, err := e.c03.SendMessage(ctx, &pb03.SendMessageRequest{Request: e.msg03("complete zero three", "")})
	if err != nil || res.GetTask().GetStatus().GetState() != pb03.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("send: %v %v", res, err)
	}
	id := res.GetTask().GetId()
	got := taskOf(t, mustResult(t, e.rpc(t, a2a.V03, a2a.MethodGetTask, map[string]any{"id": id}, nil)))
	if got.State != a2a.StateCompleted {
		t.Fatalf("JSON-RPC reads %+v", got)
	}
	task, err := e.c03.GetTask(ctx, &pb03.GetTaskRequest{Name: "tasks/" + id})
	if err != nil || task.GetArtifacts()[0].GetParts()[0].GetText() != "complete zero three" {
		t.Fatalf("get: %v %v", task, err)
	}

	// A configuration without blocking is a request not to wait: 0.3
	// spells it as a plain bool.
	res, err = e.c03.SendMessage(ctx, &pb03.SendMessageRequest{Request: e.msg03("wait", ""), Configuration: &pb03.SendMessageConfiguration{}})
	if err != nil || res.GetTask().GetStatus().GetState() == pb03.TaskState_TASK_STATE_CANCELLED {
		t.Fatalf("non-blocking send: %v %v", res, err)
	}
	waiting := res.GetTask().GetId()
	canceled, err := e.c03.CancelTask(ctx, &pb03.CancelTaskRequest{Name: "tasks/" + waiting})
	if err != nil || canceled.GetStatus().GetState() != pb03.TaskState_TASK_STATE_CANCELLED {
		t.Fatalf("cancel: %v %v", canceled, err)
	}

	s, err := e.c03.SendStreamingMessage(ctx, &pb03.SendMessageRequest{Request: e.msg03("stream 2", "")})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch p := r.GetPayload().(type) {
		case *pb03.StreamResponse_Task:
			kinds = append(kinds, "task")
		case *pb03.StreamResponse_StatusUpdate:
			k := "status:" + p.StatusUpdate.GetStatus().GetState().String()
			if p.StatusUpdate.GetFinal() {
				k += ":final"
			}
			kinds = append(kinds, k)
		case *pb03.StreamResponse_ArtifactUpdate:
			kinds = append(kinds, "artifact")
		}
	}
	want := []string{"task", "status:TASK_STATE_WORKING", "artifact", "artifact", "status:TASK_STATE_COMPLETED:final"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("stream %v, want %v", kinds, want)
	}

	_, err = e.c03.GetTask(ctx, &pb03.GetTaskRequest{Name: "tasks/nope"})
	wantStatus(t, err, codes.NotFound, "")
	_, err = e.c03.GetTask(ctx, &pb03.GetTaskRequest{Name: "tasks/" + id + "/pushNotificationConfigs/x"})
	wantStatus(t, err, codes.InvalidArgument, "")
	_, err = e.c03.GetTask(ctx, &pb03.GetTaskRequest{Name: id})
	wantStatus(t, err, codes.InvalidArgument, "")
}

func TestGRPC03PushConfigs(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{Push: true})
	hook := newReceiver(t, 0)
	ctx := grpcCtx(t)
	res, err := e.c03.SendMessage(ctx, &pb03.SendMessageRequest{Request: e.msg03("wait", ""), Configuration: &pb03.SendMessageConfiguration{}})
	if err != nil {
		t.Fatal(err)
	}
	parent := "tasks/" + res.GetTask().GetId()
	cfg, err := e.c03.CreateTaskPushNotificationConfig(ctx, &pb03.CreateTaskPushNotificationConfigRequest{
		Parent: parent, ConfigId: "cfg-3",
		Config: &pb03.TaskPushNotificationConfig{PushNotificationConfig: &pb03.PushNotificationConfig{Url: hook.url, Token: "tok3"}},
	})
	name := parent + "/pushNotificationConfigs/cfg-3"
	if err != nil || cfg.GetName() != name || cfg.GetPushNotificationConfig().GetId() != "cfg-3" {
		t.Fatalf("create: %v %v", cfg, err)
	}
	got, err := e.c03.GetTaskPushNotificationConfig(ctx, &pb03.GetTaskPushNotificationConfigRequest{Name: name})
	if err != nil || got.GetPushNotificationConfig().GetToken() != "tok3" {
		t.Fatalf("get: %v %v", got, err)
	}
	list, err := e.c03.ListTaskPushNotificationConfig(ctx, &pb03.ListTaskPushNotificationConfigRequest{Parent: parent})
	if err != nil || len(list.GetConfigs()) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if _, err := e.c03.CancelTask(ctx, &pb03.CancelTaskRequest{Name: parent}); err != nil {
		t.Fatal(err)
	}
	if p := hook.wait(t, 1); p[0].header.Get("X-A2A-Notification-Token") != "tok3" {
		t.Fatalf("push headers %v", p[0].header)
	}
	if _, err := e.c03.DeleteTaskPushNotificationConfig(ctx, &pb03.DeleteTaskPushNotificationConfigRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c03.GetTaskPushNotificationConfig(ctx, &pb03.GetTaskPushNotificationConfigRequest{Name: name})
	wantStatus(t, err, codes.NotFound, "")
}

func TestGRPCAuthCredentialFromMetadata(t *testing.T) {
	e := newGRPCEnv(t, demoagent.Options{})
	ctx := grpcCtx(t)
	res, err := e.c10.SendMessage(ctx, &pb10.SendMessageRequest{Message: e.msg10("auth", "")})
	if err != nil || res.GetTask().GetStatus().GetState() != pb10.TaskState_TASK_STATE_AUTH_REQUIRED {
		t.Fatalf("auth: %v %v", res, err)
	}
	id := res.GetTask().GetId()
	withToken := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer user-token")
	res, err = e.c10.SendMessage(withToken, &pb10.SendMessageRequest{Message: e.msg10("here", id)})
	if err != nil || res.GetTask().GetStatus().GetState() != pb10.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("resume: %v %v", res, err)
	}
	if got := e.agent.Credentials(id); !slices.Equal(got, []string{"Bearer user-token"}) {
		t.Fatalf("credentials %v", got)
	}
}
