package a2a

import (
	"encoding/json"
	"net/url"
	"testing"
)

// allForms are the six forms a bridge serves or reaches.
var allForms = []Form{
	{V10, BindingJSONRPC}, {V10, BindingREST}, {V10, BindingGRPC},
	{V03, BindingJSONRPC}, {V03, BindingREST}, {V03, BindingGRPC},
}

// FuzzTranslateRequest: any request the classifier reads (JSON-RPC, or
// HTTP+JSON with a path and query) translates to any form or is refused
// with a protocol error; a JSON translation classifies, in the agent's
// form, to the same operation.
func FuzzTranslateRequest(f *testing.F) {
	for i, r := range bridgeRequests03 {
		f.Add(uint8(V03), "", "", "", []byte(rpcRequest(r.method, r.params)), uint8(i))
	}
	for i, r := range bridgeRequests10 {
		f.Add(uint8(V10), "", "", "", []byte(rpcRequest(r.method, r.params)), uint8(i))
	}
	f.Add(uint8(V03), "GET", "/v1/tasks/t", "historyLength=2", []byte(nil), uint8(0))
	f.Add(uint8(V10), "GET", "/tasks/t:subscribe", "history_length=&A2A-Version=1.0", []byte(nil), uint8(4))
	f.Add(uint8(V03), "GET", "/v1/tasks/t/pushNotificationConfigs", "pageSize=2&pageToken=x", []byte(nil), uint8(0))
	f.Add(uint8(V10), "POST", "/tasks/t:cancel", "", []byte(`{"metadata":{"a":[1,2]}}`), uint8(5))
	f.Add(uint8(V10), "GET", "/acme/tasks", "contextId=c&pageSize=3&status=TASK_STATE_WORKING", []byte(nil), uint8(1))
	f.Add(uint8(V10), "POST", "/t1/tasks/x/pushNotificationConfigs", "", []byte(`{"id":"c","url":"https://h.example/"}`), uint8(3))
	f.Add(uint8(V03), "POST", "/v1/message:send", "", []byte(`{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"hi"}]}}`), uint8(2))
	f.Add(uint8(V03), "DELETE", "/v1/tasks/a%20b/pushNotificationConfigs/c", "", []byte(nil), uint8(4))
	f.Fuzz(func(t *testing.T, v uint8, httpMethod, path, rawQuery string, body []byte, to uint8) {
		version := Version(v)
		if version != V03 && version != V10 {
			return
		}
		var op *Operation
		var e *Error
		var query url.Values
		if httpMethod == "" {
			op, e = ClassifyRPC(body, version, true)
		} else {
			var err error
			if query, err = url.ParseQuery(rawQuery); err != nil {
				return
			}
			op, e = ClassifyREST(httpMethod, path, query, body, version, true)
		}
		if e != nil {
			return
		}
		form := allForms[int(to)%len(allForms)]
		u, e := TranslateRequest(op, query, body, form, json.RawMessage(`"f"`))
		if e != nil {
			switch e.Code {
			case ErrInvalidParams.Code, ErrUnsupportedOperation.Code:
			default:
				t.Fatalf("%s to %s refused with %d %s", FormOf(op), form, e.Code, e.Message)
			}
			return
		}
		if form == FormOf(op) {
			if string(u.Body) != string(body) {
				t.Fatalf("%s to itself changed %q to %q", form, body, u.Body)
			}
			return
		}
		if len(u.Body) > 0 && !json.Valid(u.Body) {
			t.Fatalf("%s to %s: invalid JSON %q", FormOf(op), form, u.Body)
		}
		if form.Binding == BindingGRPC {
			return // internal/grpcwire's tests classify it
		}
		sameOperation(t, op, classifyUpstream(t, u, form))
	})
}
