package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// foreign is the id an answer must never smuggle past the reader.
const foreign = "FOREIGN-A"

var (
	opRPC10Send   = &Operation{Method: MethodSend, Version: V10, Binding: BindingJSONRPC, RPCID: json.RawMessage(`"r-1"`)}
	opRPC10Get    = &Operation{Method: MethodGetTask, Version: V10, Binding: BindingJSONRPC, RPCID: json.RawMessage(`7`)}
	opRPC10Stream = &Operation{Method: MethodStream, Version: V10, Binding: BindingJSONRPC, RPCID: json.RawMessage(`"r-1"`)}
	opRPC03Send   = &Operation{Method: MethodSend, Version: V03, Binding: BindingJSONRPC, RPCID: json.RawMessage(`"r-1"`)}
	opRPC03Stream = &Operation{Method: MethodStream, Version: V03, Binding: BindingJSONRPC, RPCID: json.RawMessage(`"r-1"`)}
	opRPCLegacy   = &Operation{Method: MethodSend, Version: VLegacy, Binding: BindingJSONRPC, RPCID: json.RawMessage(`1`)}
	opRPC03Delete = &Operation{Method: MethodPushConfigDelete, Version: V03, Binding: BindingJSONRPC, RPCID: json.RawMessage(`1`)}
	opREST10Send  = &Operation{Method: MethodSend, Version: V10, Binding: BindingREST}
	opREST10Get   = &Operation{Method: MethodGetTask, Version: V10, Binding: BindingREST}
	opREST03Send  = &Operation{Method: MethodSend, Version: V03, Binding: BindingREST}
	opREST10Card  = &Operation{Method: MethodExtendedCard, Version: V10, Binding: BindingREST}

	answerOps = []*Operation{opRPC10Send, opRPC10Get, opRPC10Stream, opRPC03Send, opRPC03Stream, opRPCLegacy,
		opRPC03Delete, opREST10Send, opREST10Get, opREST03Send, opREST10Card}
)

const (
	task10   = `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m-2","taskId":"t-1","contextId":"c-1","role":"ROLE_AGENT","parts":[{"text":"ok"}]}},"history":[{"messageId":"m-1","taskId":"t-1","contextId":"c-1","role":"ROLE_USER","parts":[{"text":"hi"}]}],"artifacts":[{"artifactId":"a-1","parts":[{"text":"x"}]}],"metadata":{"k":"v"}}`
	task03   = `{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"working"},"history":[{"kind":"message","messageId":"m-1","taskId":"t-1","contextId":"c-1","role":"user","parts":[{"kind":"text","text":"hi"}]}]}`
	status10 = `{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"}}`
)

func rpc(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

// TestReadAnswerAccepts: the shapes each version and binding defines are
// read, with their ids.
func TestReadAnswerAccepts(t *testing.T) {
	task := Event{Kind: EventTask, TaskID: "t-1", ContextID: "c-1", State: StateWorking}
	cases := []struct {
		name    string
		op      *Operation
		payload string
		want    Event
	}{
		{"1.0 send task", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`}`), task},
		{"1.0 send, snake_case wrapper member", opRPC10Stream, rpc(`"r-1"`, `{"status_update":{"task_id":"t-1","context_id":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`),
			Event{Kind: EventStatusUpdate, TaskID: "t-1", ContextID: "c-1", State: StateWorking}},
		{"1.0 send message", opRPC10Send, rpc(`"r-1"`, `{"message":{"messageId":"m","taskId":"t-1","contextId":"c-1","role":"ROLE_AGENT","parts":[]}}`),
			Event{Kind: EventMessage, TaskID: "t-1", ContextID: "c-1"}},
		{"1.0 get bare task, numeric id", opRPC10Get, rpc(`7`, task10), task},
		{"1.0 stream status update", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":`+status10+`}`),
			Event{Kind: EventStatusUpdate, TaskID: "t-1", ContextID: "c-1", State: StateCompleted}},
		{"1.0 stream artifact update", opRPC10Stream, rpc(`"r-1"`, `{"artifactUpdate":{"taskId":"t-1","contextId":"c-1","artifact":{"artifactId":"a","parts":[]},"lastChunk":true}}`),
			Event{Kind: EventArtifactUpdate, TaskID: "t-1", ContextID: "c-1"}},
		{"0.3 send task", opRPC03Send, rpc(`"r-1"`, task03), task},
		{"0.3 stream final status", opRPC03Stream, rpc(`"r-1"`, `{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"completed"},"final":true}`),
			Event{Kind: EventStatusUpdate, TaskID: "t-1", ContextID: "c-1", State: StateCompleted, Final: true}},
		{"legacy task with sessionId", opRPCLegacy, rpc(`1`, `{"id":"t-1","sessionId":"c-1","status":{"state":"working"}}`), task},
		{"0.3 null result of a push config delete", opRPC03Delete, rpc(`1`, `null`), Event{Kind: EventNone}},
		{"error response with data", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","error":{"code":-32001,"message":"` + foreign + `","data":[{"id":"` + foreign + `"}]}}`,
			Event{Kind: EventError, ErrorCode: -32001}},
		{"REST 1.0 send", opREST10Send, `{"task":` + task10 + `}`, task},
		{"REST 1.0 get", opREST10Get, task10, task},
		{"REST 0.3 send, protobuf JSON", opREST03Send, `{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING","update":{"messageId":"m","taskId":"t-1","role":"ROLE_AGENT","content":[]}}}}`, task},
		{"REST 0.3 message as msg", opREST03Send, `{"msg":{"messageId":"m","taskId":"t-1","contextId":"c-1","role":"ROLE_AGENT","content":[]}}`, Event{Kind: EventMessage, TaskID: "t-1", ContextID: "c-1"}},
		{"JSON-RPC 0.3 push config list", opRPC03Delete, rpc(`1`, `[{"taskId":"t-1"}]`), Event{Kind: EventNone}},
		{"REST delete without a body", &Operation{Method: MethodPushConfigDelete, Version: V10, Binding: BindingREST}, ``, Event{Kind: EventNone}},
		{"REST card: no task", opREST10Card, `{"name":"agent","skills":[]}`, Event{Kind: EventNone}},
		{"escaped member name, alone", opRPC10Get, rpc(`7`, `{"\u0069d":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}`), task},
		{"large metadata object", opRPC10Get, rpc(`7`, `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"metadata":`+bigObject(40, false)+`}`), task},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, _, err := ReadAnswer(tc.op, []byte(tc.payload))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !reflect.DeepEqual(ev, tc.want) {
				t.Fatalf("read %+v, want %+v", ev, tc.want)
			}
		})
	}
}

