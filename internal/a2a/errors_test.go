package a2a

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// protocolErrors are the errors the specification defines, with the code and
// ErrorInfo reason it gives them.
func protocolErrors() []struct {
	err    *Error
	code   int
	reason string
} {
	return []struct {
		err    *Error
		code   int
		reason string
	}{
		{ErrParse, -32700, "PARSE_ERROR"},
		{ErrInvalidRequest, -32600, "INVALID_REQUEST"},
		{ErrMethodNotFound, -32601, "METHOD_NOT_FOUND"},
		{ErrInvalidParams, -32602, "INVALID_PARAMS"},
		{ErrInternal, -32603, "INTERNAL"},
		{ErrTaskNotFound, -32001, "TASK_NOT_FOUND"},
		{ErrTaskNotCancelable, -32002, "TASK_NOT_CANCELABLE"},
		{ErrPushNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
		{ErrUnsupportedOperation, -32004, "UNSUPPORTED_OPERATION"},
		{ErrContentTypeUnsupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED"},
		{ErrInvalidAgentResponse, -32006, "INVALID_AGENT_RESPONSE"},
		{ErrExtendedCardNotConfigured, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
		{ErrVersionNotSupported, -32009, "VERSION_NOT_SUPPORTED"},
	}
}

func gatewayErrors() []*Error {
	return []*Error{
		ErrUnauthenticated, ErrPermissionDenied, ErrRateLimited, ErrUnavailable, ErrUpstreamTimeout,
		ErrUpstreamFailed, ErrPayloadTooLarge, ErrInProgress, ErrIdempotencyConflict,
	}
}

func TestErrorCatalogue(t *testing.T) {
	codes := map[int]bool{}
	reasons := map[string]bool{}
	check := func(e *Error) {
		t.Helper()
		if codes[e.Code] || reasons[e.Reason] {
			t.Errorf("code %d or reason %q used twice", e.Code, e.Reason)
		}
		codes[e.Code], reasons[e.Reason] = true, true
		if e.HTTPStatus < 400 || e.HTTPStatus > 599 {
			t.Errorf("%s: HTTP status %d", e.Reason, e.HTTPStatus)
		}
		if e.Message == "" || e.Error() != e.Message {
			t.Errorf("%s: message %q, Error() %q", e.Reason, e.Message, e.Error())
		}
		if e.RetryAfter != 0 || e.Header != nil {
			t.Errorf("%s: shared error carries request state", e.Reason)
		}
	}
	for _, pe := range protocolErrors() {
		if pe.err.Code != pe.code || pe.err.Reason != pe.reason {
			t.Errorf("%q: code %d reason %q, want %d %q", pe.err.Message, pe.err.Code, pe.err.Reason, pe.code, pe.reason)
		}
		check(pe.err)
	}
	for _, e := range gatewayErrors() {
		// The specification leaves -32000..-32099 to implementations; the
		// gateway stays clear of the codes it already assigns.
		if e.Code > -32050 || e.Code < -32099 {
			t.Errorf("%s: gateway code %d outside -32099..-32050", e.Reason, e.Code)
		}
		check(e)
	}
	if ErrVersionNotSupported.HTTPStatus != http.StatusBadRequest {
		t.Errorf("VersionNotSupported maps to %d, want 400", ErrVersionNotSupported.HTTPStatus)
	}
	if ErrTaskNotFound.HTTPStatus != http.StatusNotFound {
		t.Errorf("TaskNotFound maps to %d, want 404", ErrTaskNotFound.HTTPStatus)
	}
}

// Copies must never write through to the shared error values.
func TestErrorCopiesDoNotAlias(t *testing.T) {
	e := ErrUnauthenticated.WithHeader("WWW-Authenticate", `Bearer realm="a2a"`)
	e = e.WithHeader("WWW-Authenticate", `DPoP algs="ES256"`)
	e2 := e.WithHeader("X-Extra", "1")
	_ = ErrRateLimited.WithRetryAfter(time.Second).WithMessage("slow down")
	if ErrUnauthenticated.Header != nil {
		t.Errorf("ErrUnauthenticated.Header = %v after WithHeader", ErrUnauthenticated.Header)
	}
	if ErrRateLimited.RetryAfter != 0 || ErrRateLimited.Message != "request budget exceeded" {
		t.Errorf("ErrRateLimited mutated: %+v", ErrRateLimited)
	}
	if got := e.Header.Values("Www-Authenticate"); len(got) != 2 {
		t.Errorf("WWW-Authenticate = %q, want both challenges", got)
	}
	if e.Header.Get("X-Extra") != "" {
		t.Error("a later WithHeader wrote through to an earlier copy")
	}
	if e2.Header.Get("X-Extra") != "1" || len(e2.Header.Values("WWW-Authenticate")) != 2 {
		t.Errorf("copy lost headers: %v", e2.Header)
	}
}

type wireErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

// decodeObject splits a JSON object into its members, so a test sees exactly
// which members are on the wire.
func decodeObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	return m
}

func TestRPCErrorBody(t *testing.T) {
	cases := []struct {
		name     string
		err      *Error
		version  Version
		id       string
		wantID   string
		wantData string // "array", "retry" or "" (no data member)
		retry    string
	}{
		{"1.0 task not found", ErrTaskNotFound, V10, `"req-1"`, `"req-1"`, "array", ""},
		{"1.0 numeric id", ErrInvalidParams.WithMessage("message.messageId is required"), V10, `42`, `42`, "array", ""},
		{"1.0 unknown id", ErrParse, V10, ``, `null`, "array", ""},
		{"1.0 rate limited", ErrRateLimited.WithRetryAfter(1500 * time.Millisecond), V10, `7`, `7`, "array", "2"},
		{"0.3 task not found", ErrTaskNotFound, V03, `1`, `1`, "", ""},
		{"0.3 unknown id", ErrInvalidRequest, V03, ``, `null`, "", ""},
		{"0.3 rate limited", ErrRateLimited.WithRetryAfter(3 * time.Second), V03, `"a"`, `"a"`, "retry", "3"},
		{"legacy version not supported", ErrVersionNotSupported, VLegacy, `"x"`, `"x"`, "", ""},
		{"sub-second retry rounds up to 1", ErrUnavailable.WithRetryAfter(10 * time.Millisecond), V03, `1`, `1`, "retry", "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.err.RPCErrorBody(tc.version, json.RawMessage(tc.id))
			env := decodeObject(t, body)
			if len(env) != 3 || string(env["jsonrpc"]) != `"2.0"` || string(env["id"]) != tc.wantID {
				t.Fatalf("envelope %s, want jsonrpc 2.0, id %s and error only", body, tc.wantID)
			}
			e := decodeObject(t, env["error"])
			if string(e["code"]) != strconv.Itoa(tc.err.Code) {
				t.Errorf("code %s, want %d", e["code"], tc.err.Code)
			}
			var msg string
			if err := json.Unmarshal(e["message"], &msg); err != nil || msg != tc.err.Message {
				t.Errorf("message %s, want %q", e["message"], tc.err.Message)
			}
			switch tc.wantData {
			case "":
				if _, ok := e["data"]; ok {
					t.Errorf("unexpected data %s", e["data"])
				}
			case "retry":
				var d map[string]int
				if err := json.Unmarshal(e["data"], &d); err != nil || strconv.Itoa(d["retryAfterSeconds"]) != tc.retry {
					t.Errorf("data %s, want retryAfterSeconds %s", e["data"], tc.retry)
				}
			case "array":
				var infos []wireErrorInfo
				if err := json.Unmarshal(e["data"], &infos); err != nil {
					t.Fatalf("data %s is not an array of ErrorInfo: %v", e["data"], err)
				}
				if len(infos) != 1 {
					t.Fatalf("data holds %d entries, want 1", len(infos))
				}
				info := infos[0]
				if info.Type != "type.googleapis.com/google.rpc.ErrorInfo" || info.Reason != tc.err.Reason || info.Domain != "a2a-protocol.org" {
					t.Errorf("ErrorInfo %+v", info)
				}
				if info.Metadata["retryAfterSeconds"] != tc.retry {
					t.Errorf("metadata %v, want retryAfterSeconds %q", info.Metadata, tc.retry)
				}
			}
		})
	}
}

func TestRESTErrorBody(t *testing.T) {
	cases := []struct {
		err    *Error
		status string
	}{
		{ErrTaskNotFound, "NOT_FOUND"},
		{ErrMethodNotFound, "NOT_FOUND"},
		{ErrInvalidParams, "INVALID_ARGUMENT"},
		{ErrVersionNotSupported, "INVALID_ARGUMENT"},
		{ErrContentTypeUnsupported, "INVALID_ARGUMENT"},
		{ErrIdempotencyConflict, "INVALID_ARGUMENT"},
		{ErrTaskNotCancelable, "FAILED_PRECONDITION"},
		{ErrInProgress, "FAILED_PRECONDITION"},
		{ErrUnauthenticated, "UNAUTHENTICATED"},
		{ErrPermissionDenied, "PERMISSION_DENIED"},
		{ErrRateLimited, "RESOURCE_EXHAUSTED"},
		{ErrPayloadTooLarge, "RESOURCE_EXHAUSTED"},
		{ErrUnavailable, "UNAVAILABLE"},
		{ErrUpstreamFailed, "UNAVAILABLE"},
		{ErrInvalidAgentResponse, "UNAVAILABLE"},
		{ErrUpstreamTimeout, "DEADLINE_EXCEEDED"},
		{ErrInternal, "INTERNAL"},
	}
	for _, tc := range cases {
		t.Run(tc.err.Reason, func(t *testing.T) {
			body := tc.err.RESTErrorBody(V10)
			top := decodeObject(t, body)
			if len(top) != 1 {
				t.Fatalf("body %s, want only \"error\"", body)
			}
			var st struct {
				Code    int             `json:"code"`
				Status  string          `json:"status"`
				Message string          `json:"message"`
				Details []wireErrorInfo `json:"details"`
			}
			dec := json.NewDecoder(bytes.NewReader(top["error"]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&st); err != nil {
				t.Fatalf("error %s: %v", top["error"], err)
			}
			if st.Code != tc.err.HTTPStatus || st.Status != tc.status || st.Message != tc.err.Message {
				t.Errorf("status %+v, want code %d status %s", st, tc.err.HTTPStatus, tc.status)
			}
			if len(st.Details) != 1 || st.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" ||
				st.Details[0].Reason != tc.err.Reason || st.Details[0].Domain != ErrorDomain {
				t.Errorf("details %+v", st.Details)
			}
		})
	}
}

// Error responses are written by a real server and read by a real client:
// what matters is what crosses the wire.
// serveOnce answers one request over a real HTTP server with write and
// returns the response and its whole body.
func serveOnce(t *testing.T, write func(http.ResponseWriter)) (*http.Response, []byte) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { write(w) }))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestWriteErrors(t *testing.T) {
	cases := []struct {
		name    string
		write   func(http.ResponseWriter)
		status  int
		headers map[string]string
		check   func(t *testing.T, body []byte)
	}{
		{"JSON-RPC errors travel with HTTP 200", func(w http.ResponseWriter) {
			WriteRPCError(w, V10, json.RawMessage(`"req-1"`), ErrTaskNotFound)
		}, http.StatusOK, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, func(t *testing.T, body []byte) {
			t.Helper()
			if string(body) != string(ErrTaskNotFound.RPCErrorBody(V10, json.RawMessage(`"req-1"`))) {
				t.Errorf("body %s", body)
			}
		}},
		{"401 over JSON-RPC is an HTTP 401 with its challenge", func(w http.ResponseWriter) {
			WriteRPCError(w, V03, json.RawMessage(`1`), ErrUnauthenticated.WithHeader("WWW-Authenticate", `Bearer realm="a2a-gateway"`))
		}, http.StatusUnauthorized, map[string]string{"WWW-Authenticate": `Bearer realm="a2a-gateway"`, "Content-Type": "application/json"}, func(t *testing.T, body []byte) {
			t.Helper()
			env := decodeObject(t, body)
			if string(env["id"]) != "1" || len(decodeObject(t, env["error"])) == 0 {
				t.Errorf("body %s", body)
			}
		}},
		{"403 over JSON-RPC stays HTTP 200", func(w http.ResponseWriter) {
			WriteRPCError(w, V10, nil, ErrPermissionDenied)
		}, http.StatusOK, nil, func(t *testing.T, body []byte) {
			t.Helper()
			if string(decodeObject(t, body)["id"]) != "null" {
				t.Errorf("body %s", body)
			}
		}},
		{"Retry-After over JSON-RPC", func(w http.ResponseWriter) {
			WriteRPCError(w, V10, json.RawMessage(`2`), ErrRateLimited.WithRetryAfter(1500*time.Millisecond))
		}, http.StatusOK, map[string]string{"Retry-After": "2"}, nil},
		{"REST error carries its HTTP status", func(w http.ResponseWriter) {
			WriteRESTError(w, V10, ErrTaskNotFound)
		}, http.StatusNotFound, map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}, func(t *testing.T, body []byte) {
			t.Helper()
			if string(body) != string(ErrTaskNotFound.RESTErrorBody(V10)) {
				t.Errorf("body %s", body)
			}
		}},
		{"0.3 REST error is the code and message the 0.3 SDKs read", func(w http.ResponseWriter) {
			WriteRESTError(w, V03, ErrTaskNotFound)
		}, http.StatusNotFound, nil, func(t *testing.T, body []byte) {
			t.Helper()
			if string(body) != `{"code":-32001,"message":"task not found"}` {
				t.Errorf("body %s", body)
			}
		}},
		{"REST Retry-After", func(w http.ResponseWriter) {
			WriteRESTError(w, V10, ErrRateLimited.WithRetryAfter(30*time.Second))
		}, http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}, nil},
		{"REST 401 with challenge", func(w http.ResponseWriter) {
			WriteRESTError(w, V10, ErrUnauthenticated.WithHeader("WWW-Authenticate", "Bearer"))
		}, http.StatusUnauthorized, map[string]string{"WWW-Authenticate": "Bearer"}, nil},
		{"REST version not supported", func(w http.ResponseWriter) {
			WriteRESTError(w, V10, ErrVersionNotSupported)
		}, http.StatusBadRequest, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := serveOnce(t, tc.write)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			for k, v := range tc.headers {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %q for a %d-byte body", cl, len(body))
			}
			if _, ok := resp.Header["Retry-After"]; ok && tc.headers["Retry-After"] == "" {
				t.Errorf("unexpected Retry-After %q", resp.Header.Get("Retry-After"))
			}
			if !json.Valid(body) {
				t.Errorf("body is not JSON: %s", body)
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
}

// TestStreamErrorEvent: the last event of a failing stream is one event
// whatever the message holds, shaped as the SDK servers send it: a data
// event with the JSON-RPC error response, or a REST "error" event with the
// binding's error body.
func TestStreamErrorEvent(t *testing.T) {
	id := json.RawMessage(`"s-1"`)
	e := ErrInvalidAgentResponse.WithMessage("line one\nline two\r\n").WithRetryAfter(time.Second)
	for _, tc := range []struct {
		b     Binding
		v     Version
		event string
		data  []byte
	}{
		{BindingJSONRPC, V10, "", e.RPCErrorBody(V10, id)},
		{BindingJSONRPC, V03, "", e.RPCErrorBody(V03, id)},
		{BindingREST, V10, "error", e.RESTErrorBody(V10)},
		{BindingREST, V03, "error", e.RESTErrorBody(V03)},
	} {
		raw := e.StreamErrorEvent(tc.b, tc.v, id)
		rd := NewSSEReader(bytes.NewReader(raw), len(raw))
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("%v %v: %v: %q", tc.b, tc.v, err, raw)
		}
		if ev.Event != tc.event || !bytes.Equal(ev.Data, tc.data) || !bytes.Equal(ev.Raw, raw) {
			t.Errorf("%v %v: event %q data %s, want %q %s", tc.b, tc.v, ev.Event, ev.Data, tc.event, tc.data)
		}
		if _, err := rd.Next(); err != io.EOF {
			t.Errorf("%v %v: more than one event: %q", tc.b, tc.v, raw)
		}
		if tc.b == BindingJSONRPC {
			if got, perr := ParseRPCEvent(ev.Data); perr != nil || got.Kind != EventError || got.ErrorCode != e.Code {
				t.Errorf("%v: package a2a reads %+v, %v", tc.v, got, perr)
			}
		}
	}
}

