package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// opWant is an expected classification. pushConfig holds the exact raw bytes
// the gateway must expose ("" when there is none): later stages validate the
// webhook from these bytes, so they must be the ones the agent will read.
type opWant struct {
	method     Method
	version    Version
	rpcID      string
	taskID     string
	contextID  string
	messageID  string
	refs       []string
	pushCfgID  string
	tenant     string
	pushConfig string
}

func checkOp(t *testing.T, op *Operation, binding Binding, explicit bool, want opWant) {
	t.Helper()
	if op == nil {
		t.Fatal("nil operation")
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"Method", op.Method, want.method},
		{"Version", op.Version, want.version},
		{"VersionExplicit", op.VersionExplicit, explicit},
		{"Binding", op.Binding, binding},
		{"RPCID", string(op.RPCID), want.rpcID},
		{"TaskID", op.TaskID, want.taskID},
		{"ContextID", op.ContextID, want.contextID},
		{"MessageID", op.MessageID, want.messageID},
		{"PushConfigID", op.PushConfigID, want.pushCfgID},
		{"Tenant", op.Tenant, want.tenant},
		{"PushConfig", string(op.PushConfig), want.pushConfig},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.field, c.got, c.want)
		}
	}
	if !slices.Equal(op.ReferenceTaskIDs, want.refs) {
		t.Errorf("ReferenceTaskIDs = %q, want %q", op.ReferenceTaskIDs, want.refs)
	}
}

func checkErrCode(t *testing.T, e *Error, want int) {
	t.Helper()
	if e == nil {
		t.Fatalf("accepted, want error code %d", want)
	}
	if e.Code != want {
		t.Fatalf("error code %d (%q), want %d", e.Code, e.Message, want)
	}
	if e.Message == "" {
		t.Error("error without a message")
	}
}

func rpcBody(id, method, params string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
}

// Push-notification configs as the SDKs send them, kept as constants so the
// expected PushConfig bytes are exactly the ones embedded in the bodies.
const (
	pushV03     = `{"id":"cfg-1","url":"https://hooks.example.com/a2a","token":"tok-1","authentication":{"schemes":["Bearer"],"credentials":"cred-1"}}`
	pushV10     = `{"url":"https://hooks.example.com/a2a","token":"tok-1","authentication":{"scheme":"Bearer","credentials":"cred-1"}}`
	pushLegacy  = `{"url":"https://hooks.example.com/a2a","token":"tok-1"}`
	flatPushV10 = `{"tenant":"acme","taskId":"task-1","id":"cfg-1","url":"https://hooks.example.com/a2a","token":"tok-1","authentication":{"scheme":"Bearer","credentials":"cred-1"}}`
)

type rpcCase struct {
	name     string
	body     string
	version  Version
	explicit bool
	want     opWant
}