// bigObject is an object of n members, the last a repeat of the first
// when dup is set.
func bigObject(n int, dup bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		k := i
		if dup && i == n-1 {
			k = 0
		}
		b.WriteString(`"k` + strconv.Itoa(k) + `":"v"`)
	}
	b.WriteByte('}')
	return b.String()
}

// ambiguousAnswers are answers that carry a foreign id in a place the
// reader might miss, or that a caller's SDK could read differently.
func ambiguousAnswers() []struct {
	name    string
	op      *Operation
	payload string
} {
	f := foreign
	st := `"status":{"state":"TASK_STATE_WORKING"}`
	return []struct {
		name    string
		op      *Operation
		payload string
	}{
		// Duplicate members, at every depth.
		{"duplicate envelope result", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","result":{"task":` + task10 + `},"result":{"task":{"id":"` + f + `",` + st + `}}}`},
		{"duplicate envelope id", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","id":"r-2","result":{"task":` + task10 + `}}`},
		{"duplicate wrapper", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`,"task":{"id":"`+f+`",`+st+`}}`)},
		{"duplicate task id", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","id":"`+f+`",`+st+`}}`)},
		{"duplicate status state", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","state":"TASK_STATE_COMPLETED"}}}`)},
		{"duplicate in status.message", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","taskId":"t-1","taskId":"`+f+`"}}}}`)},
		{"duplicate in history", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"history":[{"messageId":"m","taskId":"t-1","taskId":"`+f+`"}]}}`)},
		{"duplicate in artifacts", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"artifacts":[{"artifactId":"a","artifactId":"`+f+`"}]}}`)},
		{"duplicate deep in metadata", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"metadata":{"a":[{"b":{"taskId":"x","taskId":"`+f+`"}}]}}}`)},
		{"duplicate in a large object", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"metadata":`+bigObject(40, true)+`}}`)},
		{"duplicate in error data", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","error":{"code":-32001,"data":{"id":"x","id":"` + f + `"}}}`},
		{"duplicate status update taskId", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"taskId":"t-1","taskId":"`+f+`",`+st+`}}`)},
		{"snake_case alias of taskId", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"taskId":"t-1","task_id":"`+f+`",`+st+`}}`)},
		{"0.3 duplicate kind", opRPC03Send, rpc(`"r-1"`, `{"kind":"message","kind":"task","id":"`+f+`","status":{"state":"working"}}`)},
		// Escaped member names: the same member to every decoder.
		{"escaped duplicate id", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","\u0069d":"`+f+`",`+st+`}}`)},
		{"escaped duplicate wrapper", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`,"\u0074ask":{"id":"`+f+`",`+st+`}}`)},
		{"escaped duplicate result", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","result":{"task":` + task10 + `},"r\u0065sult":{"task":{"id":"` + f + `",` + st + `}}}`},
		// Case variants of every member read.
		{"Task wrapper", opRPC10Send, rpc(`"r-1"`, `{"Task":{"id":"`+f+`",`+st+`}}`)},
		{"task and Task", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`,"Task":{"id":"`+f+`"}}`)},
		{"ID", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","ID":"`+f+`",`+st+`}}`)},
		{"Id alone", opRPC10Get, rpc(`7`, `{"Id":"`+f+`",`+st+`}`)},
		{"TaskId", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"TaskId":"`+f+`",`+st+`}}`)},
		{"taskID", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"taskId":"t-1","taskID":"`+f+`",`+st+`}}`)},
		{"ContextId", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","ContextId":"`+f+`",`+st+`}}`)},
		{"Status", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","Status":{"state":"TASK_STATE_WORKING"}}}`)},
		{"State", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","status":{"State":"TASK_STATE_WORKING"}}}`)},
		{"StatusUpdate", opRPC10Stream, rpc(`"r-1"`, `{"StatusUpdate":{"taskId":"`+f+`",`+st+`}}`)},
		{"Result", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","Result":{"task":{"id":"` + f + `",` + st + `}}}`},
		{"result and Result", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","result":{"task":` + task10 + `},"Result":{"task":{"id":"` + f + `"}}}`},
		{"Error", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","Error":{"code":-32001,"data":"` + f + `"}}`},
		{"JSONRPC", opRPC10Send, `{"JSONRPC":"2.0","id":"r-1","result":{"task":{"id":"` + f + `",` + st + `}}}`},
		{"Kind", opRPC03Send, rpc(`"r-1"`, `{"Kind":"task","id":"`+f+`","status":{"state":"working"}}`)},
		{"kind Task", opRPC03Send, rpc(`"r-1"`, `{"kind":"Task","id":"`+f+`","status":{"state":"working"}}`)},
		{"kind TASK", opRPC03Send, rpc(`"r-1"`, `{"kind":"TASK","id":"`+f+`","status":{"state":"working"}}`)},
		// The other binding's shape.
		{"REST result on JSON-RPC", opRPC10Send, `{"task":{"id":"` + f + `",` + st + `}}`},
		{"google.rpc.Status on JSON-RPC", opRPC10Send, `{"error":{"code":404,"status":"NOT_FOUND","message":"` + f + `","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"id":"` + f + `"}}]}}`},
		{"JSON-RPC envelope on REST", opREST10Send, rpc(`"r-1"`, `{"task":{"id":"`+f+`",`+st+`}}`)},
		{"JSON-RPC error on REST", opREST10Send, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"data":"` + f + `"}}`},
		{"JSON-RPC envelope on REST card", opREST10Card, `{"jsonrpc":"2.0","id":null,"result":{"id":"` + f + `"}}`},
		{"google.rpc.Status as a REST 200 send", opREST10Send, `{"error":{"code":404,"message":"` + f + `"}}`},
		// The other version's shape.
		{"0.3 kind on 1.0", opRPC10Send, rpc(`"r-1"`, `{"kind":"task","id":"`+f+`",`+st+`}`)},
		{"kind inside a 1.0 wrapper", opRPC10Send, rpc(`"r-1"`, `{"task":{"kind":"task","id":"`+f+`",`+st+`}}`)},
		{"1.0 wrapper on 0.3", opRPC03Send, rpc(`"r-1"`, `{"task":{"id":"`+f+`","status":{"state":"working"}}}`)},
		{"0.3 kind on REST 0.3 (protobuf JSON)", opREST03Send, `{"kind":"task","id":"` + f + `","status":{"state":"working"}}`},
		{"msg and message", opREST03Send, `{"message":{"messageId":"m","taskId":"t-1"},"msg":{"messageId":"m","taskId":"` + f + `"}}`},
		{"empty send answer on REST", opREST03Send, ``},
		{"bare legacy status event on 1.0", opRPC10Stream, rpc(`"r-1"`, `{"id":"`+f+`",`+st+`,"final":false}`)},
		{"bare message on 1.0", opRPC10Send, rpc(`"r-1"`, `{"messageId":"m","taskId":"`+f+`"}`)},
		// Envelopes that are not exactly one JSON-RPC response.
		{"result and error", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","result":{"task":` + task10 + `},"error":{"code":-32001,"data":"` + f + `"}}`},
		{"result and null error", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","result":{"task":{"id":"` + f + `",` + st + `}},"error":null}`},
		{"neither result nor error", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","data":{"id":"` + f + `"}}`},
		{"extra envelope member", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","result":{"task":` + task10 + `},"task":{"id":"` + f + `"}}`},
		{"another request's id", opRPC10Send, rpc(`"r-2"`, `{"task":{"id":"`+f+`",`+st+`}}`)},
		{"number for a string id", opRPC10Send, rpc(`1`, `{"task":{"id":"`+f+`",`+st+`}}`)},
		{"no jsonrpc", opRPC10Send, `{"id":"r-1","result":{"task":{"id":"` + f + `",` + st + `}}}`},
		{"jsonrpc 1.0", opRPC10Send, `{"jsonrpc":"1.0","id":"r-1","result":{"task":{"id":"` + f + `",` + st + `}}}`},
		{"error code a string", opRPC10Send, `{"jsonrpc":"2.0","id":"r-1","error":{"code":"-32001","data":"` + f + `"}}`},
		// Results with more than the protocol defines where ids are read.
		{"two wrappers", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`,"message":{"messageId":"m","taskId":"`+f+`"}}`)},
		{"wrapper and bare members", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`,"id":"`+f+`",`+st+`}`)},
		{"nested wrapper", opRPC10Send, rpc(`"r-1"`, `{"task":{"task":{"id":"`+f+`",`+st+`}}}`)},
		{"unknown member in a task", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"taskId":"`+f+`"}}`)},
		{"unknown member in a status", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","taskId":"`+f+`"}}}`)},
		{"status update with taskId and id", opRPC03Stream, rpc(`"r-1"`, `{"kind":"status-update","taskId":"t-1","id":"`+f+`","status":{"state":"working"}}`)},
		{"contextId and sessionId", opRPCLegacy, rpc(`1`, `{"id":"t-1","contextId":"c-1","sessionId":"`+f+`","status":{"state":"working"}}`)},
		{"status.message names another task", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","taskId":"`+f+`"}}}}`)},
		{"status.update names another task", opREST03Send, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","update":{"messageId":"m","taskId":"` + f + `"}}}}`},
		{"status message and update", opREST03Send, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m"},"update":{"messageId":"m","taskId":"` + f + `"}}}}`},
		{"history names another task", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"history":[{"messageId":"m","taskId":"t-1"},{"messageId":"n","taskId":"`+f+`"}]}}`)},
		{"history names another context", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1","contextId":"c-1",`+st+`,"history":[{"messageId":"m","contextId":"`+f+`"}]}}`)},
		{"status update message names another task", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"taskId":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","taskId":"`+f+`"}}}}`)},
		// referenceTaskIds the reader could not read as every SDK does.
		{"references and their snake_case alias", opRPC10Send, rpc(`"r-1"`, `{"message":{"messageId":"m","referenceTaskIds":["t-1"],"reference_task_ids":["`+f+`"]}}`)},
		{"references in another case in history", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"history":[{"messageId":"m","ReferenceTaskIds":["`+f+`"]}]}}`)},
		{"duplicate references in status.message", opRPC03Send, rpc(`"r-1"`, `{"kind":"task","id":"t-1","status":{"state":"working","message":{"kind":"message","messageId":"m","referenceTaskIds":[],"referenceTaskIds":["`+f+`"]}}}`)},
		{"references not an array", opRPC03Send, rpc(`"r-1"`, `{"kind":"message","messageId":"m","referenceTaskIds":"`+f+`"}`)},
		{"a reference not a string", opREST10Send, `{"message":{"messageId":"m","referenceTaskIds":[{"id":"` + f + `"}]}}`},
		{"a null reference", opREST10Send, `{"message":{"messageId":"m","referenceTaskIds":[null,"` + f + `"]}}`},
		{"an empty reference", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"taskId":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","referenceTaskIds":["","`+f+`"]}}}}`)},
		{"a reference too long", opREST03Send, `{"msg":{"messageId":"m","reference_task_ids":["` + strings.Repeat("x", MaxIDLength+1) + `"]}}`},
		{"too many references", opRPC10Send, rpc(`"r-1"`, `{"task":{"id":"t-1",`+st+`,"history":[{"messageId":"m","referenceTaskIds":`+refList(0, MaxAnswerReferences)+`},{"messageId":"n","referenceTaskIds":`+refList(MaxAnswerReferences, 1)+`}]}}`)},
		{"no task in a send answer", opRPC10Send, rpc(`"r-1"`, `{"id":"`+f+`"}`)},
		{"empty send answer", opREST10Send, `{}`},
		{"null send answer", opRPC10Send, rpc(`"r-1"`, `null`)},
		{"array answer", opREST10Get, `[{"id":"` + f + `",` + st + `}]`},
		// Not JSON, or JSON decoders disagree on.
		{"trailing value", opRPC10Send, rpc(`"r-1"`, `{"task":`+task10+`}`) + `{"id":"` + f + `"}`},
		{"truncated", opREST10Get, `{"id":"` + f + `"`},
		{"invalid UTF-8 member names", opRPC10Get, rpc(`7`, `{"id":"t-1",`+st+`,"metadata":{"i`+"\xff"+`d":"x","i`+"\xfe"+`d":"`+f+`"}}`)},
		{"lone surrogates that decode alike", opRPC10Get, rpc(`7`, `{"id":"t-1",`+st+`,"metadata":{"\ud800":"x","\ud801":"`+f+`"}}`)},
	}
}

