package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// This file translates one decoded object between dialects by the tables
// in bridge_tables.go. Every member is looked up in the table of its
// object: a member the table does not know is refused, never passed on; a
// member the other dialect lacks is dropped or refused as its row says;
// values are checked for their type, so what reaches the other side reads
// the same to every decoder.

func (d dialect) String() string {
	switch d {
	case dialect10:
		return "A2A 1.0"
	case dialect03:
		return "A2A 0.3 JSON-RPC"
	}
	return "A2A 0.3 protobuf JSON"
}

// refusal is the error of an object the bridge does not translate; it
// names the member, never its value.
func refusal(object, name string, format string, args ...any) error {
	return fmt.Errorf("%w: bridging: %s member %q %s", ErrNotA2A, object, name, fmt.Sprintf(format, args...))
}

// translateObject rewrites one decoded object of kind k (numbers as
// json.Number) from one dialect to another and returns it. Members the
// tables do not know are refused, not passed on.
func translateObject(k objectKind, o map[string]any, from, to dialect) (map[string]any, error) {
	if from == to {
		return o, nil
	}
	switch k {
	case objPart:
		return translatePart(o, from, to)
	case objTaskPushConfig:
		return translateTaskPushConfig(o, from, to)
	}
	t := &objectTables[k]
	out := make(map[string]any, len(o)+1)
	if err := translateMembers(t, o, from, to, out); err != nil {
		return nil, err
	}
	if t.kind != "" && to == dialect03 {
		out[kindMember] = t.kind
	}
	if k == objStatusUpdate && from == dialect10 {
		// A 0.3 stream ends with the status update of a state the
		// client has to act on.
		s, _ := out[updateStatus.nameIn(to)].(map[string]any)
		st, _ := stateIn(s[statusState.nameIn(to)], to)
		out[finalMember.nameIn(to)] = st.Terminal() || st.Interrupted()
	}
	return out, nil
}

// The rows the code below reads by hand.
var (
	updateStatus = rowOf(objStatusUpdate, "status")
	statusState  = rowOf(objStatus, "state")
	configTask   = rowOf(objTaskPushConfig, "taskId")
	pushConfigID = rowOf(objPushConfig, "id")
)

// find is the row of the member called name in dialect d, nil if none.
func (t *objectTable) find(name string, d dialect) *memberRow {
	for i := range t.members {
		if n := t.members[i].nameIn(d); n != "" && n == name {
			return &t.members[i]
		}
	}
	if d == dialect03Proto {
		if alias, ok := t.alias03Proto[name]; ok {
			return t.find(alias, d)
		}
	}
	return nil
}

// translateMembers writes the members of o, an object of table t in
// dialect from, into out in dialect to.
func translateMembers(t *objectTable, o map[string]any, from, to dialect, out map[string]any) error {
	for name, v := range o {
		if from == dialect03 && t.kind != "" && name == kindMember {
			if v != t.kind {
				return refusal(t.name, name, "is not %q", t.kind)
			}
			continue
		}
		m := t.find(name, from)
		if m == nil {
			return refusal(t.name, name, "is not defined in %s", from)
		}
		if v == nil {
			continue // null: absent, as protobuf JSON reads it
		}
		tn := m.nameIn(to)
		if tn == "" {
			if m.without == refused && !isEmptyValue(v) {
				return refusal(t.name, name, "has no equivalent in %s: %s", to, m.why)
			}
			continue
		}
		if _, dup := out[tn]; dup {
			return refusal(t.name, name, "is spelled twice")
		}
		tv, err := translateValue(t, name, m, v, from, to)
		if err != nil {
			return err
		}
		out[tn] = tv
	}
	return nil
}

