package grpcwire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testMetadata(t testing.TB) *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any{"trace": "abc", "n": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func message10(t testing.TB) *a2a10.Message {
	return &a2a10.Message{
		MessageId: "m-1", ContextId: "ctx-1", TaskId: "task-1", Role: a2a10.Role_ROLE_USER,
		Parts:            []*a2a10.Part{{Content: &a2a10.Part_Text{Text: "hello"}}},
		Metadata:         testMetadata(t),
		Extensions:       []string{"https://example.com/ext"},
		ReferenceTaskIds: []string{"ref-1", "ref-2"},
	}
}

func message03(t testing.TB) *a2a03.Message {
	return &a2a03.Message{
		MessageId: "m-1", ContextId: "ctx-1", TaskId: "task-1", Role: a2a03.Role_ROLE_USER,
		Content:    []*a2a03.Part{{Part: &a2a03.Part_Text{Text: "hello"}}},
		Metadata:   testMetadata(t),
		Extensions: []string{"https://example.com/ext"},
	}
}

// restCase is a gRPC request and the HTTP+JSON request that asks the same.
type restCase struct {
	name       string
	v          a2a.Version
	m          a2a.Method
	req        proto.Message
	httpMethod string
	path       string
	query      url.Values
	body       []byte
}

func restCases(t testing.TB) []restCase {
	push10 := &a2a10.TaskPushNotificationConfig{Url: "https://hooks.example.com/a", Token: "tok", Authentication: &a2a10.AuthenticationInfo{Scheme: "Bearer"}}
	send10 := &a2a10.SendMessageRequest{
		Tenant: "acme", Message: message10(t), Metadata: testMetadata(t),
		Configuration: &a2a10.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, TaskPushNotificationConfig: push10, HistoryLength: proto.Int32(3), ReturnImmediately: true},
	}
	stream10 := &a2a10.SendMessageRequest{Message: message10(t)}
	pushSet10 := &a2a10.TaskPushNotificationConfig{Tenant: "acme", Id: "cfg-1", TaskId: "task-1", Url: "https://hooks.example.com/b", Token: "t2"}
	push03 := &a2a03.PushNotificationConfig{Id: "cfg-1", Url: "https://hooks.example.com/c", Authentication: &a2a03.AuthenticationInfo{Schemes: []string{"Bearer"}}}
	send03 := &a2a03.SendMessageRequest{
		Request: message03(t), Metadata: testMetadata(t),
		Configuration: &a2a03.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, PushNotification: push03, HistoryLength: 2, Blocking: true},
	}
	pushSet03 := &a2a03.CreateTaskPushNotificationConfigRequest{
		Parent: "tasks/task-1", ConfigId: "cfg-1",
		Config: &a2a03.TaskPushNotificationConfig{Name: "tasks/task-1/pushNotificationConfigs/cfg-1", PushNotificationConfig: push03},
	}
	return []restCase{
		{"1.0 send", a2a.V10, a2a.MethodSend, send10, http.MethodPost, "/acme/message:send", nil, mustJSON(t, send10)},
		{"1.0 stream", a2a.V10, a2a.MethodStream, stream10, http.MethodPost, "/message:stream", nil, mustJSON(t, stream10)},
		{"1.0 get", a2a.V10, a2a.MethodGetTask, &a2a10.GetTaskRequest{Tenant: "acme", Id: "task-1", HistoryLength: proto.Int32(2)}, http.MethodGet, "/acme/tasks/task-1", url.Values{"historyLength": {"2"}}, nil},
		{"1.0 list", a2a.V10, a2a.MethodListTasks, &a2a10.ListTasksRequest{Tenant: "acme", ContextId: "ctx-1", PageSize: proto.Int32(5), PageToken: "p2"}, http.MethodGet, "/acme/tasks", url.Values{"contextId": {"ctx-1"}, "pageSize": {"5"}, "pageToken": {"p2"}}, nil},
		{"1.0 list bare", a2a.V10, a2a.MethodListTasks, &a2a10.ListTasksRequest{}, http.MethodGet, "/tasks", nil, nil},
		{"1.0 cancel", a2a.V10, a2a.MethodCancelTask, &a2a10.CancelTaskRequest{Id: "task-1"}, http.MethodPost, "/tasks/task-1:cancel", nil, nil},
		{"1.0 subscribe", a2a.V10, a2a.MethodSubscribe, &a2a10.SubscribeToTaskRequest{Tenant: "acme", Id: "task-1"}, http.MethodPost, "/acme/tasks/task-1:subscribe", nil, nil},
		{"1.0 push set", a2a.V10, a2a.MethodPushConfigSet, pushSet10, http.MethodPost, "/acme/tasks/task-1/pushNotificationConfigs", nil, mustJSON(t, pushSet10)},
		{"1.0 push get", a2a.V10, a2a.MethodPushConfigGet, &a2a10.GetTaskPushNotificationConfigRequest{TaskId: "task-1", Id: "cfg-1"}, http.MethodGet, "/tasks/task-1/pushNotificationConfigs/cfg-1", nil, nil},
		{"1.0 push list", a2a.V10, a2a.MethodPushConfigList, &a2a10.ListTaskPushNotificationConfigsRequest{Tenant: "acme", TaskId: "task-1", PageSize: 3}, http.MethodGet, "/acme/tasks/task-1/pushNotificationConfigs", nil, nil},
		{"1.0 push delete", a2a.V10, a2a.MethodPushConfigDelete, &a2a10.DeleteTaskPushNotificationConfigRequest{TaskId: "task-1", Id: "cfg-1"}, http.MethodDelete, "/tasks/task-1/pushNotificationConfigs/cfg-1", nil, nil},
		{"1.0 card", a2a.V10, a2a.MethodExtendedCard, &a2a10.GetExtendedAgentCardRequest{Tenant: "acme"}, http.MethodGet, "/acme/extendedAgentCard", nil, nil},

		{"0.3 send", a2a.V03, a2a.MethodSend, send03, http.MethodPost, "/v1/message:send", nil, mustJSON(t, send03)},
		{"0.3 stream", a2a.V03, a2a.MethodStream, &a2a03.SendMessageRequest{Request: message03(t)}, http.MethodPost, "/v1/message:stream", nil, mustJSON(t, &a2a03.SendMessageRequest{Request: message03(t)})},
		{"0.3 get", a2a.V03, a2a.MethodGetTask, &a2a03.GetTaskRequest{Name: "tasks/task-1", HistoryLength: 4}, http.MethodGet, "/v1/tasks/task-1", nil, nil},
		{"0.3 cancel", a2a.V03, a2a.MethodCancelTask, &a2a03.CancelTaskRequest{Name: "tasks/task-1"}, http.MethodPost, "/v1/tasks/task-1:cancel", nil, nil},
		{"0.3 subscribe", a2a.V03, a2a.MethodSubscribe, &a2a03.TaskSubscriptionRequest{Name: "tasks/task-1"}, http.MethodGet, "/v1/tasks/task-1:subscribe", nil, nil},
		{"0.3 push set", a2a.V03, a2a.MethodPushConfigSet, pushSet03, http.MethodPost, "/v1/tasks/task-1/pushNotificationConfigs", nil, mustJSON(t, pushSet03.Config)},
		{"0.3 push get", a2a.V03, a2a.MethodPushConfigGet, &a2a03.GetTaskPushNotificationConfigRequest{Name: "tasks/task-1/pushNotificationConfigs/cfg-1"}, http.MethodGet, "/v1/tasks/task-1/pushNotificationConfigs/cfg-1", nil, nil},
		{"0.3 push list", a2a.V03, a2a.MethodPushConfigList, &a2a03.ListTaskPushNotificationConfigRequest{Parent: "tasks/task-1"}, http.MethodGet, "/v1/tasks/task-1/pushNotificationConfigs", nil, nil},
		{"0.3 push delete", a2a.V03, a2a.MethodPushConfigDelete, &a2a03.DeleteTaskPushNotificationConfigRequest{Name: "tasks/task-1/pushNotificationConfigs/cfg-1"}, http.MethodDelete, "/v1/tasks/task-1/pushNotificationConfigs/cfg-1", nil, nil},
		{"0.3 card", a2a.V03, a2a.MethodExtendedCard, &a2a03.GetAgentCardRequest{}, http.MethodGet, "/v1/card", nil, nil},
	}
}