// refList is a JSON array of n distinct task ids, from r-first on.
func refList(first, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = `"r-` + strconv.Itoa(first+i) + `"`
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// TestReadAnswerReferences: the referenceTaskIds of every message an answer
// holds are read, in every dialect, each id once.
func TestReadAnswerReferences(t *testing.T) {
	refs := func(ids ...string) []string { return ids }
	cases := []struct {
		name    string
		op      *Operation
		payload string
		want    []string
	}{
		{"1.0 message result", opRPC10Send, rpc(`"r-1"`, `{"message":{"messageId":"m","taskId":"t-1","role":"ROLE_AGENT","parts":[],"referenceTaskIds":["A","B"]}}`), refs("A", "B")},
		{"1.0 status.message", opRPC10Get, rpc(`7`, `{"id":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","referenceTaskIds":["A"]}}}`), refs("A")},
		{"1.0 history, each id once", opREST10Get, `{"id":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"s","referenceTaskIds":["B","A"]}},"history":[{"messageId":"m","referenceTaskIds":["A"]},{"messageId":"n","referenceTaskIds":["A","C"]}]}`, refs("A", "C", "B")},
		{"1.0 stream status update", opRPC10Stream, rpc(`"r-1"`, `{"statusUpdate":{"taskId":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","referenceTaskIds":["A"]}}}}`), refs("A")},
		{"1.0 snake_case", opRPC10Stream, rpc(`"r-1"`, `{"message":{"messageId":"m","reference_task_ids":["A"]}}`), refs("A")},
		{"0.3 kind message", opRPC03Send, rpc(`"r-1"`, `{"kind":"message","messageId":"m","role":"agent","parts":[],"referenceTaskIds":["A"]}`), refs("A")},
		{"0.3 kind task history and status", opRPC03Send, rpc(`"r-1"`, `{"kind":"task","id":"t-1","status":{"state":"working","message":{"kind":"message","messageId":"s","referenceTaskIds":["B"]}},"history":[{"kind":"message","messageId":"m","referenceTaskIds":["A"]}]}`), refs("A", "B")},
		{"0.3 status-update event", opRPC03Stream, rpc(`"r-1"`, `{"kind":"status-update","taskId":"t-1","status":{"state":"working","message":{"kind":"message","messageId":"m","referenceTaskIds":["A"]}},"final":false}`), refs("A")},
		{"0.3 REST msg, protobuf JSON", opREST03Send, `{"msg":{"messageId":"m","content":[],"reference_task_ids":["A"]}}`, refs("A")},
		{"0.3 REST status.update", opREST03Send, `{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING","update":{"messageId":"m","reference_task_ids":["A"]}},"history":[{"messageId":"n","referenceTaskIds":["B"]}]}}`, refs("B", "A")},
		{"legacy history", opRPCLegacy, rpc(`1`, `{"id":"t-1","sessionId":"c-1","status":{"state":"working"},"history":[{"role":"agent","parts":[],"referenceTaskIds":["A"]}]}`), refs("A")},
		{"escaped ids", opRPC10Send, rpc(`"r-1"`, `{"message":{"messageId":"m","referenceTaskIds":["\u0041"]}}`), refs("A")},
		{"empty list, null list", opRPC10Get, rpc(`7`, `{"id":"t-1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","referenceTaskIds":[]}},"history":[{"messageId":"n","referenceTaskIds":null}]}`), nil},
		{"the bound, repeated", opRPC10Get, rpc(`7`, `{"id":"t-1","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"m","referenceTaskIds":`+refList(0, MaxAnswerReferences)+`},{"messageId":"n","referenceTaskIds":`+refList(0, MaxAnswerReferences)+`}]}`),
			strings.Split(strings.NewReplacer(`"`, "", "[", "", "]", "").Replace(refList(0, MaxAnswerReferences)), ",")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, _, err := ReadAnswer(tc.op, []byte(tc.payload))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !slices.Equal(ev.ReferenceTaskIDs, tc.want) {
				t.Fatalf("references %q, want %q", ev.ReferenceTaskIDs, tc.want)
			}
		})
	}
}

