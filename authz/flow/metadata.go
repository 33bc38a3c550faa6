package flow

import (
	"encoding/json"
	"errors"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
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
// object. The value is spliced in: every other byte is kept.
func withEventMetadata(payload []byte, rpc bool, key string, value any) ([]byte, error) {
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	out, err := a2a.SetMetadata(payload, a2a.EventPath(payload, rpc), key, v)
	if err != nil {
		return nil, errNotObject
	}
	return out, nil
}

// withMessageMetadata returns a send request body with value under key in
// its message's metadata: params.message on JSON-RPC, message on REST.
func withMessageMetadata(body []byte, rpc bool, key string, value any) ([]byte, error) {
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	out, err := a2a.SetMetadata(body, messagePath(rpc), key, v)
	if err != nil {
		return nil, errNotObject
	}
	return out, nil
}

// withoutMessageMetadata returns a send request body without key in its
// message's metadata; the body itself when the key is not there. Keys are
// compared decoded, so no JSON escape spells the key past it.
func withoutMessageMetadata(body []byte, rpc bool, key string) []byte {
	return a2a.DeleteMetadata(body, messagePath(rpc), key)
}

// messagePath leads from a send request body to its message.
func messagePath(rpc bool) []string {
	if rpc {
		return []string{"params", "message"}
	}
	return []string{"message"}
}
