package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
)

// This file translates task events between protocol versions, for
// notifications whose consumer registered in another version than the
// agent speaks. Objects are converted member by member; members this file
// does not know (metadata, extensions, future fields) are kept as they are.
//
// The two shapes:
//   - 1.0: a StreamResponse wraps the object in a member naming its kind
//     ({"task": ...}, {"statusUpdate": ...}); states are TASK_STATE_*,
//     roles ROLE_*; a part is {"text"}, {"raw"}, {"url"} or {"data"} with
//     optional "filename" and "mediaType"; status updates have no "final".
//   - 0.3: the object carries its kind ("kind": "task", "status-update",
//     "artifact-update", "message"); states and roles are lower-case words;
//     a part is {"kind": "text"|"file"|"data", ...} with files as
//     {"file": {"bytes"|"uri", "name", "mimeType"}}; the last status update
//     of a stream has "final": true.
//
// Input may also be 0.3 protobuf JSON (the 0.3 HTTP+JSON binding: "content"
// for parts, TASK_STATE_* enums, {"file": {"fileWithUri"}}) or the legacy
// dialect ("type" discriminators, "sessionId").

// Wire spellings of message roles, from the bridging tables.
var (
	roleUser, roleAgent         = roleNames[dialect03-1][1], roleNames[dialect03-1][2]
	roleUserEnum, roleAgentEnum = roleNames[dialect10-1][1], roleNames[dialect10-1][2]
)

// The 1.0 StreamResponse members and the 0.3 kind values of each event
// kind, as the bridging tables spell them.
var streamMembers, kindValues = eventSpellings()

// eventObjects are the bridge's objects of the event kinds.
var eventObjects = map[EventKind]objectKind{
	EventTask: objTask, EventMessage: objMessage, EventStatusUpdate: objStatusUpdate, EventArtifactUpdate: objArtifactUpdate,
}

func eventSpellings() (members, kinds map[EventKind]string) {
	members, kinds = map[EventKind]string{}, map[EventKind]string{}
	for ek, k := range eventObjects {
		for _, r := range resultMembers {
			if r.kind == k {
				members[ek] = r.names[dialect10-1]
			}
		}
		kinds[ek] = objectTables[k].kind
	}
	return members, kinds
}

// ContentType is the media type of a notification body for a consumer of
// version v: 1.0 asks for application/a2a+json, 0.3 sends JSON.
func ContentType(v Version) string {
	if v == V10 {
		return "application/a2a+json"
	}
	return "application/json"
}

// ConvertEvent renders payload, a result object of version from that holds
// an event of kind k (a 1.0 StreamResponse or bare object, a 0.3 or legacy
// kind-tagged object), as version to expects it: for 1.0 a StreamResponse,
// for 0.3 the kind-tagged object. A payload already in the target shape is
// returned as it is.
func ConvertEvent(payload []byte, from Version, k EventKind, to Version) ([]byte, error) {
	if _, ok := streamMembers[k]; !ok {
		return nil, fmt.Errorf("%w: a %s event cannot be converted", ErrNotA2A, k)
	}
	if from == V10 && to == V10 && isStreamResponse(payload) {
		return payload, nil
	}
	v, err := decodeJSON(payload)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotA2A
	}
	inner, kind, wrapped := unwrapEvent(obj, k)
	if inner == nil {
		return nil, ErrNotA2A
	}
	switch {
	case to == V10 && wrapped:
		if from == V10 {
			return payload, nil
		}
	case to != V10 && !wrapped:
		if _, tagged := obj["kind"]; tagged && from != V10 {
			return payload, nil
		}
	}
	norm := toV10(inner, kind, from)
	if to == V10 {
		return json.Marshal(map[string]any{streamMembers[kind]: norm})
	}
	return json.Marshal(toV03(norm, kind))
}

// EventObject returns the bare 1.0 object of an event of kind k inside
// payload, of version from in any shape ConvertEvent reads: the member of
// a StreamResponse, without the wrapper.
func EventObject(payload []byte, from Version, k EventKind) (map[string]any, error) {
	v, err := decodeJSON(payload)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotA2A
	}
	inner, kind, _ := unwrapEvent(obj, k)
	if inner == nil || kind != k {
		return nil, ErrNotA2A
	}
	return toV10(inner, kind, from), nil
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotA2A, err)
	}
	if dec.More() {
		return nil, ErrNotA2A
	}
	return v, nil
}