// TestReadAnswerRefusesAmbiguous: every ambiguous shape is refused, as an
// ambiguity or invalid JSON, never read.
func TestReadAnswerRefusesAmbiguous(t *testing.T) {
	for _, tc := range ambiguousAnswers() {
		t.Run(tc.name, func(t *testing.T) {
			ev, _, err := ReadAnswer(tc.op, []byte(tc.payload))
			if err == nil {
				t.Fatalf("read as %+v", ev)
			}
			if !errors.Is(err, ErrNotA2A) {
				t.Fatalf("error %v is not ErrNotA2A", err)
			}
			if strings.Contains(err.Error(), foreign) {
				t.Fatalf("error %q quotes the answer's values", err)
			}
		})
	}
}

// TestParseResultRefusesDuplicates: the version-blind readers other
// components use refuse duplicates at any depth too.
func TestParseResultRefusesDuplicates(t *testing.T) {
	for _, p := range []string{
		`{"task":{"id":"t-1","status":{"state":"TASK_STATE_WORKING"},"history":[{"taskId":"a","taskId":"b"}]}}`,
		`{"id":"t-1","\u0069d":"t-2","status":{}}`,
	} {
		if ev, err := ParseResult([]byte(p)); err == nil {
			t.Errorf("ParseResult(%s) = %+v", p, ev)
		}
		if ev, err := ParseRPCEvent([]byte(rpc("1", p))); err == nil {
			t.Errorf("ParseRPCEvent(%s) = %+v", p, ev)
		}
	}
}

