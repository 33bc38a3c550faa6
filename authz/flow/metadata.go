package flow

import (
	"encoding/json"
	"errors"
)

// Metadata keys the gateway writes.
const (
	// ChallengeMetadataKey carries the challenge in the metadata of an
	// auth-required Task or TaskStatusUpdateEvent the caller receives.
	ChallengeMetadataKey = "a2a-gateway/auth-challenge"
	// CredentialMetadataKey carries the credential in the resumed message's
	// metadata, for agents configured with delivery "metadata".
	CredentialMetadataKey = "a2a-gateway/credential"
)

var errNotObject = errors.New("authflow: not a JSON object")

// withEventMetadata returns an answer or stream event payload with value
// under key in the metadata of the task or status update it carries. rpc
// says the payload is a JSON-RPC response (the result inside is changed);
// otherwise it is the result itself. A 1.0 result wraps the object
// ({"task": ...}, {"statusUpdate": ...}); 0.3 and legacy results are the
// object. Members other than the changed ones keep their bytes.
func withEventMetadata(payload []byte, rpc bool, key string, value any) ([]byte, error) {
	if rpc {
		return editMember(payload, "result", func(res json.RawMessage) (json.RawMessage, error) {
			return resultWithMetadata(res, key, value)
		})
	}
	return resultWithMetadata(payload, key, value)
}

func resultWithMetadata(res json.RawMessage, key string, value any) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(res, &top); err != nil || top == nil {
		return nil, errNotObject
	}
	if len(top) == 1 {
		for _, wrapper := range []string{"task", "statusUpdate"} {
			if _, ok := top[wrapper]; ok {
				return editMember(res, wrapper, func(inner json.RawMessage) (json.RawMessage, error) {
					return setInObject(inner, key, value, "metadata")
				})
			}
		}
	}
	return setInObject(res, key, value, "metadata")
}

// withMessageMetadata returns a send request body with value under key in
// its message's metadata: params.message on JSON-RPC, message on REST.
func withMessageMetadata(body []byte, rpc bool, key string, value any) ([]byte, error) {
	return editMessage(body, rpc, func(msg json.RawMessage) (json.RawMessage, error) {
		return setInObject(msg, key, value, "metadata")
	})
}

// withoutMessageMetadata returns a send request body without key in its
// message's metadata; the body itself when the key is not there. Keys are
// compared decoded, so no JSON escape spells the key past it.
func withoutMessageMetadata(body []byte, rpc bool, key string) ([]byte, error) {
	out, err := editMessage(body, rpc, func(msg json.RawMessage) (json.RawMessage, error) {
		return editMember(msg, "metadata", func(md json.RawMessage) (json.RawMessage, error) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(md, &m); err != nil || m == nil {
				return nil, errNotObject
			}
			if _, ok := m[key]; !ok {
				return nil, errAbsent
			}
			delete(m, key)
			return json.Marshal(m)
		})
	})
	if errors.Is(err, errAbsent) || errors.Is(err, errNotObject) {
		return body, nil
	}
	return out, err
}

// errAbsent stops an edit that has nothing to change.
var errAbsent = errors.New("authflow: nothing to change")

func editMessage(body []byte, rpc bool, edit func(json.RawMessage) (json.RawMessage, error)) ([]byte, error) {
	if rpc {
		return editMember(body, "params", func(params json.RawMessage) (json.RawMessage, error) {
			return editMember(params, "message", edit)
		})
	}
	return editMember(body, "message", edit)
}

// editMember replaces the member name of the object obj with what edit
// makes of it.
func editMember(obj []byte, name string, edit func(json.RawMessage) (json.RawMessage, error)) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil || m == nil {
		return nil, errNotObject
	}
	v, ok := m[name]
	if !ok {
		return nil, errNotObject
	}
	nv, err := edit(v)
	if err != nil {
		return nil, err
	}
	m[name] = nv
	return json.Marshal(m)
}

// setInObject sets key to value in the object held by member name of obj,
// creating it when absent or null.
func setInObject(obj json.RawMessage, key string, value any, name string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil || m == nil {
		return nil, errNotObject
	}
	inner := map[string]json.RawMessage{}
	if raw, ok := m[name]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &inner); err != nil || inner == nil {
			return nil, errNotObject
		}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	inner[key] = v
	if m[name], err = json.Marshal(inner); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
