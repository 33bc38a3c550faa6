package a2a

import (
	"encoding/json"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The forms a JSON binding speaks (gRPC: internal/grpcwire).
var jsonForms = []Form{
	{V10, BindingJSONRPC}, {V10, BindingREST}, {V03, BindingJSONRPC}, {V03, BindingREST},
}

// bridgeMessage03 and bridgeMessage10 are one message in each version,
// with a part of every kind both versions carry.
const (
	bridgeMessage03 = `{"kind":"message","messageId":"m-1","role":"user","contextId":"ctx-1","taskId":"task-1",` +
		`"parts":[{"kind":"text","text":"hello"},{"kind":"file","file":{"bytes":"aGk=","mimeType":"text/plain"}},` +
		`{"kind":"file","file":{"uri":"https://files.example/a.png","mimeType":"image/png"}},{"kind":"data","data":{"n":1}}],` +
		`"metadata":{"k":"v"},"extensions":["https://ext.example/x"]}`
	bridgeMessage10 = `{"messageId":"m-1","role":"ROLE_USER","contextId":"ctx-1","taskId":"task-1",` +
		`"parts":[{"text":"hello"},{"raw":"aGk=","mediaType":"text/plain"},{"url":"https://files.example/a.png","mediaType":"image/png"},{"data":{"n":1}}],` +
		`"metadata":{"k":"v"},"extensions":["https://ext.example/x"]}`
	bridgePush03 = `{"id":"cfg-1","url":"https://hooks.example/a","token":"tok","authentication":{"schemes":["Bearer"],"credentials":"secret"}}`
	bridgePush10 = `{"id":"cfg-1","url":"https://hooks.example/a","token":"tok","authentication":{"scheme":"Bearer","credentials":"secret"}}`
)

// bridgeRequests03 and bridgeRequests10 are a request of every method, as
// JSON-RPC params, with every member the table carries for it.
var bridgeRequests03 = []struct {
	method, params string
}{
	{"message/send", `{"message":` + bridgeMessage03 + `,"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":5,"blocking":true,"pushNotificationConfig":` + bridgePush03 + `},"metadata":{"trace":"t"}}`},
	{"message/send", `{"message":` + bridgeMessage03 + `,"configuration":{"blocking":false}}`},
	{"message/stream", `{"message":` + bridgeMessage03 + `,"configuration":{"acceptedOutputModes":["text/plain"]}}`},
	{"tasks/get", `{"id":"task-1","historyLength":3}`},
	{"tasks/get", `{"id":"task-1"}`},
	{"tasks/cancel", `{"id":"task-1"}`},
	{"tasks/resubscribe", `{"id":"task-1"}`},
	{"tasks/pushNotificationConfig/set", `{"taskId":"task-1","pushNotificationConfig":` + bridgePush03 + `}`},
	{"tasks/pushNotificationConfig/get", `{"id":"task-1","pushNotificationConfigId":"cfg-1"}`},
	{"tasks/pushNotificationConfig/list", `{"id":"task-1"}`},
	{"tasks/pushNotificationConfig/delete", `{"id":"task-1","pushNotificationConfigId":"cfg-1"}`},
	{"agent/getAuthenticatedExtendedCard", `{}`},
}

var bridgeRequests10 = []struct {
	method, params string
}{
	{"SendMessage", `{"tenant":"acme","message":` + bridgeMessage10 + `,"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":5,"taskPushNotificationConfig":` + bridgePush10 + `},"metadata":{"trace":"t"}}`},
	{"SendMessage", `{"message":` + bridgeMessage10 + `,"configuration":{"returnImmediately":true}}`},
	{"SendStreamingMessage", `{"tenant":"acme","message":` + bridgeMessage10 + `}`},
	{"GetTask", `{"tenant":"acme","id":"task-1","historyLength":3}`},
	{"GetTask", `{"id":"task-1","historyLength":0}`},
	{"ListTasks", `{"tenant":"acme","contextId":"ctx-1","status":"TASK_STATE_WORKING","pageSize":10,"pageToken":"p2","historyLength":2,"statusTimestampAfter":"2026-01-01T00:00:00Z","includeArtifacts":true}`},
	{"CancelTask", `{"tenant":"acme","id":"task-1","metadata":{"why":"done"}}`},
	{"SubscribeToTask", `{"tenant":"acme","id":"task-1"}`},
	{"CreateTaskPushNotificationConfig", `{"tenant":"acme","taskId":"task-1","id":"cfg-1","url":"https://hooks.example/a","token":"tok","authentication":{"scheme":"Bearer","credentials":"secret"}}`},
	{"GetTaskPushNotificationConfig", `{"tenant":"acme","taskId":"task-1","id":"cfg-1"}`},
	{"ListTaskPushNotificationConfigs", `{"tenant":"acme","taskId":"task-1","pageSize":5,"pageToken":"p"}`},
	{"ListTaskPushNotificationConfigs", `{"taskId":"task-1"}`},
	{"DeleteTaskPushNotificationConfig", `{"tenant":"acme","taskId":"task-1","id":"cfg-1"}`},
	{"GetExtendedAgentCard", `{"tenant":"acme"}`},
}

func rpcRequest(method, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`)
}

// classifyUpstream classifies a translated request as the agent would
// receive it.
func classifyUpstream(t *testing.T, u UpstreamRequest, to Form) *Operation {
	t.Helper()
	var op *Operation
	var e *Error
	if to.Binding == BindingREST {
		op, e = ClassifyREST(u.HTTPMethod, u.Path, u.Query, u.Body, to.Version, true)
	} else {
		op, e = ClassifyRPC(u.Body, to.Version, true)
	}
	if e != nil {
		t.Fatalf("the %s request %s %s ?%s %s does not classify: %v", to, u.HTTPMethod, u.Path, u.Query.Encode(), u.Body, e)
	}
	return op
}

// sameOperation checks that b, classified in another form, asks what a
// asks: method and ids (the tenant where both forms have one), and the
// push config by its meaning.
func sameOperation(t *testing.T, a, b *Operation) {
	t.Helper()
	type ids struct {
		Method                                 Method
		TaskID, ContextID, MessageID, ConfigID string
		Refs                                   []string
		PageSize, PageToken                    string
	}
	of := func(op *Operation) ids {
		cfg := op.PushConfigID
		if op.Method == MethodPushConfigSet {
			cfg = "" // 1.0 reads it from the config, 0.3 does not: compared below
		}
		return ids{op.Method, op.TaskID, op.ContextID, op.MessageID, cfg, op.ReferenceTaskIDs, op.PageSize, op.PageToken}
	}
	if !reflect.DeepEqual(of(a), of(b)) {
		t.Errorf("%s became %s: %+v, want %+v", FormOf(a), FormOf(b), of(b), of(a))
	}
	if a.Version == V10 && b.Version == V10 && a.Tenant != b.Tenant {
		t.Errorf("tenant %q became %q", a.Tenant, b.Tenant)
	}
	if (a.PushConfig == nil) != (b.PushConfig == nil) {
		t.Fatalf("push config %s became %s", a.PushConfig, b.PushConfig)
	}
	if a.PushConfig != nil {
		pa, ea := ParsePushConfig(a.PushConfig)
		pb, eb := ParsePushConfig(b.PushConfig)
		if (ea == nil) != (eb == nil) || pa != pb {
			t.Errorf("push config %+v became %+v (%v, %v)", pa, pb, ea, eb)
		}
	}
}

// refusedIn reports whether the 1.0 request params holds what form to
// cannot carry (TestTranslateRequestRefusals checks the refusal).
func refusedIn(params string, to Form) bool {
	if to.Version != V03 {
		return false
	}
	if to.Binding == BindingJSONRPC {
		return strings.Contains(params, `"pageSize":5`) // push configs without paging
	}
	return strings.Contains(params, `"historyLength":0`) || strings.Contains(params, `"metadata":{"why"`)
}

// TestTranslateRequestMatrix translates a request of every method from
// every JSON form to every other one, and checks that the agent's
// classifier reads the same operation from it.
func TestTranslateRequestMatrix(t *testing.T) {
	type source struct {
		version       Version
		method, param string
	}
	var sources []source
	for _, r := range bridgeRequests03 {
		sources = append(sources, source{V03, r.method, r.params})
	}
	for _, r := range bridgeRequests10 {
		sources = append(sources, source{V10, r.method, r.params})
	}
	pairs := 0
	for _, s := range sources {
		op0, e := ClassifyRPC(rpcRequest(s.method, s.param), s.version, true)
		if e != nil {
			t.Fatalf("%s %s: %v", s.method, s.param, e)
		}
		for _, x := range jsonForms {
			ux, e := TranslateRequest(op0, nil, rpcRequest(s.method, s.param), x, nil)
			if op0.Method == MethodListTasks && x.Version == V03 {
				if e == nil || e.Code != ErrUnsupportedOperation.Code {
					t.Errorf("ListTasks to %s: %v, want UnsupportedOperation", x, e)
				}
				continue
			}
			if e != nil && refusedIn(s.param, x) {
				continue
			}
			if e != nil {
				t.Fatalf("%s %s to %s: %v", s.method, s.param, x, e)
			}
			opX := classifyUpstream(t, ux, x)
			sameOperation(t, op0, opX)
			for _, y := range jsonForms {
				uy, e := TranslateRequest(opX, ux.Query, ux.Body, y, json.RawMessage(`"r-1"`))
				if op0.Method == MethodListTasks && y.Version == V03 || e != nil && refusedIn(s.param, y) {
					continue
				}
				if e != nil {
					t.Fatalf("%s %s via %s to %s: %v", s.method, s.param, x, y, e)
				}
				sameOperation(t, opX, classifyUpstream(t, uy, y))
				pairs++
			}
		}
	}
	if pairs < 300 {
		t.Fatalf("only %d translations checked", pairs)
	}
}

// rpcParams is the params of a JSON-RPC request, decoded.
func rpcParams(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var env struct {
		Method string
		Params map[string]any
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if env.Params == nil {
		env.Params = map[string]any{}
	}
	return env.Params
}

// TestTranslateRequestRoundTrip: a request taken to any other form and
// back is the request it was, on every member both forms have.
func TestTranslateRequestRoundTrip(t *testing.T) {
	check := func(v Version, method, params string, lost func(Form) []string) {
		t.Helper()
		home := Form{v, BindingJSONRPC}
		body := rpcRequest(method, params)
		op0, e := ClassifyRPC(body, v, true)
		if e != nil {
			t.Fatal(e)
		}
		for _, x := range jsonForms {
			if x == home || op0.Method == MethodListTasks && x.Version != v {
				continue
			}
			ux, e := TranslateRequest(op0, nil, body, x, nil)
			if e != nil {
				t.Fatalf("%s to %s: %v", method, x, e)
			}
			back, e := TranslateRequest(classifyUpstream(t, ux, x), ux.Query, ux.Body, home, json.RawMessage("7"))
			if e != nil {
				t.Fatalf("%s back from %s: %v", method, x, e)
			}
			want := rpcParams(t, body)
			for _, m := range lost(x) {
				delete(want, m)
			}
			if got := rpcParams(t, back.Body); !reflect.DeepEqual(got, want) {
				t.Errorf("%s via %s:\n got %v\nwant %v", method, x, got, want)
			}
			if !strings.Contains(string(back.Body), `"method":"`+method+`"`) || !strings.Contains(string(back.Body), `"id":7`) {
				t.Errorf("%s via %s: envelope %s", method, x, back.Body)
			}
		}
	}
	for _, r := range bridgeRequests03 {
		check(V03, r.method, r.params, func(Form) []string { return nil })
	}
	for _, r := range bridgeRequests10 {
		if refusedIn(r.params, Form{V03, BindingREST}) || refusedIn(r.params, Form{V03, BindingJSONRPC}) {
			continue
		}
		check(V10, r.method, r.params, func(x Form) []string {
			if x.Version == V03 {
				return []string{"tenant"} // 0.3 has no tenant
			}
			return nil
		})
	}
}

// translate03 translates a 0.3 JSON-RPC request to form to.
func translateFrom(t *testing.T, v Version, method, params string, to Form) (UpstreamRequest, *Error) {
	t.Helper()
	body := rpcRequest(method, params)
	op, e := ClassifyRPC(body, v, true)
	if e != nil {
		t.Fatalf("%s %s: %v", method, params, e)
	}
	return TranslateRequest(op, nil, body, to, nil)
}

func TestTranslateRequestBlocking(t *testing.T) {
	msg03, msg10 := `{"message":`+bridgeMessage03, `{"message":`+bridgeMessage10
	for _, c := range []struct {
		v             Version
		method, param string
		to            Form
		want          string // the configuration written, "" for none
	}{
		// 0.3 JSON-RPC: a send blocks unless it says blocking false.
		{V03, "message/send", msg03 + `}`, Form{V10, BindingJSONRPC}, ``},
		{V03, "message/send", msg03 + `,"configuration":{"acceptedOutputModes":["a/b"]}}`, Form{V10, BindingJSONRPC}, `{"acceptedOutputModes":["a/b"]}`},
		{V03, "message/send", msg03 + `,"configuration":{"blocking":false}}`, Form{V10, BindingJSONRPC}, `{"returnImmediately":true}`},
		{V03, "message/send", msg03 + `,"configuration":{"blocking":true}}`, Form{V10, BindingREST}, ``},
		{V03, "message/send", msg03 + `,"configuration":{"returnImmediately":false}}`, Form{V10, BindingJSONRPC}, ``},
		// 1.0: a send blocks unless it says returnImmediately.
		{V10, "SendMessage", msg10 + `}`, Form{V03, BindingJSONRPC}, `{"blocking":true}`},
		{V10, "SendMessage", msg10 + `,"configuration":{"returnImmediately":true}}`, Form{V03, BindingREST}, `{"blocking":false}`},
		{V10, "SendMessage", msg10 + `,"configuration":{"blocking":false}}`, Form{V03, BindingJSONRPC}, `{"blocking":false}`},
		// A stream has no blocking mode to carry unless it names one.
		{V03, "message/stream", msg03 + `}`, Form{V10, BindingJSONRPC}, ``},
		{V10, "SendStreamingMessage", msg10 + `}`, Form{V03, BindingJSONRPC}, ``},
	} {
		u, e := translateFrom(t, c.v, c.method, c.param, c.to)
		if e != nil {
			t.Fatalf("%s to %s: %v", c.param, c.to, e)
		}
		checkConfiguration(t, u, c.to, c.want)
	}
	// 0.3 protobuf JSON: a configuration's blocking is false unless set,
	// which is non-blocking; a send without one blocks.
	for _, c := range []struct{ body, want string }{
		{`{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"x"}]}}`, ``},
		{`{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"x"}]},"configuration":{"historyLength":2}}`, `{"historyLength":2,"returnImmediately":true}`},
		{`{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"x"}]},"configuration":{"blocking":true}}`, ``},
	} {
		op, e := ClassifyREST("POST", "/v1/message:send", nil, []byte(c.body), V03, true)
		if e != nil {
			t.Fatal(e)
		}
		to := Form{V10, BindingREST}
		u, e := TranslateRequest(op, nil, []byte(c.body), to, nil)
		if e != nil {
			t.Fatal(e)
		}
		checkConfiguration(t, u, to, c.want)
	}
}

// checkConfiguration checks the configuration of a translated send.
func checkConfiguration(t *testing.T, u UpstreamRequest, to Form, want string) {
	t.Helper()
	body := u.Body
	if to.Binding == BindingJSONRPC {
		body, _ = json.Marshal(rpcParams(t, body))
	}
	var got struct{ Configuration json.RawMessage }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if string(got.Configuration) != want {
		t.Errorf("%s to %s: configuration %s, want %s", u.Body, to, got.Configuration, want)
	}
}

// TestTranslateRequestShapes checks the request lines and members that the
// classifiers do not read.
func TestTranslateRequestShapes(t *testing.T) {
	for _, c := range []struct {
		v                  Version
		method, param      string
		to                 Form
		httpMethod, path   string
		query, body, rpc   string
		rpcMethod, rpcBody string
	}{
		{v: V10, method: "GetTask", param: `{"tenant":"acme","id":"a b","historyLength":3}`, to: Form{V10, BindingREST},
			httpMethod: "GET", path: "/acme/tasks/a%20b", query: "historyLength=3"},
		{v: V10, method: "GetTask", param: `{"tenant":"acme","id":"t","historyLength":3}`, to: Form{V03, BindingREST},
			httpMethod: "GET", path: "/v1/tasks/t", query: "historyLength=3"},
		{v: V10, method: "ListTasks", param: `{"tenant":"acme","contextId":"c","status":"TASK_STATE_WORKING","pageSize":10,"includeArtifacts":true}`, to: Form{V10, BindingREST},
			httpMethod: "GET", path: "/acme/tasks", query: "contextId=c&includeArtifacts=true&pageSize=10&status=TASK_STATE_WORKING"},
		{v: V03, method: "tasks/cancel", param: `{"id":"t"}`, to: Form{V03, BindingREST},
			httpMethod: "POST", path: "/v1/tasks/t:cancel", body: `{}`},
		{v: V10, method: "CancelTask", param: `{"id":"t","metadata":{"a":1}}`, to: Form{V10, BindingREST},
			httpMethod: "POST", path: "/tasks/t:cancel", body: `{"metadata":{"a":1}}`},
		{v: V03, method: "tasks/pushNotificationConfig/set", param: `{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://h.example/"}}`, to: Form{V03, BindingREST},
			httpMethod: "POST", path: "/v1/tasks/t/pushNotificationConfigs", body: `{"name":"tasks/t/pushNotificationConfigs/c","pushNotificationConfig":{"id":"c","url":"https://h.example/"}}`},
		{v: V03, method: "tasks/pushNotificationConfig/set", param: `{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://h.example/"}}`, to: Form{V10, BindingJSONRPC},
			rpc: `{"jsonrpc":"2.0","id":7,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","id":"c","url":"https://h.example/"}}`},
		{v: V10, method: "DeleteTaskPushNotificationConfig", param: `{"taskId":"t","id":"c"}`, to: Form{V03, BindingREST},
			httpMethod: "DELETE", path: "/v1/tasks/t/pushNotificationConfigs/c"},
		{v: V10, method: "GetExtendedAgentCard", param: `{}`, to: Form{V03, BindingREST}, httpMethod: "GET", path: "/v1/card"},
		{v: V10, method: "GetExtendedAgentCard", param: `{"tenant":"acme"}`, to: Form{V03, BindingJSONRPC},
			rpc: `{"jsonrpc":"2.0","id":7,"method":"agent/getAuthenticatedExtendedCard","params":{}}`},
		{v: V10, method: "SubscribeToTask", param: `{"id":"t"}`, to: Form{V03, BindingJSONRPC},
			rpc: `{"jsonrpc":"2.0","id":7,"method":"tasks/resubscribe","params":{"id":"t"}}`},
		// 0.3 gRPC: the ids become resource names.
		{v: V10, method: "GetTaskPushNotificationConfig", param: `{"taskId":"t","id":"c"}`, to: Form{V03, BindingGRPC},
			body: `{"name":"tasks/t/pushNotificationConfigs/c"}`},
		{v: V03, method: "tasks/pushNotificationConfig/get", param: `{"id":"t"}`, to: Form{V03, BindingGRPC},
			body: `{"name":"tasks/t"}`},
		{v: V10, method: "CreateTaskPushNotificationConfig", param: `{"taskId":"t","id":"c","url":"https://h.example/"}`, to: Form{V03, BindingGRPC},
			body: `{"parent":"tasks/t","configId":"c","config":{"name":"tasks/t/pushNotificationConfigs/c","pushNotificationConfig":{"id":"c","url":"https://h.example/"}}}`},
		{v: V10, method: "ListTaskPushNotificationConfigs", param: `{"taskId":"t","pageSize":2}`, to: Form{V03, BindingGRPC},
			body: `{"parent":"tasks/t","pageSize":2}`},
		{v: V03, method: "tasks/get", param: `{"id":"t","historyLength":4}`, to: Form{V10, BindingGRPC},
			body: `{"id":"t","historyLength":4}`},
	} {
		u, e := translateFrom(t, c.v, c.method, c.param, c.to)
		if e != nil {
			t.Fatalf("%s %s to %s: %v", c.method, c.param, c.to, e)
		}
		if c.rpc != "" {
			if string(u.Body) != c.rpc {
				t.Errorf("%s to %s: %s, want %s", c.method, c.to, u.Body, c.rpc)
			}
			continue
		}
		if u.HTTPMethod != c.httpMethod || u.Path != c.path || u.Query.Encode() != c.query || string(u.Body) != c.body {
			t.Errorf("%s %s to %s: %s %s ?%s %s, want %s %s ?%s %s", c.method, c.param, c.to,
				u.HTTPMethod, u.Path, u.Query.Encode(), u.Body, c.httpMethod, c.path, c.query, c.body)
		}
	}
}