// isStreamResponse reports whether payload is a 1.0 StreamResponse, one
// member naming an event kind whose value is an object: what ConvertEvent
// returns as it is for a 1.0 consumer. It validates the text without
// building the objects inside, which the relay's 1.0 events, already in
// that shape, would only have decoded to be thrown away. Anything it is
// unsure of (a member twice, a name that differs only in case) is left to
// the full reading.
func isStreamResponse(payload []byte) bool {
	if checkJSON(payload) != nil {
		return false
	}
	var out [8][]byte
	seen, err := walk(payload, streamResponseMembers, out[:len(streamResponseMembers)], knownOnly)
	if err != nil || bits.OnesCount64(seen) != 1 {
		return false
	}
	for _, raw := range out {
		if raw != nil {
			return isObject(raw)
		}
	}
	return false
}

// streamResponseMembers are the StreamResponse members, spelled exactly:
// unwrapEvent takes no other spelling.
var streamResponseMembers = func() []member {
	var out []member
	for _, m := range streamMembers {
		out = append(out, member{name: m, alias: m})
	}
	return out
}()

// unwrapEvent finds the event object and its kind: inside a 1.0 wrapper
// (wrapped), by its 0.3 kind, or k for a bare object.
func unwrapEvent(obj map[string]any, k EventKind) (inner map[string]any, kind EventKind, wrapped bool) {
	if kv, ok := obj["kind"].(string); ok {
		for ek, s := range kindValues {
			if s == kv {
				return obj, ek, false
			}
		}
		return nil, 0, false
	}
	if len(obj) == 1 {
		for ek, m := range streamMembers {
			if in, ok := obj[m].(map[string]any); ok {
				return in, ek, true
			}
		}
	}
	return obj, k, false
}

// toV10 converts an event object of kind to the 1.0 shape, in place.
func toV10(o map[string]any, kind EventKind, from Version) map[string]any {
	delete(o, "kind")
	switch kind {
	case EventTask:
		if _, ok := o["contextId"]; !ok {
			if s, ok := o["sessionId"]; ok {
				o["contextId"] = s
			}
		}
		delete(o, "sessionId")
		convertMember(o, "status", func(s map[string]any) { statusToV10(s, from) })
		convertList(o, "artifacts", func(a map[string]any) { artifactToV10(a, from) })
		convertList(o, "history", func(m map[string]any) { messageToV10(m, from) })
	case EventMessage:
		messageToV10(o, from)
	case EventStatusUpdate:
		legacyTaskID(o)
		delete(o, "final")
		convertMember(o, "status", func(s map[string]any) { statusToV10(s, from) })
	case EventArtifactUpdate:
		legacyTaskID(o)
		convertMember(o, "artifact", func(a map[string]any) { artifactToV10(a, from) })
	}
	return o
}

// legacyTaskID reads the legacy events' "id" as the task id.
func legacyTaskID(o map[string]any) {
	if _, ok := o["taskId"]; !ok {
		if id, ok := o["id"]; ok {
			o["taskId"] = id
			delete(o, "id")
		}
	}
}

func statusToV10(s map[string]any, from Version) {
	if st, ok := s["state"]; ok {
		s["state"] = stateOf(st).Wire(V10)
	}
	convertMember(s, "message", func(m map[string]any) { messageToV10(m, from) })
}

// stateOf reads a state spelled in any dialect, or as a 1.0 enum number.
func stateOf(v any) State {
	switch st := v.(type) {
	case string:
		return ParseState(st)
	case json.Number:
		if n, err := st.Int64(); err == nil && n >= 0 && n < int64(len(protoStates)) {
			return protoStates[n]
		}
	}
	return StateUnknown
}

