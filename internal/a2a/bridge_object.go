package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// This file translates one object between dialects by the tables in
// bridge_tables.go, from its JSON text to the other dialect's JSON text in
// one pass: values the dialects share (ids, texts, metadata, numbers) are
// copied byte for byte, so nothing is decoded that needs no decoding and
// numbers stay exact. Every member is looked up in the table of its
// object: a member the table does not know is refused, never passed on; a
// member the other dialect lacks is dropped or refused as its row says;
// values are checked for their type, so what reaches the other side reads
// the same to every decoder. The input is checked JSON (checkJSON: UTF-8,
// no member twice).

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
// names the member, never its value, and clips the name: the agent or
// caller chose it, and it ends up in log lines and error messages.
func refusal(object, name string, format string, args ...any) error {
	return fmt.Errorf("%w: bridging: %s member %q %s", ErrNotA2A, object, clipName(name), fmt.Sprintf(format, args...))
}

var errBridgeJSON = fmt.Errorf("%w: bridging: malformed JSON", ErrNotA2A)

// translateJSON translates the JSON text of one object of kind k.
func translateJSON(k objectKind, b []byte, from, to dialect) ([]byte, error) {
	if from == to {
		return b, nil
	}
	if err := checkJSON(b); err != nil {
		return nil, err
	}
	w := bridgeWriter{out: make([]byte, 0, len(b)+len(b)/4), from: from, to: to}
	if err := w.object(k, b); err != nil {
		return nil, err
	}
	return w.out, nil
}

// bridgeWriter writes the translation of checked JSON into out.
type bridgeWriter struct {
	out      []byte
	from, to dialect
	// state is the state of the status read last: a status update from
	// 1.0 gets its 0.3 final flag from it.
	state State
}

// objectMembers walks the members of b, an object checkJSON accepted.
func objectMembers(b []byte) (memberIter, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return memberIter{}, errBridgeJSON
	}
	return memberIter{b: b, i: skipSpace(b, i+1)}, nil
}

// nextMember is the next member's name, escapes decoded, and raw value.
func nextMember(it *memberIter) (key, val []byte, ok bool) {
	key, val, ok = it.next()
	if ok && bytes.IndexByte(key, '\\') >= 0 {
		s, _ := memberName(key) // checkJSON decoded it already
		key = []byte(s)
	}
	return key, val, ok
}

// isArray reports whether raw is a JSON array.
func isArray(raw []byte) bool {
	i := skipSpace(raw, 0)
	return i < len(raw) && raw[i] == '['
}

func isNull(v []byte) bool { return string(v) == "null" }

// isEmptyRaw reports whether v carries nothing: what protobuf JSON writes
// for an unset member.
func isEmptyRaw(v []byte) bool {
	switch string(v) {
	case "null", `""`, "false", "0":
		return true
	}
	if len(v) >= 2 && (v[0] == '[' || v[0] == '{') {
		return skipSpace(v, 1) == len(v)-1
	}
	return false
}

// rawStringIs reports whether the raw JSON string v is s.
func rawStringIs(v []byte, s string) bool {
	if len(v) < 2 || v[0] != '"' {
		return false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1:len(v)-1]) == s
	}
	got, err := jsonString(v, "")
	return err == nil && got == s
}

// name writes a member name, after a comma unless it is the first.
func (w *bridgeWriter) name(first *bool, n string) {
	if !*first {
		w.out = append(w.out, ',')
	}
	*first = false
	w.out = append(w.out, '"')
	w.out = append(w.out, n...)
	w.out = append(w.out, '"', ':')
}

// index is the row of the member called key in dialect d, -1 if none.
func (t *objectTable) index(key []byte, d dialect) int {
	for i := range t.members {
		if n := t.members[i].nameIn(d); n != "" && n == string(key) {
			return i
		}
	}
	if d == dialect03Proto {
		if alias, ok := t.alias03Proto[string(key)]; ok {
			return t.index([]byte(alias), d)
		}
	}
	return -1
}

