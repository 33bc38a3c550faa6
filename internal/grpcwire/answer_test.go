package grpcwire

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

func task10(t testing.TB) *a2a10.Task {
	agent := message10(t)
	agent.Role, agent.ReferenceTaskIds = a2a10.Role_ROLE_AGENT, []string{"ref-9"}
	return &a2a10.Task{
		Id: "task-1", ContextId: "ctx-1",
		Status:    &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_WORKING, Message: agent, Timestamp: timestamppb.New(timestamppb.Now().AsTime().Truncate(1e3))},
		Artifacts: []*a2a10.Artifact{{ArtifactId: "a-1", Name: "out", Parts: []*a2a10.Part{{Content: &a2a10.Part_Raw{Raw: []byte{0, 1, 2}}, MediaType: "application/octet-stream"}}}},
		History:   []*a2a10.Message{message10(t)},
		Metadata:  testMetadata(t),
	}
}

func task03(t testing.TB) *a2a03.Task {
	return &a2a03.Task{
		Id: "task-1", ContextId: "ctx-1",
		Status:    &a2a03.TaskStatus{State: a2a03.TaskState_TASK_STATE_COMPLETED, Update: message03(t)},
		Artifacts: []*a2a03.Artifact{{ArtifactId: "a-1", Parts: []*a2a03.Part{{Part: &a2a03.Part_Text{Text: "done"}}}}},
		History:   []*a2a03.Message{message03(t)},
	}
}

type answerCase struct {
	name   string
	v      a2a.Version
	m      a2a.Method
	answer proto.Message
	kind   a2a.EventKind
	task   string
}

func answerCases(t testing.TB) []answerCase {
	status10 := &a2a10.TaskStatusUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_COMPLETED}}
	artifact10 := &a2a10.TaskArtifactUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Artifact: &a2a10.Artifact{ArtifactId: "a", Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: "x"}}}}, LastChunk: true}
	status03 := &a2a03.TaskStatusUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Status: &a2a03.TaskStatus{State: a2a03.TaskState_TASK_STATE_WORKING}, Final: true}
	artifact03 := &a2a03.TaskArtifactUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Artifact: &a2a03.Artifact{ArtifactId: "a"}, Append: true}
	config10 := &a2a10.TaskPushNotificationConfig{Id: "cfg-1", TaskId: "task-1", Url: "https://hooks.example.com/a"}
	config03 := &a2a03.TaskPushNotificationConfig{Name: "tasks/task-1/pushNotificationConfigs/cfg-1", PushNotificationConfig: &a2a03.PushNotificationConfig{Id: "cfg-1", Url: "https://hooks.example.com/a"}}
	agentMsg10 := &a2a10.Message{MessageId: "m-2", ContextId: "ctx-1", Role: a2a10.Role_ROLE_AGENT, Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: "hi"}}}}
	agentMsg03 := &a2a03.Message{MessageId: "m-2", ContextId: "ctx-1", Role: a2a03.Role_ROLE_AGENT, Content: []*a2a03.Part{{Part: &a2a03.Part_Text{Text: "hi"}}}}
	return []answerCase{
		{"1.0 send task", a2a.V10, a2a.MethodSend, &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: task10(t)}}, a2a.EventTask, "task-1"},
		{"1.0 send message", a2a.V10, a2a.MethodSend, &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Message{Message: agentMsg10}}, a2a.EventMessage, ""},
		{"1.0 stream task", a2a.V10, a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Task{Task: task10(t)}}, a2a.EventTask, "task-1"},
		{"1.0 stream status", a2a.V10, a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_StatusUpdate{StatusUpdate: status10}}, a2a.EventStatusUpdate, "task-1"},
		{"1.0 stream artifact", a2a.V10, a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_ArtifactUpdate{ArtifactUpdate: artifact10}}, a2a.EventArtifactUpdate, "task-1"},
		{"1.0 stream message", a2a.V10, a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Message{Message: agentMsg10}}, a2a.EventMessage, ""},
		{"1.0 get", a2a.V10, a2a.MethodGetTask, task10(t), a2a.EventTask, "task-1"},
		{"1.0 cancel", a2a.V10, a2a.MethodCancelTask, task10(t), a2a.EventTask, "task-1"},
		{"1.0 subscribe", a2a.V10, a2a.MethodSubscribe, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_StatusUpdate{StatusUpdate: status10}}, a2a.EventStatusUpdate, "task-1"},
		{"1.0 list", a2a.V10, a2a.MethodListTasks, &a2a10.ListTasksResponse{Tasks: []*a2a10.Task{task10(t)}, NextPageToken: "n", PageSize: 1, TotalSize: 3}, a2a.EventNone, ""},
		{"1.0 push set", a2a.V10, a2a.MethodPushConfigSet, config10, a2a.EventNone, ""},
		{"1.0 push get", a2a.V10, a2a.MethodPushConfigGet, config10, a2a.EventNone, ""},
		{"1.0 push list", a2a.V10, a2a.MethodPushConfigList, &a2a10.ListTaskPushNotificationConfigsResponse{Configs: []*a2a10.TaskPushNotificationConfig{config10}}, a2a.EventNone, ""},
		{"1.0 push delete", a2a.V10, a2a.MethodPushConfigDelete, &emptypb.Empty{}, a2a.EventNone, ""},
		{"1.0 card", a2a.V10, a2a.MethodExtendedCard, &a2a10.AgentCard{Name: "demo", Description: "d", Version: "1", SupportedInterfaces: []*a2a10.AgentInterface{{Url: "gw:443", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"}}}, a2a.EventNone, ""},

		{"0.3 send task", a2a.V03, a2a.MethodSend, &a2a03.SendMessageResponse{Payload: &a2a03.SendMessageResponse_Task{Task: task03(t)}}, a2a.EventTask, "task-1"},
		{"0.3 send message", a2a.V03, a2a.MethodSend, &a2a03.SendMessageResponse{Payload: &a2a03.SendMessageResponse_Msg{Msg: agentMsg03}}, a2a.EventMessage, ""},
		{"0.3 stream status", a2a.V03, a2a.MethodStream, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_StatusUpdate{StatusUpdate: status03}}, a2a.EventStatusUpdate, "task-1"},
		{"0.3 stream artifact", a2a.V03, a2a.MethodStream, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_ArtifactUpdate{ArtifactUpdate: artifact03}}, a2a.EventArtifactUpdate, "task-1"},
		{"0.3 stream message", a2a.V03, a2a.MethodStream, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_Msg{Msg: agentMsg03}}, a2a.EventMessage, ""},
		{"0.3 get", a2a.V03, a2a.MethodGetTask, task03(t), a2a.EventTask, "task-1"},
		{"0.3 cancel", a2a.V03, a2a.MethodCancelTask, task03(t), a2a.EventTask, "task-1"},
		{"0.3 subscribe", a2a.V03, a2a.MethodSubscribe, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_Task{Task: task03(t)}}, a2a.EventTask, "task-1"},
		{"0.3 push set", a2a.V03, a2a.MethodPushConfigSet, config03, a2a.EventNone, ""},
		{"0.3 push get", a2a.V03, a2a.MethodPushConfigGet, config03, a2a.EventNone, ""},
		{"0.3 push list", a2a.V03, a2a.MethodPushConfigList, &a2a03.ListTaskPushNotificationConfigResponse{Configs: []*a2a03.TaskPushNotificationConfig{config03}}, a2a.EventNone, ""},
		{"0.3 push delete", a2a.V03, a2a.MethodPushConfigDelete, &emptypb.Empty{}, a2a.EventNone, ""},
		{"0.3 card", a2a.V03, a2a.MethodExtendedCard, &a2a03.AgentCard{Name: "demo", Url: "gw:443", PreferredTransport: "GRPC"}, a2a.EventNone, ""},
	}
}

