package a2a

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func rpcResult(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

type eventCase struct {
	name    string
	payload string
	want    Event
}

// Results and stream events as the SDKs emit them.
func rpcEventCases() []eventCase {
	taskV10 := `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SUBMITTED","timestamp":"2026-01-02T03:04:05Z"},"history":[{"messageId":"msg-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"hello"}]}],"artifacts":[],"metadata":{}}`
	agentMsgV10 := `{"messageId":"msg-2","contextId":"ctx-1","taskId":"task-1","role":"ROLE_AGENT","parts":[{"text":"Need your approval","mediaType":"text/plain"}]}`
	statusV10 := `{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":` + agentMsgV10 + `,"timestamp":"2026-01-02T03:04:06Z"},"metadata":{}}`
	artifactV10 := `{"taskId":"task-1","contextId":"ctx-1","artifact":{"artifactId":"art-1","name":"summary","parts":[{"text":"..."}]},"append":false,"lastChunk":true}`

	taskV03 := `{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"submitted","timestamp":"2026-01-02T03:04:05.000Z"},"history":[{"kind":"message","messageId":"msg-1","role":"user","parts":[{"kind":"text","text":"hello"}],"contextId":"ctx-1","taskId":"task-1"}],"artifacts":[]}`
	msgV03 := `{"kind":"message","messageId":"msg-2","role":"agent","parts":[{"kind":"text","text":"hi there"}],"contextId":"ctx-1","taskId":"task-1"}`
	statusV03 := `{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","status":{"state":"working","message":{"kind":"message","messageId":"msg-3","role":"agent","parts":[{"kind":"text","text":"thinking"}],"taskId":"task-1","contextId":"ctx-1"},"timestamp":"2026-01-02T03:04:06.000Z"},"final":false}`
	finalV03 := `{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","status":{"state":"completed","timestamp":"2026-01-02T03:04:07.000Z"},"final":true}`
	artifactV03 := `{"kind":"artifact-update","taskId":"task-1","contextId":"ctx-1","artifact":{"artifactId":"art-1","parts":[{"kind":"text","text":"..."}]},"append":true,"lastChunk":false}`

	legacyStatus := `{"id":"task-l","status":{"state":"working","message":{"role":"agent","parts":[{"type":"text","text":"on it"}]},"timestamp":"2025-04-01T10:00:00Z"},"final":false}`
	legacyFinal := `{"id":"task-l","status":{"state":"canceled"},"final":true,"metadata":{}}`
	legacyArtifact := `{"id":"task-l","artifact":{"name":"answer","parts":[{"type":"text","text":"42"}],"index":0,"append":false,"lastChunk":true}}`
	legacyTask := `{"id":"task-l","sessionId":"sess-1","status":{"state":"completed","timestamp":"2025-04-01T10:00:01Z"},"artifacts":[{"parts":[{"type":"text","text":"42"}]}],"history":[]}`

	task := func(id, ctx string, s State) Event {
		return Event{Kind: EventTask, TaskID: id, ContextID: ctx, State: s}
	}
	status := func(id, ctx string, s State, final bool) Event {
		return Event{Kind: EventStatusUpdate, TaskID: id, ContextID: ctx, State: s, Final: final}
	}
	return []eventCase{
		// 1.0: member-name wrappers, bare Task from GetTask/CancelTask.
		{"1.0 send result task", rpcResult(`"req-1"`, `{"task":`+taskV10+`}`), task("task-1", "ctx-1", StateSubmitted)},
		{"1.0 send result message", rpcResult(`"req-1"`, `{"message":`+agentMsgV10+`}`), Event{Kind: EventMessage, TaskID: "task-1", ContextID: "ctx-1"}},
		{"1.0 stream statusUpdate", rpcResult(`"req-1"`, `{"statusUpdate":`+statusV10+`}`), status("task-1", "ctx-1", StateInputRequired, false)},
		{"1.0 stream artifactUpdate", rpcResult(`"req-1"`, `{"artifactUpdate":`+artifactV10+`}`), Event{Kind: EventArtifactUpdate, TaskID: "task-1", ContextID: "ctx-1"}},
		{"1.0 GetTask bare task", rpcResult(`3`, strings.Replace(taskV10, "TASK_STATE_SUBMITTED", "TASK_STATE_COMPLETED", 1)), task("task-1", "ctx-1", StateCompleted)},
		{"1.0 CancelTask canceled", rpcResult(`5`, `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_CANCELED"}}`), task("task-1", "ctx-1", StateCanceled)},
		{"0.3 gRPC spelling TASK_STATE_CANCELLED", rpcResult(`5`, `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_CANCELLED"}}`), task("task-1", "ctx-1", StateCanceled)},
		{"1.0 auth-required", rpcResult(`1`, `{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_AUTH_REQUIRED"}}}`), status("task-1", "ctx-1", StateAuthRequired, false)},
		{"1.0 rejected", rpcResult(`1`, `{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_REJECTED"}}}`), task("task-1", "ctx-1", StateRejected)},
		{"1.0 unspecified", rpcResult(`1`, `{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_UNSPECIFIED"}}}`), task("task-1", "ctx-1", StateUnknown)},
		{"proto enum number 1", rpcResult(`1`, `{"task":{"id":"t","contextId":"c","status":{"state":1}}}`), task("t", "c", StateSubmitted)},
		{"proto enum number 2", rpcResult(`1`, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":2}}}`), status("t", "c", StateWorking, false)},
		{"proto enum number 3", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":3}}`), task("t", "c", StateCompleted)},
		{"proto enum number 4", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":4}}`), task("t", "c", StateFailed)},
		{"proto enum number 5", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":5}}`), task("t", "c", StateCanceled)},
		{"proto enum number 6", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":6}}`), task("t", "c", StateInputRequired)},
		{"proto enum number 7", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":7}}`), task("t", "c", StateRejected)},
		{"proto enum number 8", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":8}}`), task("t", "c", StateAuthRequired)},
		{"proto enum number 0", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":0}}`), task("t", "c", StateUnknown)},
		{"proto enum number out of range", rpcResult(`1`, `{"id":"t","contextId":"c","status":{"state":99}}`), task("t", "c", StateUnknown)},
		{"proto field names", rpcResult(`1`, `{"status_update":{"task_id":"t","context_id":"c","status":{"state":"TASK_STATE_WORKING"}}}`), status("t", "c", StateWorking, false)},
		{"0.3 proto msg wrapper", rpcResult(`1`, `{"msg":`+agentMsgV10+`}`), Event{Kind: EventMessage, TaskID: "task-1", ContextID: "ctx-1"}},
		{"0.3 proto status update with final", rpcResult(`1`, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"final":true}}`), status("t", "c", StateCompleted, true)},

		// 0.3: kind discriminators.
		{"0.3 task", rpcResult(`1`, taskV03), task("task-1", "ctx-1", StateSubmitted)},
		{"0.3 message", rpcResult(`1`, msgV03), Event{Kind: EventMessage, TaskID: "task-1", ContextID: "ctx-1"}},
		{"0.3 status-update", rpcResult(`1`, statusV03), status("task-1", "ctx-1", StateWorking, false)},
		{"0.3 final status-update", rpcResult(`1`, finalV03), status("task-1", "ctx-1", StateCompleted, true)},
		{"0.3 artifact-update", rpcResult(`1`, artifactV03), Event{Kind: EventArtifactUpdate, TaskID: "task-1", ContextID: "ctx-1"}},
		{"0.3 cancelled spelling", rpcResult(`1`, `{"kind":"task","id":"t","contextId":"c","status":{"state":"cancelled"}}`), task("t", "c", StateCanceled)},
		{"0.3 rejected", rpcResult(`1`, `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"rejected"},"final":true}`), status("t", "c", StateRejected, true)},
		{"0.3 auth-required", rpcResult(`1`, `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"auth-required"},"final":false}`), status("t", "c", StateAuthRequired, false)},
		{"0.3 unknown state", rpcResult(`1`, `{"kind":"task","id":"t","contextId":"c","status":{"state":"paused"}}`), task("t", "c", StateUnknown)},
		{"0.3 task without status", rpcResult(`1`, `{"kind":"task","id":"t","contextId":"c"}`), task("t", "c", StateUnknown)},

		// Legacy.
		{"legacy status event", rpcResult(`"1"`, legacyStatus), status("task-l", "", StateWorking, false)},
		{"legacy final status event", rpcResult(`"1"`, legacyFinal), status("task-l", "", StateCanceled, true)},
		{"legacy artifact event", rpcResult(`"1"`, legacyArtifact), Event{Kind: EventArtifactUpdate, TaskID: "task-l"}},
		{"legacy task with sessionId", rpcResult(`"1"`, legacyTask), task("task-l", "sess-1", StateCompleted)},

		// Results with no task information.
		{"1.0 push config", rpcResult(`7`, flatPushV10), Event{Kind: EventNone}},
		{"0.3 push config", rpcResult(`5`, `{"taskId":"task-1","pushNotificationConfig":`+pushV03+`}`), Event{Kind: EventNone}},
		{"1.0 list tasks", rpcResult(`4`, `{"tasks":[`+taskV10+`],"nextPageToken":"","pageSize":50,"totalSize":1}`), Event{Kind: EventNone}},
		{"1.0 delete (Empty)", rpcResult(`10`, `{}`), Event{Kind: EventNone}},
		{"0.3 delete (null result)", rpcResult(`8`, `null`), Event{Kind: EventNone}},
		{"agent card", rpcResult(`11`, `{"name":"Recipe Agent","description":"d","version":"1.0.0","supportedInterfaces":[{"url":"https://agent.example.com/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true},"skills":[{"id":"s1","name":"n","description":"d","tags":[]}]}`), Event{Kind: EventNone}},

		// JSON-RPC errors.
		{"1.0 error with ErrorInfo", `{"jsonrpc":"2.0","id":"req-1","error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`, Event{Kind: EventError, ErrorCode: -32001}},
		{"0.3 error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"This operation is not supported"}}`, Event{Kind: EventError, ErrorCode: -32004}},
		{"error with a null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, Event{Kind: EventError, ErrorCode: -32700}},
		{"error next to a null result", `{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":-32603,"message":"boom"}}`, Event{Kind: EventError, ErrorCode: -32603}},
	}
}

func TestParseRPCEvent(t *testing.T) {
	for _, tc := range rpcEventCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRPCEvent([]byte(tc.payload))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// REST responses and REST stream payloads carry the result without the
// JSON-RPC envelope.
func TestParseResult(t *testing.T) {
	cases := []eventCase{
		{"1.0 REST send", `{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_WORKING"}}}`,
			Event{Kind: EventTask, TaskID: "task-1", ContextID: "ctx-1", State: StateWorking}},
		{"1.0 REST get task", `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_FAILED","timestamp":"2026-01-02T03:04:05Z"},"artifacts":[]}`,
			Event{Kind: EventTask, TaskID: "task-1", ContextID: "ctx-1", State: StateFailed}},
		{"1.0 REST stream status", `{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
			Event{Kind: EventStatusUpdate, TaskID: "task-1", ContextID: "ctx-1", State: StateCompleted}},
		{"1.0 REST stream message", `{"message":{"messageId":"m","contextId":"ctx-1","role":"ROLE_AGENT","parts":[{"text":"done"}]}}`,
			Event{Kind: EventMessage, ContextID: "ctx-1"}},
		{"0.3 REST proto task", `{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}`,
			Event{Kind: EventTask, TaskID: "task-1", ContextID: "ctx-1", State: StateInputRequired}},
		{"0.3 JSON task", `{"kind":"task","id":"task-1","contextId":"ctx-1","status":{"state":"input-required"}}`,
			Event{Kind: EventTask, TaskID: "task-1", ContextID: "ctx-1", State: StateInputRequired}},
		{"message without kind", `{"messageId":"m","taskId":"task-1","contextId":"ctx-1","role":"agent","parts":[]}`,
			Event{Kind: EventMessage, TaskID: "task-1", ContextID: "ctx-1"}},
		{"list response", `{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}`, Event{Kind: EventNone}},
		{"whitespace around", " \n{\"task\" : {\"id\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n",
			Event{Kind: EventTask, TaskID: "t", ContextID: "c", State: StateWorking}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResult([]byte(tc.payload))
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseRPCEventRefusesNonA2A(t *testing.T) {
	long := strings.Repeat("x", MaxIDLength+1)
	cases := []struct {
		name    string
		payload string
		notA2A  bool // must be reported as ErrNotA2A (valid JSON, not a result)
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,"result":`, true},
		{"empty", ``, true},
		{"array", `[]`, true},
		{"string", `"task"`, true},
		{"number", `42`, true},
		{"no result and no error", `{"jsonrpc":"2.0","id":1}`, true},
		{"error is a string", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, true},
		{"error code is a string", `{"jsonrpc":"2.0","id":1,"error":{"code":"-32001","message":"x"}}`, true},
		{"error without code", `{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}`, true},
		{"result is an array", rpcResult(`1`, `[]`), true},
		{"result is a string", rpcResult(`1`, `"ok"`), true},
		{"task wrapper is not an object", rpcResult(`1`, `{"task":"task-1"}`), true},
		{"statusUpdate wrapper is an array", rpcResult(`1`, `{"statusUpdate":[]}`), true},
		{"unknown kind", rpcResult(`1`, `{"kind":"progress","taskId":"t"}`), true},
		{"numeric task id", rpcResult(`1`, `{"kind":"status-update","taskId":7,"contextId":"c","status":{"state":"working"}}`), true},
		{"numeric context id", rpcResult(`1`, `{"task":{"id":"t","contextId":1,"status":{"state":"TASK_STATE_WORKING"}}}`), true},
		{"task id over MaxIDLength", rpcResult(`1`, `{"task":{"id":"`+long+`","status":{"state":"TASK_STATE_WORKING"}}}`), true},
		{"context id over MaxIDLength", rpcResult(`1`, `{"kind":"message","messageId":"m","contextId":"`+long+`"}`), true},
		{"boolean state", rpcResult(`1`, `{"task":{"id":"t","contextId":"c","status":{"state":true}}}`), true},
		// Ambiguous members: refused, whatever the error.
		{"duplicate result", `{"jsonrpc":"2.0","id":1,"result":{"id":"a","status":{"state":"working"}},"result":{"id":"b","status":{"state":"working"}}}`, false},
		{"result in two cases", `{"jsonrpc":"2.0","id":1,"result":{},"Result":{"id":"b","status":{"state":"working"}}}`, false},
		{"duplicate task id", rpcResult(`1`, `{"kind":"task","id":"a","id":"b","status":{"state":"working"}}`), false},
		{"duplicate state", rpcResult(`1`, `{"kind":"task","id":"a","status":{"state":"working","state":"completed"}}`), false},
		{"state in two cases", rpcResult(`1`, `{"task":{"id":"a","status":{"state":"TASK_STATE_WORKING","State":"TASK_STATE_COMPLETED"}}}`), false},
		{"two wrappers in two spellings", rpcResult(`1`, `{"statusUpdate":{"taskId":"a"},"status_update":{"taskId":"b"}}`), false},
		{"duplicate error code", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"code":-32002,"message":"x"}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseRPCEvent([]byte(tc.payload))
			if err == nil {
				t.Fatalf("accepted as %+v", ev)
			}
			if tc.notA2A && !errors.Is(err, ErrNotA2A) {
				t.Errorf("error %v (%T) is not ErrNotA2A", err, err)
			}
		})
	}
}

func TestEventKindString(t *testing.T) {
	names := map[string]bool{}
	for k := EventNone; k <= EventError; k++ {
		s := k.String()
		if s == "" || names[s] {
			t.Errorf("EventKind(%d).String() = %q: empty or duplicate", k, s)
		}
		names[s] = true
	}
	if got := EventKind(200).String(); got != "none" {
		t.Errorf("out-of-range kind = %q, want none", got)
	}
}

func BenchmarkParseRPCEvent(b *testing.B) {
	payload := []byte(`{"jsonrpc":"2.0","id":"3f1c2a9e-1b7d-4c55-9a0e-2f6d8b7c1a01","result":{"statusUpdate":{"taskId":"0c9e8d7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f","contextId":"5a0f3c1e-7d2b-4e9a-8c6f-1b2d3e4f5a6b","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"d1e2f3a4-b5c6-4d7e-8f90-a1b2c3d4e5f6","contextId":"5a0f3c1e-7d2b-4e9a-8c6f-1b2d3e4f5a6b","taskId":"0c9e8d7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f","role":"ROLE_AGENT","parts":[{"text":"Reading the report: 12 of 40 pages done.","mediaType":"text/plain"}]},"timestamp":"2026-01-02T03:04:05.678Z"},"metadata":{}}}}`)
	if ev, err := ParseRPCEvent(payload); err != nil || ev.Kind != EventStatusUpdate || ev.State != StateWorking {
		b.Fatalf("fixture parsed as %+v, %v", ev, err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRPCEvent(payload); err != nil {
			b.Fatal(err)
		}
	}
}