// The rows the code below reads by hand.
var (
	configTask   = rowOf(objTaskPushConfig, "taskId")
	pushConfigID = rowOf(objPushConfig, "id")
	finalIndex   = rowIndex(objStatusUpdate, &finalMember)
)

// rowIndex is the index of row m in the table of k.
func rowIndex(k objectKind, m *memberRow) int {
	for i, r := range objectTables[k].members {
		if r.names == m.names {
			return i
		}
	}
	panic("a2a: no bridging row in " + objectTables[k].name)
}

// object translates the object b of kind k.
func (w *bridgeWriter) object(k objectKind, b []byte) error {
	switch k {
	case objPart:
		return w.part(b)
	case objTaskPushConfig:
		return w.taskPushConfig(b)
	}
	t := &objectTables[k]
	if k == objStatusUpdate {
		w.state = StateUnknown
	}
	w.out = append(w.out, '{')
	first := true
	written, err := w.members(t, b, &first)
	if err != nil {
		return err
	}
	if k == objStatusUpdate && w.from == dialect10 {
		// A 0.3 stream ends with the status update of a state the
		// client has to act on.
		w.name(&first, finalMember.nameIn(w.to))
		if w.state.Terminal() || w.state.Interrupted() {
			w.out = append(w.out, "true"...)
		} else {
			w.out = append(w.out, "false"...)
		}
		written |= 1 << finalIndex
	}
	if w.to == dialect03 {
		w.fill03(t, &first, written)
	}
	w.out = append(w.out, '}')
	return nil
}

// members writes the members of b, an object of table t, and returns
// the rows written.
func (w *bridgeWriter) members(t *objectTable, b []byte, first *bool) (uint32, error) {
	it, err := objectMembers(b)
	if err != nil {
		return 0, err
	}
	var written uint32
	for {
		key, v, ok := nextMember(&it)
		if !ok {
			return written, nil
		}
		if w.from == dialect03 && t.kind != "" && string(key) == kindMember {
			if !rawStringIs(v, t.kind) {
				return 0, refusal(t.name, kindMember, "is not %q", t.kind)
			}
			continue
		}
		i := t.index(key, w.from)
		if i < 0 {
			return 0, refusal(t.name, string(key), "is not defined in %s", w.from)
		}
		m := &t.members[i]
		if isNull(v) || m.value == vSchemes && isEmptyRaw(v) {
			// null is absent, as protobuf JSON reads it; so is an empty
			// list of schemes, which 1.0 cannot spell.
			continue
		}
		tn := m.nameIn(w.to)
		if tn == "" {
			if m.without == refused && !isEmptyRaw(v) {
				return 0, refusal(t.name, string(key), "has no equivalent in %s: %s", w.to, m.why)
			}
			continue
		}
		if written&(1<<i) != 0 {
			return 0, refusal(t.name, string(key), "is spelled twice")
		}
		written |= 1 << i
		w.name(first, tn)
		if err := w.value(t, key, m, v); err != nil {
			return 0, err
		}
	}
}

// fill03 writes the members 0.3 JSON-RPC requires that protobuf JSON left
// out for holding their zero value, and the kind tag.
func (w *bridgeWriter) fill03(t *objectTable, first *bool, written uint32) {
	if t.kind != "" {
		w.name(first, kindMember)
		w.out = append(append(append(w.out, '"'), t.kind...), '"')
	}
	for i := range t.members {
		m := &t.members[i]
		if !m.fill03 || written&(1<<i) != 0 {
			continue
		}
		w.name(first, m.nameIn(dialect03))
		switch m.value {
		case vString:
			w.out = append(w.out, `""`...)
		case vBool:
			w.out = append(w.out, "false"...)
		case vObjects, vStrings:
			w.out = append(w.out, "[]"...)
		case vState:
			w.out = append(append(append(w.out, '"'), stateName(StateUnknown, dialect03)...), '"')
		}
	}
}