// TestWriteRPCStreamError: a refused streaming method is an HTTP 200 event
// stream of one error event, headers included; a 401 stays a JSON 401.
func TestWriteRPCStreamError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		e      *Error
		status int
		ct     string
		header string
		value  string
	}{
		{"not found", ErrTaskNotFound, http.StatusOK, SSEContentType, "Cache-Control", "no-store"},
		{"rate limited", ErrRateLimited.WithRetryAfter(3 * time.Second), http.StatusOK, SSEContentType, "Retry-After", "3"},
		{"denied", ErrPermissionDenied, http.StatusOK, SSEContentType, "Cache-Control", "no-store"},
		{"unauthenticated", ErrUnauthenticated.WithHeader("WWW-Authenticate", "Bearer"), http.StatusUnauthorized, "application/json", "WWW-Authenticate", "Bearer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := serveOnce(t, func(w http.ResponseWriter) { WriteRPCStreamError(w, V03, json.RawMessage(`4`), tc.e) })
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.ct || resp.Header.Get(tc.header) != tc.value {
				t.Fatalf("HTTP %d %v: %s", resp.StatusCode, resp.Header, body)
			}
			want := tc.e.RPCErrorBody(V03, json.RawMessage(`4`))
			if tc.ct == SSEContentType {
				want = tc.e.StreamErrorEvent(BindingJSONRPC, V03, json.RawMessage(`4`))
			}
			if !bytes.Equal(body, want) {
				t.Fatalf("body %q, want %q", body, want)
			}
		})
	}
}
