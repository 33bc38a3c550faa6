package grpcwire

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// bridgeCase is one answer spelled in both versions' protobuf messages,
// with every member both have: translated by the bridge from one version's
// protobuf JSON, it encodes with the other version's message and decodes
// to the same answer.
type bridgeCase struct {
	name     string
	m        a2a.Method
	a10, a03 proto.Message
}

func bridgeCases(t *testing.T) []bridgeCase {
	data, err := structpb.NewStruct(map[string]any{"k": []any{1.0, "x"}, "n": 2.5})
	if err != nil {
		t.Fatal(err)
	}
	when := timestamppb.New(timestamppb.Now().AsTime().Truncate(1e3))
	parts10 := []*a2a10.Part{
		{Content: &a2a10.Part_Text{Text: "hello"}},
		{Content: &a2a10.Part_Raw{Raw: []byte{0, 1, 2, 255}}, MediaType: "application/octet-stream"},
		{Content: &a2a10.Part_Url{Url: "https://files.example.com/a.pdf"}, MediaType: "application/pdf"},
		{Content: &a2a10.Part_Data{Data: structpb.NewStructValue(data)}},
	}
	parts03 := []*a2a03.Part{
		{Part: &a2a03.Part_Text{Text: "hello"}},
		{Part: &a2a03.Part_File{File: &a2a03.FilePart{File: &a2a03.FilePart_FileWithBytes{FileWithBytes: []byte{0, 1, 2, 255}}, MimeType: "application/octet-stream"}}},
		{Part: &a2a03.Part_File{File: &a2a03.FilePart{File: &a2a03.FilePart_FileWithUri{FileWithUri: "https://files.example.com/a.pdf"}, MimeType: "application/pdf"}}},
		{Part: &a2a03.Part_Data{Data: &a2a03.DataPart{Data: data}}},
	}
	msg10 := &a2a10.Message{MessageId: "m-1", ContextId: "ctx-1", TaskId: "task-1", Role: a2a10.Role_ROLE_AGENT,
		Parts: parts10, Metadata: testMetadata(t), Extensions: []string{"https://example.com/ext"}}
	msg03 := &a2a03.Message{MessageId: "m-1", ContextId: "ctx-1", TaskId: "task-1", Role: a2a03.Role_ROLE_AGENT,
		Content: parts03, Metadata: testMetadata(t), Extensions: []string{"https://example.com/ext"}}
	art10 := &a2a10.Artifact{ArtifactId: "a-1", Name: "out", Description: "d", Parts: parts10, Metadata: testMetadata(t), Extensions: []string{"e"}}
	art03 := &a2a03.Artifact{ArtifactId: "a-1", Name: "out", Description: "d", Parts: parts03, Metadata: testMetadata(t), Extensions: []string{"e"}}
	task10 := &a2a10.Task{Id: "task-1", ContextId: "ctx-1",
		Status:    &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_CANCELED, Message: msg10, Timestamp: when},
		Artifacts: []*a2a10.Artifact{art10}, History: []*a2a10.Message{msg10}, Metadata: testMetadata(t)}
	task03 := &a2a03.Task{Id: "task-1", ContextId: "ctx-1",
		Status:    &a2a03.TaskStatus{State: a2a03.TaskState_TASK_STATE_CANCELLED, Update: msg03, Timestamp: when},
		Artifacts: []*a2a03.Artifact{art03}, History: []*a2a03.Message{msg03}, Metadata: testMetadata(t)}
	status10 := &a2a10.TaskStatusUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_AUTH_REQUIRED}, Metadata: testMetadata(t)}
	status03 := &a2a03.TaskStatusUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Status: &a2a03.TaskStatus{State: a2a03.TaskState_TASK_STATE_AUTH_REQUIRED}, Final: true, Metadata: testMetadata(t)}
	update10 := &a2a10.TaskArtifactUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Artifact: art10, Append: true, LastChunk: true, Metadata: testMetadata(t)}
	update03 := &a2a03.TaskArtifactUpdateEvent{TaskId: "task-1", ContextId: "ctx-1", Artifact: art03, Append: true, LastChunk: true, Metadata: testMetadata(t)}
	cfg10 := &a2a10.TaskPushNotificationConfig{Id: "cfg-1", TaskId: "task-1", Url: "https://hooks.example.com/a", Token: "tok",
		Authentication: &a2a10.AuthenticationInfo{Scheme: "Bearer", Credentials: "c"}}
	cfg03 := &a2a03.TaskPushNotificationConfig{Name: "tasks/task-1/pushNotificationConfigs/cfg-1", PushNotificationConfig: &a2a03.PushNotificationConfig{
		Id: "cfg-1", Url: "https://hooks.example.com/a", Token: "tok", Authentication: &a2a03.AuthenticationInfo{Schemes: []string{"Bearer"}, Credentials: "c"}}}
	return []bridgeCase{
		{"send task", a2a.MethodSend, &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: task10}}, &a2a03.SendMessageResponse{Payload: &a2a03.SendMessageResponse_Task{Task: task03}}},
		{"send message", a2a.MethodSend, &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Message{Message: msg10}}, &a2a03.SendMessageResponse{Payload: &a2a03.SendMessageResponse_Msg{Msg: msg03}}},
		{"stream task", a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Task{Task: task10}}, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_Task{Task: task03}}},
		{"stream message", a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Message{Message: msg10}}, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_Msg{Msg: msg03}}},
		{"stream status", a2a.MethodStream, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_StatusUpdate{StatusUpdate: status10}}, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_StatusUpdate{StatusUpdate: status03}}},
		{"subscribe artifact", a2a.MethodSubscribe, &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_ArtifactUpdate{ArtifactUpdate: update10}}, &a2a03.StreamResponse{Payload: &a2a03.StreamResponse_ArtifactUpdate{ArtifactUpdate: update03}}},
		{"get", a2a.MethodGetTask, task10, task03},
		{"cancel", a2a.MethodCancelTask, task10, task03},
		{"push set", a2a.MethodPushConfigSet, cfg10, cfg03},
		{"push get", a2a.MethodPushConfigGet, cfg10, cfg03},
		{"push list", a2a.MethodPushConfigList, &a2a10.ListTaskPushNotificationConfigsResponse{Configs: []*a2a10.TaskPushNotificationConfig{cfg10}, NextPageToken: "n"},
			&a2a03.ListTaskPushNotificationConfigResponse{Configs: []*a2a03.TaskPushNotificationConfig{cfg03}, NextPageToken: "n"}},
		{"push delete", a2a.MethodPushConfigDelete, &emptypb.Empty{}, &emptypb.Empty{}},
	}
}

