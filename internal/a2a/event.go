package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
)

// EventKind says what a result or stream event carries.
type EventKind uint8

const (
	EventNone EventKind = iota // a result with no task information (a push config, a card)
	EventTask
	EventMessage
	EventStatusUpdate
	EventArtifactUpdate
	EventError // a JSON-RPC error response
)

var eventKindNames = [...]string{"none", "task", "message", "status_update", "artifact_update", "error"}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "none"
}

// Event is what the gateway reads from one response or stream event: enough
// to record ownership, follow the lifecycle and relay, nothing more.
type Event struct {
	Kind      EventKind
	TaskID    string
	ContextID string
	// State is set for tasks and status updates.
	State State
	// Final is the 0.3 end-of-stream flag.
	Final bool
	// ErrorCode is the JSON-RPC error code of an EventError.
	ErrorCode int
	// ReferenceTaskIDs are the distinct referenceTaskIds of the messages
	// ReadAnswer read in the answer (a message result, status.message,
	// history): task ids the caller can read, so each must be the
	// caller's. Nil when there are none.
	ReferenceTaskIDs []string
	// Listed and NextPageToken are what ReadAnswer read of a ListTasks
	// page: its tasks, each read as strictly as a GetTask answer, and the
	// agent's token for the page after it.
	Listed        []ListedTask
	NextPageToken string
}

var (
	rpcResponseKeys = members("jsonrpc", "id", "result", "error")
	resultKeys      = members("kind", "task", "message", "msg", "statusUpdate", "artifactUpdate", "id", "taskId", "contextId", "status", "final", "artifact", "sessionId", "messageId")
	statusKeys      = members("state")
	errorKeys       = members("code")
)

// ErrNotA2A means a payload is valid JSON but not an A2A result.
var ErrNotA2A = errors.New("not an A2A result")

// UnwrapRPC splits a JSON-RPC response into its result or its error code.
//
// A null result (a 0.3 push-config delete answers so) comes back as the
// bytes "null".
func UnwrapRPC(b []byte) (result []byte, errCode int, err error) {
	if err := checkJSON(b); err != nil {
		return nil, 0, err
	}
	var v [4][]byte
	seen, err := pickSeen(b, rpcResponseKeys, v[:])
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrNotA2A, err)
	}
	if v[3] != nil {
		var c [1][]byte
		if err := pick(v[3], errorKeys, c[:]); err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrNotA2A, err)
		}
		var code int
		if json.Unmarshal(c[0], &code) != nil {
			return nil, 0, ErrNotA2A
		}
		return nil, code, nil
	}
	if v[2] == nil {
		if seen&(1<<2) == 0 {
			return nil, 0, ErrNotA2A
		}
		return []byte("null"), 0, nil
	}
	return v[2], 0, nil
}

// ParseRPCEvent reads a JSON-RPC response or SSE data payload.
func ParseRPCEvent(b []byte) (Event, error) {
	ev, _, err := ParseRPCEventResult(b)
	return ev, err
}

// ParseRPCEventResult is ParseRPCEvent that also returns the result it
// read, so a caller that needs the bare result does not unwrap it again:
// nil for an error response, "null" for a null result.
func ParseRPCEventResult(b []byte) (Event, []byte, error) {
	res, code, err := UnwrapRPC(b)
	if err != nil {
		return Event{}, nil, err
	}
	if res == nil {
		return Event{Kind: EventError, ErrorCode: code}, nil, nil
	}
	if string(res) == "null" {
		return Event{Kind: EventNone}, res, nil
	}
	ev, err := parseResult(res, 0)
	return ev, res, err
}

// ParseResult reads a bare result: a REST response body or SSE payload, or
// a JSON-RPC result. Every dialect's shape is recognised: 0.3 `kind`
// discriminators, 1.0 member-name wrappers, bare tasks, legacy events.
// A payload with a member twice at any depth is refused; ReadAnswer is the
// stricter reader for answers to a known request.
func ParseResult(b []byte) (Event, error) {
	if err := checkJSON(b); err != nil {
		return Event{}, err
	}
	return parseResult(b, 0)
}

// ParseResultShape is ParseResult that also tells the version whose shape
// the result has, for converting it: 0.3 when it carries its kind;
// anything else converts as 1.0 does.
func ParseResultShape(b []byte) (Event, Version, error) {
	if err := checkJSON(b); err != nil {
		return Event{}, V10, err
	}
	var v [14][]byte
	ev, err := parseResultIn(b, 0, &v)
	if kind, _ := jsonString(v[0], "kind"); kind != "" {
		return ev, V03, err
	}
	return ev, V10, err
}

func parseResult(b []byte, depth int) (Event, error) {
	var v [14][]byte
	return parseResultIn(b, depth, &v)
}