// comparable is what an Operation says about a request, whatever its
// binding; push configs compared as JSON values.
func comparable(t *testing.T, op *a2a.Operation) map[string]any {
	t.Helper()
	var push any
	if op.PushConfig != nil {
		if err := json.Unmarshal(op.PushConfig, &push); err != nil {
			t.Fatal(err)
		}
	}
	return map[string]any{
		"method": op.Method, "version": op.Version, "task": op.TaskID, "context": op.ContextID,
		"message": op.MessageID, "refs": op.ReferenceTaskIDs, "pushID": op.PushConfigID,
		"tenant": op.Tenant, "push": push, "pageSize": op.PageSize, "pageToken": op.PageToken,
	}
}

func TestClassifyAgreesWithREST(t *testing.T) {
	covered := map[[2]int]bool{}
	for _, c := range restCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got, e := Classify(c.v, c.m, mustMarshal(t, c.req))
			if e != nil {
				t.Fatalf("Classify: %v", e)
			}
			if got.Binding != a2a.BindingGRPC || !got.VersionExplicit || got.RPCMethod != "" || got.RPCID != nil {
				t.Errorf("binding fields: %+v", got)
			}
			want, e := a2a.ClassifyREST(c.httpMethod, c.path, c.query, c.body, c.v, true)
			if e != nil {
				t.Fatalf("ClassifyREST: %v", e)
			}
			if g, w := comparable(t, got), comparable(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("gRPC:\n%v\nREST:\n%v", g, w)
			}
		})
		covered[[2]int{int(c.v), int(c.m)}] = true
	}
	for _, r := range rpcs {
		if !covered[[2]int{int(r.version), int(r.method)}] {
			t.Errorf("no case for %s %s", r.version, r.name)
		}
	}
}

