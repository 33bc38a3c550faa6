package a2a

import (
	"bytes"
	"fmt"
)

// TranslateResult spells one answer to method m, read in form from, in form
// to. result is a unary answer's result or one stream event's, without the
// JSON-RPC envelope (as ReadAnswer returns it; for gRPC the protobuf JSON
// of the answer message), and so is what it returns. A status update for a
// 0.3 caller gets its final flag from its state.
//
// An answer that cannot be translated is an error wrapping ErrNotA2A: the
// gateway refuses it as INVALID_AGENT_RESPONSE.
func TranslateResult(m Method, result []byte, from, to Form) ([]byte, error) {
	if from == to {
		return result, nil
	}
	fd, td := dialectOf(from), dialectOf(to)
	switch m {
	case MethodExtendedCard:
		// Cards are rewritten, not translated, by proxy/card.
		return nil, fmt.Errorf("%w: bridging: the extended card is not translated from %s to %s", ErrNotA2A, from, to)
	case MethodPushConfigDelete:
		return emptyResult(result, to)
	}
	if len(bytes.TrimSpace(result)) == 0 {
		// Only a REST delete may answer nothing (ReadAnswer lets an
		// empty body through for the methods without a task); in a
		// JSON-RPC envelope or a gRPC message nothing is no answer.
		return nil, fmt.Errorf("%w: bridging: the answer to %s is empty", ErrNotA2A, m)
	}
	if fd == td {
		return result, nil
	}
	if m == MethodListTasks {
		return nil, fmt.Errorf("%w: bridging: ListTasks has no 0.3 form", ErrNotA2A)
	}
	if err := checkJSON(result); err != nil {
		return nil, err
	}
	w := bridgeWriter{out: make([]byte, 0, len(result)+len(result)/4), from: fd, to: td}
	var err error
	switch m {
	case MethodSend, MethodStream, MethodSubscribe:
		err = w.event(result, m == MethodSend)
	case MethodGetTask, MethodCancelTask:
		err = w.top(objTask, result)
	case MethodPushConfigSet, MethodPushConfigGet:
		err = w.top(objTaskPushConfig, result)
	case MethodPushConfigList:
		err = w.configList(result)
	default:
		return nil, fmt.Errorf("%w: bridging: no answer of %s is known", ErrNotA2A, m)
	}
	if err != nil {
		return nil, err
	}
	return w.out, nil
}

// top translates an answer that is one object of kind k.
func (w *bridgeWriter) top(k objectKind, b []byte) error {
	if !isObject(b) {
		return fmt.Errorf("%w: bridging: the answer is not a %s", ErrNotA2A, objectTables[k].name)
	}
	return w.object(k, b)
}

// event translates a send answer (only a task or a message) or a stream
// event.
func (w *bridgeWriter) event(b []byte, send bool) error {
	i, inner, err := w.readEvent(b, send)
	if err != nil {
		return err
	}
	r := &resultMembers[i]
	if w.to == dialect03 {
		return w.object(r.kind, inner)
	}
	w.out = append(w.out, '{')
	first := true
	w.name(&first, r.names[w.to-1])
	if err := w.object(r.kind, inner); err != nil {
		return err
	}
	w.out = append(w.out, '}')
	return nil
}

// readEvent finds the object of an event and its row in resultMembers.
func (w *bridgeWriter) readEvent(b []byte, send bool) (int, []byte, error) {
	allowed := len(resultMembers)
	if send {
		allowed = 2 // a task or a message
	}
	it, err := objectMembers(b)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: bridging: the answer is not an object", ErrNotA2A)
	}
	if w.from == dialect03 {
		for {
			key, v, ok := nextMember(&it)
			if !ok {
				return 0, nil, fmt.Errorf("%w: bridging: the answer has no kind", ErrNotA2A)
			}
			if string(key) != kindMember {
				continue
			}
			for i, r := range resultMembers[:allowed] {
				if rawStringIs(v, objectTables[r.kind].kind) {
					return i, b, nil
				}
			}
			return 0, nil, fmt.Errorf("%w: bridging: the answer has no kind the bridge translates here", ErrNotA2A)
		}
	}
	key, v, ok := nextMember(&it)
	if _, _, more := it.next(); ok && !more && v[0] == '{' {
		if w.from == dialect03Proto && string(key) == protoMessageAlias {
			key = []byte(resultMembers[1].names[w.from-1])
		}
		for i, r := range resultMembers[:allowed] {
			if r.names[w.from-1] == string(key) {
				return i, v, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("%w: bridging: the answer needs exactly one object member the bridge translates", ErrNotA2A)
}

// configList translates the answer listing a task's push configs: 1.0
// and 0.3 protobuf JSON {configs, nextPageToken}, 0.3 JSON-RPC a list.
func (w *bridgeWriter) configList(b []byte) error {
	const name = "push config list"
	list, next := b, []byte(nil)
	if w.from != dialect03 {
		list = nil
		it, err := objectMembers(b)
		if err != nil {
			return fmt.Errorf("%w: bridging: the %s is not an object", ErrNotA2A, name)
		}
		for {
			key, v, ok := nextMember(&it)
			if !ok {
				break
			}
			switch {
			case isNull(v):
			case string(key) == listConfigsMember.nameIn(w.from) && v[0] == '[':
				list = v
			case string(key) == listNextMember.nameIn(w.from) && v[0] == '"':
				next = v
			case string(key) == listConfigsMember.nameIn(w.from) || string(key) == listNextMember.nameIn(w.from):
				return refusal(name, string(key), "has a value of the wrong type")
			default:
				return refusal(name, string(key), "is not defined in %s", w.from)
			}
		}
	}
	if w.to == dialect03 && next != nil && !isEmptyRaw(next) {
		return refusal(name, listNextMember.nameIn(w.from), "has no equivalent in %s: %s", w.to, listNextMember.why)
	}
	first := true
	if w.to != dialect03 {
		w.out = append(w.out, '{')
		w.name(&first, listConfigsMember.nameIn(w.to))
	}
	w.out = append(w.out, '[')
	if list != nil && !isNull(list) {
		if !isArray(list) {
			return fmt.Errorf("%w: bridging: the %s is not a list", ErrNotA2A, name)
		}
		it := elements(list)
		for n := 0; ; n++ {
			e := it.next()
			if e == nil {
				break
			}
			if n > 0 {
				w.out = append(w.out, ',')
			}
			if err := w.top(objTaskPushConfig, e); err != nil {
				return err
			}
		}
	}
	w.out = append(w.out, ']')
	if w.to != dialect03 {
		if next != nil && !isEmptyRaw(next) {
			w.name(&first, listNextMember.nameIn(w.to))
			w.out = append(w.out, next...)
		}
		w.out = append(w.out, '}')
	}
	return nil
}

// emptyResult is the answer to a deleted push config in form to, for an
// answer that carries nothing: 0.3 JSON-RPC answers null, the protobuf
// JSON forms google.protobuf.Empty, {}.
func emptyResult(result []byte, to Form) ([]byte, error) {
	switch string(bytes.TrimSpace(result)) {
	case "", "null", "{}":
	default:
		return nil, fmt.Errorf("%w: bridging: the answer to a deleted push config is not empty", ErrNotA2A)
	}
	if dialectOf(to) == dialect03 {
		return []byte("null"), nil
	}
	return []byte("{}"), nil
}
