package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

func FuzzClassifyRPC(f *testing.F) {
	for _, tc := range rpcClassifyCases() {
		f.Add([]byte(tc.body), uint8(tc.version), tc.explicit)
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
	})
}

func FuzzClassifyREST(f *testing.F) {
	for _, tc := range restClassifyCases() {
		f.Add(tc.httpMethod, tc.path, tc.query, []byte(tc.body), uint8(tc.version), tc.explicit)
	}
	for _, tc := range restErrorCases() {
		f.Add(tc.httpMethod, tc.path, tc.query, []byte(tc.body), uint8(tc.version), tc.explicit)
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