// bridgeOver reads answer, a message of version from, off the wire,
// translates it to version to, and encodes it on to's wire.
func bridgeOver(t *testing.T, m a2a.Method, answer proto.Message, from, to a2a.Version) []byte {
	t.Helper()
	src := &a2a.Operation{Method: m, Version: from, Binding: a2a.BindingGRPC}
	dst := &a2a.Operation{Method: m, Version: to, Binding: a2a.BindingGRPC}
	_, payload, err := ReadAnswer(src, mustMarshal(t, answer))
	if err != nil {
		t.Fatalf("ReadAnswer %s: %v", from, err)
	}
	translated, err := a2a.TranslateResult(m, payload, a2a.FormOf(src), a2a.FormOf(dst))
	if err != nil {
		t.Fatalf("TranslateResult %s -> %s: %v\n%s", from, to, err, payload)
	}
	wire, err := EncodeAnswer(dst, translated)
	if err != nil {
		t.Fatalf("EncodeAnswer %s: %v\n%s", to, err, translated)
	}
	// What the gateway sends is an answer the caller's reader accepts.
	if _, _, err := ReadAnswer(dst, wire); err != nil {
		t.Fatalf("ReadAnswer %s of the translation: %v", to, err)
	}
	return wire
}

func TestBridgeOverTheWire(t *testing.T) {
	for _, c := range bridgeCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, dir := range []struct {
				in, want proto.Message
				from, to a2a.Version
			}{{c.a10, c.a03, a2a.V10, a2a.V03}, {c.a03, c.a10, a2a.V03, a2a.V10}} {
				wire := bridgeOver(t, c.m, dir.in, dir.from, dir.to)
				got := dir.want.ProtoReflect().New().Interface()
				if err := proto.Unmarshal(wire, got); err != nil || !proto.Equal(got, dir.want) {
					t.Errorf("%s -> %s: %v\n got %v\nwant %v", dir.from, dir.to, err, got, dir.want)
				}
				// And back: the round trip is the identity.
				back := bridgeOver(t, c.m, got, dir.to, dir.from)
				again := dir.in.ProtoReflect().New().Interface()
				if err := proto.Unmarshal(back, again); err != nil || !proto.Equal(again, dir.in) {
					t.Errorf("%s -> %s -> %s: %v\n got %v\nwant %v", dir.from, dir.to, dir.from, err, again, dir.in)
				}
			}
		})
	}
}