func TestAgentError(t *testing.T) {
	cases := []struct {
		code int
		want *Error
	}{
		{-32001, ErrTaskNotFound},
		{-32002, ErrTaskNotCancelable},
		{-32603, ErrInternal},
		{-32009, ErrVersionNotSupported},
		{-32051, agentInternal}, // the gateway's own codes are not the agent's to use
		{-32000, agentInternal},
		{0, agentInternal},
	}
	for _, tc := range cases {
		if got := AgentError(tc.code); got != tc.want {
			t.Errorf("AgentError(%d) = %+v, want %+v", tc.code, got, tc.want)
		}
	}
}

func TestReadRESTError(t *testing.T) {
	info := func(reason string) string {
		return `{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"` + reason + `","domain":"a2a-protocol.org"}`
	}
	cases := []struct {
		name string
		v    Version
		body string
		code int
	}{
		{"1.0 status", V10, `{"error":{"code":404,"status":"NOT_FOUND","message":"` + foreign + `","details":[{"@type":"x"},` + info("TASK_NOT_FOUND") + `]}}`, -32001},
		{"1.0 unknown reason", V10, `{"error":{"code":404,"details":[` + info("NO_SUCH_THING") + `]}}`, 0},
		{"1.0 foreign domain", V10, `{"error":{"code":404,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"example.com"}]}}`, 0},
		{"1.0 no details", V10, `{"error":{"code":500,"message":"` + foreign + `"}}`, 0},
		{"0.3 code", V03, `{"code":-32002,"message":"` + foreign + `"}`, -32002},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ReadRESTError(tc.v, []byte(tc.body))
			if err != nil || ev.Kind != EventError || ev.ErrorCode != tc.code {
				t.Fatalf("read %+v, %v; want code %d", ev, err, tc.code)
			}
		})
	}
	refused := []struct {
		name string
		v    Version
		body string
	}{
		{"1.0 duplicate details", V10, `{"error":{"details":[` + info("TASK_NOT_FOUND") + `],"details":[]}}`},
		{"1.0 duplicate reason", V10, `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","reason":"INTERNAL","domain":"a2a-protocol.org"}]}}`},
		{"1.0 Error", V10, `{"Error":{"code":404}}`},
		{"1.0 details not a list", V10, `{"error":{"details":{"id":"` + foreign + `"}}}`},
		{"1.0 not a Status", V10, `{"code":-32001}`},
		{"0.3 case variant", V03, `{"code":-32002,"Code":-32001}`},
		{"0.3 no code", V03, `{"message":"` + foreign + `"}`},
		{"not JSON", V10, `<html>` + foreign},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if ev, err := ReadRESTError(tc.v, []byte(tc.body)); err == nil {
				t.Fatalf("read %+v", ev)
			}
		})
	}
}

