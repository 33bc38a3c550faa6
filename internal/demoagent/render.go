package demoagent

import (
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// dialect is the wire shape a peer expects: the protocol version and, for
// 0.3 over HTTP+JSON, the protobuf JSON of the 0.3 gRPC definition
// (wrapper members, TASK_STATE_* enums, "content" for message parts).
type dialect struct {
	v     a2a.Version
	proto bool
}

// obj is a JSON object under construction; encoding/json sorts its keys, so
// output is stable.
type obj = map[string]any

// enums reports whether roles and states are spelled as protobuf enums.
func (d dialect) enums() bool { return d.v == a2a.V10 || d.proto }

// wrapped reports whether results carry member-name discriminators.
func (d dialect) wrapped() bool { return d.v == a2a.V10 || d.proto }

// contentType is the media type of unary HTTP+JSON answers.
func (d dialect) contentType() string {
	if d.v == a2a.V10 {
		return a2aJSONContentType
	}
	return jsonContentType
}

func (d dialect) state(s a2a.State) string {
	if d.v == a2a.VLegacy {
		s = legacyState(s)
	}
	if d.proto {
		if s == a2a.StateCanceled {
			return stateCanceledProto03
		}
		return s.Wire(a2a.V10)
	}
	return s.Wire(d.v)
}

// legacyState maps the states 0.2 introduced onto the ones a pre-0.2 client
// knows: a credential is just another input, a refusal a failure.
func legacyState(s a2a.State) a2a.State {
	switch s {
	case a2a.StateAuthRequired:
		return a2a.StateInputRequired
	case a2a.StateRejected:
		return a2a.StateFailed
	}
	return s
}

func (d dialect) role(r role) string {
	switch {
	case d.enums() && r == roleAgent:
		return roleAgentEnum
	case d.enums():
		return roleUserEnum
	case r == roleAgent:
		return roleAgentWord
	}
	return roleUserWord
}

func (d dialect) part(p part) obj {
	switch {
	case d.v == a2a.V10 && p.isData:
		return obj{"data": p.data}
	case d.proto && p.isData:
		return obj{"data": obj{"data": p.data}}
	case d.enums():
		return obj{"text": p.text}
	}
	disc := "kind"
	if d.v == a2a.VLegacy {
		disc = "type"
	}
	if p.isData {
		return obj{disc: kindData, "data": p.data}
	}
	return obj{disc: kindText, "text": p.text}
}

func (d dialect) parts(ps []part) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = d.part(p)
	}
	return out
}

func (d dialect) message(m message) obj {
	out := obj{"role": d.role(m.role)}
	if d.proto {
		out["content"] = d.parts(m.parts)
	} else {
		out["parts"] = d.parts(m.parts)
	}
	if d.v == a2a.VLegacy {
		return out
	}
	out["messageId"] = m.id
	if m.contextID != "" {
		out["contextId"] = m.contextID
	}
	if m.taskID != "" {
		out["taskId"] = m.taskID
	}
	if !d.wrapped() {
		out["kind"] = kindMessage
	}
	return out
}

func (d dialect) status(s status) obj {
	out := obj{"state": d.state(s.state), "timestamp": s.at.UTC().Format(time.RFC3339Nano)}
	if s.msg != nil {
		out["message"] = d.message(*s.msg)
	}
	return out
}

func (d dialect) artifact(a artifact) obj {
	out := obj{"name": a.name, "parts": d.parts(a.parts)}
	if d.v != a2a.VLegacy {
		out["artifactId"] = a.id
	}
	return out
}

func (d dialect) artifacts(as []artifact) []any {
	out := make([]any, len(as))
	for i, a := range as {
		out[i] = d.artifact(a)
	}
	return out
}

// task renders a bare Task: the result of GetTask and CancelTask, and the
// body of a 0.x push notification.
func (d dialect) task(v taskView) obj {
	out := obj{"id": v.id, "status": d.status(v.status)}
	if v.artifacts != nil {
		out["artifacts"] = d.artifacts(v.artifacts)
	}
	history := make([]any, len(v.history))
	for i, m := range v.history {
		history[i] = d.message(m)
	}
	out["history"] = history
	if d.v == a2a.VLegacy {
		out["sessionId"] = v.contextID
		return out
	}
	out["contextId"] = v.contextID
	if !d.wrapped() {
		out["kind"] = kindTask
	}
	return out
}

// taskResult renders a task as a send result or stream event.
func (d dialect) taskResult(v taskView) any {
	if d.wrapped() {
		return obj{"task": d.task(v)}
	}
	return d.task(v)
}

func (d dialect) messageResult(m message) any {
	if d.wrapped() {
		return obj{"message": d.message(m)}
	}
	return d.message(m)
}

// streamTask is the first event of a stream. Legacy streams never carried
// a task, only status and artifact events, so they open with the status.
func (d dialect) streamTask(v taskView) any {
	if d.v == a2a.VLegacy {
		return d.statusEvent(v.id, v.contextID, v.status)
	}
	return d.taskResult(v)
}

func (d dialect) statusEvent(taskID, contextID string, s status) any {
	final := endsStream(s.state)
	switch {
	case d.v == a2a.VLegacy:
		return obj{"id": taskID, "status": d.status(s), "final": final}
	case d.v == a2a.V10:
		return obj{"statusUpdate": obj{"taskId": taskID, "contextId": contextID, "status": d.status(s)}}
	case d.proto:
		return obj{"statusUpdate": obj{"taskId": taskID, "contextId": contextID, "status": d.status(s), "final": final}}
	}
	return obj{"kind": kindStatusUpdate, "taskId": taskID, "contextId": contextID, "status": d.status(s), "final": final}
}

func (d dialect) artifactEvent(taskID, contextID string, a artifact, appendParts, last bool) any {
	if d.v == a2a.VLegacy {
		art := d.artifact(a)
		art["append"], art["lastChunk"] = appendParts, last
		return obj{"id": taskID, "artifact": art}
	}
	ev := obj{"taskId": taskID, "contextId": contextID, "artifact": d.artifact(a), "append": appendParts, "lastChunk": last}
	if d.wrapped() {
		return obj{"artifactUpdate": ev}
	}
	ev["kind"] = kindArtifactUpdate
	return ev
}

func (d dialect) event(taskID, contextID string, ev event) any {
	if ev.kind == eventArtifact {
		return d.artifactEvent(taskID, contextID, ev.artifact, ev.append, ev.last)
	}
	return d.statusEvent(taskID, contextID, ev.status)
}
