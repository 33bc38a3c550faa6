package a2a

import "errors"

// The gateway changes a request it forwards only where it must (the routing
// tenant, a ListTasks page) and splices the change into the bytes the
// caller sent: escapes, member order and white space elsewhere stay as
// they were, so the agent reads every other member exactly as the gateway
// classified it.

// errNotSpliceable is the error of a splice into a body that is not a
// JSON object where the change goes.
var errNotSpliceable = errors.New("the request has no JSON object where the change goes")

// SetRPCParam returns the JSON-RPC request body with params.name set to
// value (raw JSON), creating params when absent or null; the member keeps
// its place and spelling when present. body must have been classified.
func SetRPCParam(body []byte, name string, value []byte) ([]byte, error) {
	return setMember(body, []member{paramsMember}, members(name)[0], value)
}

// DeleteRPCParam returns the JSON-RPC request body without params.name;
// the body as it was when there is none.
func DeleteRPCParam(body []byte, name string) []byte {
	return cutMember(body, []member{paramsMember}, members(name)[0])
}

// SetMetadata returns obj with value (raw JSON) under key in the metadata
// of the object at path, which must be there: metadata is created when
// absent or null. path names protocol members (their snake_case spelling
// matches too); key is matched exactly. Every other byte is kept.
func SetMetadata(obj []byte, path []string, key string, value []byte) ([]byte, error) {
	start, end, ok := objectAt(obj, members(path...))
	if !ok {
		return nil, errNotSpliceable
	}
	inner, err := setMember(obj[start:end], []member{metadataMember}, member{key, key}, value)
	if err != nil {
		return nil, err
	}
	return splice(obj, start, end, inner), nil
}

// DeleteMetadata returns obj without key in the metadata of the object at
// path (as SetMetadata names them), every time it appears there; obj as it
// was when there is none.
func DeleteMetadata(obj []byte, path []string, key string) []byte {
	at := append(members(path...), metadataMember)
	for {
		out := cutMember(obj, at, member{key, key})
		if len(out) == len(obj) {
			return obj
		}
		obj = out
	}
}

// EventPath is the path from an answer or stream event payload to the task
// or status update it carries: the JSON-RPC result when rpc, and inside it
// the 1.0 wrapper ({"task": ...}, {"statusUpdate": ...}) when the result is
// one.
func EventPath(payload []byte, rpc bool) []string {
	var path []string
	result := payload
	if rpc {
		path = append(path, resultMember.name)
		s, e, ok := memberValue(payload, resultMember)
		if !ok {
			return path
		}
		result = payload[s:e]
	}
	if _, names, err := spans(result); err == nil && len(names) == 1 {
		for _, w := range eventWrappers {
			if names[0] == w.name || names[0] == w.alias {
				path = append(path, w.name)
			}
		}
	}
	return path
}

// The members splices go through.
var (
	metadataMember = members("metadata")[0]
	resultMember   = members("result")[0]
	eventWrappers  = members("task", "statusUpdate")
)

// objectAt returns where the object at path lies in obj.
func objectAt(obj []byte, path []member) (start, end int, ok bool) {
	start, end = 0, len(obj)
	for _, p := range path {
		s, e, found := memberValue(obj[start:end], p)
		if !found {
			return 0, 0, false
		}
		start, end = start+s, start+e
	}
	return start, end, isObject(obj[start:end])
}

// setMember sets member m of the object at path in obj to value, creating
// the objects of path that are absent or null.
func setMember(obj []byte, path []member, m member, value []byte) ([]byte, error) {
	sp, names, err := spans(obj)
	if err != nil {
		return nil, errNotSpliceable
	}
	want := m
	if len(path) > 0 {
		want = path[0]
	}
	at := indexOf(names, want)
	if len(path) > 0 {
		inner := []byte("{}")
		if at >= 0 && string(obj[sp[at].valStart:sp[at].valEnd]) != "null" {
			inner = obj[sp[at].valStart:sp[at].valEnd]
		}
		if value, err = setMember(inner, path[1:], m, value); err != nil {
			return nil, err
		}
	}
	if at >= 0 {
		return splice(obj, sp[at].valStart, sp[at].valEnd, value), nil
	}
	added := make([]byte, 0, len(want.name)+len(value)+4)
	if len(sp) > 0 {
		added = append(added, ',')
	}
	added = append(append(append(append(added, '"'), want.name...), '"', ':'), value...)
	pos := skipSpace(obj, 0) + 1
	if len(sp) > 0 {
		pos = sp[len(sp)-1].valEnd
	}
	return splice(obj, pos, pos, added), nil
}

// cutMember removes member m from the object found at path in body, if
// both are there.
func cutMember(body []byte, path []member, m member) []byte {
	start, end, ok := objectAt(body, path)
	if !ok {
		return body
	}
	cs, ce, ok := memberCut(body[start:end], m)
	if !ok {
		return body
	}
	return splice(body, start+cs, start+ce, nil)
}

// memberSpan is where one member of an object lies: its key's opening
// quote and the end of its value.
type memberSpan struct{ key, valStart, valEnd int }

// spans lists the members of the object b with their positions.
func spans(b []byte) ([]memberSpan, []string, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, nil, errNotObject
	}
	i = skipSpace(b, i+1)
	var out []memberSpan
	var names []string
	if i < len(b) && b[i] == '}' {
		return nil, nil, nil
	}
	for i < len(b) {
		keyEnd := stringEnd(b, i)
		if keyEnd < 0 {
			return nil, nil, errNotObject
		}
		name, err := memberName(b[i+1 : keyEnd-1])
		if err != nil {
			return nil, nil, err
		}
		j := skipSpace(b, keyEnd)
		if j >= len(b) || b[j] != ':' {
			return nil, nil, errNotObject
		}
		j = skipSpace(b, j+1)
		valEnd := valueEnd(b, j)
		if valEnd < 0 {
			return nil, nil, errNotObject
		}
		out = append(out, memberSpan{key: i, valStart: j, valEnd: valEnd})
		names = append(names, name)
		i = skipSpace(b, valEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return out, names, nil
		}
		return nil, nil, errNotObject
	}
	return nil, nil, errNotObject
}

func findMember(b []byte, m member) ([]memberSpan, int) {
	sp, names, err := spans(b)
	if err != nil {
		return nil, -1
	}
	return sp, indexOf(names, m)
}

// indexOf is the index of m among names, -1 when absent.
func indexOf(names []string, m member) int {
	for i, n := range names {
		if n == m.name || n == m.alias {
			return i
		}
	}
	return -1
}

// memberValue returns where the value of member m lies in the object b.
func memberValue(b []byte, m member) (start, end int, ok bool) {
	sp, i := findMember(b, m)
	if i < 0 {
		return 0, 0, false
	}
	return sp[i].valStart, sp[i].valEnd, true
}

// memberCut returns the bytes to cut to remove member m from the object b,
// with one separating comma: up to the next member, or, for the last one,
// from the end of the previous member's value.
func memberCut(b []byte, m member) (start, end int, ok bool) {
	sp, i := findMember(b, m)
	switch {
	case i < 0:
		return 0, 0, false
	case i+1 < len(sp):
		return sp[i].key, sp[i+1].key, true
	case i > 0:
		return sp[i-1].valEnd, sp[i].valEnd, true
	}
	return sp[i].key, sp[i].valEnd, true
}

// splice returns b with b[start:end] replaced by with, in a new slice.
func splice(b []byte, start, end int, with []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(with))
	out = append(out, b[:start]...)
	out = append(out, with...)
	return append(out, b[end:]...)
}
