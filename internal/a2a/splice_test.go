package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The splices change the one member and keep every other byte: escapes
// (that a re-encoding would change), member order, white space.
func TestSetRPCParamKeepsEveryOtherByte(t *testing.T) {
	const rest = `"x" : "a<b>&c\u003c\/" ,"n":2.50`
	for _, tc := range []struct{ name, body, want string }{
		{"replaced in place",
			`{ "jsonrpc":"2.0", "id" : "r\u0031", "params" : {` + rest + `, "tenant" : "old", "z":[1 , 2]}, "method":"ListTasks"}`,
			`{ "jsonrpc":"2.0", "id" : "r\u0031", "params" : {` + rest + `, "tenant" : "t<1>", "z":[1 , 2]}, "method":"ListTasks"}`},
		{"added after the last member",
			`{"params":{` + rest + ` } , "method":"GetTask","id":1,"jsonrpc":"2.0"}`,
			`{"params":{` + rest + `,"tenant":"t<1>" } , "method":"GetTask","id":1,"jsonrpc":"2.0"}`},
		{"added to empty params",
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{ }}`,
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"tenant":"t<1>" }}`},
		{"null params",
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":null }`,
			`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"tenant":"t<1>"} }`},
		{"params absent",
			"{\"jsonrpc\":\"2.0\",\n\t\"id\":1,\"method\":\"x\\u0041\"\n}",
			"{\"jsonrpc\":\"2.0\",\n\t\"id\":1,\"method\":\"x\\u0041\",\"params\":{\"tenant\":\"t<1>\"}\n}"},
		{"snake_case spelling replaced",
			`{"params":{"tenant":"a","page_size":7},"id":1}`,
			`{"params":{"tenant":"a","page_size":"t<1>"},"id":1}`},
	} {
		name := "tenant"
		if tc.name == "snake_case spelling replaced" {
			name = "pageSize"
		}
		got, err := SetRPCParam([]byte(tc.body), name, []byte(`"t<1>"`))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := SetRPCParam([]byte(`{"params":[1]}`), "tenant", []byte(`"t"`)); err == nil {
		t.Error("params that are not an object were spliced into")
	}
}

func TestDeleteRPCParamKeepsEveryOtherByte(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"id":"\u0031", "params": {"a\/": "<", "pageToken" : "p", "b":1} }`, `{"id":"\u0031", "params": {"a\/": "<", "b":1} }`},
		{`{"params": {"a": "<",  "pageToken":"p"}}`, `{"params": {"a": "<"}}`},
		{`{"params": { "pageToken":"p" }}`, `{"params": {  }}`},
		{`{"params": {"a": "<"}}`, `{"params": {"a": "<"}}`},
		{`{"id":1}`, `{"id":1}`},
	} {
		if got := DeleteRPCParam([]byte(tc.body), "pageToken"); string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.body, got, tc.want)
		}
	}
}

// The classifier reads a ListTasks request's paging for the list stage.
func TestClassifyReadsPaging(t *testing.T) {
	for _, tc := range []struct{ params, size, token string }{
		{`{}`, "", ""},
		{`{"pageSize":25,"pageToken":"gw2.x"}`, "25", "gw2.x"},
		{`{"pageSize":"7","pageToken":null}`, "7", ""},
		{`{"page_size":3,"page_token":"t\u0031"}`, "3", "t1"},
	} {
		op, e := ClassifyRPC([]byte(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":`+tc.params+`}`), V10, true)
		if e != nil || op.PageSize != tc.size || op.PageToken != tc.token {
			t.Errorf("%s: size %q token %q (%v), want %q %q", tc.params, op.PageSize, op.PageToken, e, tc.size, tc.token)
		}
	}
	q := url.Values{"pageSize": {"9"}, "pageToken": {"gw2.q"}}
	if op, e := ClassifyREST(http.MethodGet, "/tasks", q, []byte(`{"pageSize":3,"pageToken":"body"}`), V10, true); e != nil || op.PageSize != "9" || op.PageToken != "gw2.q" {
		t.Errorf("REST paging: size %q token %q (%v), want the query's", op.PageSize, op.PageToken, e)
	}
	for _, params := range []string{`{"pageToken":5}`, `{"pageSize":1,"page_size":2}`, `{"PageToken":"a"}`} {
		if _, e := ClassifyRPC([]byte(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":`+params+`}`), V10, true); e == nil {
			t.Errorf("%s was read", params)
		}
	}
}

