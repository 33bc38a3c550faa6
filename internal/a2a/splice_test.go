package a2a

import (
	"net/http"
	"net/url"
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