// value checks v, the value of member m (called key in the source) of an
// object of table t, and writes it in the target dialect.
func (w *bridgeWriter) value(t *objectTable, key []byte, m *memberRow, v []byte) error {
	wrong := func() error { return refusal(t.name, string(key), "has a value of the wrong type") }
	switch m.value {
	case vString:
		if v[0] != '"' {
			return wrong()
		}
	case vBool:
		if string(v) != "true" && string(v) != "false" {
			return wrong()
		}
	case vStrings:
		if !rawStrings(v) {
			return wrong()
		}
	case vStruct:
		if v[0] != '{' {
			return wrong()
		}
	case vTimestamp:
		s, err := jsonString(v, "")
		if v[0] != '"' || err != nil {
			return wrong()
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return refusal(t.name, string(key), "is not an RFC 3339 time")
		}
	case vState:
		s, ok := rawState(v, w.from)
		if !ok {
			return refusal(t.name, string(key), "is not a task state of %s", w.from)
		}
		w.state = s
		w.out = append(append(append(w.out, '"'), stateName(s, w.to)...), '"')
		return nil
	case vRole:
		r, ok := rawEnum(v, roleNames[w.from-1][:], w.from)
		if !ok || roleNames[w.to-1][r] == "" {
			return refusal(t.name, string(key), "is not a role both %s and %s know", w.from, w.to)
		}
		w.out = append(append(append(w.out, '"'), roleNames[w.to-1][r]...), '"')
		return nil
	case vSchemes:
		return w.schemes(t, key, v)
	case vObject:
		if v[0] != '{' {
			return wrong()
		}
		return w.object(m.of, v)
	case vObjects:
		if !isArray(v) {
			return wrong()
		}
		w.out = append(w.out, '[')
		it := elements(v)
		for n := 0; ; n++ {
			e := it.next()
			if e == nil {
				break
			}
			if e[0] != '{' {
				return wrong()
			}
			if n > 0 {
				w.out = append(w.out, ',')
			}
			if err := w.object(m.of, e); err != nil {
				return err
			}
		}
		w.out = append(w.out, ']')
		return nil
	}
	w.out = append(w.out, v...)
	return nil
}

// rawStrings reports whether v is a JSON list of strings.
func rawStrings(v []byte) bool {
	if !isArray(v) {
		return false
	}
	for it := elements(v); ; {
		e := it.next()
		if e == nil {
			return true
		}
		if e[0] != '"' {
			return false
		}
	}
}

// rawEnum reads an enum value spelled as one of names in dialect d, or,
// in the protobuf JSON dialects, as its number; it returns the index.
func rawEnum(v []byte, names []string, d dialect) (int, bool) {
	if v[0] == '"' {
		for i, n := range names {
			if n != "" && rawStringIs(v, n) {
				return i, true
			}
		}
		return 0, false
	}
	if d == dialect03 {
		return 0, false
	}
	for i := range names {
		if len(v) == 1 && v[0] == byte('0'+i) {
			return i, true
		}
	}
	return 0, false
}

// rawState reads a task state spelled in dialect d (protobuf JSON also
// as the enum number, which both versions' protos number alike).
func rawState(v []byte, d dialect) (State, bool) {
	if v[0] == '"' {
		for s := StateUnknown; int(s) < len(stateSpellings); s++ {
			if rawStringIs(v, stateName(s, d)) {
				return s, true
			}
		}
		return StateUnknown, false
	}
	if d == dialect03 || len(v) != 1 || v[0] < '0' || int(v[0]-'0') >= len(protoStates) {
		return StateUnknown, false
	}
	return protoStates[v[0]-'0'], true
}

// schemes: 1.0 authenticates a push with one scheme, 0.3 lists them; a
// 0.3 list reaches 1.0 only if it holds one scheme.
func (w *bridgeWriter) schemes(t *objectTable, key, v []byte) error {
	if w.from == dialect10 {
		if v[0] != '"' {
			return refusal(t.name, string(key), "has a value of the wrong type")
		}
		w.out = append(append(append(w.out, '['), v...), ']')
		return nil
	}
	if !rawStrings(v) {
		return refusal(t.name, string(key), "has a value of the wrong type")
	}
	if w.to != dialect10 {
		w.out = append(w.out, v...)
		return nil
	}
	it := elements(v)
	one := it.next()
	if one == nil || it.next() != nil {
		return refusal(t.name, string(key), "does not list exactly one scheme; %s carries one", w.to)
	}
	w.out = append(w.out, one...)
	return nil
}

