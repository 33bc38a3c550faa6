package a2a

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The forms of each dialect; the bridge reads 1.0 over every binding
// alike, and 0.3 HTTP+JSON like 0.3 gRPC.
var (
	form10     = Form{V10, BindingJSONRPC}
	form10REST = Form{V10, BindingREST}
	form10GRPC = Form{V10, BindingGRPC}
	form03     = Form{V03, BindingJSONRPC}
	form03REST = Form{V03, BindingREST}
	form03GRPC = Form{V03, BindingGRPC}
)

// A task and its events in each dialect, with every member the dialects
// share. The 0.3 protobuf JSON set leaves out what it cannot carry.
var (
	brStatus10   = `{"state":"TASK_STATE_WORKING","message":` + brMessage10 + `,"timestamp":"2026-01-02T03:04:05.123Z"}`
	brStatus03   = `{"state":"working","message":` + brMessage03 + `,"timestamp":"2026-01-02T03:04:05.123Z"}`
	brArtifact10 = `{"artifactId":"a-1","name":"out","description":"the output","parts":[{"text":"done","metadata":{"p":true}}],
		"metadata":{"m":null},"extensions":["https://ext.example.com/x"]}`
	brArtifact03 = `{"artifactId":"a-1","name":"out","description":"the output","parts":[{"kind":"text","text":"done","metadata":{"p":true}}],
		"metadata":{"m":null},"extensions":["https://ext.example.com/x"]}`
	brTask10 = `{"id":"task-1","contextId":"ctx-1","status":` + brStatus10 + `,"artifacts":[` + brArtifact10 + `],"history":[` + brMessage10 + `],"metadata":{"t":1}}`
	brTask03 = `{"kind":"task","id":"task-1","contextId":"ctx-1","status":` + brStatus03 + `,"artifacts":[` + brArtifact03 + `],"history":[` + brMessage03 + `],"metadata":{"t":1}}`

	brStatus10P   = `{"state":"TASK_STATE_CANCELED","message":` + brMessage10ForProto + `,"timestamp":"2026-01-02T03:04:05Z"}`
	brStatus03P   = `{"state":"TASK_STATE_CANCELLED","message":` + brMessage03Proto + `,"timestamp":"2026-01-02T03:04:05Z"}`
	brArtifact10P = `{"artifactId":"a-1","name":"out","description":"d","parts":[{"data":{"x":1}}],"metadata":{"m":1},"extensions":["e"]}`
	brArtifact03P = `{"artifactId":"a-1","name":"out","description":"d","parts":[{"data":{"data":{"x":1}}}],"metadata":{"m":1},"extensions":["e"]}`
	brTask10P     = `{"id":"task-1","contextId":"ctx-1","status":` + brStatus10P + `,"artifacts":[` + brArtifact10P + `],"history":[` + brMessage10ForProto + `],"metadata":{"t":1}}`
	brTask03P     = `{"id":"task-1","contextId":"ctx-1","status":` + brStatus03P + `,"artifacts":[` + brArtifact03P + `],"history":[` + brMessage03Proto + `],"metadata":{"t":1}}`

	brStatusUpdate10  = `{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_INPUT_REQUIRED"},"metadata":{"u":1}}`
	brStatusUpdate03  = `{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","status":{"state":"input-required"},"final":true,"metadata":{"u":1}}`
	brStatusUpdate03P = `{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_INPUT_REQUIRED"},"final":true,"metadata":{"u":1}}`

	brArtifactUpdate10  = `{"taskId":"task-1","contextId":"ctx-1","artifact":` + brArtifact10 + `,"append":true,"lastChunk":false,"metadata":{"u":2}}`
	brArtifactUpdate03  = `{"kind":"artifact-update","taskId":"task-1","contextId":"ctx-1","artifact":` + brArtifact03 + `,"append":true,"lastChunk":false,"metadata":{"u":2}}`
	brArtifactUpdate10P = `{"taskId":"task-1","contextId":"ctx-1","artifact":` + brArtifact10P + `,"append":false,"lastChunk":true}`
	brArtifactUpdate03P = `{"taskId":"task-1","contextId":"ctx-1","artifact":` + brArtifact03P + `,"append":false,"lastChunk":true}`

	brConfig10  = `{"id":"cfg-1","taskId":"task-1","url":"https://hooks.example.com/a","token":"tok","authentication":{"scheme":"Bearer","credentials":"c"}}`
	brConfig03  = `{"taskId":"task-1","pushNotificationConfig":{"id":"cfg-1","url":"https://hooks.example.com/a","token":"tok","authentication":{"schemes":["Bearer"],"credentials":"c"}}}`
	brConfig03P = `{"name":"tasks/task-1/pushNotificationConfigs/cfg-1","pushNotificationConfig":{"id":"cfg-1","url":"https://hooks.example.com/a","token":"tok","authentication":{"schemes":["Bearer"],"credentials":"c"}}}`
)