func TestClassifyRefuses(t *testing.T) {
	longID := strings.Repeat("x", a2a.MaxIDLength+1)
	for _, c := range []struct {
		name string
		v    a2a.Version
		m    a2a.Method
		req  proto.Message
		want string
	}{
		{"1.0 send without message id", a2a.V10, a2a.MethodSend, &a2a10.SendMessageRequest{Message: &a2a10.Message{}}, "message.messageId is required"},
		{"1.0 send without message", a2a.V10, a2a.MethodSend, &a2a10.SendMessageRequest{}, `"message" must be an object`},
		{"1.0 get without id", a2a.V10, a2a.MethodGetTask, &a2a10.GetTaskRequest{}, "the task id is required"},
		{"1.0 get long id", a2a.V10, a2a.MethodGetTask, &a2a10.GetTaskRequest{Id: longID}, "longer than the gateway accepts"},
		{"1.0 get U+FFFD", a2a.V10, a2a.MethodGetTask, &a2a10.GetTaskRequest{Id: "a\uFFFDb"}, "not valid UTF-8"},
		{"1.0 push get without id", a2a.V10, a2a.MethodPushConfigGet, &a2a10.GetTaskPushNotificationConfigRequest{TaskId: "t"}, "push notification config id is required"},
		{"1.0 send empty reference", a2a.V10, a2a.MethodSend, &a2a10.SendMessageRequest{Message: &a2a10.Message{MessageId: "m", ReferenceTaskIds: []string{""}}}, "empty id"},
		{"0.3 get bad name", a2a.V03, a2a.MethodGetTask, &a2a03.GetTaskRequest{Name: "task/1"}, "name must be tasks/{id}"},
		{"0.3 get nested name", a2a.V03, a2a.MethodGetTask, &a2a03.GetTaskRequest{Name: "tasks/1/x"}, "name must be tasks/{id}"},
		{"0.3 get without name", a2a.V03, a2a.MethodGetTask, &a2a03.GetTaskRequest{}, "the task id is required"},
		{"0.3 push delete task only", a2a.V03, a2a.MethodPushConfigDelete, &a2a03.DeleteTaskPushNotificationConfigRequest{Name: "tasks/1"}, "push notification config id is required"},
		{"0.3 push get empty config", a2a.V03, a2a.MethodPushConfigGet, &a2a03.GetTaskPushNotificationConfigRequest{Name: "tasks/1/pushNotificationConfigs/"}, "name must be"},
		{"0.3 push set config id differs", a2a.V03, a2a.MethodPushConfigSet, &a2a03.CreateTaskPushNotificationConfigRequest{Parent: "tasks/1", ConfigId: "a", Config: &a2a03.TaskPushNotificationConfig{PushNotificationConfig: &a2a03.PushNotificationConfig{Id: "b", Url: "https://x"}}}, "config_id differs"},
		{"0.3 push set name of another task", a2a.V03, a2a.MethodPushConfigSet, &a2a03.CreateTaskPushNotificationConfigRequest{Parent: "tasks/1", Config: &a2a03.TaskPushNotificationConfig{Name: "tasks/2/pushNotificationConfigs/", PushNotificationConfig: &a2a03.PushNotificationConfig{Url: "https://x"}}}, "name must be"},
		{"0.3 push set without task", a2a.V03, a2a.MethodPushConfigSet, &a2a03.CreateTaskPushNotificationConfigRequest{Config: &a2a03.TaskPushNotificationConfig{PushNotificationConfig: &a2a03.PushNotificationConfig{Url: "https://x"}}}, "the task id is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, e := Classify(c.v, c.m, mustMarshal(t, c.req))
			if e == nil || e.Code != a2a.ErrInvalidParams.Code || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want InvalidParams with %q", e, c.want)
			}
		})
	}
	if _, e := Classify(a2a.V03, a2a.MethodListTasks, nil); e == nil || e.Code != a2a.ErrMethodNotFound.Code {
		t.Errorf("0.3 ListTasks: %v", e)
	}
}