// TestTranslateRequestFromREST reads HTTP+JSON requests as clients send
// them: ids in the path, members in the query.
func TestTranslateRequestFromREST(t *testing.T) {
	for _, c := range []struct {
		v                Version
		httpMethod, path string
		query            url.Values
		body             string
		to               Form
		want             string
	}{
		{V03, "GET", "/v1/tasks/t", url.Values{"historyLength": {"2"}, "A2A-Version": {"0.3"}}, "", Form{V10, BindingJSONRPC},
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":2}}`},
		{V03, "GET", "/v1/tasks/t", url.Values{"historyLength": {"0"}}, "", Form{V10, BindingJSONRPC},
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`},
		{V03, "GET", "/v1/tasks/t/pushNotificationConfigs", url.Values{"page_size": {"3"}}, "", Form{V10, BindingJSONRPC},
			`{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"t","pageSize":3}}`},
		{V10, "GET", "/acme/tasks", url.Values{"contextId": {"c"}, "pageSize": {"4"}, "status": {"TASK_STATE_COMPLETED"}}, "", Form{V10, BindingJSONRPC},
			`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"tenant":"acme","contextId":"c","status":"TASK_STATE_COMPLETED","pageSize":4}}`},
		{V10, "POST", "/acme/tasks/t/pushNotificationConfigs", nil, `{"id":"c","url":"https://h.example/","taskId":"t"}`, Form{V10, BindingJSONRPC},
			`{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"tenant":"acme","taskId":"t","id":"c","url":"https://h.example/"}}`},
		{V03, "POST", "/v1/message:send", nil, `{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"hi"}]},"configuration":{"blocking":true}}`, Form{V03, BindingJSONRPC},
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","parts":[{"kind":"text","text":"hi"}],"role":"user"},"configuration":{"blocking":true}}}`},
	} {
		op, e := ClassifyREST(c.httpMethod, c.path, c.query, []byte(c.body), c.v, true)
		if e != nil {
			t.Fatalf("%s %s: %v", c.httpMethod, c.path, e)
		}
		u, e := TranslateRequest(op, c.query, []byte(c.body), c.to, json.RawMessage("1"))
		if e != nil {
			t.Fatalf("%s %s: %v", c.httpMethod, c.path, e)
		}
		var got, want any
		if json.Unmarshal(u.Body, &got) != nil || json.Unmarshal([]byte(c.want), &want) != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s ?%s:\n got %s\nwant %s", c.httpMethod, c.path, c.query.Encode(), u.Body, c.want)
		}
	}
}