func wrap(member, object string) string { return `{"` + member + `":` + object + `}` }

// resultCase is one answer in the three dialects: a 1.0 answer and its
// 0.3 JSON-RPC spelling, and a 1.0 answer and its 0.3 protobuf JSON one.
type resultCase struct {
	name     string
	m        Method
	a10, a03 string
	p10, p03 string
}

func resultCases() []resultCase {
	return []resultCase{
		{name: "send task", m: MethodSend, a10: wrap("task", brTask10), a03: brTask03, p10: wrap("task", brTask10P), p03: wrap("task", brTask03P)},
		{name: "send message", m: MethodSend, a10: wrap("message", brMessage10), a03: brMessage03, p10: wrap("message", brMessage10ForProto), p03: wrap("message", brMessage03Proto)},
		{name: "stream task", m: MethodStream, a10: wrap("task", brTask10), a03: brTask03, p10: wrap("task", brTask10P), p03: wrap("task", brTask03P)},
		{name: "stream message", m: MethodStream, a10: wrap("message", brMessage10), a03: brMessage03, p10: wrap("message", brMessage10ForProto), p03: wrap("message", brMessage03Proto)},
		{name: "stream status", m: MethodStream, a10: wrap("statusUpdate", brStatusUpdate10), a03: brStatusUpdate03, p10: wrap("statusUpdate", brStatusUpdate10), p03: wrap("statusUpdate", brStatusUpdate03P)},
		{name: "subscribe artifact", m: MethodSubscribe, a10: wrap("artifactUpdate", brArtifactUpdate10), a03: brArtifactUpdate03, p10: wrap("artifactUpdate", brArtifactUpdate10P), p03: wrap("artifactUpdate", brArtifactUpdate03P)},
		{name: "get", m: MethodGetTask, a10: brTask10, a03: brTask03, p10: brTask10P, p03: brTask03P},
		{name: "cancel", m: MethodCancelTask, a10: brTask10, a03: brTask03, p10: brTask10P, p03: brTask03P},
		{name: "push set", m: MethodPushConfigSet, a10: brConfig10, a03: brConfig03, p10: brConfig10, p03: brConfig03P},
		{name: "push get", m: MethodPushConfigGet, a10: brConfig10, a03: brConfig03, p10: brConfig10, p03: brConfig03P},
		{name: "push list", m: MethodPushConfigList, a10: `{"configs":[` + brConfig10 + `]}`, a03: `[` + brConfig03 + `]`,
			p10: `{"configs":[` + brConfig10 + `],"nextPageToken":"n"}`, p03: `{"configs":[` + brConfig03P + `],"nextPageToken":"n"}`},
		{name: "push list empty", m: MethodPushConfigList, a10: `{"configs":[]}`, a03: `[]`, p10: `{"configs":[]}`, p03: `{"configs":[]}`},
	}
}

func mustResult(t *testing.T, m Method, in string, from, to Form) []byte {
	t.Helper()
	out, err := TranslateResult(m, []byte(in), from, to)
	if err != nil {
		t.Fatalf("%s %s -> %s: %v\n%s", m, from, to, err, in)
	}
	return out
}

func TestTranslateResult(t *testing.T) {
	for _, c := range resultCases() {
		t.Run(c.name, func(t *testing.T) {
			pairs := []struct {
				a, b   string
				fa, fb Form
			}{
				{c.a10, c.a03, form10, form03},
				{c.a10, c.a03, form10GRPC, form03},
				{c.p10, c.p03, form10REST, form03GRPC},
				{c.p10, c.p03, form10, form03REST},
			}
			for _, p := range pairs {
				if got := mustResult(t, c.m, p.a, p.fa, p.fb); !sameJSON(t, got, p.b) {
					t.Errorf("%s -> %s:\n got %s\nwant %s", p.fa, p.fb, got, p.b)
				}
				if got := mustResult(t, c.m, p.b, p.fb, p.fa); !sameJSON(t, got, p.a) {
					t.Errorf("%s -> %s:\n got %s\nwant %s", p.fb, p.fa, got, p.a)
				}
			}
		})
	}
}