// isEmptyValue reports whether v carries nothing: what protobuf JSON
// writes for an unset member.
func isEmptyValue(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// translateValue checks v, the value of member m (called name in from)
// of an object of table t, and spells it in dialect to.
func translateValue(t *objectTable, name string, m *memberRow, v any, from, to dialect) (any, error) {
	wrong := func() error { return refusal(t.name, name, "has a value of the wrong type") }
	switch m.value {
	case vString:
		if _, ok := v.(string); !ok {
			return nil, wrong()
		}
	case vBool:
		if _, ok := v.(bool); !ok {
			return nil, wrong()
		}
	case vStrings:
		if !isStrings(v) {
			return nil, wrong()
		}
	case vStruct:
		if _, ok := v.(map[string]any); !ok {
			return nil, wrong()
		}
	case vTimestamp:
		s, ok := v.(string)
		if !ok {
			return nil, wrong()
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, refusal(t.name, name, "is not an RFC 3339 time")
		}
	case vState:
		s, ok := stateIn(v, from)
		if !ok {
			return nil, refusal(t.name, name, "is not a task state of %s", from)
		}
		return stateName(s, to), nil
	case vRole:
		r, ok := readEnum(v, roleNames[from-1][:], from)
		if !ok || roleNames[to-1][r] == "" {
			return nil, refusal(t.name, name, "is not a role both %s and %s know", from, to)
		}
		return roleNames[to-1][r], nil
	case vSchemes:
		return translateSchemes(t, name, v, from, to)
	case vObject:
		o, ok := v.(map[string]any)
		if !ok {
			return nil, wrong()
		}
		return translateObject(m.of, o, from, to)
	case vObjects:
		list, ok := v.([]any)
		if !ok {
			return nil, wrong()
		}
		for i, e := range list {
			o, ok := e.(map[string]any)
			if !ok {
				return nil, wrong()
			}
			tr, err := translateObject(m.of, o, from, to)
			if err != nil {
				return nil, err
			}
			list[i] = tr
		}
	}
	return v, nil
}

func isStrings(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

// readEnum reads an enum value spelled as one of names in dialect d, or,
// in the protobuf JSON dialects, as its number; it returns the index.
func readEnum(v any, names []string, d dialect) (int, bool) {
	switch v := v.(type) {
	case string:
		for i, n := range names {
			if n != "" && n == v {
				return i, true
			}
		}
	case json.Number:
		if d == dialect03 {
			return 0, false
		}
		for i := range names {
			if v.String() == fmt.Sprint(i) {
				return i, true
			}
		}
	}
	return 0, false
}

// stateIn reads a task state spelled in dialect d (protobuf JSON also
// as the enum number, which both versions' protos number alike).
func stateIn(v any, d dialect) (State, bool) {
	switch v := v.(type) {
	case string:
		for _, s := range append([]State{StateUnknown}, AllStates...) {
			if stateName(s, d) == v {
				return s, true
			}
		}
	case json.Number:
		if d != dialect03 {
			if n, err := v.Int64(); err == nil && n >= 0 && n < int64(len(protoStates)) {
				return protoStates[n], true
			}
		}
	}
	return StateUnknown, false
}

// translateSchemes: 1.0 authenticates a push with one scheme, 0.3 lists
// them; a 0.3 list reaches 1.0 only if it holds one scheme.
func translateSchemes(t *objectTable, name string, v any, from, to dialect) (any, error) {
	if from == dialect10 {
		s, ok := v.(string)
		if !ok {
			return nil, refusal(t.name, name, "has a value of the wrong type")
		}
		return []any{s}, nil
	}
	if !isStrings(v) {
		return nil, refusal(t.name, name, "has a value of the wrong type")
	}
	list := v.([]any)
	if to != dialect10 {
		return list, nil
	}
	if len(list) != 1 {
		return nil, refusal(t.name, name, "lists %d schemes; %s carries exactly one", len(list), to)
	}
	return list[0], nil
}

// translatePart reads a part into its 1.0 spelling and writes that in
// dialect to.
func translatePart(o map[string]any, from, to dialect) (map[string]any, error) {
	flat, err := readPart(o, from)
	if err != nil {
		return nil, err
	}
	return writePart(flat, to)
}

// readPart reads a part of dialect from as a 1.0 part.
func readPart(o map[string]any, from dialect) (map[string]any, error) {
	pt, ft := &objectTables[objPart], &objectTables[objFile]
	flat := make(map[string]any, len(o)+2)
	if from == dialect10 {
		// A 1.0 part holds the part table's members, the file table's
		// (flat), and data, which may be any JSON value.
		for name, v := range o {
			if v == nil {
				continue
			}
			if name != partData {
				t, m := pt, pt.find(name, from)
				if m == nil {
					t, m = ft, ft.find(name, from)
				}
				if m == nil {
					return nil, refusal(pt.name, name, "is not defined in %s", from)
				}
				if _, err := translateValue(t, name, m, v, from, from); err != nil {
					return nil, err
				}
			}
			flat[name] = v
		}
	} else {
		rest := make(map[string]any, len(o))
		kind, hasKind := o[kindMember]
		for name, v := range o {
			switch {
			case v == nil:
			case name == kindMember && from == dialect03:
			case name == partFile:
				f, ok := v.(map[string]any)
				if !ok {
					return nil, refusal(pt.name, name, "has a value of the wrong type")
				}
				if err := translateMembers(ft, f, from, dialect10, flat); err != nil {
					return nil, err
				}
				if !hasOne(flat, partContents[1], partContents[2]) {
					return nil, refusal(pt.name, name, "needs exactly one of its bytes and its URI")
				}
			case name == partData:
				d, ok := v.(map[string]any)
				if ok && from == dialect03Proto {
					// 0.3 protobuf JSON wraps the object in a DataPart.
					for k := range d {
						if k != partData {
							return nil, refusal(pt.name, name, "is not a 0.3 DataPart")
						}
					}
					if inner := d[partData]; inner == nil {
						d = map[string]any{}
					} else {
						d, ok = inner.(map[string]any)
					}
				}
				if !ok {
					return nil, refusal(pt.name, name, "is not an object")
				}
				flat[partData] = d
			default:
				rest[name] = v
			}
		}
		if err := translateMembers(pt, rest, from, dialect10, flat); err != nil {
			return nil, err
		}
		if hasKind && kind != contentKind(flat) {
			return nil, refusal(pt.name, kindMember, "does not match the part's content")
		}
	}
	if !hasOne(flat, partContents[:]...) {
		return nil, refusal(pt.name, partContents[0], "or another content member: a part needs exactly one")
	}
	return flat, nil
}

// hasOne reports whether exactly one of names is set in o.
func hasOne(o map[string]any, names ...string) bool {
	n := 0
	for _, name := range names {
		if o[name] != nil {
			n++
		}
	}
	return n == 1
}

// contentKind is the 0.3 kind of a 1.0 part.
func contentKind(flat map[string]any) string {
	switch {
	case flat[partContents[0]] != nil:
		return partKindText
	case flat[partData] != nil:
		return partKindData
	}
	return partKindFile
}

// writePart spells a 1.0 part, as readPart returns it, in dialect to.
func writePart(flat map[string]any, to dialect) (map[string]any, error) {
	if to == dialect10 {
		return flat, nil
	}
	pt, ft := &objectTables[objPart], &objectTables[objFile]
	kind := contentKind(flat)
	out := make(map[string]any, 3)
	rest := make(map[string]any, 2)
	var file map[string]any
	for name, v := range flat {
		switch {
		case name == partData:
			d, ok := v.(map[string]any)
			if !ok {
				return nil, refusal(pt.name, name, "is not an object, which %s needs", to)
			}
			if to == dialect03Proto {
				out[partData] = map[string]any{partData: d}
			} else {
				out[partData] = d
			}
		case ft.find(name, dialect10) != nil:
			// The file name and media type of a text or data part have
			// no place in 0.3 (whyMediaType): dropped.
			if kind == partKindFile {
				if file == nil {
					file = make(map[string]any, 3)
				}
				file[name] = v
			}
		default:
			rest[name] = v
		}
	}
	if err := translateMembers(pt, rest, dialect10, to, out); err != nil {
		return nil, err
	}
	if file != nil {
		f := make(map[string]any, len(file))
		if err := translateMembers(ft, file, dialect10, to, f); err != nil {
			return nil, err
		}
		out[partFile] = f
	}
	if to == dialect03 {
		out[kindMember] = kind
	}
	return out, nil
}

// translateTaskPushConfig translates a TaskPushNotificationConfig through
// its flat 1.0 spelling.
func translateTaskPushConfig(o map[string]any, from, to dialect) (map[string]any, error) {
	t := &objectTables[objTaskPushConfig]
	flat := o
	if from != dialect10 {
		var err error
		if flat, err = readTaskPushConfig(t, o, from); err != nil {
			return nil, err
		}
		if to == dialect10 {
			return flat, nil
		}
	}
	inner, err := translateObject(objPushConfig, flat, dialect10, to)
	if err != nil {
		return nil, err
	}
	taskID, _ := flat[configTask.names[0]].(string)
	if taskID == "" {
		return nil, refusal(t.name, configTask.names[0], "is missing; %s needs it", to)
	}
	out := map[string]any{configMember.nameIn(to): inner}
	if to == dialect03 {
		out[configTask.nameIn(to)] = taskID
		return out, nil
	}
	id, _ := flat[pushConfigID.names[0]].(string)
	if strings.Contains(taskID, "/") || strings.Contains(id, "/") {
		return nil, refusal(t.name, configTask.names[0], "holds a slash, which a 0.3 resource name cannot")
	}
	name := taskResourcePrefix + taskID
	if id != "" {
		name += configResourceInfix + id
	}
	out[configNameMember.nameIn(to)] = name
	return out, nil
}

// readTaskPushConfig reads a 0.3 TaskPushNotificationConfig of table t as
// the flat 1.0 one.
func readTaskPushConfig(t *objectTable, o map[string]any, from dialect) (map[string]any, error) {
	var inner map[string]any
	var taskID, name string
	for k, v := range o {
		m := t.find(k, from)
		if m == nil {
			return nil, refusal(t.name, k, "is not defined in %s", from)
		}
		if v == nil {
			continue
		}
		var ok bool
		switch m.value {
		case vObject:
			inner, ok = v.(map[string]any)
		case vString:
			if m == configTask {
				taskID, ok = v.(string)
			} else {
				name, ok = v.(string)
			}
		}
		if !ok {
			return nil, refusal(t.name, k, "has a value of the wrong type")
		}
	}
	if inner == nil {
		return nil, refusal(t.name, configMember.nameIn(from), "is missing")
	}
	flat, err := translateObject(objPushConfig, inner, from, dialect10)
	if err != nil {
		return nil, err
	}
	if from == dialect03Proto {
		id, _ := flat[pushConfigID.names[0]].(string)
		task, cfg, ok := parseConfigName(name)
		switch {
		case !ok:
			return nil, refusal(t.name, configNameMember.nameIn(from), "is not tasks/{id}/pushNotificationConfigs/{id}")
		case cfg != "" && id != "" && cfg != id:
			return nil, refusal(t.name, configNameMember.nameIn(from), "names another config than its own id")
		case id == "" && cfg != "":
			flat[pushConfigID.names[0]] = cfg
		}
		taskID = task
	}
	if taskID != "" {
		flat[configTask.names[0]] = taskID
	}
	return flat, nil
}

// parseConfigName reads a 0.3 push config name: tasks/{task} or
// tasks/{task}/pushNotificationConfigs/{cfg}.
func parseConfigName(name string) (task, cfg string, ok bool) {
	rest, ok := strings.CutPrefix(name, taskResourcePrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	task, cfg, found := strings.Cut(rest, configResourceInfix)
	if strings.Contains(task, "/") || task == "" || found && (cfg == "" || strings.Contains(cfg, "/")) {
		return "", "", false
	}
	return task, cfg, true
}
