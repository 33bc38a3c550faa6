package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// strictCall is one request in one version and binding.
type strictCall struct {
	name string
	rest bool
	v    a2a.Version // the error shape the caller reads
	request
}

// wantRefused checks an answer is the error code in the caller's version
// and binding: a JSON-RPC error object echoing the request id, or the REST
// shape with the error's HTTP status.
func wantRefused(t *testing.T, c strictCall, resp *http.Response, b []byte, e *a2a.Error) {
	t.Helper()
	if !c.rest {
		var env struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code int             `json:"code"`
				Data json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &env) != nil || env.Error.Code != e.Code || string(env.ID) != `"rq"` {
			t.Fatalf("HTTP %d %s; want JSON-RPC error %d for id \"rq\"", resp.StatusCode, b, e.Code)
		}
		if isV10 := bytes.Contains(env.Error.Data, []byte(e.Reason)); isV10 != (c.v == a2a.V10) {
			t.Fatalf("error data %s is not in the %s shape", env.Error.Data, c.v)
		}
		return
	}
	if resp.StatusCode != e.HTTPStatus {
		t.Fatalf("HTTP %d %s; want %d", resp.StatusCode, b, e.HTTPStatus)
	}
	var v10 struct {
		Error struct {
			Code    int    `json:"code"`
			Details []any  `json:"details"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	var v03 struct {
		Code int `json:"code"`
	}
	switch {
	case c.v == a2a.V10 && (json.Unmarshal(b, &v10) != nil || v10.Error.Code != e.HTTPStatus || len(v10.Error.Details) == 0):
		t.Fatalf("%s is not a 1.0 REST error with code %d", b, e.HTTPStatus)
	case c.v == a2a.V03 && (json.Unmarshal(b, &v03) != nil || v03.Code != e.Code):
		t.Fatalf("%s is not a 0.3 REST error with code %d", b, e.Code)
	}
}

// sendCalls is a send in each version and binding, naming task in the
// message, with header h and params edited by edit.
func sendCalls(c *caller, task string, h func(v a2a.Version) http.Header, query string, edit func(string) string) []strictCall {
	msg10 := `{"messageId":"` + c.nextID("m") + `","taskId":"` + task + `","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	msg03 := `{"kind":"message","messageId":"` + c.nextID("m") + `","taskId":"` + task + `","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	proto03 := `{"messageId":"` + c.nextID("m") + `","taskId":"` + task + `","role":"ROLE_USER","content":[{"text":"hi"}]}`
	rpc := func(m, params string) string {
		return `{"jsonrpc":"2.0","id":"rq","method":"` + m + `","params":` + edit(params) + `}`
	}
	call := func(name string, rest bool, v a2a.Version, path, body string) strictCall {
		return strictCall{name, rest, v, request{method: http.MethodPost, path: path + query, header: h(v), body: []byte(body), rpc: !rest}}
	}
	return []strictCall{
		call("1.0 JSON-RPC", false, a2a.V10, "/", rpc("SendMessage", `{"message":`+msg10+`}`)),
		call("0.3 JSON-RPC", false, a2a.V03, "/", rpc("message/send", `{"message":`+msg03+`}`)),
		call("1.0 HTTP+JSON", true, a2a.V10, "/message:send", edit(`{"message":`+msg10+`}`)),
		call("0.3 HTTP+JSON", true, a2a.V03, "/v1/message:send", edit(`{"message":`+proto03+`}`)),
	}
}

// Requests the gateway could read differently from an agent are refused
// in the caller's version and binding before the agent hears of them:
// bodies not declared as UTF-8 JSON, conflicting version signals, and
// member names decoders disagree on, each carrying another tenant's task id.
func TestRequestStrictness(t *testing.T) {
	env := gwtest.Start(t)
	victim := newCaller(t, env)
	victim.token = env.Token(t, "globex", "gina")
	task := victim.waitingTask(t)
	c := newCaller(t, env)
	same := func(s string) string { return s }
	jsonType := func(ct ...string) func(a2a.Version) http.Header {
		return func(v a2a.Version) http.Header {
			h := http.Header{"Content-Type": ct} // nil: the key given, no header sent
			if v == a2a.V10 {
				h.Set(a2a.VersionHeader, "1.0")
			}
			return h
		}
	}
	var cases []strictCall
	var errs []*a2a.Error
	add := func(prefix string, e *a2a.Error, calls []strictCall) {
		for _, call := range calls {
			call.name = prefix + "/" + call.name
			cases = append(cases, call)
			errs = append(errs, e)
		}
	}
	for name, ct := range map[string][]string{
		"text/plain":    {"text/plain"},
		"form":          {"application/x-www-form-urlencoded"},
		"multipart":     {"multipart/form-data; boundary=b"},
		"utf-16":        {"application/json; charset=utf-16"},
		"other param":   {"application/json; profile=x"},
		"two headers":   {"application/json", "text/plain"},
		"none":          nil,
		"json-ish type": {"application/jsonp"},
	} {
		add("content type "+name, a2a.ErrContentTypeUnsupported, sendCalls(c, task, jsonType(ct...), "", same))
	}
	for name, vh := range map[string]struct {
		header []string
		query  string
	}{
		"two headers":        {[]string{"1.0", "0.3"}, ""},
		"a list":             {[]string{"0.3, 1.0"}, ""},
		"header vs query":    {[]string{"0.3"}, "?A2A-Version=1.0"},
		"query vs header":    {[]string{"1.0"}, "?A2A-Version=0.3"},
		"two query params":   {nil, "?A2A-Version=1.0&a2a-version=0.3"},
		"same header twice":  {[]string{"1.0", "1.0"}, ""},
		"bad query, good hd": {[]string{"1.0"}, "?A2A-Version=9.9"},
	} {
		h := func(a2a.Version) http.Header {
			return http.Header{"Content-Type": {"application/json"}, a2a.VersionHeader: vh.header}
		}
		calls := sendCalls(c, task, h, vh.query, same)
		for i := range calls {
			calls[i].v = a2a.V10 // VersionNotSupportedError exists in 1.0 only
		}
		add("version "+name, a2a.ErrVersionNotSupported, calls)
	}
	for name, key := range map[string]string{
		"NUL":            `taskId\u0000`,
		"trailing space": `taskId `,
		"invalid UTF-8":  "taskId\xff",
		"zero width":     `task\u200bId`,
		"fullwidth":      `ｔａｓｋＩｄ`,
	} {
		// The caller's own task id is gone; the victim's is under the
		// ambiguous name.
		edit := func(s string) string {
			return strings.Replace(s, `"taskId":"`+task+`"`, `"`+key+`":"`+task+`"`, 1)
		}
		add("member name "+name, a2a.ErrInvalidParams, sendCalls(c, task, jsonType("application/json"), "", edit))
	}
	for i, call := range cases {
		t.Run(call.name, func(t *testing.T) {
			env.Agent.ResetRequests()
			resp, b := c.do(t, call.request)
			wantRefused(t, call, resp, b, errs[i])
			if got := env.Agent.Requests(); len(got) != 0 {
				t.Fatalf("the agent received %s", got[0].Body)
			}
		})
	}
	// The same sends, declared as JSON in one version, reach the agent
	// (and, naming another tenant's task, are refused as TaskNotFound).
	for _, call := range sendCalls(c, task, jsonType("application/json; charset=UTF-8"), "", same) {
		resp, b := c.do(t, call.request)
		wantRefused(t, call, resp, b, a2a.ErrTaskNotFound)
	}
}