// parseResultIn is parseResult reading b's resultKeys into v.
func parseResultIn(b []byte, depth int, v *[14][]byte) (Event, error) {
	if !isObject(b) || depth > 1 {
		return Event{}, ErrNotA2A
	}
	if err := pick(b, resultKeys, v[:]); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrNotA2A, err)
	}
	if kind, _ := jsonString(v[0], "kind"); kind != "" {
		return parseTagged(kind, *v)
	}
	switch {
	case v[1] != nil:
		return parseWrapped(v[1], EventTask, depth)
	case v[2] != nil:
		return parseWrapped(v[2], EventMessage, depth)
	case v[3] != nil:
		return parseWrapped(v[3], EventMessage, depth)
	case v[4] != nil:
		return parseWrapped(v[4], EventStatusUpdate, depth)
	case v[5] != nil:
		return parseWrapped(v[5], EventArtifactUpdate, depth)
	case v[6] != nil && v[9] != nil && v[10] != nil:
		// Legacy status event: {id, status, final}.
		return readStatus(v[6], v[12], v[9], v[10])
	case v[6] != nil && v[9] != nil:
		return readTask(v[6], v[8], v[9], v[12])
	case v[6] != nil && v[11] != nil:
		// Legacy artifact event: {id, artifact}.
		return readRefs(EventArtifactUpdate, v[6], v[12])
	case v[13] != nil:
		return readRefs(EventMessage, v[7], v[8])
	}
	return Event{Kind: EventNone}, nil
}

// parseTagged reads a result by its kind: v are its resultKeys.
func parseTagged(kind string, v [14][]byte) (Event, error) {
	switch kind {
	case "task":
		return readTask(v[6], v[8], v[9], v[12])
	case "message":
		return readRefs(EventMessage, v[7], v[8])
	case "status-update":
		return readStatus(v[7], v[8], v[9], v[10])
	case "artifact-update":
		return readRefs(EventArtifactUpdate, v[7], v[8])
	}
	return Event{}, ErrNotA2A
}

// parseWrapped reads the inside of a 1.0 wrapper ({"task": {...}}).
func parseWrapped(inner []byte, kind EventKind, depth int) (Event, error) {
	if !isObject(inner) {
		return Event{}, ErrNotA2A
	}
	var v [14][]byte
	if err := pick(inner, resultKeys, v[:]); err != nil {
		return Event{}, err
	}
	switch kind {
	case EventTask:
		return readTask(v[6], v[8], v[9], v[12])
	case EventStatusUpdate:
		return readStatus(v[7], v[8], v[9], v[10])
	default:
		return readRefs(kind, v[7], v[8])
	}
}

func readTask(id, ctx, status, session []byte) (Event, error) {
	ev, err := readRefs(EventTask, id, ctx)
	if err != nil {
		return ev, err
	}
	if ev.ContextID == "" {
		ev.ContextID, _ = jsonString(session, "sessionId")
	}
	ev.State, err = readState(status)
	return ev, err
}

func readStatus(task, ctx, status, final []byte) (Event, error) {
	ev, err := readRefs(EventStatusUpdate, task, ctx)
	if err != nil {
		return ev, err
	}
	ev.Final = string(final) == "true"
	ev.State, err = readState(status)
	return ev, err
}

func readRefs(kind EventKind, task, ctx []byte) (Event, error) {
	t, err1 := jsonString(task, "taskId")
	c, err2 := jsonString(ctx, "contextId")
	if err1 != nil || err2 != nil || len(t) > MaxIDLength || len(c) > MaxIDLength {
		return Event{}, ErrNotA2A
	}
	return Event{Kind: kind, TaskID: t, ContextID: c}, nil
}

func readState(status []byte) (State, error) {
	if status == nil || !isObject(status) {
		return StateUnknown, nil
	}
	var v [1][]byte
	if err := pick(status, statusKeys, v[:]); err != nil {
		return StateUnknown, err
	}
	if v[0] != nil && v[0][0] >= '0' && v[0][0] <= '9' {
		// Protobuf JSON may spell enums as numbers.
		var n int
		if json.Unmarshal(v[0], &n) == nil && n >= 0 && n < len(protoStates) {
			return protoStates[n], nil
		}
		return StateUnknown, nil
	}
	s, err := jsonString(v[0], "status.state")
	if err != nil {
		return StateUnknown, ErrNotA2A
	}
	return ParseState(s), nil
}

// protoStates maps the 1.0 TaskState enum numbers to states.
var protoStates = [...]State{
	0: StateUnknown, 1: StateSubmitted, 2: StateWorking, 3: StateCompleted, 4: StateFailed,
	5: StateCanceled, 6: StateInputRequired, 7: StateRejected, 8: StateAuthRequired,
}