func rpcClassifyCases() []rpcCase {
	msgV10 := `{"messageId":"msg-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"hello","mediaType":"text/plain"}],"referenceTaskIds":["task-0"],"metadata":{}}`
	msgV03 := `{"kind":"message","messageId":"msg-1","role":"user","parts":[{"kind":"text","text":"hello"}],"contextId":"ctx-1","taskId":"task-1","referenceTaskIds":["task-0","task-00"]}`
	sendV10 := `{"tenant":"acme","message":` + msgV10 + `,"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":10,"returnImmediately":false,"taskPushNotificationConfig":` + pushV10 + `}}`
	sendV03 := `{"message":` + msgV03 + `,"configuration":{"blocking":true,"acceptedOutputModes":["text/plain"],"pushNotificationConfig":` + pushV03 + `}}`
	sendLegacy := `{"id":"task-l","sessionId":"sess-1","message":{"role":"user","parts":[{"type":"text","text":"hello"}]},"acceptedOutputModes":["text"],"pushNotification":` + pushLegacy + `}`
	maxID := strings.Repeat("x", MaxIDLength)

	return []rpcCase{
		// A2A 1.0, with the negotiation header.
		{"1.0 SendMessage", rpcBody(`"req-1"`, "SendMessage", sendV10), V10, true, opWant{
			method: MethodSend, version: V10, rpcID: `"req-1"`, taskID: "task-1", contextID: "ctx-1", messageID: "msg-1",
			refs: []string{"task-0"}, tenant: "acme", pushConfig: pushV10}},
		{"1.0 SendStreamingMessage", rpcBody(`2`, "SendStreamingMessage", `{"message":{"messageId":"msg-2","role":"ROLE_USER","parts":[{"text":"hi"}]}}`), V10, true, opWant{
			method: MethodStream, version: V10, rpcID: `2`, messageID: "msg-2"}},
		{"1.0 GetTask", rpcBody(`3`, "GetTask", `{"tenant":"acme","id":"task-1","historyLength":5}`), V10, true, opWant{
			method: MethodGetTask, version: V10, rpcID: `3`, taskID: "task-1", tenant: "acme"}},
		{"1.0 ListTasks", rpcBody(`4`, "ListTasks", `{"tenant":"acme","contextId":"ctx-1","status":"TASK_STATE_WORKING","pageSize":50,"pageToken":"","historyLength":0,"includeArtifacts":false}`), V10, true, opWant{
			method: MethodListTasks, version: V10, rpcID: `4`, contextID: "ctx-1", tenant: "acme"}},
		{"1.0 CancelTask", rpcBody(`5`, "CancelTask", `{"id":"task-1","metadata":{}}`), V10, true, opWant{
			method: MethodCancelTask, version: V10, rpcID: `5`, taskID: "task-1"}},
		{"1.0 SubscribeToTask", rpcBody(`6`, "SubscribeToTask", `{"tenant":"acme","id":"task-1"}`), V10, true, opWant{
			method: MethodSubscribe, version: V10, rpcID: `6`, taskID: "task-1", tenant: "acme"}},
		{"1.0 CreateTaskPushNotificationConfig", rpcBody(`7`, "CreateTaskPushNotificationConfig", flatPushV10), V10, true, opWant{
			method: MethodPushConfigSet, version: V10, rpcID: `7`, taskID: "task-1", pushCfgID: "cfg-1", tenant: "acme", pushConfig: flatPushV10}},
		{"1.0 GetTaskPushNotificationConfig", rpcBody(`8`, "GetTaskPushNotificationConfig", `{"tenant":"acme","taskId":"task-1","id":"cfg-1"}`), V10, true, opWant{
			method: MethodPushConfigGet, version: V10, rpcID: `8`, taskID: "task-1", pushCfgID: "cfg-1", tenant: "acme"}},
		{"1.0 ListTaskPushNotificationConfigs", rpcBody(`9`, "ListTaskPushNotificationConfigs", `{"taskId":"task-1","pageSize":10,"pageToken":""}`), V10, true, opWant{
			method: MethodPushConfigList, version: V10, rpcID: `9`, taskID: "task-1"}},
		{"1.0 DeleteTaskPushNotificationConfig", rpcBody(`10`, "DeleteTaskPushNotificationConfig", `{"taskId":"task-1","id":"cfg-1"}`), V10, true, opWant{
			method: MethodPushConfigDelete, version: V10, rpcID: `10`, taskID: "task-1", pushCfgID: "cfg-1"}},
		{"1.0 GetExtendedAgentCard", rpcBody(`11`, "GetExtendedAgentCard", `{"tenant":"acme"}`), V10, true, opWant{
			method: MethodExtendedCard, version: V10, rpcID: `11`, tenant: "acme"}},
		{"1.0 GetExtendedAgentCard without params", `{"jsonrpc":"2.0","id":12,"method":"GetExtendedAgentCard"}`, V10, true, opWant{
			method: MethodExtendedCard, version: V10, rpcID: `12`}},

		// A 1.0 method from a client that forgot the header is still read as 1.0.
		{"1.0 SendMessage without header", rpcBody(`"req-1"`, "SendMessage", sendV10), V03, false, opWant{
			method: MethodSend, version: V10, rpcID: `"req-1"`, taskID: "task-1", contextID: "ctx-1", messageID: "msg-1",
			refs: []string{"task-0"}, tenant: "acme", pushConfig: pushV10}},
		{"1.0 GetTaskPushNotificationConfig without header", rpcBody(`8`, "GetTaskPushNotificationConfig", `{"taskId":"task-1","id":"cfg-1"}`), V03, false, opWant{
			method: MethodPushConfigGet, version: V10, rpcID: `8`, taskID: "task-1", pushCfgID: "cfg-1"}},
		{"1.0 ListTaskPushNotificationConfigs without header", rpcBody(`9`, "ListTaskPushNotificationConfigs", `{"taskId":"task-1"}`), V03, false, opWant{
			method: MethodPushConfigList, version: V10, rpcID: `9`, taskID: "task-1"}},

		// A2A 0.3 (no header, the default).
		{"0.3 message/send", rpcBody(`1`, "message/send", sendV03), V03, false, opWant{
			method: MethodSend, version: V03, rpcID: `1`, taskID: "task-1", contextID: "ctx-1", messageID: "msg-1",
			refs: []string{"task-0", "task-00"}, pushConfig: pushV03}},
		{"0.3 message/stream", rpcBody(`"s-1"`, "message/stream", `{"message":{"kind":"message","messageId":"msg-2","role":"user","parts":[{"kind":"text","text":"hi"}]}}`), V03, false, opWant{
			method: MethodStream, version: V03, rpcID: `"s-1"`, messageID: "msg-2"}},
		{"0.3 message/send with explicit header", rpcBody(`1`, "message/send", sendV03), V03, true, opWant{
			method: MethodSend, version: V03, rpcID: `1`, taskID: "task-1", contextID: "ctx-1", messageID: "msg-1",
			refs: []string{"task-0", "task-00"}, pushConfig: pushV03}},
		{"0.3 tasks/get", rpcBody(`2`, "tasks/get", `{"id":"task-1","historyLength":3,"metadata":{}}`), V03, false, opWant{
			method: MethodGetTask, version: V03, rpcID: `2`, taskID: "task-1"}},
		{"0.3 tasks/cancel", rpcBody(`3`, "tasks/cancel", `{"id":"task-1"}`), V03, false, opWant{
			method: MethodCancelTask, version: V03, rpcID: `3`, taskID: "task-1"}},
		{"0.3 tasks/resubscribe", rpcBody(`4`, "tasks/resubscribe", `{"id":"task-1"}`), V03, false, opWant{
			method: MethodSubscribe, version: V03, rpcID: `4`, taskID: "task-1"}},
		{"0.3 tasks/pushNotificationConfig/set", rpcBody(`5`, "tasks/pushNotificationConfig/set", `{"taskId":"task-1","pushNotificationConfig":`+pushV03+`}`), V03, false, opWant{
			method: MethodPushConfigSet, version: V03, rpcID: `5`, taskID: "task-1", pushConfig: pushV03}},
		{"0.3 tasks/pushNotificationConfig/get", rpcBody(`6`, "tasks/pushNotificationConfig/get", `{"id":"task-1","pushNotificationConfigId":"cfg-1"}`), V03, false, opWant{
			method: MethodPushConfigGet, version: V03, rpcID: `6`, taskID: "task-1", pushCfgID: "cfg-1"}},
		{"0.3 tasks/pushNotificationConfig/list", rpcBody(`7`, "tasks/pushNotificationConfig/list", `{"id":"task-1"}`), V03, false, opWant{
			method: MethodPushConfigList, version: V03, rpcID: `7`, taskID: "task-1"}},
		{"0.3 tasks/pushNotificationConfig/delete", rpcBody(`8`, "tasks/pushNotificationConfig/delete", `{"id":"task-1","pushNotificationConfigId":"cfg-1"}`), V03, false, opWant{
			method: MethodPushConfigDelete, version: V03, rpcID: `8`, taskID: "task-1", pushCfgID: "cfg-1"}},
		{"0.3 agent/getAuthenticatedExtendedCard", `{"jsonrpc":"2.0","id":9,"method":"agent/getAuthenticatedExtendedCard"}`, V03, false, opWant{
			method: MethodExtendedCard, version: V03, rpcID: `9`}},

		// Pre-0.2 dialect: the client chooses the task id and groups by sessionId.
		{"legacy tasks/send", rpcBody(`"1"`, "tasks/send", sendLegacy), V03, false, opWant{
			method: MethodSend, version: VLegacy, rpcID: `"1"`, taskID: "task-l", contextID: "sess-1", pushConfig: pushLegacy}},
		{"legacy tasks/sendSubscribe", rpcBody(`"2"`, "tasks/sendSubscribe", `{"id":"task-l","sessionId":"sess-1","message":{"role":"user","parts":[{"type":"text","text":"hi"}]}}`), V03, false, opWant{
			method: MethodStream, version: VLegacy, rpcID: `"2"`, taskID: "task-l", contextID: "sess-1"}},
		{"legacy tasks/send under an explicit version", rpcBody(`"1"`, "tasks/send", sendLegacy), V03, true, opWant{
			method: MethodSend, version: VLegacy, rpcID: `"1"`, taskID: "task-l", contextID: "sess-1", pushConfig: pushLegacy}},
		{"legacy tasks/pushNotification/set", rpcBody(`"3"`, "tasks/pushNotification/set", `{"id":"task-l","pushNotificationConfig":`+pushLegacy+`}`), V03, false, opWant{
			method: MethodPushConfigSet, version: VLegacy, rpcID: `"3"`, taskID: "task-l", pushConfig: pushLegacy}},
		{"legacy tasks/pushNotification/get", rpcBody(`"4"`, "tasks/pushNotification/get", `{"id":"task-l"}`), V03, false, opWant{
			method: MethodPushConfigGet, version: VLegacy, rpcID: `"4"`, taskID: "task-l"}},
		{"legacy tasks/get (shared with 0.3)", rpcBody(`"5"`, "tasks/get", `{"id":"task-l","historyLength":1}`), V03, false, opWant{
			method: MethodGetTask, version: V03, rpcID: `"5"`, taskID: "task-l"}},

		// Spellings every agent reads the same way.
		{"snake_case task_id alone is the task id", rpcBody(`1`, "message/send", `{"message":{"message_id":"msg-1","task_id":"task-1","context_id":"ctx-1","reference_task_ids":["task-0"]}}`), V03, false, opWant{
			method: MethodSend, version: V03, rpcID: `1`, taskID: "task-1", contextID: "ctx-1", messageID: "msg-1", refs: []string{"task-0"}}},
		{"snake_case task_id in a 1.0 push config request", rpcBody(`1`, "GetTaskPushNotificationConfig", `{"task_id":"task-1","id":"cfg-1"}`), V10, true, opWant{
			method: MethodPushConfigGet, version: V10, rpcID: `1`, taskID: "task-1", pushCfgID: "cfg-1"}},
		{"snake_case inline push config", rpcBody(`1`, "SendMessage", `{"message":{"messageId":"msg-1"},"configuration":{"task_push_notification_config":`+pushV10+`}}`), V10, true, opWant{
			method: MethodSend, version: V10, rpcID: `1`, messageID: "msg-1", pushConfig: pushV10}},
		{"escaped member name is read", rpcBody(`1`, "tasks/get", `{"\u0069d":"task-1"}`), V03, false, opWant{
			method: MethodGetTask, version: V03, rpcID: `1`, taskID: "task-1"}},
		{"escaped value is decoded", rpcBody(`1`, "tasks/get", `{"id":"task\u002d1"}`), V03, false, opWant{
			method: MethodGetTask, version: V03, rpcID: `1`, taskID: "task-1"}},
		{"null members count as absent", rpcBody(`1`, "message/send", `{"message":{"messageId":"msg-1","taskId":null,"contextId":null},"configuration":null}`), V03, false, opWant{
			method: MethodSend, version: V03, rpcID: `1`, messageID: "msg-1"}},
		{"whitespace everywhere", "\n{ \"jsonrpc\" : \"2.0\" ,\t\"id\" : 1 ,\r\n \"method\" : \"tasks/get\" , \"params\" : { \"id\" : \"task-1\" } }\n", V03, false, opWant{
			method: MethodGetTask, version: V03, rpcID: `1`, taskID: "task-1"}},
		{"ids of exactly MaxIDLength", rpcBody(`1`, "message/send", `{"message":{"messageId":"`+maxID+`","taskId":"`+maxID+`","contextId":"`+maxID+`","referenceTaskIds":["`+maxID+`"]}}`), V03, false, opWant{
			method: MethodSend, version: V03, rpcID: `1`, taskID: maxID, contextID: maxID, messageID: maxID, refs: []string{maxID}}},
		{"negative numeric id", rpcBody(`-7`, "tasks/get", `{"id":"task-1"}`), V03, false, opWant{
			method: MethodGetTask, version: V03, rpcID: `-7`, taskID: "task-1"}},
		{"0.3 push config get without a config id (optional in 0.3)", rpcBody(`6`, "tasks/pushNotificationConfig/get", `{"id":"task-1"}`), V03, false, opWant{
			method: MethodPushConfigGet, version: V03, rpcID: `6`, taskID: "task-1"}},
	}
}