// partView is a part read in any dialect: its members by row of the part
// and file tables (in their order; TestPartViewRows checks the sizes), and
// its data.
type partView struct {
	part [2][]byte // text, metadata: the rows of objPart
	file [4][]byte // raw, url, filename, mediaType: the rows of objFile
	data []byte
	kind []byte
}

// contents counts the content members of a part, of which it has exactly
// one: text, the file's bytes and URI, and data.
func (p *partView) contents() int {
	n := 0
	for _, v := range [...][]byte{p.part[0], p.file[0], p.file[1], p.data} {
		if v != nil {
			n++
		}
	}
	return n
}

// contentKind is the 0.3 kind of the part.
func (p *partView) contentKind() string {
	switch {
	case p.part[0] != nil:
		return partKindText
	case p.data != nil:
		return partKindData
	}
	return partKindFile
}

// part translates a part: 1.0 spells it flat, 0.3 nests files (and 0.3
// protobuf JSON data).
func (w *bridgeWriter) part(b []byte) error {
	pt := &objectTables[objPart]
	p, err := w.readPart(b)
	if err != nil {
		return err
	}
	if p.contents() != 1 {
		return refusal(pt.name, pt.members[0].nameIn(w.from), "or another content member: a part needs exactly one")
	}
	if p.kind != nil && !rawStringIs(p.kind, p.contentKind()) {
		return refusal(pt.name, kindMember, "does not match the part's content")
	}
	return w.writePart(&p)
}

// readPart reads a part in the source dialect, checking every member.
func (w *bridgeWriter) readPart(b []byte) (partView, error) {
	pt, ft := &objectTables[objPart], &objectTables[objFile]
	var p partView
	it, err := objectMembers(b)
	if err != nil {
		return p, err
	}
	for {
		key, v, ok := nextMember(&it)
		if !ok {
			return p, nil
		}
		if isNull(v) {
			continue
		}
		switch {
		case string(key) == kindMember && w.from == dialect03:
			if v[0] != '"' {
				return p, refusal(pt.name, kindMember, "is not a part kind")
			}
			p.kind = v
		case string(key) == partData:
			if p.data, err = w.readData(pt, v); err != nil {
				return p, err
			}
		case string(key) == partFile && w.from != dialect10:
			if v[0] != '{' {
				return p, refusal(pt.name, partFile, "has a value of the wrong type")
			}
			if err := readRows(ft, v, w.from, p.file[:]); err != nil {
				return p, err
			}
			if (p.file[0] == nil) == (p.file[1] == nil) {
				return p, refusal(pt.name, partFile, "needs exactly one of its bytes and its URI")
			}
		default:
			if i := pt.index(key, w.from); i >= 0 {
				if err := checkRow(pt, key, &pt.members[i], v); err != nil {
					return p, err
				}
				p.part[i] = v
			} else if i := ft.index(key, w.from); i >= 0 && w.from == dialect10 {
				if err := checkRow(ft, key, &ft.members[i], v); err != nil {
					return p, err
				}
				p.file[i] = v
			} else {
				return p, refusal(pt.name, string(key), "is not defined in %s", w.from)
			}
		}
	}
}

// readData reads a part's data: any JSON value in 1.0, an object in 0.3,
// in 0.3 protobuf JSON wrapped in a DataPart ({"data": {...}}).
func (w *bridgeWriter) readData(pt *objectTable, v []byte) ([]byte, error) {
	switch w.from {
	case dialect10:
		return v, nil
	case dialect03:
		if v[0] != '{' {
			return nil, refusal(pt.name, partData, "is not an object")
		}
		return v, nil
	}
	it, err := objectMembers(v)
	if err != nil {
		return nil, refusal(pt.name, partData, "is not a 0.3 DataPart")
	}
	inner := []byte("{}")
	for {
		key, iv, ok := nextMember(&it)
		if !ok {
			return inner, nil
		}
		if string(key) != partData || iv[0] != '{' && !isNull(iv) {
			return nil, refusal(pt.name, partData, "is not a 0.3 DataPart")
		}
		if !isNull(iv) {
			inner = iv
		}
	}
}

