package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
)

// fuzzVersion maps an arbitrary byte onto a version the callers pass.
func fuzzVersion(v uint8) Version { return Version(v%3) + VLegacy }

var classifyErrorCodes = []int{ErrParse.Code, ErrInvalidRequest.Code, ErrMethodNotFound.Code, ErrInvalidParams.Code}

// checkAccepted holds for every operation the classifier lets through.
func checkAccepted(t *testing.T, op *Operation) {
	t.Helper()
	if op.Method == MethodUnknown || !slices.Contains(AllMethods, op.Method) {
		t.Fatalf("accepted with method %v", op.Method)
	}
	if op.Version < VLegacy || op.Version > V10 {
		t.Fatalf("accepted with version %d", op.Version)
	}
	for name, id := range map[string]string{
		"TaskID": op.TaskID, "ContextID": op.ContextID, "MessageID": op.MessageID,
		"PushConfigID": op.PushConfigID, "Tenant": op.Tenant,
	} {
		if len(id) > MaxIDLength {
			t.Fatalf("%s of %d bytes accepted", name, len(id))
		}
	}
	for _, r := range op.ReferenceTaskIDs {
		if r == "" || len(r) > MaxIDLength {
			t.Fatalf("reference task id of %d bytes accepted", len(r))
		}
	}
	if op.Method.TaskScoped() && op.TaskID == "" {
		t.Fatalf("%v accepted without a task id", op.Method)
	}
	if op.PushConfig != nil && !isObject(op.PushConfig) {
		t.Fatalf("push config %q is not an object", op.PushConfig)
	}
}

// memberOf reads a member the way a JSON library that matches names exactly
// does; the classifier refuses bodies where the spelling would matter, so
// on accepted bodies both readings must agree.
func memberOf(obj any, name string) any {
	m, _ := obj.(map[string]any)
	if v, ok := m[name]; ok {
		return v
	}
	return m[members(name)[0].alias]
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// checkAgainstDecoder compares the ids the classifier read with what
// encoding/json reads from the same body.
func checkAgainstDecoder(t *testing.T, body []byte, op *Operation) {
	t.Helper()
	var env any
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("accepted a body encoding/json refuses: %v", err)
	}
	params := memberOf(env, "params")
	msg := memberOf(params, "message")
	want := map[string]string{"Tenant": stringOf(memberOf(params, "tenant"))}
	switch op.Method {
	case MethodSend, MethodStream:
		want["MessageID"] = stringOf(memberOf(msg, "messageId"))
		if op.Version == VLegacy {
			want["TaskID"] = stringOf(memberOf(params, "id"))
			want["ContextID"] = stringOf(memberOf(params, "sessionId"))
		} else {
			want["TaskID"] = stringOf(memberOf(msg, "taskId"))
			want["ContextID"] = stringOf(memberOf(msg, "contextId"))
		}
	case MethodListTasks:
		want["ContextID"] = stringOf(memberOf(params, "contextId"))
	case MethodGetTask, MethodCancelTask, MethodSubscribe:
		want["TaskID"] = stringOf(memberOf(params, "id"))
	case MethodPushConfigSet, MethodPushConfigGet, MethodPushConfigList, MethodPushConfigDelete:
		switch {
		case op.Version == V10:
			want["TaskID"] = stringOf(memberOf(params, "taskId"))
		case op.Version == V03 && op.Method == MethodPushConfigSet:
			want["TaskID"] = stringOf(memberOf(params, "taskId"))
		default:
			want["TaskID"] = stringOf(memberOf(params, "id"))
		}
	}
	got := map[string]string{"Tenant": op.Tenant, "TaskID": op.TaskID, "ContextID": op.ContextID, "MessageID": op.MessageID}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("%s: classifier read %q, encoding/json reads %q", k, got[k], w)
		}
	}
}