func TestClassifyRPC(t *testing.T) {
	for _, tc := range rpcClassifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			op, e := ClassifyRPC([]byte(tc.body), tc.version, tc.explicit)
			if e != nil {
				t.Fatalf("refused with %d: %s", e.Code, e.Message)
			}
			checkOp(t, op, BindingJSONRPC, tc.explicit, tc.want)
			var env struct{ Method string }
			if err := json.Unmarshal([]byte(tc.body), &env); err != nil {
				t.Fatal(err)
			}
			if op.RPCMethod != env.Method {
				t.Errorf("RPCMethod = %q, want %q", op.RPCMethod, env.Method)
			}
		})
	}
}

// Every JSON-RPC method name of every dialect must appear in the table above.
func TestClassifyRPCCoversEveryMethodName(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range rpcClassifyCases() {
		var env struct{ Method string }
		if err := json.Unmarshal([]byte(tc.body), &env); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		seen[env.Method] = true
	}
	for name := range rpcMethods {
		if !seen[name] {
			t.Errorf("method %q has no classification case", name)
		}
	}
}

func TestRPCMethodName(t *testing.T) {
	for _, v := range []Version{V10, V03, VLegacy} {
		for _, m := range AllMethods {
			name := RPCMethodName(m, v)
			if name == "" {
				if m == MethodListTasks && v != V10 {
					continue // ListTasks is new in 1.0
				}
				t.Errorf("RPCMethodName(%v, %v) is empty", m, v)
				continue
			}
			rm, ok := rpcMethods[name]
			if !ok || rm.method != m {
				t.Errorf("RPCMethodName(%v, %v) = %q, which classifies as %v", m, v, name, rm.method)
			}
		}
	}
	if got := RPCMethodName(MethodSend, VLegacy); got != "tasks/send" {
		t.Errorf("legacy send = %q, want tasks/send", got)
	}
	if got := RPCMethodName(MethodGetTask, VLegacy); got != "tasks/get" {
		t.Errorf("legacy get = %q, want the shared tasks/get", got)
	}
}

type rpcErrCase struct {
	name     string
	body     string
	version  Version
	explicit bool
	code     int
	rpcID    string // the id the error response must echo ("" for null)
}