// readList reads a ListTasks answer as ReadAnswer does.
func readList(result string) ([]ListedTask, string, error) {
	ev, _, err := ReadAnswer(&Operation{Method: MethodListTasks, Version: V10, Binding: BindingREST}, []byte(result))
	return ev.Listed, ev.NextPageToken, err
}

func TestReadListTasks(t *testing.T) {
	withRefs := `{"id":"t-3","status":{"state":1,"message":{"messageId":"m","role":2,"parts":[],"referenceTaskIds":["t-1","r-9"]}},` +
		`"history":[{"messageId":"h","role":1,"parts":[],"referenceTaskIds":["r-9","r-8"]}]}`
	tasks, next, err := readList(`{"tasks":[` + task10 + `,{"id":"t-2","status":{"state":1}},` + withRefs + `],"nextPageToken":"p2","pageSize":3}`)
	if err != nil || len(tasks) != 3 || next != "p2" || string(tasks[0].Raw) != task10 || string(tasks[2].Raw) != withRefs {
		t.Fatalf("read %+v %q, %v", tasks, next, err)
	}
	for i, want := range []struct{ id, refs string }{{"t-1", ""}, {"t-2", ""}, {"t-3", "r-9,r-8,t-1"}} {
		if tasks[i].ID != want.id || strings.Join(tasks[i].References, ",") != want.refs {
			t.Errorf("task %d: id %q references %q, want %q %q", i, tasks[i].ID, tasks[i].References, want.id, want.refs)
		}
	}
	for _, p := range []string{
		`{"tasks":[{"id":"t-1","ID":"` + foreign + `"}]}`,
		`{"tasks":[` + task10 + `],"tasks":[{"id":"` + foreign + `"}]}`,
		`{"tasks":[` + task10 + `],"Tasks":[{"id":"` + foreign + `"}]}`,
		`{"tasks":[{"task":{"id":"` + foreign + `"}}]}`,
		`{"tasks":[{"kind":"task","id":"` + foreign + `"}]}`,
		`{"tasks":[{"status":{}}]}`,
		`{"tasks":[` + task10 + `],"items":[{"id":"` + foreign + `"}]}`,
		`{"tasks":{"id":"` + foreign + `"}}`,
		`{"tasks":[` + task10 + `]},`,
		``,
		`null`,
	} {
		if tasks, _, err := readList(p); err == nil {
			t.Errorf("ListTasks answer %s read as %+v", p, tasks)
		}
	}
}

