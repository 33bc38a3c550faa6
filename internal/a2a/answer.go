package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Agent answers are read as strictly as requests. An agent may answer one
// tenant with another tenant's task; the gateway sees that only if it reads
// every id the caller's SDK may read. So an answer or stream event is
// refused (INVALID_AGENT_RESPONSE) unless it is unambiguous:
//
//   - valid UTF-8 JSON in which no object, at any depth, has a member
//     twice (escapes decoded: "\u0069d" is "id");
//   - the caller's binding: a JSON-RPC envelope (jsonrpc "2.0", the
//     request's id, exactly one of result and error, nothing else) on
//     JSON-RPC, a bare result on REST;
//   - the caller's version and binding: 1.0 and 0.3 REST (protobuf JSON)
//     member-name wrappers (exactly one) or bare tasks, without `kind`;
//     0.3 JSON-RPC `kind` objects or legacy bare shapes, without wrappers;
//   - only the members the protocol defines at the top of a task, message
//     or event, none in another letter case or as a second spelling, and the
//     task and context ids of nested messages (status.message, history)
//     the same as the task's own, and the referenceTaskIds of every
//     message read (Event.ReferenceTaskIDs), at most MaxAnswerReferences;
//   - for the operations that answer with a task, message or event (send,
//     stream, get, cancel, subscribe), one of those.
//
// Agent errors are never relayed as sent: error.data, REST details and the
// agent's message may carry ids the gateway cannot judge. AgentError gives
// the gateway's own error for the agent's code instead.

// ambiguous is the error of an answer the gateway cannot read
// unambiguously; it never quotes the answer's values.
func ambiguous(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotA2A, fmt.Sprintf(format, args...))
}

// MaxAnswerReferences bounds the distinct referenceTaskIds of one answer or
// stream event: each costs an ownership lookup before the answer may be
// relayed.
const MaxAnswerReferences = 64

// The members the protocol defines at the top of each object the gateway
// reads ids from; anything else there is refused.
var (
	// wrapperKeys: 0.3 protobuf JSON also reads a message result as "msg".
	wrapperKeys  = members("task", "message", "statusUpdate", "artifactUpdate", "msg")
	wrapperKinds = [...]EventKind{EventTask, EventMessage, EventStatusUpdate, EventArtifactUpdate, EventMessage}
	// discriminatorKeys are wrapperKeys and kind, read in one pass.
	discriminatorKeys = members("task", "message", "statusUpdate", "artifactUpdate", "msg", "kind")
	// jsonrpcKey finds a member whose presence alone decides.
	jsonrpcKey = members("jsonrpc")
	taskKeys   = members("id", "contextId", "status", "artifacts", "history", "metadata", "kind", "sessionId")
	// messageObjectKeys: [5] is referenceTaskIds, [6] taskId, [7]
	// contextId; 0.3 REST (protobuf JSON) spells parts "content".
	messageObjectKeys = members("messageId", "role", "parts", "metadata", "extensions", "referenceTaskIds", "taskId", "contextId", "kind", "content")
	statusEventKeys   = members("taskId", "contextId", "status", "final", "metadata", "kind", "id")
	artifactEventKeys = members("taskId", "contextId", "artifact", "append", "lastChunk", "metadata", "kind", "id")
	// taskStatusKeys: 0.3 proto JSON names status.message "update".
	taskStatusKeys = members("state", "message", "timestamp", "update")
	listResultKeys = members("tasks", "nextPageToken", "pageSize", "totalSize")
)

// objectShapes are the members of each object readObject reads, with the
// index of kind among them.
var objectShapes = [...]struct {
	keys []member
	kind int
}{
	EventTask:           {taskKeys, 6},
	EventMessage:        {messageObjectKeys, 8},
	EventStatusUpdate:   {statusEventKeys, 5},
	EventArtifactUpdate: {artifactEventKeys, 6},
}