// A message's metadata, where the gateway puts a credential and takes the
// caller's out, must be one object every agent reads alike.
func TestClassifyRefusesAmbiguousMessageMetadata(t *testing.T) {
	for _, msg := range []string{
		`{"messageId":"m","metadata":{},"metadata":{"a2a-gateway/credential":"forged"}}`,
		`{"messageId":"m","metadata":{},"Metadata":{"a2a-gateway/credential":"forged"}}`,
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg + `}}`
		if _, e := ClassifyRPC([]byte(body), V10, true); e == nil || e.Code != ErrInvalidParams.Code {
			t.Errorf("%s: %v", msg, e)
		}
	}
}

// FuzzSplice: on any JSON-RPC body the classifier could accept (valid,
// strict JSON, an object whose members and params' members are unique
// in any letter case), setting and then deleting a param yields strict
// JSON in which every other member keeps its exact bytes.
func FuzzSplice(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask"}`,
		`{ "params" : { "tenant" : "a" , "x":"a<b\u003c" } }`,
		`{"params":{},"id":"\u0031"}`,
		`{"params":[1]}`,
		"{\"method\":\"x\"\n}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		top, ok := uniqueMembers(body)
		if !ok || otherSpelling(top, "params") {
			return
		}
		params, hasParams := top["params"]
		var inner map[string]json.RawMessage
		if hasParams && string(params) != "null" {
			if inner, ok = uniqueMembers(params); ok && otherSpelling(inner, "tenant") {
				return
			}
			if !ok {
				if _, err := SetRPCParam(body, "tenant", []byte(`"t<1>"`)); err == nil && bytes.TrimSpace(params)[0] != '{' {
					t.Fatalf("spliced into params that are not an object: %s", body)
				}
				return
			}
		}
		got, err := SetRPCParam(body, "tenant", []byte(`"t<1>"`))
		if err != nil {
			t.Fatalf("SetRPCParam(%s): %v", body, err)
		}
		gotTop, ok := uniqueMembers(got)
		if !ok || checkJSON(got) != nil {
			t.Fatalf("SetRPCParam(%s) = %s: not strict JSON", body, got)
		}
		gotParams, _ := uniqueMembers(gotTop["params"])
		if string(gotParams["tenant"]) != `"t<1>"` {
			t.Fatalf("SetRPCParam(%s) = %s: tenant not set", body, got)
		}
		sameExcept(t, top, gotTop, "params")
		sameExcept(t, inner, gotParams, "tenant")
		back := DeleteRPCParam(got, "tenant")
		backTop, ok := uniqueMembers(back)
		if !ok || checkJSON(back) != nil {
			t.Fatalf("DeleteRPCParam(%s) = %s: not strict JSON", got, back)
		}
		backParams, _ := uniqueMembers(backTop["params"])
		if _, still := backParams["tenant"]; still {
			t.Fatalf("DeleteRPCParam(%s) = %s: tenant still there", got, back)
		}
		sameExcept(t, top, backTop, "params")
		sameExcept(t, inner, backParams, "tenant")
	})
}

// uniqueMembers decodes a strict JSON object whose member names are unique
// in any letter case, as the classifier requires; ok is false otherwise.
func uniqueMembers(b []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if checkJSON(b) != nil || json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	seen := map[string]bool{}
	for k := range m {
		if seen[strings.ToLower(k)] {
			return nil, false
		}
		seen[strings.ToLower(k)] = true
	}
	return m, true
}

// otherSpelling reports a member named name in another letter case, which
// the classifier refuses.
func otherSpelling(m map[string]json.RawMessage, name string) bool {
	for k := range m {
		if k != name && strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// sameExcept fails unless want and got hold the same members with the same
// bytes, skip aside.
func sameExcept(t *testing.T, want, got map[string]json.RawMessage, skip string) {
	t.Helper()
	for k, v := range want {
		if k != skip && !bytes.Equal(got[k], v) {
			t.Fatalf("member %q: got %s, want %s", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && k != skip {
			t.Fatalf("member %q appeared", k)
		}
	}
}