// TestCheckJSON agrees with encoding/json on validity and refuses
// duplicates at every depth.
func TestCheckJSON(t *testing.T) {
	valid := []string{`0`, `-0.5e+3`, `"a\u00e9\n"`, `[]`, `{}`, `[1,[2,{"a":[]}]]`, ` {"a" : 1 , "b":{"a":2}} `, `{"a":1,"A":2}`, `null`, `true`}
	invalid := []string{``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a"}`, `01`, `1.`, `-`, `"\x"`, `"\u12g4"`, "\"\x01\"", `tru`, `[1]]`, `{"a":1}{}`, `{1:2}`, `[1 2]`}
	for _, s := range valid {
		if err := checkJSON([]byte(s)); err != nil || !json.Valid([]byte(s)) {
			t.Errorf("checkJSON(%q) = %v", s, err)
		}
	}
	for _, s := range invalid {
		if checkJSON([]byte(s)) == nil || json.Valid([]byte(s)) {
			t.Errorf("checkJSON(%q) accepted", s)
		}
	}
	for _, s := range []string{`{"a":1,"a":2}`, `[{"x":{"a":1,"b":{"c":1,"c":2}}}]`, `{"a":1,"\u0061":2}`, bigObject(17, true), bigObject(300, true)} {
		if checkJSON([]byte(s)) == nil {
			t.Errorf("checkJSON(%.60q) accepted a duplicate", s)
		}
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if err := checkJSON([]byte(deep)); err != nil {
		t.Errorf("deep nesting: %v", err)
	}
}

// hasDuplicates reports, by encoding/json's tokens, whether an object of
// valid JSON b has a member twice.
func hasDuplicates(b []byte) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	type frame struct {
		seen   map[string]bool
		object bool
		key    bool // the next string token is a member name
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if k, ok := tok.(string); ok {
				if top.seen[k] {
					return true
				}
				top.seen[k] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{seen: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// decodedIDs reads the task and context ids of an accepted answer, and the
// distinct referenceTaskIds of its messages, with encoding/json, as a
// caller's SDK would.
func decodedIDs(t *testing.T, op *Operation, b []byte) (task, ctx string, refs []string, isErr bool) {
	t.Helper()
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		var null any
		if json.Unmarshal(b, &null) == nil && null == nil {
			return "", "", nil, false
		}
		t.Fatalf("accepted answer does not decode: %v", err)
	}
	obj := top
	if op.Binding == BindingJSONRPC {
		if _, ok := top["error"]; ok {
			return "", "", nil, true
		}
		obj, _ = top["result"].(map[string]any)
	}
	get := func(m map[string]any, name, alias string) (any, bool) {
		if v, ok := m[name]; ok {
			return v, true
		}
		v, ok := m[alias]
		return v, ok
	}
	str := func(m map[string]any, name, alias string) string {
		v, _ := get(m, name, alias)
		s, _ := v.(string)
		return s
	}
	if obj == nil {
		return "", "", nil, false
	}
	kind := EventTask
	for i, w := range [][2]string{{"task", "task"}, {"message", "message"}, {"statusUpdate", "status_update"}, {"artifactUpdate", "artifact_update"}, {"msg", "msg"}} {
		if inner, ok := get(obj, w[0], w[1]); ok {
			obj, _ = inner.(map[string]any)
			kind = wrapperKinds[i]
		}
	}
	switch k, _ := obj["kind"].(string); k {
	case "message":
		kind = EventMessage
	case "status-update":
		kind = EventStatusUpdate
	case "artifact-update":
		kind = EventArtifactUpdate
	}
	if kind == EventTask && obj["kind"] == nil {
		if _, ok := get(obj, "messageId", "message_id"); ok && obj["status"] == nil {
			kind = EventMessage
		}
	}
	task = str(obj, "id", "id")
	if kind != EventTask {
		if tid := str(obj, "taskId", "task_id"); tid != "" {
			task = tid
		}
		if kind == EventMessage {
			task = str(obj, "taskId", "task_id")
		}
	}
	ctx = str(obj, "contextId", "context_id")
	if ctx == "" && kind == EventTask {
		ctx = str(obj, "sessionId", "session_id")
	}
	var msgs []any
	if kind == EventMessage {
		msgs = append(msgs, obj)
	}
	if kind == EventTask || kind == EventStatusUpdate {
		v, _ := get(obj, "status", "status")
		status, _ := v.(map[string]any)
		for _, name := range []string{"message", "update"} {
			if m, ok := status[name]; ok {
				msgs = append(msgs, m)
			}
		}
	}
	if kind == EventTask {
		h, _ := obj["history"].([]any)
		msgs = append(msgs, h...)
	}
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		v, _ := get(m, "referenceTaskIds", "reference_task_ids")
		ids, _ := v.([]any)
		for _, id := range ids {
			if id, _ := id.(string); !slices.Contains(refs, id) {
				refs = append(refs, id)
			}
		}
	}
	return task, ctx, refs, false
}

func FuzzAnswerReader(f *testing.F) {
	for _, tc := range ambiguousAnswers() {
		f.Add([]byte(tc.payload))
	}
	for _, tc := range rpcEventCases() {
		f.Add([]byte(tc.payload))
	}
	for _, p := range []string{rpc(`"r-1"`, `{"task":`+task10+`}`), task10, task03, `{"task":` + task10 + `}`, bigObject(20, true)} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cerr := checkJSON(b)
		if cerr == nil && (!json.Valid(b) || hasDuplicates(b)) {
			t.Fatalf("checkJSON accepted %q", b)
		}
		if cerr != nil && json.Valid(b) && !hasDuplicates(b) && utf8.Valid(b) && !bytes.Contains(b, []byte(`\u`)) {
			t.Fatalf("checkJSON refused valid %q: %v", b, cerr)
		}
		for _, op := range answerOps {
			ev, _, err := ReadAnswer(op, b)
			if err != nil {
				continue
			}
			if cerr != nil && len(bytes.TrimSpace(b)) > 0 {
				t.Fatalf("ReadAnswer accepted what checkJSON refused: %q", b)
			}
			if ev.Kind == EventNone {
				// Only the answers of operations without a task may have none.
				if answersWithTask(op.Method) {
					t.Fatalf("%s: no task read from %q", op.Method, b)
				}
				continue
			}
			task, ctx, refs, isErr := decodedIDs(t, op, b)
			if isErr != (ev.Kind == EventError) {
				t.Fatalf("%s %s: read %+v, decoded error=%v from %q", op.Binding, op.Version, ev, isErr, b)
			}
			if isErr {
				continue
			}
			if ev.TaskID != task || ev.ContextID != ctx {
				t.Fatalf("%s %s %s: read task %q context %q, encoding/json reads %q %q from %q",
					op.Binding, op.Version, op.Method, ev.TaskID, ev.ContextID, task, ctx, b)
			}
			got := slices.Clone(ev.ReferenceTaskIDs)
			slices.Sort(got)
			slices.Sort(refs)
			if !slices.Equal(got, refs) {
				t.Fatalf("%s %s %s: read references %q, encoding/json reads %q from %q",
					op.Binding, op.Version, op.Method, ev.ReferenceTaskIDs, refs, b)
			}
		}
	})
}