func TestTranslateRequestRefusals(t *testing.T) {
	rpc10, rpc03 := Form{V10, BindingJSONRPC}, Form{V03, BindingJSONRPC}
	rest10, rest03, grpc03 := Form{V10, BindingREST}, Form{V03, BindingREST}, Form{V03, BindingGRPC}
	for _, c := range []struct {
		v             Version
		method, param string
		to            Form
		want          *Error
		says          string
	}{
		{V10, "ListTasks", `{}`, rpc03, ErrUnsupportedOperation, "ListTasks"},
		{V10, "ListTasks", `{}`, grpc03, ErrUnsupportedOperation, "ListTasks"},
		{V03, "tasks/get", `{"id":"t","metadata":{"a":1}}`, rpc10, ErrInvalidParams, "metadata"},
		{V03, "tasks/get", `{"id":"t","foo":1}`, rpc10, ErrInvalidParams, "foo"},
		{V10, "GetTask", `{"id":"t","taskId":"u"}`, rest10, ErrInvalidParams, "taskId"},
		{V10, "GetTask", `{"id":"t","historyLength":"x"}`, rpc03, ErrInvalidParams, "historyLength"},
		{V10, "GetTask", `{"id":"t","historyLength":-1}`, rpc03, ErrInvalidParams, "historyLength"},
		{V10, "GetTask", `{"id":"t","historyLength":0}`, rest03, ErrInvalidParams, "historyLength"},
		{V10, "GetTask", `{"id":"t","historyLength":0}`, grpc03, ErrInvalidParams, "historyLength"},
		{V10, "CancelTask", `{"id":"t","metadata":{"a":1}}`, rest03, ErrInvalidParams, "metadata"},
		{V10, "ListTaskPushNotificationConfigs", `{"taskId":"t","pageSize":3}`, rpc03, ErrInvalidParams, "pageSize"},
		{V10, "ListTaskPushNotificationConfigs", `{"taskId":"t","pageToken":"p"}`, rpc03, ErrInvalidParams, "pageToken"},
		{V03, "tasks/pushNotificationConfig/get", `{"id":"t"}`, rpc10, ErrInvalidParams, "config id"},
		{V03, "tasks/pushNotificationConfig/get", `{"id":"t"}`, rest03, ErrInvalidParams, "config id"},
		{V10, "GetTask", `{"id":"a/b"}`, grpc03, ErrInvalidParams, "slash"},
		{V10, "GetTask", `{"id":"x:subscribe"}`, rest10, ErrInvalidParams, "path"},
		{V10, "ListTasks", `{"tenant":"tasks"}`, rest10, ErrInvalidParams, "path"},
		{V10, "GetTask", `{"tenant":"v1","id":"t"}`, rest10, ErrInvalidParams, "path"},
		{V10, "SendMessage", `{"message":` + bridgeMessage10 + `,"configuration":{"blocking":true,"returnImmediately":true}}`, rpc03, ErrInvalidParams, "disagree"},
		{V10, "SendMessage", `{"message":` + bridgeMessage10 + `,"configuration":{"pushNotificationConfig":{"url":"https://h.example/"}}}`, rpc03, ErrInvalidParams, "pushNotificationConfig"},
		{V10, "SendMessage", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}],"referenceTaskIds":["r"]}}`, rest03, ErrInvalidParams, "referenceTaskIds"},
		{V03, "message/send", `{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"x"}],"bogus":1}}`, rpc10, ErrInvalidParams, "bogus"},
		{V03, "message/send", `{"message":` + bridgeMessage03 + `,"configuration":{"historyLength":true}}`, rpc10, ErrInvalidParams, "historyLength"},
		{V03, "tasks/pushNotificationConfig/set", `{"taskId":"t","pushNotificationConfig":{"url":"https://h.example/","authentication":{"schemes":["Basic","Bearer"]}}}`, rpc10, ErrInvalidParams, "scheme"},
		{VLegacy, "tasks/send", `{"id":"t","message":{"role":"user","parts":[{"type":"text","text":"x"}]}}`, rpc03, ErrUnsupportedOperation, "0.1"},
	} {
		_, e := translateFrom(t, c.v, c.method, c.param, c.to)
		if e == nil || e.Code != c.want.Code || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s %s to %s: %v, want %s saying %q", c.method, c.param, c.to, e, c.want.Reason, c.says)
		}
	}
	// A value that says nothing is dropped, not refused.
	for _, c := range []struct {
		v             Version
		method, param string
		to            Form
	}{
		{V03, "tasks/get", `{"id":"t","metadata":{}}`, rpc10},
		{V10, "ListTaskPushNotificationConfigs", `{"taskId":"t","pageSize":0,"pageToken":""}`, rpc03},
		{V10, "GetTask", `{"tenant":"acme","id":"t"}`, rest03},
	} {
		if _, e := translateFrom(t, c.v, c.method, c.param, c.to); e != nil {
			t.Errorf("%s %s to %s: %v", c.method, c.param, c.to, e)
		}
	}
}

// TestTranslateRequestRESTQuery: a query carries only the members of a
// request without a body, once each.
func TestTranslateRequestRESTQuery(t *testing.T) {
	to := Form{V10, BindingJSONRPC}
	for _, c := range []struct {
		path  string
		query url.Values
		says  string
	}{
		{"/acme/tasks", url.Values{"tenant": {"other"}}, "path"},
		{"/tasks/t", url.Values{"historyLength": {"1", "2"}}, "more than once"},
		{"/tasks/t", url.Values{"historyLength": {"1"}, "history_length": {"2"}}, "more than once"},
		{"/tasks/t", url.Values{"historyLength": {"x"}}, "wrong type"},
		{"/tasks/t", url.Values{"historyLength": {""}}, "wrong type"},
		{"/tasks", url.Values{"includeArtifacts": {""}}, "wrong type"},
		{"/tasks/t", url.Values{"pageSize": {"1"}}, "not one the gateway accepts"},
		{"/tasks", url.Values{"includeArtifacts": {"yes"}}, "wrong type"},
	} {
		op, e := ClassifyREST("GET", c.path, c.query, nil, V10, true)
		if e != nil {
			t.Fatalf("%s: %v", c.path, e)
		}
		if _, e := TranslateRequest(op, c.query, nil, to, json.RawMessage("1")); e == nil || e.Code != ErrInvalidParams.Code || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s ?%s: %v, want saying %q", c.path, c.query.Encode(), e, c.says)
		}
	}
}

func TestTranslateRequestSameForm(t *testing.T) {
	body := rpcRequest("GetTask", `{ "id" : "t" }`)
	op, _ := ClassifyRPC(body, V10, true)
	u, e := TranslateRequest(op, nil, body, FormOf(op), nil)
	if e != nil || string(u.Body) != string(body) {
		t.Fatalf("%s, %v", u.Body, e)
	}
	q := url.Values{"historyLength": {"1"}}
	op, _ = ClassifyREST("GET", "/acme/tasks/t", q, nil, V10, true)
	u, e = TranslateRequest(op, q, nil, FormOf(op), nil)
	if e != nil || u.HTTPMethod != "GET" || u.Path != "/acme/tasks/t" || u.Query.Get("historyLength") != "1" {
		t.Fatalf("%+v, %v", u, e)
	}
}

// TestRESTRoutes03: 0.3 names the extended card /v1/card, and callers are
// also served at the 1.0 name below /v1/; the gateway spells /v1/card.
func TestRESTRoutes03(t *testing.T) {
	for _, p := range []string{"/v1/card", "/v1/extendedAgentCard"} {
		if op, e := ClassifyREST("GET", p, nil, nil, V03, true); e != nil || op.Method != MethodExtendedCard {
			t.Errorf("%s: %v", p, e)
		}
	}
	if _, p := RESTPath(MethodExtendedCard, V03, "", ""); p != "/v1/card" {
		t.Errorf("RESTPath: %s", p)
	}
	if _, e := ClassifyREST("GET", "/card", nil, nil, V10, true); e == nil {
		t.Error("/card is no 1.0 route")
	}
}

// TestTranslateRequestTable: every method the classifier knows has a
// table, and every value slot is carried by some spelling of it.
func TestTranslateRequestTable(t *testing.T) {
	for _, m := range AllMethods {
		tb := tableOf(m)
		if tb == nil {
			t.Fatalf("%s has no table", m)
		}
		for _, r := range tb.rows {
			if !slices.ContainsFunc(r.names[:], func(s string) bool { return s != "" }) {
				t.Errorf("%s: a row without a name", m)
			}
		}
	}
}

func BenchmarkTranslateRequest(b *testing.B) {
	body := rpcRequest("message/send", `{"message":{"kind":"message","messageId":"m-1","role":"user","contextId":"ctx-1",`+
		`"parts":[{"kind":"text","text":"What is the weather in Paris today?"}],"metadata":{"k":"v"}},"configuration":{"acceptedOutputModes":["text/plain"],"blocking":true}}`)
	op, e := ClassifyRPC(body, V03, true)
	if e != nil {
		b.Fatal(e)
	}
	to := Form{V10, BindingJSONRPC}
	b.ReportAllocs()
	for b.Loop() {
		if _, e := TranslateRequest(op, nil, body, to, json.RawMessage("1")); e != nil {
			b.Fatal(e)
		}
	}
}

// TestTranslateRequestRPCID: a JSON-RPC request to the agent carries the id
// it is given, else the caller's, and never one that is not an id.
func TestTranslateRequestRPCID(t *testing.T) {
	q := url.Values{}
	op, _ := ClassifyREST("GET", "/tasks/t", q, nil, V10, true)
	rpc := Form{V03, BindingJSONRPC}
	u, e := TranslateRequest(op, q, nil, rpc, json.RawMessage(`"up-1"`))
	if e != nil || !strings.Contains(string(u.Body), `"id":"up-1"`) {
		t.Fatalf("%s, %v", u.Body, e)
	}
	for _, id := range []string{"", "null", "{}", "[1]", `"x`} {
		if _, e := TranslateRequest(op, q, nil, rpc, json.RawMessage(id)); e == nil || e.Code != ErrInternal.Code {
			t.Errorf("id %q: %v", id, e)
		}
	}
	body := rpcRequest("tasks/get", `{"id":"t"}`)
	op, _ = ClassifyRPC(body, V03, true)
	if u, e := TranslateRequest(op, nil, body, Form{V10, BindingJSONRPC}, nil); e != nil || !strings.Contains(string(u.Body), `"id":7`) {
		t.Fatalf("%s, %v", u.Body, e)
	}
}