// objectsWalked returns the objects of an accepted request whose member
// names the classifier checks: the envelope, params, the message, the
// configuration and a push config with its authentication.
func objectsWalked(env any, rpc bool) []map[string]any {
	params := env
	var out []map[string]any
	if rpc {
		params = memberOf(env, "params")
		if m, ok := env.(map[string]any); ok {
			out = append(out, m)
		}
	}
	conf := memberOf(params, "configuration")
	for _, o := range []any{params, memberOf(params, "message"), conf, memberOf(params, "authentication")} {
		if m, ok := o.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// pushMembersIn lists the members of params and its configuration that an
// agent folding names could read as a push config.
func pushMembersIn(env any, rpc bool) []string {
	params := env
	if rpc {
		params = memberOf(env, "params")
	}
	var found []string
	for _, o := range []any{params, memberOf(params, "configuration")} {
		m, _ := o.(map[string]any)
		for k := range m {
			for _, sp := range pushSpellings {
				if f := foldCompat(k); strings.EqualFold(f, sp.member.name) || strings.EqualFold(f, sp.member.alias) {
					found = append(found, k)
				}
			}
		}
	}
	return found
}

// checkStrict holds for every accepted request: its member names read the
// same to every decoder, and a send's push config, under whatever name,
// is the one the classifier exposes and is gone once stripped.
func checkStrict(t *testing.T, body []byte, op *Operation, reclassify func([]byte) (*Operation, *Error)) {
	t.Helper()
	var env any
	if err := json.Unmarshal(body, &env); err != nil {
		return
	}
	rpc := op.Binding == BindingJSONRPC
	for _, o := range objectsWalked(env, rpc) {
		for k := range o {
			// Decoding replaced any invalid UTF-8 with U+FFFD, which
			// checkKey refuses too.
			if !checkKey([]byte(k), k) {
				t.Fatalf("member name %q accepted", k)
			}
		}
	}
	if op.Method != MethodSend && op.Method != MethodStream {
		return
	}
	found := pushMembersIn(env, rpc)
	if op.PushConfig == nil {
		if len(found) != 0 {
			t.Fatalf("push config under %q not exposed", found)
		}
		return
	}
	stripped, err := StripPushConfig(body, op.Binding)
	if err != nil {
		t.Fatal(err)
	}
	var after any
	if err := json.Unmarshal(stripped, &after); err != nil {
		t.Fatalf("stripping made %s invalid: %v", stripped, err)
	}
	if left := pushMembersIn(after, rpc); len(left) != 0 {
		t.Fatalf("push config under %q left in %s", left, stripped)
	}
	again, e := reclassify(stripped)
	if e != nil || again.PushConfig != nil || again.TaskID != op.TaskID || again.MessageID != op.MessageID {
		t.Fatalf("stripped body %s classified as %+v, %v", stripped, again, e)
	}
}

// strictSeeds are requests in every send shape with every push spelling,
// and requests with every ambiguous member name in every object walked.
func strictSeeds() (rpc, rest []string) {
	const cfg = `{"url":"http://127.0.0.1:19101/x"}`
	for _, sh := range sendShapes() {
		for _, pl := range pushSpellingPlaces() {
			m := `"` + pl.key + `":` + cfg
			var params string
			if pl.top {
				params = sh.params(m, "")
			} else {
				params = sh.params("", m)
			}
			if sh.binding == BindingREST {
				rest = append(rest, params)
			} else {
				rpc = append(rpc, rpcBody(`1`, RPCMethodName(MethodSend, sh.version), params))
			}
		}
	}
	for _, obj := range strictObjects() {
		shapes := badKeyShapes(obj.member)
		for k, v := range lookalikeKeyShapes(obj.member) {
			shapes[k] = v
		}
		for _, key := range shapes {
			b := strings.NewReplacer("@K", key, "@V", "task-victim").Replace(obj.body)
			if obj.rest {
				rest = append(rest, b)
			} else {
				rpc = append(rpc, b)
			}
		}
	}
	return rpc, rest
}

func FuzzClassifyRPC(f *testing.F) {
	for _, tc := range rpcClassifyCases() {
		f.Add([]byte(tc.body), uint8(tc.version), tc.explicit)
	}
	rpcSeeds, _ := strictSeeds()
	for _, b := range rpcSeeds {
		f.Add([]byte(b), uint8(V10), false)
	}
	for _, tc := range rpcErrorCases() {
		f.Add([]byte(tc.body), uint8(tc.version), tc.explicit)
	}
	if send, err := os.ReadFile("testdata/send_v10.json"); err == nil {
		f.Add(send, uint8(V10), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, v uint8, explicit bool) {
		op, e := ClassifyRPC(body, fuzzVersion(v), explicit)
		if op == nil {
			t.Fatal("nil operation")
		}
		if e != nil {
			if !slices.Contains(classifyErrorCodes, e.Code) || e.Message == "" {
				t.Fatalf("unexpected error %d %q", e.Code, e.Message)
			}
			return
		}
		checkAccepted(t, op)
		if op.Binding != BindingJSONRPC || len(op.RPCID) == 0 || op.RPCMethod == "" {
			t.Fatalf("accepted without binding, id or method: %+v", op)
		}
		checkAgainstDecoder(t, body, op)
		checkStrict(t, body, op, func(b []byte) (*Operation, *Error) { return ClassifyRPC(b, fuzzVersion(v), explicit) })
	})
}

func FuzzClassifyREST(f *testing.F) {
	for _, tc := range restClassifyCases() {
		f.Add(tc.httpMethod, tc.path, tc.query, []byte(tc.body), uint8(tc.version), tc.explicit)
	}
	_, restSeeds := strictSeeds()
	for _, b := range restSeeds {
		f.Add(http.MethodPost, "/message:send", "", []byte(b), uint8(V10), true)
		f.Add(http.MethodPost, "/v1/message:send", "", []byte(b), uint8(V03), false)
	}
	for _, tc := range restErrorCases() {
		f.Add(tc.httpMethod, tc.path, tc.query, []byte(tc.body), uint8(tc.version), tc.explicit)
	}
	for _, p := range []string{"/v1/tasks/./x", "/%76%31/tasks/t-1", "/%76%31/tasks/%2e%2e", "//v1/tasks/t-1", "/v1%2Ftasks/t-1"} {
		f.Add("GET", p, "", []byte(nil), uint8(V03), false)
	}
	f.Fuzz(func(t *testing.T, httpMethod, path, rawQuery string, body []byte, v uint8, explicit bool) {
		query, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		version := fuzzVersion(v)
		if version == VLegacy {
			version = V03 // legacy agents have no REST binding
		}
		op, e := ClassifyREST(httpMethod, path, query, body, version, explicit)
		if op == nil {
			t.Fatal("nil operation")
		}
		// Errors raised before the body is read take this version's shape.
		if pre := RESTPathVersion(path, version, explicit); op.Version != pre {
			t.Fatalf("classified as %s, %s before the body", op.Version, pre)
		}
		if e != nil {
			if !slices.Contains(classifyErrorCodes, e.Code) || e.Message == "" {
				t.Fatalf("unexpected error %d %q", e.Code, e.Message)
			}
			return
		}
		checkAccepted(t, op)
		if op.Binding != BindingREST || op.RPCID != nil {
			t.Fatalf("REST operation %+v", op)
		}
		checkStrict(t, body, op, func(b []byte) (*Operation, *Error) {
			return ClassifyREST(httpMethod, path, query, b, version, explicit)
		})
		for _, seg := range []string{op.TaskID, op.PushConfigID, op.Tenant} {
			if seg == "." || seg == ".." || strings.ContainsAny(seg, `/\`) {
				t.Fatalf("path segment %q accepted", seg)
			}
		}
		// The gateway's own path for the operation must lead back to it.
		if op.Tenant == "" && op.Version == version {
			m, p := RESTPath(op.Method, op.Version, op.TaskID, op.PushConfigID)
			back, e := ClassifyREST(m, p, query, body, version, explicit)
			if e != nil {
				t.Fatalf("RESTPath %s %s refused: %v", m, p, e)
			}
			if back.Method != op.Method || back.TaskID != op.TaskID || back.PushConfigID != op.PushConfigID {
				t.Fatalf("%s %s classified as %v %q %q, want %v %q %q", m, p,
					back.Method, back.TaskID, back.PushConfigID, op.Method, op.TaskID, op.PushConfigID)
			}
		}
	})
}

// A content type accepted is JSON in UTF-8, however it is spelled.
func FuzzCheckRequestContentType(f *testing.F) {
	for _, s := range []string{
		"application/json", "application/a2a+json; charset=UTF-8", `application/json; charset="utf-8"`, "text/plain",
		"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=utf-16",
		"application/json; charset=utf-8; charset=utf-16", "application/json, text/plain", "application/json;charset=utf-8;q=1",
		"application/json\x00", "APPLICATION/A2A+JSON", "application/json ; charset = utf-8",
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, value string, hasBody bool) {
		h := http.Header{"Content-Type": {value}}
		if CheckRequestContentType(h, hasBody) != nil {
			return
		}
		mt, params, err := mime.ParseMediaType(value)
		if err != nil || mt != "application/json" && mt != "application/a2a+json" {
			t.Fatalf("%q accepted: %q, %v", value, mt, err)
		}
		for k, v := range params {
			if k != "charset" || !strings.EqualFold(v, "utf-8") {
				t.Fatalf("%q accepted with %s=%s", value, k, v)
			}
		}
	})
}

func FuzzParseRPCEvent(f *testing.F) {
	for _, tc := range rpcEventCases() {
		f.Add([]byte(tc.payload))
	}
	for _, p := range []string{`[]`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001}}`, `{"result":{"task":"x"}}`, `{"result":{"kind":"task","id":"a","id":"b"}}`} {
		f.Add([]byte(p))
	}
	check := func(t *testing.T, ev Event, err error) {
		t.Helper()
		if err != nil {
			return
		}
		if ev.Kind > EventError || ev.State > StateRejected {
			t.Fatalf("event %+v out of range", ev)
		}
		if len(ev.TaskID) > MaxIDLength || len(ev.ContextID) > MaxIDLength {
			t.Fatalf("id of %d/%d bytes accepted", len(ev.TaskID), len(ev.ContextID))
		}
		if ev.Kind == EventError && (ev.TaskID != "" || ev.ContextID != "") {
			t.Fatalf("error event with ids: %+v", ev)
		}
		if ev.Kind != EventError && ev.ErrorCode != 0 {
			t.Fatalf("error code on a %v event", ev.Kind)
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		ev, err := ParseRPCEvent(payload)
		check(t, ev, err)
		ev, err = ParseResult(payload)
		check(t, ev, err)
		if err == nil && ev.Kind == EventError {
			t.Fatal("ParseResult reported a JSON-RPC error")
		}
	})
}

// skipBlankLines skips the blank lines the reader drops between events.
func skipBlankLines(b []byte) []byte {
	for {
		i := 0
		for i < len(b) && b[i] == '\r' {
			i++
		}
		if i >= len(b) || b[i] != '\n' {
			return b
		}
		b = b[i+1:]
	}
}

// onlyComments reports whether every non-blank line of raw is a comment.
func onlyComments(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > 0 && line[0] != ':' {
			return false
		}
	}
	return true
}

func FuzzSSEReader(f *testing.F) {
	for _, tc := range sseCases() {
		f.Add([]byte(tc.stream), uint16(4096))
	}
	f.Add([]byte("data: 12345\n\n"), uint16(12))
	f.Add([]byte("id: 1\rdata: x\n\n"), uint16(64))
	// Keep-alives: comments alone, comments around data, comments past the limit.
	f.Add([]byte(": keep-alive\n\n: keep-alive\n\ndata: x\n\n"), uint16(64))
	f.Add([]byte(": a\n: b\n: c\n: d\n: e\n"), uint16(8))
	f.Fuzz(func(t *testing.T, input []byte, limit uint16) {
		maxEvent := int(limit%8192) + 1
		r := NewSSEReader(bytes.NewReader(input), maxEvent)
		rest := input
		var err error
		for range len(input) + 2 {
			var ev SSEEvent
			ev, err = r.Next()
			if err != nil {
				break
			}
			if len(ev.Raw) == 0 || len(ev.Raw) > maxEvent || ev.Raw[len(ev.Raw)-1] != '\n' {
				t.Fatalf("event Raw %q (limit %d)", ev.Raw, maxEvent)
			}
			// Raw is the next slice of the input: a pass-through that
			// forwards it reproduces the stream byte for byte.
			rest = skipBlankLines(rest)
			if !bytes.HasPrefix(rest, ev.Raw) {
				t.Fatalf("Raw %q is not the next part of the input %q", ev.Raw, rest)
			}
			rest = rest[len(ev.Raw):]
			if len(ev.Data) > len(ev.Raw) {
				t.Fatalf("Data %q longer than Raw %q", ev.Data, ev.Raw)
			}
			// An event of comment lines only is never activity.
			if onlyComments(ev.Raw) && !ev.KeepAlive() {
				t.Fatalf("comments %q read as an event with data %q", ev.Raw, ev.Data)
			}
		}
		switch {
		case err == io.EOF:
			if len(skipBlankLines(rest)) != 0 {
				t.Fatalf("clean end with %q unread", rest)
			}
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrSSEEventTooLarge), errors.Is(err, ErrSSEMalformed):
		case err == nil:
			t.Fatal("reader did not terminate")
		default:
			t.Fatalf("unexpected error %v", err)
		}

		// Whatever single-line payloads WriteSSE accepts come back intact.
		var stream bytes.Buffer
		var sent [][]byte
		for i, chunk := range bytes.Split(input, []byte{0}) {
			if WriteSSE(&stream, fmt.Sprint(i), chunk) == nil {
				sent = append(sent, chunk)
			}
		}
		rr := NewSSEReader(&stream, len(input)+64)
		for i, want := range sent {
			ev, err := rr.Next()
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if !bytes.Equal(ev.Data, want) {
				t.Fatalf("event %d data %q, wrote %q", i, ev.Data, want)
			}
		}
		if _, err := rr.Next(); err != io.EOF {
			t.Fatalf("after the written events: %v", err)
		}
	})
}
