package demoagent

import "github.com/a2a-gateway/a2a-gateway/internal/a2a"

// Wire strings that package a2a does not hold yet. They are kept in this one
// file so they can move into package a2a without a hunt.
const (
	// Roles: 1.0 and the 0.3 protobuf JSON spell the enum, 0.x JSON the word.
	roleAgentEnum = "ROLE_AGENT"
	roleUserEnum  = "ROLE_USER"
	roleAgentWord = "agent"
	roleUserWord  = "user"

	// 0.3 "kind" and legacy "type" discriminators.
	kindTask           = "task"
	kindMessage        = "message"
	kindStatusUpdate   = "status-update"
	kindArtifactUpdate = "artifact-update"
	kindText           = "text"
	kindData           = "data"

	// stateCanceledProto03 is the 0.3 protobuf spelling of canceled; 1.0
	// dropped the second "l".
	stateCanceledProto03 = "TASK_STATE_CANCELLED"

	// Agent card values.
	bindingJSONRPC        = "JSONRPC"
	bindingHTTPJSON       = "HTTP+JSON"
	bindingGRPC           = "GRPC"
	cardProtocolVersion03 = "0.3.0"
	wellKnownCardPath     = "/.well-known/agent-card.json"
	legacyCardPath        = "/.well-known/agent.json"

	// a2aJSONContentType is the 1.0 media type of HTTP+JSON bodies and of
	// 1.0 push notifications.
	a2aJSONContentType = "application/a2a+json"
	jsonContentType    = "application/json"

	// notificationTokenHeader carries a push config's token on every push.
	notificationTokenHeader = a2a.NotificationTokenHeader

	// credentialMetadataKey is the message metadata key under which the
	// gateway hands an in-band credential to an auth-required task.
	credentialMetadataKey = "a2a-gateway/credential"
)