func TestReadAnswerAndRoundTrip(t *testing.T) {
	covered := map[[2]int]bool{}
	for _, c := range answerCases(t) {
		covered[[2]int{int(c.v), int(c.m)}] = true
		t.Run(c.name, func(t *testing.T) {
			op := &a2a.Operation{Method: c.m, Version: c.v, Binding: a2a.BindingGRPC}
			ev, payload, err := ReadAnswer(op, mustMarshal(t, c.answer))
			if err != nil {
				t.Fatalf("ReadAnswer: %v", err)
			}
			if ev.Kind != c.kind || ev.TaskID != c.task {
				t.Errorf("event %+v, want %s of %q", ev, c.kind, c.task)
			}
			// The payload is what a REST answer of the version is read as.
			rest := *op
			rest.Binding = a2a.BindingREST
			if want, _, err := a2a.ReadAnswer(&rest, payload); err != nil || want.Kind != ev.Kind {
				t.Errorf("REST reading of %s: %+v %v", payload, want, err)
			}
			enc, err := EncodeAnswer(op, payload)
			if err != nil {
				t.Fatalf("EncodeAnswer: %v", err)
			}
			back := newOf(c.answer)
			if err := proto.Unmarshal(enc, back); err != nil || !proto.Equal(back, c.answer) {
				t.Errorf("round trip: %v\n got %v\nwant %v", err, back, c.answer)
			}
		})
	}
	for _, r := range rpcs {
		if !covered[[2]int{int(r.version), int(r.method)}] {
			t.Errorf("no answer case for %s %s", r.version, r.name)
		}
	}
}

func TestReadAnswerEvents(t *testing.T) {
	op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, Binding: a2a.BindingGRPC}
	ev, _, err := ReadAnswer(op, mustMarshal(t, &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: task10(t)}}))
	if err != nil {
		t.Fatal(err)
	}
	if ev.State != a2a.StateWorking || ev.ContextID != "ctx-1" || len(ev.ReferenceTaskIDs) != 3 {
		t.Errorf("event %+v", ev)
	}
	list := &a2a.Operation{Method: a2a.MethodListTasks, Version: a2a.V10, Binding: a2a.BindingGRPC}
	ev, _, err = ReadAnswer(list, mustMarshal(t, &a2a10.ListTasksResponse{Tasks: []*a2a10.Task{task10(t), {Id: "task-2", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_FAILED}}}, NextPageToken: "next"}))
	if err != nil || len(ev.Listed) != 2 || ev.Listed[1].ID != "task-2" || ev.NextPageToken != "next" {
		t.Errorf("list %+v %v", ev, err)
	}
}

func TestReadAnswerRefusesWhatRESTRefuses(t *testing.T) {
	op := &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, Binding: a2a.BindingGRPC}
	// A task whose history holds a message of another task.
	other := message10(t)
	other.TaskId = "task-2"
	bad := task10(t)
	bad.History = append(bad.History, other)
	if _, _, err := ReadAnswer(op, mustMarshal(t, bad)); err == nil {
		t.Error("a history message of another task was accepted")
	}
	if _, _, err := ReadAnswer(op, nil); err == nil {
		t.Error("an empty answer to GetTask was accepted")
	}
	if _, _, err := ReadAnswer(&a2a.Operation{Method: a2a.MethodListTasks, Version: a2a.V03}, nil); err == nil {
		t.Error("0.3 ListTasks has no gRPC answer")
	}
}

func TestEncodeAnswerRefusesUnknownMembers(t *testing.T) {
	op := &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, Binding: a2a.BindingGRPC}
	if _, err := EncodeAnswer(op, []byte(`{"id":"t","kind":"task"}`)); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("got %v", err)
	}
}