// 0.3 -> 1.0 -> 0.3 and 1.0 -> 0.3 -> 1.0 are the identity on every member
// both versions have, for both 0.3 dialects; and so is the way between the
// two 0.3 dialects.
func TestTranslateResultRoundTrip(t *testing.T) {
	for _, c := range resultCases() {
		t.Run(c.name, func(t *testing.T) {
			trips := []struct {
				in   string
				path []Form
			}{
				{c.a03, []Form{form03, form10, form03}},
				{c.a10, []Form{form10, form03, form10GRPC}},
				{c.p03, []Form{form03GRPC, form10REST, form03REST}},
				{c.p10, []Form{form10GRPC, form03GRPC, form10}},
				{c.p10, []Form{form10, form03GRPC, form10REST, form03REST, form10}},
			}
			if c.m != MethodPushConfigList { // 0.3 JSON-RPC has no paging
				trips = append(trips, struct {
					in   string
					path []Form
				}{c.p03, []Form{form03GRPC, form03, form03REST}})
			}
			for _, trip := range trips {
				cur := []byte(trip.in)
				for i := 1; i < len(trip.path); i++ {
					cur = mustResult(t, c.m, string(cur), trip.path[i-1], trip.path[i])
				}
				if !sameJSON(t, cur, trip.in) {
					t.Errorf("%v:\n got %s\nwant %s", trip.path, cur, trip.in)
				}
			}
		})
	}
}

// Within a dialect the answer is passed on as it is: bridging costs
// nothing then.
func TestTranslateResultSameDialect(t *testing.T) {
	in := []byte(wrap("task", brTask10))
	for _, p := range [][2]Form{{form10, form10REST}, {form10GRPC, form10}, {form03REST, form03GRPC}, {form10, form10}} {
		out, err := TranslateResult(MethodSend, in, p[0], p[1])
		if err != nil || &out[0] != &in[0] || len(out) != len(in) {
			t.Errorf("%s -> %s: not passed on as it is (%v)", p[0], p[1], err)
		}
	}
	list := []byte(`{"tasks":[],"nextPageToken":""}`)
	if out, err := TranslateResult(MethodListTasks, list, form10GRPC, form10REST); err != nil || string(out) != string(list) {
		t.Errorf("list within 1.0: %s, %v", out, err)
	}
}

func TestTranslateResultDelete(t *testing.T) {
	for _, in := range []string{"", "null", "{}", " {} "} {
		for _, c := range []struct {
			from, to Form
			want     string
		}{
			{form10, form03, "null"}, {form03, form10, "{}"}, {form10REST, form10GRPC, "{}"},
			{form03GRPC, form03, "null"}, {form03, form03REST, "{}"},
		} {
			if got := mustResult(t, MethodPushConfigDelete, in, c.from, c.to); string(got) != c.want {
				t.Errorf("%q %s -> %s: got %s, want %s", in, c.from, c.to, got, c.want)
			}
		}
	}
	if _, err := TranslateResult(MethodPushConfigDelete, []byte(`{"id":"x"}`), form10, form03); !errors.Is(err, ErrNotA2A) {
		t.Errorf("a delete answer with members: %v", err)
	}
}