// ReadAnswer reads one agent answer to op (a whole JSON body of a 2xx REST
// answer or any JSON-RPC answer, or one SSE data payload) and returns the
// event and the bare result (nil for an error response, "null" for a null
// result). An error means the answer must not reach the caller.
func ReadAnswer(op *Operation, payload []byte) (Event, []byte, error) {
	list := op.Method == MethodListTasks
	if op.Binding == BindingREST && !answersWithTask(op.Method) && !list && len(bytes.TrimSpace(payload)) == 0 {
		return Event{Kind: EventNone}, payload, nil
	}
	if err := checkJSON(payload); err != nil {
		return Event{}, nil, err
	}
	result := payload
	if op.Binding == BindingJSONRPC {
		var code int
		var err error
		if result, code, err = unwrapAnswer(payload, op.RPCID); err != nil {
			return Event{}, nil, err
		}
		if result == nil {
			return Event{Kind: EventError, ErrorCode: code}, nil, nil
		}
	} else {
		var v [1][]byte
		if seen, err := pickSeen(payload, jsonrpcKey, v[:]); isObject(payload) && (err != nil || seen != 0) {
			return Event{}, nil, ambiguous("a JSON-RPC envelope on the REST binding")
		}
	}
	if list {
		tasks, next, err := readListTasks(protoJSON(op), result)
		if err != nil {
			return Event{}, nil, err
		}
		return Event{Kind: EventNone, Listed: tasks, NextPageToken: next}, result, nil
	}
	if !answersWithTask(op.Method) && !isObject(result) {
		// Push config lists are arrays; a REST delete may answer nothing.
		return Event{Kind: EventNone}, result, nil
	}
	ev, err := readVersioned(protoJSON(op), result)
	if err != nil {
		return Event{}, nil, err
	}
	if ev.Kind == EventNone && answersWithTask(op.Method) {
		return Event{}, nil, ambiguous("no task, message or event in the answer to %s", op.Method)
	}
	return ev, result, nil
}

// protoJSON reports whether op's answers discriminate results by member
// name (1.0, and 0.3 REST, which is the protobuf JSON of 0.3 gRPC) rather
// than by `kind`.
func protoJSON(op *Operation) bool {
	return op.Version == V10 || op.Version == V03 && op.Binding == BindingREST
}

func answersWithTask(m Method) bool {
	switch m {
	case MethodSend, MethodStream, MethodGetTask, MethodCancelTask, MethodSubscribe:
		return true
	}
	return false
}

// unwrapAnswer checks a JSON-RPC envelope against the request's id.
func unwrapAnswer(b []byte, reqID []byte) (result []byte, code int, err error) {
	var v [4][]byte
	seen, err := pickSeen(b, rpcResponseKeys, v[:])
	if err != nil {
		return nil, 0, ambiguous("JSON-RPC envelope: %v", err)
	}
	if err := onlyMembers(b, rpcResponseKeys); err != nil {
		return nil, 0, err
	}
	if s, _ := jsonString(v[0], "jsonrpc"); s != "2.0" {
		return nil, 0, ambiguous(`JSON-RPC envelope without "jsonrpc": "2.0"`)
	}
	if !sameRPCID(v[1], reqID) {
		return nil, 0, ambiguous("JSON-RPC id does not match the request's")
	}
	const hasResult, hasError = 1 << 2, 1 << 3
	switch seen & (hasResult | hasError) {
	case hasResult:
		if v[2] == nil {
			return []byte("null"), 0, nil
		}
		return v[2], 0, nil
	case hasError:
		if code, ok := rpcErrorCode(v[3]); ok {
			return nil, code, nil
		}
		return nil, 0, ambiguous("JSON-RPC error without an integer code")
	}
	return nil, 0, ambiguous("JSON-RPC envelope needs exactly one of result and error")
}

