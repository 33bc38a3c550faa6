package grpcwire

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

func TestEncodeRequest(t *testing.T) {
	params := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	push := &a2a03.PushNotificationConfig{Id: "cfg-1", Url: "https://hooks.example.com/c", Token: "tok"}
	send03 := &a2a03.SendMessageRequest{Request: message03(t)}
	cases := []struct {
		name   string
		v      a2a.Version
		m      a2a.Method
		params []byte
		want   proto.Message
	}{
		{"1.0 cancel", a2a.V10, a2a.MethodCancelTask, params(a2a.TaskParams{ID: "task-1", Tenant: "acme"}), &a2a10.CancelTaskRequest{Id: "task-1", Tenant: "acme"}},
		{"1.0 subscribe", a2a.V10, a2a.MethodSubscribe, params(a2a.TaskParams{ID: "task-1"}), &a2a10.SubscribeToTaskRequest{Id: "task-1"}},
		{"1.0 get", a2a.V10, a2a.MethodGetTask, []byte(`{"id":"task-1","historyLength":0}`), &a2a10.GetTaskRequest{Id: "task-1", HistoryLength: proto.Int32(0)}},
		{"0.3 get", a2a.V03, a2a.MethodGetTask, params(a2a.TaskParams{ID: "task-1"}), &a2a03.GetTaskRequest{Name: "tasks/task-1"}},
		{"0.3 cancel", a2a.V03, a2a.MethodCancelTask, params(a2a.TaskParams{ID: "task-1"}), &a2a03.CancelTaskRequest{Name: "tasks/task-1"}},
		{"0.3 subscribe", a2a.V03, a2a.MethodSubscribe, params(a2a.TaskParams{ID: "task-1"}), &a2a03.TaskSubscriptionRequest{Name: "tasks/task-1"}},
		{"0.3 push get", a2a.V03, a2a.MethodPushConfigGet, []byte(`{"id":"task-1","pushNotificationConfigId":"cfg-1"}`), &a2a03.GetTaskPushNotificationConfigRequest{Name: "tasks/task-1/pushNotificationConfigs/cfg-1"}},
		{"0.3 push get of the task", a2a.V03, a2a.MethodPushConfigGet, []byte(`{"id":"task-1"}`), &a2a03.GetTaskPushNotificationConfigRequest{Name: "tasks/task-1"}},
		{"0.3 push delete", a2a.V03, a2a.MethodPushConfigDelete, []byte(`{"id":"task-1","pushNotificationConfigId":"cfg-1"}`), &a2a03.DeleteTaskPushNotificationConfigRequest{Name: "tasks/task-1/pushNotificationConfigs/cfg-1"}},
		{"0.3 push list", a2a.V03, a2a.MethodPushConfigList, []byte(`{"id":"task-1"}`), &a2a03.ListTaskPushNotificationConfigRequest{Parent: "tasks/task-1"}},
		{"0.3 push set", a2a.V03, a2a.MethodPushConfigSet, params(map[string]any{"taskId": "task-1", "pushNotificationConfig": json.RawMessage(mustJSON(t, push))}),
			&a2a03.CreateTaskPushNotificationConfigRequest{Parent: "tasks/task-1", ConfigId: "cfg-1", Config: &a2a03.TaskPushNotificationConfig{Name: "tasks/task-1/pushNotificationConfigs/cfg-1", PushNotificationConfig: push}}},
		{"0.3 send", a2a.V03, a2a.MethodSend, mustJSON(t, send03), send03},
		{"0.3 card", a2a.V03, a2a.MethodExtendedCard, nil, &a2a03.GetAgentCardRequest{}},
	}
	// Every 1.0 request of the classification cases, from its JSON.
	for _, c := range restCases(t) {
		if c.v == a2a.V10 {
			cases = append(cases, struct {
				name   string
				v      a2a.Version
				m      a2a.Method
				params []byte
				want   proto.Message
			}{c.name, c.v, c.m, mustJSON(t, c.req), c.req})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, err := EncodeRequest(c.v, c.m, c.params)
			if err != nil {
				t.Fatal(err)
			}
			got := newOf(c.want)
			if err := proto.Unmarshal(msg, got); err != nil || !proto.Equal(got, c.want) {
				t.Fatalf("got %v %v, want %v", got, err, c.want)
			}
			if _, e := Classify(c.v, c.m, msg); e != nil && c.m != a2a.MethodExtendedCard {
				t.Errorf("the encoded request is refused: %v", e)
			}
		})
	}
	for _, bad := range []struct {
		v      a2a.Version
		m      a2a.Method
		params string
	}{
		{a2a.V10, a2a.MethodGetTask, `{"id":"t","kind":"x"}`},
		{a2a.V10, a2a.MethodGetTask, `[`},
		{a2a.V03, a2a.MethodGetTask, `{}`},
		{a2a.V03, a2a.MethodGetTask, `{"id":"a/b"}`},
		{a2a.V03, a2a.MethodPushConfigGet, `{"id":"a","pushNotificationConfigId":"b/c"}`},
		{a2a.V03, a2a.MethodPushConfigSet, `{"taskId":"t","pushNotificationConfig":{"url":"https://x","kind":1}}`},
		{a2a.V03, a2a.MethodListTasks, `{}`},
	} {
		if _, err := EncodeRequest(bad.v, bad.m, []byte(bad.params)); err == nil {
			t.Errorf("%s %s %s: accepted", bad.v, bad.m, bad.params)
		}
	}
}