// Every state reaches the other dialects in their spelling, and a 0.3
// caller's status update is final exactly when the task ended or waits on
// the client.
func TestTranslateStates(t *testing.T) {
	spell := map[State][3]string{
		StateUnknown:       {"TASK_STATE_UNSPECIFIED", "unknown", "TASK_STATE_UNSPECIFIED"},
		StateSubmitted:     {"TASK_STATE_SUBMITTED", "submitted", "TASK_STATE_SUBMITTED"},
		StateWorking:       {"TASK_STATE_WORKING", "working", "TASK_STATE_WORKING"},
		StateInputRequired: {"TASK_STATE_INPUT_REQUIRED", "input-required", "TASK_STATE_INPUT_REQUIRED"},
		StateAuthRequired:  {"TASK_STATE_AUTH_REQUIRED", "auth-required", "TASK_STATE_AUTH_REQUIRED"},
		StateCompleted:     {"TASK_STATE_COMPLETED", "completed", "TASK_STATE_COMPLETED"},
		StateFailed:        {"TASK_STATE_FAILED", "failed", "TASK_STATE_FAILED"},
		StateCanceled:      {"TASK_STATE_CANCELED", "canceled", "TASK_STATE_CANCELLED"},
		StateRejected:      {"TASK_STATE_REJECTED", "rejected", "TASK_STATE_REJECTED"},
	}
	final := map[State]bool{StateInputRequired: true, StateAuthRequired: true, StateCompleted: true, StateFailed: true, StateCanceled: true, StateRejected: true}
	for _, s := range append([]State{StateUnknown}, AllStates...) {
		sp := spell[s]
		ev10 := wrap("statusUpdate", fmt.Sprintf(`{"taskId":"t","contextId":"c","status":{"state":%q}}`, sp[0]))
		ev03 := fmt.Sprintf(`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":%q},"final":%t}`, sp[1], final[s])
		ev03P := wrap("statusUpdate", fmt.Sprintf(`{"taskId":"t","contextId":"c","status":{"state":%q},"final":%t}`, sp[2], final[s]))
		if got := mustResult(t, MethodStream, ev10, form10, form03); !sameJSON(t, got, ev03) {
			t.Errorf("%s to 0.3: got %s, want %s", s, got, ev03)
		}
		if got := mustResult(t, MethodStream, ev10, form10, form03GRPC); !sameJSON(t, got, ev03P) {
			t.Errorf("%s to 0.3 proto: got %s, want %s", s, got, ev03P)
		}
		if got := mustResult(t, MethodStream, ev03, form03, form10); !sameJSON(t, got, ev10) {
			t.Errorf("%s from 0.3: got %s, want %s", s, got, ev10)
		}
		if got := mustResult(t, MethodStream, ev03P, form03REST, form10); !sameJSON(t, got, ev10) {
			t.Errorf("%s from 0.3 proto: got %s, want %s", s, got, ev10)
		}
		// Protobuf JSON may spell the enum as its number.
		num := strings.Replace(ev10, fmt.Sprintf("%q", sp[0]), fmt.Sprint(protoNumber(t, s)), 1)
		if got := mustResult(t, MethodStream, num, form10GRPC, form03); !sameJSON(t, got, ev03) {
			t.Errorf("%s as a number: got %s, want %s", s, got, ev03)
		}
	}
	// Between the 0.3 dialects the agent's own final flag is kept.
	own := `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":true}`
	if got := mustResult(t, MethodStream, own, form03, form03GRPC); !sameJSON(t, got, wrap("statusUpdate", `{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"final":true}`)) {
		t.Errorf("0.3 final not kept: %s", got)
	}
}

func protoNumber(t *testing.T, s State) int {
	for i, ps := range protoStates {
		if ps == s {
			return i
		}
	}
	t.Fatalf("no number for %s", s)
	return 0
}

func TestTranslateRoles(t *testing.T) {
	for i, r := range [][3]string{{"ROLE_USER", "user", "ROLE_USER"}, {"ROLE_AGENT", "agent", "ROLE_AGENT"}} {
		m10 := fmt.Sprintf(`{"messageId":"m","role":%q,"parts":[]}`, r[0])
		m03 := fmt.Sprintf(`{"kind":"message","messageId":"m","role":%q,"parts":[]}`, r[1])
		m03P := fmt.Sprintf(`{"messageId":"m","role":%q,"content":[]}`, r[2])
		if got := mustTranslate(t, objMessage, m10, dialect10, dialect03); !sameJSON(t, got, m03) {
			t.Errorf("got %s, want %s", got, m03)
		}
		if got := mustTranslate(t, objMessage, m03, dialect03, dialect10); !sameJSON(t, got, m10) {
			t.Errorf("got %s, want %s", got, m10)
		}
		if got := mustTranslate(t, objMessage, m03P, dialect03Proto, dialect03); !sameJSON(t, got, m03) {
			t.Errorf("got %s, want %s", got, m03)
		}
		num := fmt.Sprintf(`{"messageId":"m","role":%d,"content":[]}`, i+1)
		if got := mustTranslate(t, objMessage, num, dialect03Proto, dialect10); !sameJSON(t, got, m10) {
			t.Errorf("role number %d: got %s, want %s", i+1, got, m10)
		}
	}
	// Unspecified is a role only protobuf JSON knows.
	un := `{"messageId":"m","role":"ROLE_UNSPECIFIED","parts":[]}`
	if got := mustTranslate(t, objMessage, un, dialect10, dialect03Proto); !sameJSON(t, got, `{"messageId":"m","role":"ROLE_UNSPECIFIED","content":[]}`) {
		t.Errorf("unspecified role: %s", got)
	}
}