// readRows reads the members of b, an object of table t in dialect d,
// into vals by row, checking each value's type.
func readRows(t *objectTable, b []byte, d dialect, vals [][]byte) error {
	it, err := objectMembers(b)
	if err != nil {
		return err
	}
	for {
		key, v, ok := nextMember(&it)
		if !ok {
			return nil
		}
		i := t.index(key, d)
		if i < 0 {
			return refusal(t.name, string(key), "is not defined in %s", d)
		}
		if isNull(v) {
			continue
		}
		if err := checkRow(t, key, &t.members[i], v); err != nil {
			return err
		}
		vals[i] = v
	}
}

// checkRow checks the type of a value the part tables carry as it is.
func checkRow(t *objectTable, key []byte, m *memberRow, v []byte) error {
	if m.value == vString && v[0] != '"' || m.value == vStruct && v[0] != '{' {
		return refusal(t.name, string(key), "has a value of the wrong type")
	}
	return nil
}

// writePart writes a part in the target dialect.
func (w *bridgeWriter) writePart(p *partView) error {
	pt, ft := &objectTables[objPart], &objectTables[objFile]
	w.out = append(w.out, '{')
	first := true
	if w.to == dialect03 {
		w.name(&first, kindMember)
		w.out = append(append(append(w.out, '"'), p.contentKind()...), '"')
	}
	if err := w.rows(pt, p.part[:], &first); err != nil {
		return err
	}
	switch {
	case p.data != nil:
		w.name(&first, partData)
		switch {
		case w.to == dialect10:
			w.out = append(w.out, p.data...)
		case p.data[0] != '{':
			return refusal(pt.name, partData, "is not an object, which %s needs", w.to)
		case w.to == dialect03Proto:
			w.out = append(append(append(w.out, `{"`+partData+`":`...), p.data...), '}')
		default:
			w.out = append(w.out, p.data...)
		}
	case p.part[0] == nil && w.to != dialect10:
		w.name(&first, partFile)
		w.out = append(w.out, '{')
		inner := true
		if err := w.rows(ft, p.file[:], &inner); err != nil {
			return err
		}
		w.out = append(w.out, '}')
	case w.to == dialect10:
		if err := w.rows(ft, p.file[:], &first); err != nil {
			return err
		}
	}
	// The file name and media type of a 1.0 text or data part, hints,
	// have no place in 0.3: not written.
	w.out = append(w.out, '}')
	return nil
}

// rows writes the values of table t's rows in the target dialect.
func (w *bridgeWriter) rows(t *objectTable, vals [][]byte, first *bool) error {
	for i, v := range vals {
		if v == nil {
			continue
		}
		m := &t.members[i]
		n := m.nameIn(w.to)
		if n == "" {
			if m.without == refused && !isEmptyRaw(v) {
				return refusal(t.name, m.nameIn(w.from), "has no equivalent in %s: %s", w.to, m.why)
			}
			continue
		}
		w.name(first, n)
		w.out = append(w.out, v...)
	}
	return nil
}