func TestPaths(t *testing.T) {
	for _, r := range rpcs {
		p, ok := Path(r.version, r.method)
		if !ok {
			t.Fatalf("no path for %s %s", r.version, r.method)
		}
		v, m, ok := ParsePath(p)
		if !ok || v != r.version || m != r.method {
			t.Errorf("ParsePath(%q) = %v %v %v", p, v, m, ok)
		}
	}
	if p, _ := Path(a2a.V10, a2a.MethodSend); p != "/lf.a2a.v1.A2AService/SendMessage" {
		t.Errorf("1.0 send path %q", p)
	}
	if p, _ := Path(a2a.V03, a2a.MethodSubscribe); p != "/a2a.v1.A2AService/TaskSubscription" {
		t.Errorf("0.3 subscribe path %q", p)
	}
	for _, p := range []string{"", "/", "/lf.a2a.v1.A2AService", "/lf.a2a.v1.A2AService/", "/lf.a2a.v1.A2AService/sendMessage",
		"lf.a2a.v1.A2AService/SendMessage", "/a2a.v1.A2AService/ListTasks", "/lf.a2a.v1.A2AService/SendMessage/x",
		"/lf.a2a.v1.a2aservice/SendMessage", "/grpc.health.v1.Health/Check"} {
		if _, _, ok := ParsePath(p); ok {
			t.Errorf("ParsePath(%q) accepted", p)
		}
	}
	if _, ok := Path(a2a.V03, a2a.MethodListTasks); ok {
		t.Error("0.3 has no ListTasks")
	}
}

// bytesEqual reports equality for messages of the splice tests.
var bytesEqual = bytes.Equal