func TestTranslateResultRefuses(t *testing.T) {
	cases := []struct {
		name     string
		m        Method
		in       string
		from, to Form
		says     string
	}{
		{"list tasks to 0.3", MethodListTasks, `{"tasks":[]}`, form10, form03, "ListTasks"},
		{"extended card", MethodExtendedCard, `{"name":"a"}`, form10, form10REST, "card"},
		{"unknown top member", MethodGetTask, `{"id":"t","status":{"state":"TASK_STATE_WORKING"},"owner":"x"}`, form10, form03, `"owner"`},
		{"unknown nested member", MethodGetTask, `{"id":"t","status":{"state":"TASK_STATE_WORKING","reason":"x"}}`, form10, form03, `"reason"`},
		{"two wrappers", MethodStream, `{"task":{"id":"t"},"message":{"messageId":"m"}}`, form10, form03, "exactly one"},
		{"unknown wrapper", MethodStream, `{"taskUpdate":{"id":"t"}}`, form10, form03, "exactly one"},
		{"status update answering a send", MethodSend, wrap("statusUpdate", brStatusUpdate10), form10, form03, "exactly one"},
		{"0.3 status update answering a send", MethodSend, brStatusUpdate03, form03, form10, "kind"},
		{"no kind", MethodStream, `{"id":"t"}`, form03, form10, "kind"},
		{"wrapped in 0.3 JSON-RPC", MethodStream, wrap("task", brTask03), form03, form10, "kind"},
		{"bare task for a stream", MethodStream, brTask10, form10, form03, "exactly one"},
		{"unknown state", MethodGetTask, `{"id":"t","status":{"state":"TASK_STATE_PAUSED"}}`, form10, form03, `"state"`},
		{"0.3 state in 1.0", MethodGetTask, `{"id":"t","status":{"state":"working"}}`, form10, form03, `"state"`},
		{"0.3 proto cancelled in 1.0", MethodGetTask, `{"id":"t","status":{"state":"TASK_STATE_CANCELLED"}}`, form10, form03, `"state"`},
		{"state number in 0.3 JSON-RPC", MethodGetTask, `{"kind":"task","id":"t","status":{"state":2}}`, form03, form10, `"state"`},
		{"bad timestamp", MethodGetTask, `{"id":"t","status":{"state":"TASK_STATE_WORKING","timestamp":"yesterday"}}`, form10, form03, `"timestamp"`},
		{"status message twice", MethodGetTask, `{"id":"t","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"a","role":1,"content":[]},"update":{"messageId":"b","role":1,"content":[]}}}`, form03GRPC, form10, "twice"},
		{"duplicate member", MethodGetTask, `{"id":"t","id":"u"}`, form10, form03, "twice"},
		{"not JSON", MethodGetTask, `{"id":`, form10, form03, ""},
		{"trailing data", MethodGetTask, `{"id":"t"} {}`, form10, form03, ""},
		{"next page to 0.3 JSON-RPC", MethodPushConfigList, `{"configs":[],"nextPageToken":"n"}`, form10, form03, `"nextPageToken"`},
		{"config without task to 0.3", MethodPushConfigGet, `{"id":"c","url":"https://a"}`, form10, form03, `"taskId"`},
		{"config task with a slash to 0.3 proto", MethodPushConfigGet, `{"id":"c","taskId":"a/b","url":"https://a"}`, form10, form03GRPC, "slash"},
		{"config name of another config", MethodPushConfigGet, `{"name":"tasks/t/pushNotificationConfigs/x","pushNotificationConfig":{"id":"y","url":"https://a"}}`, form03GRPC, form10, `"name"`},
		{"config name not a resource", MethodPushConfigGet, `{"name":"t/x","pushNotificationConfig":{"url":"https://a"}}`, form03REST, form10, `"name"`},
		{"config without config", MethodPushConfigGet, `{"taskId":"t"}`, form03, form10, `"pushNotificationConfig"`},
		{"two schemes to 1.0", MethodPushConfigGet, `{"taskId":"t","pushNotificationConfig":{"url":"https://a","authentication":{"schemes":["Basic","Bearer"]}}}`, form03, form10, `"schemes"`},
		{"no scheme to 1.0 kept as a list", MethodPushConfigGet, `{"taskId":"t","pushNotificationConfig":{"url":"https://a","authentication":{"schemes":[1]}}}`, form03, form10, `"schemes"`},
		{"unknown config member", MethodPushConfigGet, `{"taskId":"t","pushNotificationConfig":{"url":"https://a","retries":3}}`, form03, form10, `"retries"`},
		{"list of another shape", MethodPushConfigList, `{"configs":[],"total":1}`, form10, form03, `"total"`},
		{"0.3 list not a list", MethodPushConfigList, `{"configs":[]}`, form03, form10, "list"},
		{"references to 0.3 proto", MethodSend, wrap("message", `{"messageId":"m","role":"ROLE_AGENT","parts":[],"referenceTaskIds":["t"]}`), form10, form03GRPC, `"referenceTaskIds"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := TranslateResult(c.m, []byte(c.in), c.from, c.to)
			if !errors.Is(err, ErrNotA2A) {
				t.Fatalf("got %s, %v; want an error wrapping ErrNotA2A", out, err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %s", err, c.says)
			}
		})
	}
}

// Protobuf JSON leaves out members holding their zero value; a 0.3
// JSON-RPC caller gets the members its schema requires.
func TestTranslateResultFills03(t *testing.T) {
	// (And an empty 0.3 list of schemes is no scheme in 1.0.)
	noScheme := `{"taskId":"t","pushNotificationConfig":{"url":"https://a","authentication":{"schemes":[],"credentials":"c"}}}`
	if got := mustResult(t, MethodPushConfigGet, noScheme, form03, form10); !sameJSON(t, got, `{"url":"https://a","authentication":{"credentials":"c"},"taskId":"t"}`) {
		t.Errorf("no scheme: %s", got)
	}
	cases := []struct {
		m        Method
		in, want string
	}{
		{MethodStream, `{"statusUpdate":{"status":{}}}`,
			`{"kind":"status-update","taskId":"","contextId":"","status":{"state":"unknown"},"final":false}`},
		{MethodStream, `{"artifactUpdate":{"taskId":"t","artifact":{}}}`,
			`{"kind":"artifact-update","taskId":"t","contextId":"","artifact":{"artifactId":"","parts":[]}}`},
		{MethodSend, `{"message":{"role":"ROLE_AGENT"}}`, `{"kind":"message","messageId":"","role":"agent","parts":[]}`},
		{MethodGetTask, `{"status":{"state":"TASK_STATE_COMPLETED"}}`, `{"kind":"task","id":"","contextId":"","status":{"state":"completed"}}`},
	}
	for _, c := range cases {
		if got := mustResult(t, c.m, c.in, form10GRPC, form03); !sameJSON(t, got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// readIn reads an answer in form f as the gateway reads agents' answers:
// in a JSON-RPC envelope for JSON-RPC, bare otherwise (the protobuf JSON of
// a gRPC answer is read as HTTP+JSON).
func readIn(t *testing.T, m Method, f Form, result []byte) Event {
	t.Helper()
	op := &Operation{Method: m, Version: f.Version, Binding: f.Binding, RPCID: []byte("7")}
	payload := result
	if f.Binding == BindingJSONRPC {
		payload = []byte(`{"jsonrpc":"2.0","id":7,"result":` + string(result) + `}`)
	} else if f.Binding == BindingGRPC {
		op.Binding = BindingREST
	}
	ev, _, err := ReadAnswer(op, payload)
	if err != nil {
		t.Fatalf("ReadAnswer in %s: %v\n%s", f, err, result)
	}
	return ev
}

// A translation is an answer the caller's form reads as the same event:
// the gateway's strict reader accepts it, with the same ids and state.
func TestTranslatedAnswersReadTheSame(t *testing.T) {
	for _, c := range resultCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []struct {
				in       string
				from, to Form
			}{
				{c.a10, form10, form03}, {c.a03, form03, form10REST},
				{c.p10, form10GRPC, form03REST}, {c.p03, form03GRPC, form10}, {c.p03, form03REST, form03},
			} {
				if c.m == MethodPushConfigList && p.to == form03 && strings.Contains(p.in, "nextPageToken") {
					continue // refused: TestTranslateResultRefuses
				}
				want := readIn(t, c.m, p.from, []byte(p.in))
				got := readIn(t, c.m, p.to, mustResult(t, c.m, p.in, p.from, p.to))
				want.Final, got.Final = false, false // 1.0 has none
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s -> %s: read %+v, want %+v", p.from, p.to, got, want)
				}
			}
		})
	}
}