// taskPushConfig translates a TaskPushNotificationConfig: 1.0 spells it
// flat, 0.3 as a task and a PushNotificationConfig.
func (w *bridgeWriter) taskPushConfig(b []byte) error {
	t := &objectTables[objTaskPushConfig]
	pc := &objectTables[objPushConfig]
	var inner, taskRaw, nameRaw []byte
	it, err := objectMembers(b)
	if err != nil {
		return err
	}
	for {
		key, v, ok := nextMember(&it)
		if !ok {
			break
		}
		if w.from == dialect10 {
			// The 1.0 config is a PushNotificationConfig with the task.
			if pc.index(key, w.from) < 0 {
				return refusal(t.name, string(key), "is not defined in %s", w.from)
			}
			if string(key) == configTask.names[0] && !isNull(v) {
				taskRaw = v
			}
			continue
		}
		i := t.index(key, w.from)
		if i < 0 {
			return refusal(t.name, string(key), "is not defined in %s", w.from)
		}
		if isNull(v) {
			continue
		}
		m := &t.members[i]
		if m.value == vObject && v[0] != '{' || m.value == vString && v[0] != '"' {
			return refusal(t.name, string(key), "has a value of the wrong type")
		}
		switch m {
		case &t.members[1]:
			inner = v
		case configTask:
			taskRaw = v
		default:
			nameRaw = v
		}
	}
	if w.from == dialect10 {
		inner = b
	} else if inner == nil {
		return refusal(t.name, configMember.nameIn(w.from), "is missing")
	}
	taskID, cfgID, err := w.configIDs(t, inner, taskRaw, nameRaw)
	if err != nil {
		return err
	}
	if w.to == dialect10 {
		start := len(w.out)
		if err := w.object(objPushConfig, inner); err != nil {
			return err
		}
		// The 0.3 ids go into the flat 1.0 config.
		w.out = w.out[:len(w.out)-1]
		first := len(w.out) == start+1
		if cfgID != "" && !hasMember(inner, pushConfigID.nameIn(w.from)) {
			w.name(&first, pushConfigID.names[0])
			w.out = appendQuoted(w.out, cfgID)
		}
		if taskID != "" {
			w.name(&first, configTask.names[0])
			w.out = appendQuoted(w.out, taskID)
		}
		w.out = append(w.out, '}')
		return nil
	}
	if taskID == "" {
		return refusal(t.name, configTask.names[0], "is missing; %s needs it", w.to)
	}
	w.out = append(w.out, '{')
	first := true
	if w.to == dialect03 {
		w.name(&first, configTask.nameIn(w.to))
		w.out = appendQuoted(w.out, taskID)
	} else {
		if strings.Contains(taskID, "/") || strings.Contains(cfgID, "/") {
			return refusal(t.name, configTask.names[0], "holds a slash, which a 0.3 resource name cannot")
		}
		name := taskResourcePrefix + taskID
		if cfgID != "" {
			name += configResourceInfix + cfgID
		}
		w.name(&first, configNameMember.nameIn(w.to))
		w.out = appendQuoted(w.out, name)
	}
	w.name(&first, configMember.nameIn(w.to))
	if err := w.object(objPushConfig, inner); err != nil {
		return err
	}
	w.out = append(w.out, '}')
	return nil
}

// configIDs reads the task and config ids of a task push config: the
// task from taskId (1.0, 0.3 JSON-RPC) or the 0.3 protobuf JSON name,
// the config from the config's id or that name, which must agree.
func (w *bridgeWriter) configIDs(t *objectTable, inner, taskRaw, nameRaw []byte) (task, cfg string, err error) {
	var v [1][]byte
	if err := pick(inner, members(pushConfigID.nameIn(w.from)), v[:]); err != nil {
		return "", "", errBridgeJSON
	}
	id, err1 := jsonString(v[0], "")
	task, err2 := jsonString(taskRaw, "")
	if err1 != nil || err2 != nil {
		return "", "", refusal(t.name, pushConfigID.names[0], "has a value of the wrong type")
	}
	if w.from != dialect03Proto {
		return task, id, nil
	}
	name, _ := jsonString(nameRaw, "")
	task, cfg, ok := parseConfigName(name)
	switch {
	case !ok:
		return "", "", refusal(t.name, configNameMember.nameIn(w.from), "is not tasks/{id}/pushNotificationConfigs/{id}")
	case cfg != "" && id != "" && cfg != id:
		return "", "", refusal(t.name, configNameMember.nameIn(w.from), "names another config than its own id")
	case cfg == "":
		cfg = id
	}
	return task, cfg, nil
}

// hasMember reports whether the object b has a member called name.
func hasMember(b []byte, name string) bool {
	var v [1][]byte
	return pick(b, members(name), v[:]) == nil && v[0] != nil
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
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