func messageToV10(m map[string]any, from Version) {
	delete(m, "kind")
	switch r := m["role"].(type) {
	case string:
		switch r {
		case roleUser, roleUserEnum:
			m["role"] = roleUserEnum
		case roleAgent, roleAgentEnum:
			m["role"] = roleAgentEnum
		}
	case json.Number:
		switch r.String() {
		case "1":
			m["role"] = roleUserEnum
		case "2":
			m["role"] = roleAgentEnum
		}
	}
	if _, ok := m["parts"]; !ok {
		if c, ok := m["content"]; ok {
			m["parts"] = c
		}
	}
	delete(m, "content")
	convertList(m, "parts", func(p map[string]any) { partToV10(p, from) })
}

func artifactToV10(a map[string]any, from Version) {
	delete(a, "kind")
	convertList(a, "parts", func(p map[string]any) { partToV10(p, from) })
}

func partToV10(p map[string]any, from Version) {
	kind, _ := p["kind"].(string)
	if kind == "" {
		kind, _ = p["type"].(string)
	}
	delete(p, "kind")
	delete(p, "type")
	if f, ok := p["file"].(map[string]any); ok && (kind == "file" || kind == "") {
		delete(p, "file")
		for _, src := range []string{"bytes", "fileWithBytes"} {
			if v, ok := f[src]; ok {
				p["raw"] = v
			}
		}
		for _, src := range []string{"uri", "fileWithUri"} {
			if v, ok := f[src]; ok {
				p["url"] = v
			}
		}
		if v, ok := f["name"]; ok {
			p["filename"] = v
		}
		if v, ok := f["mimeType"]; ok {
			p["mediaType"] = v
		}
		return
	}
	// 0.3 protobuf JSON wraps a data part's object once more.
	if d, ok := p["data"].(map[string]any); ok && kind == "" && from != V10 && len(d) == 1 {
		if inner, ok := d["data"]; ok {
			p["data"] = inner
		}
	}
}

// toV03 converts a 1.0 event object of kind to the 0.3 shape, in place.
func toV03(o map[string]any, kind EventKind) map[string]any {
	o["kind"] = kindValues[kind]
	switch kind {
	case EventTask:
		convertMember(o, "status", statusToV03)
		convertList(o, "artifacts", artifactToV03)
		convertList(o, "history", messageToV03)
	case EventMessage:
		messageToV03(o)
	case EventStatusUpdate:
		st := StateUnknown
		if s, ok := o["status"].(map[string]any); ok {
			st = stateOf(s["state"])
		}
		o["final"] = st.Terminal() || st.Interrupted()
		convertMember(o, "status", statusToV03)
	case EventArtifactUpdate:
		convertMember(o, "artifact", artifactToV03)
	}
	return o
}

func statusToV03(s map[string]any) {
	if st, ok := s["state"]; ok {
		s["state"] = stateOf(st).Wire(V03)
	}
	convertMember(s, "message", messageToV03)
}

func messageToV03(m map[string]any) {
	m["kind"] = kindValues[EventMessage]
	switch m["role"] {
	case roleUserEnum:
		m["role"] = roleUser
	case roleAgentEnum:
		m["role"] = roleAgent
	}
	convertList(m, "parts", partToV03)
}

func artifactToV03(a map[string]any) {
	convertList(a, "parts", partToV03)
}

func partToV03(p map[string]any) {
	raw, hasRaw := p["raw"]
	u, hasURL := p["url"]
	switch {
	case hasRaw || hasURL:
		f := map[string]any{}
		if hasRaw {
			f["bytes"] = raw
		} else {
			f["uri"] = u
		}
		if v, ok := p["filename"]; ok {
			f["name"] = v
		}
		if v, ok := p["mediaType"]; ok {
			f["mimeType"] = v
		}
		for _, k := range []string{"raw", "url", "filename", "mediaType"} {
			delete(p, k)
		}
		p["kind"], p["file"] = "file", f
	case p["data"] != nil:
		p["kind"] = "data"
		delete(p, "filename")
		delete(p, "mediaType")
	default:
		p["kind"] = "text"
		delete(p, "filename")
		delete(p, "mediaType")
	}
}

func convertMember(o map[string]any, name string, f func(map[string]any)) {
	if m, ok := o[name].(map[string]any); ok {
		f(m)
	}
}

func convertList(o map[string]any, name string, f func(map[string]any)) {
	list, _ := o[name].([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			f(m)
		}
	}
}