// answer1K is a typical 1.0 send answer of about 1 KiB.
var answer1K = []byte(rpc(`"r-1"`, `{"task":{"id":"0b5f6c1e-6a34-4f7e-9d0e-3c2a9b8e7f10","contextId":"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",`+
	`"status":{"state":"TASK_STATE_WORKING","message":{"messageId":"8e7f6d5c-4b3a-4291-8f7e-6d5c4b3a2910","taskId":"0b5f6c1e-6a34-4f7e-9d0e-3c2a9b8e7f10","contextId":"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f","role":"ROLE_AGENT","parts":[{"text":"Working on the quarterly summary; collecting the figures from the ledger now."}]},"timestamp":"2026-01-02T03:04:05Z"},`+
	`"history":[{"messageId":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","taskId":"0b5f6c1e-6a34-4f7e-9d0e-3c2a9b8e7f10","contextId":"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f","role":"ROLE_USER","parts":[{"text":"Please prepare the quarterly summary for the finance team, with the totals per region and a short commentary on the largest changes."}]}],`+
	`"artifacts":[{"artifactId":"c4d5e6f7-a8b9-4c0d-9e1f-2a3b4c5d6e7f","name":"draft","parts":[{"text":"Region totals: north 1204, south 988, east 1410, west 1102."}]}],"metadata":{"priority":"normal","source":"finance-portal"}}}`))

func BenchmarkReadAnswer(b *testing.B) {
	b.SetBytes(int64(len(answer1K)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := ReadAnswer(opRPC10Send, answer1K); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRPCEventResult(b *testing.B) {
	b.SetBytes(int64(len(answer1K)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := ParseRPCEventResult(answer1K); err != nil {
			b.Fatal(err)
		}
	}
}
