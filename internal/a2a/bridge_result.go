package a2a

import (
	"bytes"
	"encoding/json"
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
	if fd == td {
		return result, nil
	}
	if m == MethodListTasks {
		return nil, fmt.Errorf("%w: bridging: %s has no ListTasks", ErrNotA2A, to)
	}
	if err := checkJSON(result); err != nil {
		return nil, err
	}
	v, err := decodeJSON(result)
	if err != nil {
		return nil, err
	}
	var out any
	switch m {
	case MethodSend, MethodStream, MethodSubscribe:
		out, err = translateEvent(v, m == MethodSend, fd, td)
	case MethodGetTask, MethodCancelTask:
		out, err = translateTop(objTask, v, fd, td)
	case MethodPushConfigSet, MethodPushConfigGet:
		out, err = translateTop(objTaskPushConfig, v, fd, td)
	case MethodPushConfigList:
		out, err = translateConfigList(v, fd, td)
	default:
		return nil, fmt.Errorf("%w: bridging: no answer of %s is known", ErrNotA2A, m)
	}
	if err != nil {
		return nil, err
	}
	return marshalResult(out)
}

// marshalResult writes a translated answer. Strings were valid UTF-8 and
// numbers are json.Number, so the answer's values come out as they came
// in; only HTML characters are not escaped, as the protocol's other
// writers do not.
func marshalResult(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotA2A, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func translateTop(k objectKind, v any, from, to dialect) (any, error) {
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: bridging: the answer is not a %s", ErrNotA2A, objectTables[k].name)
	}
	return translateObject(k, o, from, to)
}

// translateEvent translates a send answer (only a task or a message) or a
// stream event.
func translateEvent(v any, send bool, from, to dialect) (any, error) {
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: bridging: the answer is not an object", ErrNotA2A)
	}
	i, inner, err := readEventObject(o, send, from)
	if err != nil {
		return nil, err
	}
	r := &resultMembers[i]
	tr, err := translateObject(r.kind, inner, from, to)
	if err != nil {
		return nil, err
	}
	if to == dialect03 {
		return tr, nil
	}
	return map[string]any{r.names[to-1]: tr}, nil
}

// readEventObject finds the object of an event in dialect d and its row
// in resultMembers.
func readEventObject(o map[string]any, send bool, d dialect) (int, map[string]any, error) {
	allowed := len(resultMembers)
	if send {
		allowed = 2 // a task or a message
	}
	if d == dialect03 {
		kind, _ := o[kindMember].(string)
		for i, r := range resultMembers[:allowed] {
			if objectTables[r.kind].kind == kind {
				return i, o, nil
			}
		}
		return 0, nil, fmt.Errorf("%w: bridging: the answer has no kind the bridge translates", ErrNotA2A)
	}
	if len(o) == 1 {
		for name, v := range o {
			if d == dialect03Proto && name == protoMessageAlias {
				name = resultMembers[1].names[d-1]
			}
			for i, r := range resultMembers[:allowed] {
				if r.names[d-1] == name {
					inner, ok := v.(map[string]any)
					if !ok {
						break
					}
					return i, inner, nil
				}
			}
		}
	}
	return 0, nil, fmt.Errorf("%w: bridging: the answer needs exactly one object member the bridge translates", ErrNotA2A)
}

// translateConfigList translates the answer listing a task's push configs.
func translateConfigList(v any, from, to dialect) (any, error) {
	const name = "push config list"
	var list []any
	var next any
	ok := true
	if from == dialect03 {
		list, ok = v.([]any)
		ok = ok || v == nil
	} else {
		o, isObject := v.(map[string]any)
		if !isObject {
			return nil, fmt.Errorf("%w: bridging: the %s is not an object", ErrNotA2A, name)
		}
		for k, val := range o {
			switch k {
			case listConfigsMember.nameIn(from):
				list, ok = val.([]any)
				ok = ok || val == nil
			case listNextMember.nameIn(from):
				_, ok = val.(string)
				ok, next = ok || val == nil, val
			default:
				return nil, refusal(name, k, "is not defined in %s", from)
			}
			if !ok {
				return nil, refusal(name, k, "has a value of the wrong type")
			}
		}
	}
	if !ok {
		return nil, fmt.Errorf("%w: bridging: the %s is not a list", ErrNotA2A, name)
	}
	for i, e := range list {
		tr, err := translateTop(objTaskPushConfig, e, from, to)
		if err != nil {
			return nil, err
		}
		list[i] = tr
	}
	if to == dialect03 {
		if !isEmptyValue(next) {
			return nil, refusal(name, listNextMember.nameIn(from), "has no equivalent in %s: %s", to, listNextMember.why)
		}
		return nonNil(list), nil
	}
	out := map[string]any{listConfigsMember.nameIn(to): nonNil(list)}
	if !isEmptyValue(next) {
		out[listNextMember.nameIn(to)] = next
	}
	return out, nil
}

// nonNil is list, or an empty list for nil: a list member is written as [].
func nonNil(list []any) []any {
	if list == nil {
		return []any{}
	}
	return list
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