// sameRPCID compares an answer's id with the request's: strings by value,
// numbers and null by their text.
func sameRPCID(got, want []byte) bool {
	want = bytes.TrimSpace(want)
	if len(want) == 0 {
		want = []byte("null")
	}
	if got == nil {
		got = []byte("null")
	}
	if len(got) > 0 && got[0] == '"' && want[0] == '"' {
		g, err1 := jsonString(got, "id")
		w, err2 := jsonString(want, "id")
		return err1 == nil && err2 == nil && g == w
	}
	return bytes.Equal(got, want)
}

func rpcErrorCode(obj []byte) (int, bool) {
	if !isObject(obj) {
		return 0, false
	}
	var c [1][]byte
	if pick(obj, errorKeys, c[:]) != nil {
		return 0, false
	}
	return jsonInt(c[0])
}

// jsonInt reads a JSON integer of at most 9 digits.
func jsonInt(raw []byte) (int, bool) {
	neg := len(raw) > 0 && raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	if len(raw) == 0 || len(raw) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// readVersioned reads a bare result in the shapes of one dialect only:
// member-name wrappers with proto, `kind` objects without.
func readVersioned(proto bool, b []byte) (Event, error) {
	if !isObject(b) {
		if string(b) == "null" {
			return Event{Kind: EventNone}, nil
		}
		return Event{}, ambiguous("result is not an object")
	}
	var w [6][]byte
	seen, err := pickSeen(b, discriminatorKeys, w[:])
	if err != nil {
		return Event{}, ambiguous("result: %v", err)
	}
	wrapped, hasKind := seen&(1<<5-1), seen&(1<<5)
	switch {
	case wrapped != 0 && !proto:
		return Event{}, ambiguous("a member-name result on a call answered with kind")
	case hasKind != 0 && proto:
		return Event{}, ambiguous("a kind result on a call answered with member names")
	case wrapped != 0:
		if wrapped&(wrapped-1) != 0 {
			return Event{}, ambiguous("more than one result member")
		}
		if err := onlyMembers(b, wrapperKeys); err != nil {
			return Event{}, err
		}
		for i, inner := range w[:5] {
			if inner != nil {
				return readObject(true, wrapperKinds[i], inner)
			}
		}
		return Event{}, ambiguous("null result member")
	}
	ev, err := parseResult(b, 0)
	if err != nil {
		return Event{}, ambiguous("result: %v", err)
	}
	if ev.Kind == EventNone {
		return ev, nil
	}
	if proto && ev.Kind != EventTask {
		// Member-name dialects answer with a bare object only for GetTask
		// and CancelTask.
		return Event{}, ambiguous("a bare %s where results are wrapped", ev.Kind)
	}
	return readObject(proto, ev.Kind, b)
}

// readObject reads a task, message or event object strictly.
func readObject(proto bool, kind EventKind, b []byte) (Event, error) {
	if !isObject(b) {
		return Event{}, ambiguous("%s is not an object", kind)
	}
	shape := objectShapes[kind]
	if err := onlyMembers(b, shape.keys); err != nil {
		return Event{}, err
	}
	var raw [10][]byte
	seen, err := pickSeen(b, shape.keys, raw[:len(shape.keys)])
	if err != nil {
		return Event{}, ambiguous("%s: %v", kind, err)
	}
	if proto && seen&(1<<shape.kind) != 0 {
		return Event{}, ambiguous("a kind inside a member-name result")
	}
	var ev Event
	switch kind {
	case EventTask:
		if raw[1] != nil && raw[7] != nil {
			return Event{}, ambiguous("task with both contextId and sessionId")
		}
		ev, err = readTask(raw[0], raw[1], raw[2], raw[7])
		if err == nil {
			err = sameIDsIn(&ev, raw[4], true)
		}
	case EventMessage:
		ev, err = readRefs(EventMessage, raw[6], raw[7])
		if err == nil {
			err = ev.addReferences(raw[5])
		}
	case EventStatusUpdate:
		task := raw[0]
		if task == nil {
			task = raw[6] // legacy {id, status, final}
		} else if raw[6] != nil {
			return Event{}, ambiguous("status update with both taskId and id")
		}
		ev, err = readStatus(task, raw[1], raw[2], raw[3])
	default:
		task := raw[0]
		if task == nil {
			task = raw[7]
		} else if raw[7] != nil {
			return Event{}, ambiguous("artifact update with both taskId and id")
		}
		ev, err = readRefs(EventArtifactUpdate, task, raw[1])
	}
	if err != nil {
		return Event{}, ambiguous("%s: %v", kind, err)
	}
	if kind == EventTask || kind == EventStatusUpdate {
		if err := statusMessageIDs(&ev, raw[2]); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

// statusMessageIDs checks the message of a task status.
func statusMessageIDs(ev *Event, status []byte) error {
	if status == nil {
		return nil
	}
	if !isObject(status) {
		return ambiguous("status is not an object")
	}
	if err := onlyMembers(status, taskStatusKeys); err != nil {
		return err
	}
	var s [4][]byte
	if err := pick(status, taskStatusKeys, s[:]); err != nil {
		return ambiguous("status: %v", err)
	}
	if s[1] != nil && s[3] != nil {
		return ambiguous("status with both message and update")
	}
	msg := s[1]
	if msg == nil {
		msg = s[3]
	}
	return sameIDsIn(ev, msg, false)
}

// sameIDsIn checks that the message (or, with list, each message of the
// array) names no task or context but ev's, and adds its references to
// ev: a nested id is one more place a caller may read an id from.
func sameIDsIn(ev *Event, raw []byte, list bool) error {
	if raw == nil {
		return nil
	}
	if !list {
		return sameIDs(ev, raw)
	}
	if raw[0] != '[' {
		return ambiguous("history is not an array")
	}
	for it := elements(raw); ; {
		m := it.next()
		if m == nil {
			return nil
		}
		if err := sameIDs(ev, m); err != nil {
			return err
		}
	}
}

func sameIDs(ev *Event, msg []byte) error {
	if !isObject(msg) {
		return ambiguous("message is not an object")
	}
	var m [10][]byte
	if err := pick(msg, messageObjectKeys, m[:]); err != nil {
		return ambiguous("nested message: %v", err)
	}
	t, err1 := jsonString(m[6], "taskId")
	c, err2 := jsonString(m[7], "contextId")
	if err1 != nil || err2 != nil || t != "" && t != ev.TaskID || c != "" && c != ev.ContextID {
		return ambiguous("a nested message names another task or context")
	}
	if err := ev.addReferences(m[5]); err != nil {
		return ambiguous("nested message: %v", err)
	}
	return nil
}

// addReferences adds the distinct ids of a message's referenceTaskIds to
// ev, refusing anything but an array of task ids and more than
// MaxAnswerReferences in all. It allocates only for an answer that has
// references.
func (ev *Event) addReferences(raw []byte) error {
	if raw == nil {
		return nil
	}
	if raw[0] != '[' {
		return errors.New("referenceTaskIds is not an array")
	}
	for it := elements(raw); ; {
		r := it.next()
		if r == nil {
			return nil
		}
		id, err := jsonString(r, "referenceTaskIds")
		if err != nil || id == "" || len(id) > MaxIDLength {
			return errors.New("referenceTaskIds holds something other than a task id")
		}
		if slices.Contains(ev.ReferenceTaskIDs, id) {
			continue
		}
		if len(ev.ReferenceTaskIDs) == MaxAnswerReferences {
			return fmt.Errorf("more than %d referenceTaskIds", MaxAnswerReferences)
		}
		ev.ReferenceTaskIDs = append(ev.ReferenceTaskIDs, id)
	}
}

// ListedTask is one task of a ListTasks page: its bytes as the agent sent
// them, its id, and the tasks its messages reference.
type ListedTask struct {
	Raw        json.RawMessage
	ID         string
	References []string
}

// readListTasks reads a ListTasks result (without its JSON-RPC envelope,
// checked by checkJSON): the tasks, each read as strictly as a GetTask
// answer, and the agent's next page token.
func readListTasks(proto bool, result []byte) (tasks []ListedTask, next string, err error) {
	if !isObject(result) {
		return nil, "", ambiguous("ListTasks result is not an object")
	}
	if err := onlyMembers(result, listResultKeys); err != nil {
		return nil, "", err
	}
	var raw [4][]byte
	if err := pick(result, listResultKeys, raw[:]); err != nil {
		return nil, "", ambiguous("ListTasks result: %v", err)
	}
	if next, err = jsonString(raw[1], "nextPageToken"); err != nil {
		return nil, "", ambiguous("ListTasks result: %v", err)
	}
	if raw[0] == nil {
		return nil, next, nil
	}
	if raw[0][0] != '[' {
		return nil, "", ambiguous("ListTasks tasks is not an array")
	}
	for it := elements(raw[0]); ; {
		t := it.next()
		if t == nil {
			break
		}
		var w [5][]byte
		if seen, _ := pickSeen(t, wrapperKeys, w[:]); seen != 0 {
			return nil, "", ambiguous("ListTasks lists a wrapped result")
		}
		ev, err := readVersioned(proto, t)
		if err != nil {
			return nil, "", err
		}
		if ev.Kind != EventTask || ev.TaskID == "" {
			return nil, "", ambiguous("ListTasks lists something other than a task")
		}
		tasks = append(tasks, ListedTask{Raw: t, ID: ev.TaskID, References: ev.ReferenceTaskIDs})
	}
	return tasks, next, nil
}

// AgentError is the gateway's error for an error the agent answered with
// code (a JSON-RPC code): the protocol's error with the gateway's message
// when the code is one of the protocol's, else INTERNAL. Nothing of the
// agent's message or data is kept, so an agent's TaskNotFound reads the
// same as the gateway's own.
func AgentError(code int) *Error {
	for _, e := range agentErrors {
		if e.Code == code {
			return e
		}
	}
	return agentInternal
}

var agentInternal = ErrInternal.WithMessage("the agent reported an error")

// AgentCallError is the error of a call the gateway makes itself (never
// relayed to a caller as it is) that the agent answered with the JSON-RPC
// error code: the code is kept, so the gateway can tell TaskNotFound from
// other refusals.
func AgentCallError(code int, message string) *Error {
	return &Error{Code: code, Reason: "AGENT_ERROR", HTTPStatus: http.StatusBadGateway, Message: message}
}

// agentErrors are the protocol's errors an agent may answer with; the
// gateway's own codes are not among them.
var agentErrors = []*Error{
	ErrParse, ErrInvalidRequest, ErrMethodNotFound, ErrInvalidParams, ErrInternal, ErrTaskNotFound,
	ErrTaskNotCancelable, ErrPushNotSupported, ErrUnsupportedOperation, ErrContentTypeUnsupported,
	ErrInvalidAgentResponse, ErrExtendedCardNotConfigured, ErrVersionNotSupported,
}

// restErrorKeys and errorInfoKeys read a REST error answer.
var (
	restErrorKeys   = members("error", "code")
	restStatusKeys  = members("details")
	errorInfoKeys   = members("@type", "reason", "domain")
	errorInfoTypeV1 = "type.googleapis.com/google.rpc.ErrorInfo"
)

// ReadRESTError reads the code of a REST error answer of version v: 1.0
// the reason of the google.rpc.Status ErrorInfo, 0.3 the JSON-RPC code;
// code 0, which AgentError makes INTERNAL, when it names none the gateway
// knows. An answer that is not such an error, or not unambiguously, is
// refused like any other.
func ReadRESTError(v Version, body []byte) (Event, error) {
	ev := Event{Kind: EventError}
	if err := checkJSON(body); err != nil {
		return Event{}, err
	}
	if !isObject(body) {
		return Event{}, ambiguous("REST error is not an object")
	}
	var top [2][]byte
	if err := pick(body, restErrorKeys, top[:]); err != nil {
		return Event{}, ambiguous("REST error: %v", err)
	}
	if v != V10 {
		code, ok := jsonInt(top[1])
		if !ok {
			return Event{}, ambiguous("REST error without an integer code")
		}
		ev.ErrorCode = code
		return ev, nil
	}
	var d [1][]byte
	if top[0] == nil || !isObject(top[0]) {
		return Event{}, ambiguous("REST error without a google.rpc.Status")
	}
	if err := pick(top[0], restStatusKeys, d[:]); err != nil {
		return Event{}, ambiguous("REST error: %v", err)
	}
	if d[0] == nil {
		return ev, nil
	}
	if d[0][0] != '[' {
		return Event{}, ambiguous("REST error details is not an array")
	}
	for it := elements(d[0]); ; {
		item := it.next()
		if item == nil {
			return ev, nil
		}
		var info [3][]byte
		if !isObject(item) {
			return Event{}, ambiguous("REST error detail is not an object")
		}
		if err := pick(item, errorInfoKeys, info[:]); err != nil {
			return Event{}, ambiguous("REST error detail: %v", err)
		}
		typ, _ := jsonString(info[0], "@type")
		reason, _ := jsonString(info[1], "reason")
		domain, _ := jsonString(info[2], "domain")
		if typ != errorInfoTypeV1 || domain != ErrorDomain {
			continue
		}
		for _, e := range agentErrors {
			if e.Reason == reason {
				ev.ErrorCode = e.Code
				return ev, nil
			}
		}
	}
}

// onlyMembers refuses an object with a member not in keys (by name or
// alias); the object must already have been checked by checkJSON.
func onlyMembers(b []byte, keys []member) error {
	it := memberIter{b: b, i: skipSpace(b, skipSpace(b, 0)+1)}
	for {
		raw, _, ok := it.next()
		if !ok {
			return nil
		}
		if bytes.IndexByte(raw, '\\') >= 0 {
			name, _ := memberName(raw)
			raw = []byte(name)
		}
		known := false
		for _, k := range keys {
			// string(raw) in a comparison makes no copy.
			if string(raw) == k.name || string(raw) == k.alias {
				known = true
				break
			}
		}
		if !known {
			return ambiguous("unexpected member %q", clipName(string(raw)))
		}
	}
}

func clipName(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// memberIter walks the members of an object checkJSON accepted.
type memberIter struct {
	b []byte
	i int
}

func (it *memberIter) next() (rawName, value []byte, ok bool) {
	b := it.b
	if it.i >= len(b) || b[it.i] != '"' {
		return nil, nil, false
	}
	keyEnd := stringEnd(b, it.i)
	if keyEnd < 0 {
		return nil, nil, false
	}
	rawName = b[it.i+1 : keyEnd-1]
	start := skipSpace(b, skipSpace(b, keyEnd)+1)
	end := valueEnd(b, start)
	if end < 0 {
		return nil, nil, false
	}
	value = b[start:end]
	it.i = skipSpace(b, end)
	if it.i < len(b) && b[it.i] == ',' {
		it.i = skipSpace(b, it.i+1)
	}
	return rawName, value, true
}

// elemIter walks the elements of an array checkJSON accepted.
type elemIter struct {
	b []byte
	i int
}

func elements(array []byte) elemIter {
	return elemIter{b: array, i: skipSpace(array, skipSpace(array, 0)+1)}
}

func (it *elemIter) next() []byte {
	b := it.b
	if it.i >= len(b) || b[it.i] == ']' {
		return nil
	}
	end := valueEnd(b, it.i)
	if end < 0 {
		return nil
	}
	v := b[it.i:end]
	it.i = skipSpace(b, end)
	if it.i < len(b) && b[it.i] == ',' {
		it.i = skipSpace(b, it.i+1)
	}
	return v
}