func rpcErrorCases() []rpcErrCase {
	long := strings.Repeat("x", MaxIDLength+1)
	return []rpcErrCase{
		// Envelope.
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, V03, false, ErrParse.Code, ""},
		{"empty body", ``, V03, false, ErrParse.Code, ""},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}} x`, V03, false, ErrParse.Code, ""},
		{"batch", `[` + rpcBody(`1`, "tasks/get", `{"id":"task-1"}`) + `]`, V03, false, ErrInvalidRequest.Code, ""},
		{"batch after whitespace", " \n[]", V03, false, ErrInvalidRequest.Code, ""},
		{"not an object", `"tasks/get"`, V03, false, ErrInvalidRequest.Code, ""},
		{"missing jsonrpc", `{"id":1,"method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, "1"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, "1"},
		{"jsonrpc as a number", `{"jsonrpc":2.0,"id":1,"method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, "1"},
		{"missing id (notification)", `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"missing method", `{"jsonrpc":"2.0","id":1,"params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, "1"},
		{"empty method", rpcBody(`1`, "", `{}`), V03, false, ErrInvalidRequest.Code, "1"},
		{"numeric method", `{"jsonrpc":"2.0","id":1,"method":7,"params":{}}`, V03, false, ErrInvalidRequest.Code, "1"},
		{"unknown method", rpcBody(`1`, "tasks/list", `{}`), V03, false, ErrMethodNotFound.Code, "1"},
		{"method in another case", rpcBody(`"a"`, "sendMessage", `{"message":{"messageId":"m"}}`), V10, true, ErrMethodNotFound.Code, `"a"`},
		{"params is an array", rpcBody(`1`, "tasks/get", `["task-1"]`), V03, false, ErrInvalidParams.Code, "1"},
		{"params is a string", rpcBody(`1`, "tasks/get", `"task-1"`), V03, false, ErrInvalidParams.Code, "1"},

		// Required members.
		{"0.3 send without messageId", rpcBody(`1`, "message/send", `{"message":{"role":"user","parts":[]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"1.0 send without messageId", rpcBody(`1`, "SendMessage", `{"message":{"role":"ROLE_USER","parts":[]}}`), V10, true, ErrInvalidParams.Code, "1"},
		{"send without message", rpcBody(`1`, "SendMessage", `{"configuration":{}}`), V10, true, ErrInvalidParams.Code, "1"},
		{"send with a string message", rpcBody(`1`, "message/send", `{"message":"hello"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"legacy send without the task id", rpcBody(`1`, "tasks/send", `{"sessionId":"s","message":{"role":"user","parts":[]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"get without a task id", rpcBody(`1`, "tasks/get", `{"historyLength":1}`), V03, false, ErrInvalidParams.Code, "1"},
		{"GetTask without params", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, V10, true, ErrInvalidParams.Code, "1"},
		{"cancel with an empty task id", rpcBody(`1`, "CancelTask", `{"id":""}`), V10, true, ErrInvalidParams.Code, "1"},
		{"1.0 push config get without config id", rpcBody(`1`, "GetTaskPushNotificationConfig", `{"taskId":"task-1"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"1.0 push config get without task id", rpcBody(`1`, "GetTaskPushNotificationConfig", `{"id":"cfg-1"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"0.3 push config delete without config id", rpcBody(`1`, "tasks/pushNotificationConfig/delete", `{"id":"task-1"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"0.3 push config set without task id", rpcBody(`1`, "tasks/pushNotificationConfig/set", `{"pushNotificationConfig":`+pushV03+`}`), V03, false, ErrInvalidParams.Code, "1"},

		// Over-long ids.
		{"task id over MaxIDLength", rpcBody(`1`, "tasks/get", `{"id":"`+long+`"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"message id over MaxIDLength", rpcBody(`1`, "message/send", `{"message":{"messageId":"`+long+`"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"context id over MaxIDLength", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","contextId":"`+long+`"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"reference id over MaxIDLength", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","referenceTaskIds":["t","`+long+`"]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"tenant over MaxIDLength", rpcBody(`1`, "GetTask", `{"id":"t","tenant":"`+long+`"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"push config id over MaxIDLength", rpcBody(`1`, "GetTaskPushNotificationConfig", `{"taskId":"t","id":"`+long+`"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"0.3 push config id over MaxIDLength", rpcBody(`1`, "tasks/pushNotificationConfig/get", `{"id":"t","pushNotificationConfigId":"`+long+`"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"list context id over MaxIDLength", rpcBody(`1`, "ListTasks", `{"contextId":"`+long+`"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"escapes expanding past MaxIDLength", rpcBody(`1`, "tasks/get", `{"id":"`+strings.Repeat(`\u00e9`, MaxIDLength/2+1)+`"}`), V03, false, ErrInvalidParams.Code, "1"},

		// Wrong types.
		{"number as task id", rpcBody(`1`, "tasks/get", `{"id":42}`), V03, false, ErrInvalidParams.Code, "1"},
		{"object as task id", rpcBody(`1`, "GetTask", `{"id":{"id":"task-1"}}`), V10, true, ErrInvalidParams.Code, "1"},
		{"array as task id", rpcBody(`1`, "tasks/cancel", `{"id":["task-1"]}`), V03, false, ErrInvalidParams.Code, "1"},
		{"number as message.taskId", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":7}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"boolean as messageId", rpcBody(`1`, "message/send", `{"message":{"messageId":true}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"referenceTaskIds not an array", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","referenceTaskIds":"t"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"referenceTaskIds with a number", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","referenceTaskIds":["t",1]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"referenceTaskIds with an empty id", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","referenceTaskIds":[""]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"referenceTaskIds with null", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","referenceTaskIds":[null]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"configuration not an object", rpcBody(`1`, "message/send", `{"message":{"messageId":"m"},"configuration":[]}`), V03, false, ErrInvalidParams.Code, "1"},
		{"inline push config not an object", rpcBody(`1`, "message/send", `{"message":{"messageId":"m"},"configuration":{"pushNotificationConfig":"https://x"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"0.3 push config set with a string config", rpcBody(`1`, "tasks/pushNotificationConfig/set", `{"taskId":"t","pushNotificationConfig":"https://x"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"number as tenant", rpcBody(`1`, "GetTask", `{"id":"t","tenant":1}`), V10, true, ErrInvalidParams.Code, "1"},

		// Members an agent could read differently from the gateway.
		{"duplicate envelope id", `{"jsonrpc":"2.0","id":"a","id":"b","method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","method":"tasks/cancel","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"duplicate params", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"a"},"params":{"id":"b"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"Method in another case", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","Method":"tasks/cancel","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"escaped duplicate envelope id", `{"jsonrpc":"2.0","id":"a","\u0069d":"b","method":"tasks/get","params":{"id":"task-1"}}`, V03, false, ErrInvalidRequest.Code, ""},
		{"duplicate task id", rpcBody(`1`, "tasks/get", `{"id":"a","id":"b"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"ID next to id", rpcBody(`1`, "tasks/get", `{"id":"a","ID":"b"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"ID alone", rpcBody(`1`, "CancelTask", `{"ID":"a"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"taskID next to taskId", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":"a","taskID":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"taskID alone", rpcBody(`1`, "GetTaskPushNotificationConfig", `{"taskID":"a","id":"cfg"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"taskId and task_id", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":"a","task_id":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"task_id and taskId in a 1.0 push request", rpcBody(`1`, "ListTaskPushNotificationConfigs", `{"task_id":"a","taskId":"b"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"TASK_ID next to taskId", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":"a","TASK_ID":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"unicode folding (long s)", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":"a","taſkId":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"unicode folding, escaped", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":"a","ta\u017fkId":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"unicode folding (Kelvin sign)", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","taskId":"a","tas\u212aId":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"escaped member name duplicates id", rpcBody(`1`, "tasks/get", `{"id":"a","\u0069d":"b"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"escaped member name duplicates messageId", rpcBody(`1`, "message/send", `{"message":{"messageId":"a","\u006dessageId":"b"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate message", rpcBody(`1`, "message/send", `{"message":{"messageId":"a","taskId":"t1"},"message":{"messageId":"b","taskId":"t2"}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate configuration", rpcBody(`1`, "message/send", `{"message":{"messageId":"a"},"configuration":{},"configuration":{"pushNotificationConfig":`+pushV03+`}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate inline push config", rpcBody(`1`, "message/send", `{"message":{"messageId":"a"},"configuration":{"pushNotificationConfig":{"url":"https://a"},"pushNotificationConfig":{"url":"https://b"}}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate tenant", rpcBody(`1`, "GetTask", `{"id":"t","tenant":"a","tenant":"b"}`), V10, true, ErrInvalidParams.Code, "1"},
		{"duplicate reference ids", rpcBody(`1`, "message/send", `{"message":{"messageId":"m","referenceTaskIds":["a"],"reference_task_ids":["b"]}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate pushNotificationConfigId", rpcBody(`1`, "tasks/pushNotificationConfig/delete", `{"id":"t","pushNotificationConfigId":"a","push_notification_config_id":"b"}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate legacy session", rpcBody(`1`, "tasks/send", `{"id":"t","sessionId":"a","session_id":"b","message":{}}`), V03, false, ErrInvalidParams.Code, "1"},
		{"duplicate null and value", rpcBody(`1`, "tasks/get", `{"id":null,"id":"b"}`), V03, false, ErrInvalidParams.Code, "1"},

		// Bodies whose ids decode differently in different agents.
		{"task id with invalid UTF-8", rpcBody(`1`, "tasks/get", "{\"id\":\"task-\xff\"}"), V03, false, ErrInvalidParams.Code, "1"},
		{"message.taskId with invalid UTF-8", rpcBody(`1`, "message/send", "{\"message\":{\"messageId\":\"m\",\"taskId\":\"t\xc3\"}}"), V03, false, ErrInvalidParams.Code, "1"},
		{"legacy client-chosen task id with invalid UTF-8", rpcBody(`1`, "tasks/send", "{\"id\":\"task-\xfe\",\"message\":{}}"), V03, false, ErrInvalidParams.Code, "1"},
		// Go decodes every lone surrogate to U+FFFD; JavaScript and Python
		// keep them apart, so two different ids would share one gateway key.
		{"task id with an escaped lone surrogate", rpcBody(`1`, "tasks/get", `{"id":"task-\ud800"}`), V03, false, ErrInvalidParams.Code, "1"},

		// Two inline push configs: a 0.3 agent reads one, a 1.0 agent the other.
		{"both inline push configs", rpcBody(`1`, "SendMessage", `{"message":{"messageId":"m"},"configuration":{"pushNotificationConfig":{"url":"https://hooks.example.com/a2a"},"taskPushNotificationConfig":{"url":"http://169.254.169.254/latest"}}}`), V10, true, ErrInvalidParams.Code, "1"},
		{"both inline push configs, 0.3", rpcBody(`1`, "message/send", `{"message":{"messageId":"m"},"configuration":{"pushNotificationConfig":{"url":"https://hooks.example.com/a2a"},"task_push_notification_config":{"url":"http://10.0.0.1/"}}}`), V03, false, ErrInvalidParams.Code, "1"},
	}
}

func TestClassifyRPCErrors(t *testing.T) {
	for _, tc := range rpcErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			op, e := ClassifyRPC([]byte(tc.body), tc.version, tc.explicit)
			checkErrCode(t, e, tc.code)
			if op == nil {
				t.Fatal("nil operation alongside the error")
			}
			if op.Binding != BindingJSONRPC {
				t.Errorf("Binding = %v, want jsonrpc", op.Binding)
			}
			if string(op.RPCID) != tc.rpcID {
				t.Errorf("RPCID = %q, want %q (the error response echoes it)", op.RPCID, tc.rpcID)
			}
		})
	}
}

// The shape of the params follows the method name: an agent reads
// "ListTaskPushNotificationConfigs" params as 1.0 and
// "tasks/pushNotificationConfig/list" params as 0.3 whatever A2A-Version says.
// If the gateway read them in the header's dialect instead, it would
// authorize one task while the agent acts on another. Either the request is
// refused or the ids are the ones the method's own dialect names.
func TestClassifyRPCReadsParamsInMethodDialect(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		header     Version
		taskID     string
		pushCfgID  string
		pushConfig string
	}{
		{"1.0 list under a 0.3 header", rpcBody(`1`, "ListTaskPushNotificationConfigs", `{"taskId":"task-victim","id":"task-mine"}`), V03,
			"task-victim", "", ""},
		{"1.0 get under a 0.3 header", rpcBody(`1`, "GetTaskPushNotificationConfig", `{"taskId":"task-victim","id":"task-mine","pushNotificationConfigId":"cfg-x"}`), V03,
			"task-victim", "task-mine", ""},
		{"1.0 delete under a 0.3 header", rpcBody(`1`, "DeleteTaskPushNotificationConfig", `{"taskId":"task-victim","id":"task-mine","pushNotificationConfigId":"cfg-x"}`), V03,
			"task-victim", "task-mine", ""},
		{"1.0 create under a 0.3 header", rpcBody(`1`, "CreateTaskPushNotificationConfig", flatPushV10), V03,
			"task-1", "cfg-1", flatPushV10},
		{"0.3 list under a 1.0 header", rpcBody(`1`, "tasks/pushNotificationConfig/list", `{"id":"task-victim","taskId":"task-mine"}`), V10,
			"task-victim", "", ""},
		{"0.3 get under a 1.0 header", rpcBody(`1`, "tasks/pushNotificationConfig/get", `{"id":"task-victim","taskId":"task-mine","pushNotificationConfigId":"cfg-1"}`), V10,
			"task-victim", "cfg-1", ""},
		{"0.3 delete under a 1.0 header", rpcBody(`1`, "tasks/pushNotificationConfig/delete", `{"id":"task-victim","taskId":"task-mine","pushNotificationConfigId":"cfg-1"}`), V10,
			"task-victim", "cfg-1", ""},
		{"0.3 set under a 1.0 header", rpcBody(`1`, "tasks/pushNotificationConfig/set", `{"taskId":"task-1","url":"https://hooks.example.com/ok","pushNotificationConfig":{"url":"http://169.254.169.254/"}}`), V10,
			"task-1", "", `{"url":"http://169.254.169.254/"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op, e := ClassifyRPC([]byte(tc.body), tc.header, true)
			if e != nil {
				return // refusing the mix is a correct answer
			}
			if op.TaskID != tc.taskID || op.PushConfigID != tc.pushCfgID || string(op.PushConfig) != tc.pushConfig {
				t.Errorf("gateway read task %q, config id %q, config %s; an agent reads task %q, config id %q, config %s",
					op.TaskID, op.PushConfigID, op.PushConfig, tc.taskID, tc.pushCfgID, tc.pushConfig)
			}
		})
	}
}

func TestNegotiateVersion(t *testing.T) {
	cases := []struct {
		name     string
		header   []string
		query    string
		version  Version
		explicit bool
		code     int
	}{
		{"missing means 0.3", nil, "", V03, false, 0},
		{"header 1.0", []string{"1.0"}, "", V10, true, 0},
		{"header 1.0.1", []string{"1.0.1"}, "", V10, true, 0},
		{"header with spaces", []string{" 1.0 "}, "", V10, true, 0},
		{"header 0.3", []string{"0.3"}, "", V03, true, 0},
		{"header 0.2", []string{"0.2"}, "", V03, true, 0},
		{"query 1.0", nil, "A2A-Version=1.0", V10, true, 0},
		{"empty header falls back to query", []string{""}, "A2A-Version=1.0", V10, true, 0},
		{"header and query agree", []string{"1.0"}, "A2A-Version=1.0.1", V10, true, 0},
		{"empty query, header", []string{"0.3"}, "A2A-Version=", V03, true, 0},
		// One version, once: frameworks pick different ones of several.
		{"header against query", []string{"0.3"}, "A2A-Version=1.0", 0, true, -32009},
		{"query against header", []string{"1.0"}, "A2A-Version=0.3", 0, true, -32009},
		{"header against bad query", []string{"1.0"}, "A2A-Version=2.0", 0, true, -32009},
		{"two headers", []string{"1.0", "0.3"}, "", 0, true, -32009},
		{"two equal headers", []string{"1.0", "1.0"}, "", 0, true, -32009},
		{"header list", []string{"1.0, 0.3"}, "", 0, true, -32009},
		{"header list of one", []string{"1.0,"}, "", 0, true, -32009},
		{"two query parameters", nil, "A2A-Version=1.0&A2A-Version=0.3", 0, true, -32009},
		{"query parameter in two letter cases", nil, "A2A-Version=1.0&a2a-version=0.3", 0, true, -32009},
		{"lower-case query against header", []string{"1.0"}, "a2a-version=0.3", 0, true, -32009},
		{"unsupported 2.0", []string{"2.0"}, "", 0, true, -32009},
		{"unsupported query 2.0", nil, "A2A-Version=2.0", 0, true, -32009},
		{"major only", []string{"1"}, "", 0, true, -32009},
		{"garbage", []string{"latest"}, "", 0, true, -32009},
		{"0.1 is not negotiable", []string{"0.1"}, "", 0, true, -32009},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/?"+tc.query, nil)
			for _, h := range tc.header {
				r.Header.Add(VersionHeader, h)
			}
			v, explicit, e := NegotiateVersion(r)
			if explicit != tc.explicit {
				t.Errorf("explicit = %v, want %v", explicit, tc.explicit)
			}
			if tc.code != 0 {
				checkErrCode(t, e, tc.code)
				if e.HTTPStatus != http.StatusBadRequest {
					t.Errorf("HTTP status %d, want 400", e.HTTPStatus)
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %v", e)
			}
			if v != tc.version {
				t.Errorf("version = %v, want %v", v, tc.version)
			}
		})
	}
}

// A hostile version string must not bloat the error message (and the log line
// built from it).
func TestNegotiateVersionClipsTheEcho(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set(VersionHeader, "9."+strings.Repeat("\xff9", 4096))
	_, _, e := NegotiateVersion(r)
	checkErrCode(t, e, ErrVersionNotSupported.Code)
	if len(e.Message) > 256 {
		t.Errorf("message is %d bytes long", len(e.Message))
	}
	if !utf8.ValidString(e.Message) {
		t.Errorf("message is not valid UTF-8: %q", e.Message)
	}
}

type restCase struct {
	name       string
	httpMethod string
	path       string
	query      string
	body       string
	version    Version
	explicit   bool
	want       opWant
}

func restClassifyCases() []restCase {
	sendV10 := `{"message":{"messageId":"msg-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"hello"}],"referenceTaskIds":["task-0"]},"configuration":{"acceptedOutputModes":["text/plain"],"taskPushNotificationConfig":` + pushV10 + `}}`
	sendV10Tenant := `{"tenant":"acme","message":{"messageId":"msg-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}`
	// 0.3 REST bodies are proto JSON: "content" for parts, ROLE_USER.
	sendV03 := `{"message":{"messageId":"msg-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","content":[{"text":"hello"}]},"configuration":{"acceptedOutputModes":["text/plain"],"pushNotificationConfig":` + pushV03 + `}}`
	sendV03Snake := `{"message":{"message_id":"msg-1","context_id":"ctx-1","task_id":"task-1","role":"ROLE_USER","content":[{"text":"hello"}]},"configuration":{"accepted_output_modes":["text/plain"],"push_notification_config":` + pushV03 + `}}`
	setV03 := `{"name":"tasks/task-1/pushNotificationConfigs/cfg-1","pushNotificationConfig":` + pushV03 + `}`
	setV03Snake := `{"task_id":"task-1","push_notification_config":` + pushV03 + `}`
	setV10 := `{"taskId":"task-1","id":"cfg-1","url":"https://hooks.example.com/a2a","token":"tok-1"}`
	setV10Tenant := `{"tenant":"acme","taskId":"task-1","id":"cfg-1","url":"https://hooks.example.com/a2a"}`

	c := func(name, m, path, query, body string, v Version, explicit bool, want opWant) restCase {
		return restCase{name, m, path, query, body, v, explicit, want}
	}
	return []restCase{
		// A2A 1.0.
		c("1.0 send", "POST", "/message:send", "", sendV10, V10, true, opWant{method: MethodSend, version: V10,
			taskID: "task-1", contextID: "ctx-1", messageID: "msg-1", refs: []string{"task-0"}, pushConfig: pushV10}),
		c("1.0 stream", "POST", "/message:stream", "", `{"message":{"messageId":"msg-2","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, V10, true, opWant{
			method: MethodStream, version: V10, messageID: "msg-2"}),
		c("1.0 list tasks", "GET", "/tasks", "contextId=ctx-1&pageSize=10&status=TASK_STATE_WORKING", "", V10, true, opWant{
			method: MethodListTasks, version: V10, contextID: "ctx-1"}),
		c("1.0 get task", "GET", "/tasks/task-1", "historyLength=2", "", V10, true, opWant{method: MethodGetTask, version: V10, taskID: "task-1"}),
		c("1.0 cancel", "POST", "/tasks/task-1:cancel", "", "", V10, true, opWant{method: MethodCancelTask, version: V10, taskID: "task-1"}),
		c("1.0 cancel with the id in the body", "POST", "/tasks/task-1:cancel", "", `{"id":"task-1","metadata":{}}`, V10, true, opWant{
			method: MethodCancelTask, version: V10, taskID: "task-1"}),
		c("1.0 subscribe (GET)", "GET", "/tasks/task-1:subscribe", "", "", V10, true, opWant{method: MethodSubscribe, version: V10, taskID: "task-1"}),
		c("1.0 subscribe (POST)", "POST", "/tasks/task-1:subscribe", "", `{}`, V10, true, opWant{method: MethodSubscribe, version: V10, taskID: "task-1"}),
		c("1.0 create push config", "POST", "/tasks/task-1/pushNotificationConfigs", "", setV10, V10, true, opWant{
			method: MethodPushConfigSet, version: V10, taskID: "task-1", pushCfgID: "cfg-1", pushConfig: setV10}),
		c("1.0 list push configs", "GET", "/tasks/task-1/pushNotificationConfigs", "pageSize=5", "", V10, true, opWant{
			method: MethodPushConfigList, version: V10, taskID: "task-1"}),
		c("1.0 get push config", "GET", "/tasks/task-1/pushNotificationConfigs/cfg-1", "", "", V10, true, opWant{
			method: MethodPushConfigGet, version: V10, taskID: "task-1", pushCfgID: "cfg-1"}),
		c("1.0 delete push config", "DELETE", "/tasks/task-1/pushNotificationConfigs/cfg-1", "", "", V10, true, opWant{
			method: MethodPushConfigDelete, version: V10, taskID: "task-1", pushCfgID: "cfg-1"}),
		c("1.0 extended card", "GET", "/extendedAgentCard", "", "", V10, true, opWant{method: MethodExtendedCard, version: V10}),

		// A2A 1.0 under /{tenant}/.
		c("1.0 tenant send", "POST", "/acme/message:send", "", sendV10Tenant, V10, true, opWant{
			method: MethodSend, version: V10, messageID: "msg-1", tenant: "acme"}),
		c("1.0 tenant stream", "POST", "/acme/message:stream", "", sendV10Tenant, V10, true, opWant{
			method: MethodStream, version: V10, messageID: "msg-1", tenant: "acme"}),
		c("1.0 tenant list tasks", "GET", "/acme/tasks", "contextId=ctx-1", "", V10, true, opWant{
			method: MethodListTasks, version: V10, contextID: "ctx-1", tenant: "acme"}),
		c("1.0 tenant get task", "GET", "/acme/tasks/task-1", "", "", V10, true, opWant{method: MethodGetTask, version: V10, taskID: "task-1", tenant: "acme"}),
		c("1.0 tenant cancel", "POST", "/acme/tasks/task-1:cancel", "", `{"tenant":"acme"}`, V10, true, opWant{
			method: MethodCancelTask, version: V10, taskID: "task-1", tenant: "acme"}),
		c("1.0 tenant subscribe (GET)", "GET", "/acme/tasks/task-1:subscribe", "", "", V10, true, opWant{
			method: MethodSubscribe, version: V10, taskID: "task-1", tenant: "acme"}),
		c("1.0 tenant subscribe (POST)", "POST", "/acme/tasks/task-1:subscribe", "", "", V10, true, opWant{
			method: MethodSubscribe, version: V10, taskID: "task-1", tenant: "acme"}),
		c("1.0 tenant create push config", "POST", "/acme/tasks/task-1/pushNotificationConfigs", "", setV10Tenant, V10, true, opWant{
			method: MethodPushConfigSet, version: V10, taskID: "task-1", pushCfgID: "cfg-1", tenant: "acme", pushConfig: setV10Tenant}),
		c("1.0 tenant list push configs", "GET", "/acme/tasks/task-1/pushNotificationConfigs", "", "", V10, true, opWant{
			method: MethodPushConfigList, version: V10, taskID: "task-1", tenant: "acme"}),
		c("1.0 tenant get push config", "GET", "/acme/tasks/task-1/pushNotificationConfigs/cfg-1", "", "", V10, true, opWant{
			method: MethodPushConfigGet, version: V10, taskID: "task-1", pushCfgID: "cfg-1", tenant: "acme"}),
		c("1.0 tenant delete push config", "DELETE", "/acme/tasks/task-1/pushNotificationConfigs/cfg-1", "", "", V10, true, opWant{
			method: MethodPushConfigDelete, version: V10, taskID: "task-1", pushCfgID: "cfg-1", tenant: "acme"}),
		c("1.0 tenant extended card", "GET", "/acme/extendedAgentCard", "", "", V10, true, opWant{method: MethodExtendedCard, version: V10, tenant: "acme"}),
		c("1.0 escaped tenant", "GET", "/acme%20eu/tasks/task-1", "", "", V10, true, opWant{method: MethodGetTask, version: V10, taskID: "task-1", tenant: "acme eu"}),
		c("explicit 1.0 reads /v1 as a tenant", "GET", "/v1/tasks/task-1", "", "", V10, true, opWant{method: MethodGetTask, version: V10, taskID: "task-1", tenant: "v1"}),

		// A2A 0.3 under /v1/.
		c("0.3 send", "POST", "/v1/message:send", "", sendV03, V03, false, opWant{method: MethodSend, version: V03,
			taskID: "task-1", contextID: "ctx-1", messageID: "msg-1", pushConfig: pushV03}),
		c("0.3 send, snake_case proto JSON", "POST", "/v1/message:send", "", sendV03Snake, V03, false, opWant{method: MethodSend, version: V03,
			taskID: "task-1", contextID: "ctx-1", messageID: "msg-1", pushConfig: pushV03}),
		c("0.3 stream", "POST", "/v1/message:stream", "", sendV03, V03, false, opWant{method: MethodStream, version: V03,
			taskID: "task-1", contextID: "ctx-1", messageID: "msg-1", pushConfig: pushV03}),
		c("0.3 list tasks", "GET", "/v1/tasks", "contextId=ctx-1", "", V03, false, opWant{method: MethodListTasks, version: V03, contextID: "ctx-1"}),
		c("0.3 get task", "GET", "/v1/tasks/task-1", "historyLength=2", "", V03, false, opWant{method: MethodGetTask, version: V03, taskID: "task-1"}),
		c("0.3 cancel", "POST", "/v1/tasks/task-1:cancel", "", "", V03, false, opWant{method: MethodCancelTask, version: V03, taskID: "task-1"}),
		c("0.3 subscribe (GET)", "GET", "/v1/tasks/task-1:subscribe", "", "", V03, false, opWant{method: MethodSubscribe, version: V03, taskID: "task-1"}),
		c("0.3 subscribe (POST)", "POST", "/v1/tasks/task-1:subscribe", "", "", V03, false, opWant{method: MethodSubscribe, version: V03, taskID: "task-1"}),
		c("0.3 create push config", "POST", "/v1/tasks/task-1/pushNotificationConfigs", "", setV03, V03, false, opWant{
			method: MethodPushConfigSet, version: V03, taskID: "task-1", pushConfig: pushV03}),
		c("0.3 create push config, snake_case", "POST", "/v1/tasks/task-1/pushNotificationConfigs", "", setV03Snake, V03, false, opWant{
			method: MethodPushConfigSet, version: V03, taskID: "task-1", pushConfig: pushV03}),
		c("0.3 list push configs", "GET", "/v1/tasks/task-1/pushNotificationConfigs", "", "", V03, false, opWant{
			method: MethodPushConfigList, version: V03, taskID: "task-1"}),
		c("0.3 get push config", "GET", "/v1/tasks/task-1/pushNotificationConfigs/cfg-1", "", "", V03, false, opWant{
			method: MethodPushConfigGet, version: V03, taskID: "task-1", pushCfgID: "cfg-1"}),
		c("0.3 delete push config", "DELETE", "/v1/tasks/task-1/pushNotificationConfigs/cfg-1", "", "", V03, false, opWant{
			method: MethodPushConfigDelete, version: V03, taskID: "task-1", pushCfgID: "cfg-1"}),
		c("0.3 card", "GET", "/v1/card", "", "", V03, false, opWant{method: MethodExtendedCard, version: V03}),
		c("0.3 with explicit header", "GET", "/v1/tasks/task-1", "", "", V03, true, opWant{method: MethodGetTask, version: V03, taskID: "task-1"}),

		// Ids that need escaping.
		c("escaped task id", "GET", "/tasks/task%201", "", "", V10, true, opWant{method: MethodGetTask, version: V10, taskID: "task 1"}),
		c("colon inside a task id", "GET", "/tasks/urn:task:1", "", "", V10, true, opWant{method: MethodGetTask, version: V10, taskID: "urn:task:1"}),
		c("colon inside a task id with a verb", "POST", "/tasks/urn:task:1:cancel", "", "", V10, true, opWant{method: MethodCancelTask, version: V10, taskID: "urn:task:1"}),
		c("snake_case context_id in the query", "GET", "/tasks", "context_id=ctx-1", "", V10, true, opWant{method: MethodListTasks, version: V10, contextID: "ctx-1"}),
	}
}

func TestClassifyREST(t *testing.T) {
	for _, tc := range restClassifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			op, e := ClassifyREST(tc.httpMethod, tc.path, q, []byte(tc.body), tc.version, tc.explicit)
			if e != nil {
				t.Fatalf("refused with %d: %s", e.Code, e.Message)
			}
			checkOp(t, op, BindingREST, tc.explicit, tc.want)
			if op.RPCMethod != "" {
				t.Errorf("RPCMethod = %q on a REST request", op.RPCMethod)
			}
		})
	}
}

// Every row of the path table must be exercised in 1.0, 1.0 under a tenant,
// and 0.3.
func TestClassifyRESTCoversEveryRoute(t *testing.T) {
	seen := map[string]bool{}
	key := func(httpMethod string, m Method, v Version, tenant bool) string {
		return fmt.Sprintf("%s %v %v tenant=%t", httpMethod, m, v, tenant)
	}
	for _, tc := range restClassifyCases() {
		seen[key(tc.httpMethod, tc.want.method, tc.want.version, tc.want.tenant != "")] = true
	}
	for _, r := range restRoutes {
		for _, k := range []string{
			key(r.httpMethod, r.method, V10, false),
			key(r.httpMethod, r.method, V10, true),
			key(r.httpMethod, r.method, V03, false),
		} {
			if !seen[k] {
				t.Errorf("no classification case for %s", k)
			}
		}
	}
}

func TestRESTPathRoundTrip(t *testing.T) {
	bodies := map[Version]map[Method]string{
		V10: {
			MethodSend:          `{"message":{"messageId":"m"}}`,
			MethodStream:        `{"message":{"messageId":"m"}}`,
			MethodPushConfigSet: `{"url":"https://hooks.example.com/a2a"}`,
		},
		V03: {
			MethodSend:          `{"message":{"messageId":"m"}}`,
			MethodStream:        `{"message":{"messageId":"m"}}`,
			MethodPushConfigSet: `{"pushNotificationConfig":{"url":"https://hooks.example.com/a2a"}}`,
		},
	}
	for _, v := range []Version{V10, V03} {
		for _, m := range AllMethods {
			for _, ids := range [][2]string{{"task-1", "cfg-1"}, {"urn:task:7", "cfg:2"}, {"task 1", "cfg é"}} {
				httpMethod, path := RESTPath(m, v, ids[0], ids[1])
				if path == "" {
					t.Errorf("RESTPath(%v, %v) is empty", m, v)
					continue
				}
				if v == V03 && !strings.HasPrefix(path, "/v1/") {
					t.Errorf("0.3 path %q is not under /v1/", path)
				}
				op, e := ClassifyREST(httpMethod, path, nil, []byte(bodies[v][m]), v, v == V10)
				if e != nil {
					t.Errorf("%s %s (%v %v) refused: %v", httpMethod, path, m, v, e)
					continue
				}
				if op.Method != m || op.Version != v {
					t.Errorf("%s %s classified as %v %v, want %v %v", httpMethod, path, op.Method, op.Version, m, v)
				}
				if m.TaskScoped() && op.TaskID != ids[0] {
					t.Errorf("%s %s: TaskID = %q, want %q", httpMethod, path, op.TaskID, ids[0])
				}
				if (m == MethodPushConfigGet || m == MethodPushConfigDelete) && op.PushConfigID != ids[1] {
					t.Errorf("%s %s: PushConfigID = %q, want %q", httpMethod, path, op.PushConfigID, ids[1])
				}
			}
		}
	}
}

type restErrCase struct {
	name       string
	httpMethod string
	path       string
	query      string
	body       string
	version    Version
	explicit   bool
	codes      []int // any of these
}

func restErrorCases() []restErrCase {
	long := strings.Repeat("x", MaxIDLength+1)
	invalid := []int{ErrInvalidRequest.Code, ErrInvalidParams.Code}
	notFound := []int{ErrMethodNotFound.Code}
	c := func(name, m, path, query, body string, v Version, explicit bool, codes ...int) restErrCase {
		return restErrCase{name, m, path, query, body, v, explicit, codes}
	}
	return []restErrCase{
		c("unknown path", "GET", "/skills/s1/query", "", "", V10, true, notFound...),
		c("root", "GET", "/", "", "", V10, true, notFound...),
		c("wrong HTTP method", "DELETE", "/tasks/task-1", "", "", V10, true, notFound...),
		c("GET on cancel", "GET", "/tasks/task-1:cancel", "", "", V10, true, notFound...),
		c("POST without verb", "POST", "/tasks/task-1", "", "", V10, true, notFound...),
		c("unknown verb", "POST", "/tasks/task-1:pause", "", "", V10, true, notFound...),
		c("verb without id", "POST", "/tasks/:cancel", "", "", V10, true, notFound...),
		c("tenant prefix in 0.3", "GET", "/v1/acme/tasks/task-1", "", "", V03, false, notFound...),
		c("0.3 card path in 1.0", "GET", "/card", "", "", V10, true, notFound...),

		// Paths an agent could resolve to another resource than the gateway.
		c("dot-dot segment", "GET", "/tasks/../tasks/task-1", "", "", V10, true, invalid...),
		c("dot-dot as the id", "GET", "/tasks/..", "", "", V10, true, invalid...),
		c("escaped dot-dot", "GET", "/tasks/%2e%2e/pushNotificationConfigs", "", "", V10, true, invalid...),
		c("dot segment", "GET", "/./tasks/task-1", "", "", V10, true, invalid...),
		c("encoded slash in the id", "GET", "/tasks/task-1%2Fpush", "", "", V10, true, invalid...),
		c("encoded slash, lower case", "GET", "/tasks/a%2fb/pushNotificationConfigs/c", "", "", V10, true, invalid...),
		c("backslash", `GET`, `/tasks/task-1\..\task-2`, "", "", V10, true, invalid...),
		c("encoded backslash", "GET", "/tasks/task-1%5Cx", "", "", V10, true, invalid...),
		c("empty segment", "GET", "/tasks//pushNotificationConfigs", "", "", V10, true, invalid...),
		c("leading double slash", "GET", "//tasks/task-1", "", "", V10, true, invalid...),
		c("empty config id segment", "DELETE", "/tasks/task-1/pushNotificationConfigs//", "", "", V10, true, invalid...),
		c("bad escape", "GET", "/tasks/task-%zz", "", "", V10, true, invalid...),
		// An encoded colon is part of the id for some routers and a verb
		// separator for others.
		c("encoded colon before a verb", "POST", "/tasks/task-1%3Acancel", "", "", V10, true, invalid...),
		c("encoded colon before subscribe", "GET", "/tasks/task-1%3asubscribe", "", "", V10, true, invalid...),

		// Bodies.
		c("malformed body", "POST", "/message:send", "", `{"message":`, V10, true, ErrParse.Code),
		c("array body", "POST", "/message:send", "", `[{"message":{"messageId":"m"}}]`, V10, true, ErrInvalidRequest.Code),
		c("send without body", "POST", "/message:send", "", "", V10, true, ErrInvalidRequest.Code),
		c("send with a blank body", "POST", "/v1/message:stream", "", " \n", V03, false, ErrInvalidRequest.Code),
		c("push config create without body", "POST", "/tasks/task-1/pushNotificationConfigs", "", "", V10, true, ErrInvalidRequest.Code),
		c("send without messageId", "POST", "/message:send", "", `{"message":{"role":"ROLE_USER","parts":[]}}`, V10, true, ErrInvalidParams.Code),
		c("cancel body names another task", "POST", "/tasks/task-1:cancel", "", `{"id":"task-2"}`, V10, true, ErrInvalidParams.Code),
		c("0.3 cancel body names another task", "POST", "/v1/tasks/task-1:cancel", "", `{"id":"task-2"}`, V03, false, ErrInvalidParams.Code),
		c("1.0 push config body names another task", "POST", "/tasks/task-1/pushNotificationConfigs", "", `{"taskId":"task-2","url":"https://x"}`, V10, true, ErrInvalidParams.Code),
		c("1.0 push config body names another task (snake)", "POST", "/tasks/task-1/pushNotificationConfigs", "", `{"task_id":"task-2","url":"https://x"}`, V10, true, ErrInvalidParams.Code),
		c("0.3 push config body names another task", "POST", "/v1/tasks/task-1/pushNotificationConfigs", "", `{"taskId":"task-2","pushNotificationConfig":{"url":"https://x"}}`, V03, false, ErrInvalidParams.Code),
		c("body task id in two spellings", "POST", "/tasks/task-1/pushNotificationConfigs", "", `{"taskId":"task-1","TaskId":"task-2","url":"https://x"}`, V10, true, ErrInvalidParams.Code),
		c("number as body task id", "POST", "/tasks/task-1:cancel", "", `{"id":1}`, V10, true, ErrInvalidParams.Code),
		c("body tenant differs from the path", "POST", "/acme/message:send", "", `{"tenant":"other","message":{"messageId":"m"}}`, V10, true, ErrInvalidParams.Code),
		c("body tenant differs on cancel", "POST", "/acme/tasks/task-1:cancel", "", `{"tenant":"other"}`, V10, true, ErrInvalidParams.Code),
		c("duplicate tenant in the body", "POST", "/acme/message:send", "", `{"tenant":"acme","tenant":"other","message":{"messageId":"m"}}`, V10, true, ErrInvalidParams.Code),

		// Over-long ids.
		c("path task id over MaxIDLength", "GET", "/tasks/"+long, "", "", V10, true, ErrInvalidParams.Code),
		c("path config id over MaxIDLength", "GET", "/tasks/t/pushNotificationConfigs/"+long, "", "", V10, true, ErrInvalidParams.Code),
		c("tenant over MaxIDLength", "GET", "/"+long+"/tasks", "", "", V10, true, ErrInvalidParams.Code),
		c("query contextId over MaxIDLength", "GET", "/tasks", "contextId="+long, "", V10, true, ErrInvalidParams.Code),
		c("body id over MaxIDLength", "POST", "/message:send", "", `{"message":{"messageId":"`+long+`"}}`, V10, true, ErrInvalidParams.Code),

		// Query parameters read differently by different frameworks: the
		// first value (Go), the last (Starlette, Spring's map) or an array
		// (Express).
		c("duplicate contextId", "GET", "/tasks", "contextId=ctx-mine&contextId=ctx-victim", "", V10, true, invalid...),
		c("contextId and context_id", "GET", "/tasks", "contextId=ctx-mine&context_id=ctx-victim", "", V10, true, invalid...),
		c("duplicate contextId under /v1", "GET", "/v1/tasks", "contextId=ctx-mine&contextId=ctx-victim", "", V03, false, invalid...),
	}
}

func TestClassifyRESTErrors(t *testing.T) {
	for _, tc := range restErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			op, e := ClassifyREST(tc.httpMethod, tc.path, q, []byte(tc.body), tc.version, tc.explicit)
			if e == nil {
				t.Fatalf("accepted as %v task=%q cfg=%q tenant=%q ctx=%q, want one of %v",
					op.Method, op.TaskID, op.PushConfigID, op.Tenant, op.ContextID, tc.codes)
			}
			if !slices.Contains(tc.codes, e.Code) {
				t.Fatalf("error code %d (%q), want one of %v", e.Code, e.Message, tc.codes)
			}
			if op == nil || op.Binding != BindingREST {
				t.Errorf("operation %+v, want a REST operation alongside the error", op)
			}
		})
	}
}

// A 1.0 client that forgot the header still sends the 1.0 body. The webhook
// it registers must reach the push policy whatever version the gateway
// settles on, or the agent registers a URL nobody validated.
func TestClassifyRESTHeaderlessPushConfigIsExposed(t *testing.T) {
	body := `{"taskId":"task-1","id":"cfg-1","url":"http://169.254.169.254/latest/meta-data","token":"t"}`
	op, e := ClassifyREST(http.MethodPost, "/tasks/task-1/pushNotificationConfigs", nil, []byte(body), V03, false)
	if e != nil {
		return // refusing is safe
	}
	if string(op.PushConfig) != body {
		t.Errorf("PushConfig = %q (version %v); the agent registers %s", op.PushConfig, op.Version, body)
	}
}

func BenchmarkClassifyRPCSend(b *testing.B) {
	body, err := os.ReadFile("testdata/send_v10.json")
	if err != nil {
		b.Fatal(err)
	}
	body = bytes.TrimSpace(body)
	if op, e := ClassifyRPC(body, V10, true); e != nil || op.Method != MethodSend || op.PushConfig == nil {
		b.Fatalf("fixture not classified as a send with a push config: %v", e)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, e := ClassifyRPC(body, V10, true); e != nil {
			b.Fatal(e)
		}
	}
}

// TestRESTPathVersion: a REST call's version without its body, as
// ClassifyREST reads it, malformed paths included.
func TestRESTPathVersion(t *testing.T) {
	for _, tc := range []struct {
		path     string
		v        Version
		explicit bool
		want     Version
	}{
		{"/tasks/t-1", V03, false, V10},
		{"/tasks/./x", V03, false, V10},
		{"/message:send", V03, false, V10},
		{"/v1/tasks/t-1", V03, false, V03},
		{"/v1/tasks/./x", V03, false, V03},
		{"/%76%31/tasks/t-1", V03, false, V03},
		{"/v1", V03, false, V03},
		{"/v10/tasks", V03, false, V10},
		{"/tasks/v1", V03, false, V10},
		{"/v1/tasks/t-1", V10, true, V10},
		{"/tasks/t-1", V03, true, V03},
	} {
		if got := RESTPathVersion(tc.path, tc.v, tc.explicit); got != tc.want {
			t.Errorf("RESTPathVersion(%q, %s, %v) = %s, want %s", tc.path, tc.v, tc.explicit, got, tc.want)
		}
		if op, _ := ClassifyREST("GET", tc.path, nil, nil, tc.v, tc.explicit); op.Version != tc.want {
			t.Errorf("ClassifyREST(%q) reads version %s, want %s", tc.path, op.Version, tc.want)
		}
	}
}
