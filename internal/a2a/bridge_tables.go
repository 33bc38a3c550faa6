package a2a

// The bridging tables: for each protocol object, the name of each member
// in each dialect, how its value is translated, and what happens to it
// when the other side has no such member. They are checked against the
// specifications: 1.0 specification/a2a.proto (v1.0.1; protobuf JSON names
// are lowerCamel), 0.3 specification/json/a2a.json (JSON-RPC) and 0.3
// specification/grpc/a2a.proto (protobuf JSON, v0.3.0). docs/bridging.md
// renders them for readers.

// valueType is how a member's value is read and written.
type valueType uint8

const (
	vString    valueType = iota + 1
	vBool                // true or false
	vStrings             // a list of strings
	vStruct              // a JSON object carried as it is (metadata)
	vTimestamp           // an RFC 3339 time
	vState               // a task state, spelled per dialect
	vRole                // a message role, spelled per dialect
	vSchemes             // 1.0 one scheme, 0.3 a list of schemes
	vObject              // a nested object of kind of
	vObjects             // a list of objects of kind of
)

// absence is what becomes of a member the other dialect has no name for.
type absence uint8

const (
	// dropped: the member carries nothing the other side needs (a kind
	// tag, the final flag the bridge derives again, a display hint).
	dropped absence = iota + 1
	// refused: the member carries meaning the other side would lose; an
	// object holding it (not empty) is not translated.
	refused
)

// memberRow is one row of a table: its names by dialect (index dialect-1:
// 1.0, 0.3 JSON-RPC, 0.3 protobuf JSON; "" where the dialect has none).
type memberRow struct {
	names   [3]string
	value   valueType
	of      objectKind
	without absence
	why     string
	// fill03: 0.3 JSON-RPC requires the member, which protobuf JSON
	// leaves out when it holds its zero value; written as that value.
	fill03 bool
}

// objectTable describes one object.
type objectTable struct {
	name string
	// kind is the object's 0.3 JSON-RPC kind tag ("" for objects without
	// one): read and dropped from 0.3 JSON-RPC, written to it.
	kind    string
	members []memberRow
	// alias03Proto are second spellings 0.3 protobuf JSON readers accept
	// (the proto field name beside its json_name), read as the member
	// they name.
	alias03Proto map[string]string
}

// nameIn is m's name in dialect d.
func (m *memberRow) nameIn(d dialect) string { return m.names[d-1] }

// Why members are dropped or refused, once each.
const (
	whyFinal      = "1.0 ends a stream by closing it; for a 0.3 caller the bridge derives final from the state"
	whyReferences = "0.3 protobuf JSON messages cannot refer to other tasks"
	whyEnclosing  = "the enclosing request or config carries the task"
	whyTenant     = "0.3 has no tenants; the gateway routed and authorised the call before"
	whyPartMeta   = "0.3 protobuf JSON parts have no metadata"
	whyFilename   = "a display hint; 0.3 protobuf JSON files have no name (content and media type are carried)"
	whyNextPage   = "0.3 JSON-RPC lists push configs without paging, so a partial list would pass as whole"
)

// The tables, by object kind. Parts and task push configs change shape
// between dialects (flat against nested), so bridgeWriter.part and
// bridgeWriter.taskPushConfig read their rows by hand.
var objectTables = [...]objectTable{
	objMessage: {name: "message", kind: "message", members: []memberRow{
		{names: [3]string{"messageId", "messageId", "messageId"}, value: vString, fill03: true},
		{names: [3]string{"contextId", "contextId", "contextId"}, value: vString},
		{names: [3]string{"taskId", "taskId", "taskId"}, value: vString},
		{names: [3]string{"role", "role", "role"}, value: vRole},
		{names: [3]string{"parts", "parts", "content"}, value: vObjects, of: objPart, fill03: true},
		{names: [3]string{"metadata", "metadata", "metadata"}, value: vStruct},
		{names: [3]string{"extensions", "extensions", "extensions"}, value: vStrings},
		{names: [3]string{"referenceTaskIds", "referenceTaskIds", ""}, value: vStrings, without: refused, why: whyReferences},
	}},
	objTask: {name: "task", kind: "task", members: []memberRow{
		{names: [3]string{"id", "id", "id"}, value: vString, fill03: true},
		{names: [3]string{"contextId", "contextId", "contextId"}, value: vString, fill03: true},
		{names: [3]string{"status", "status", "status"}, value: vObject, of: objStatus},
		{names: [3]string{"artifacts", "artifacts", "artifacts"}, value: vObjects, of: objArtifact},
		{names: [3]string{"history", "history", "history"}, value: vObjects, of: objMessage},
		{names: [3]string{"metadata", "metadata", "metadata"}, value: vStruct},
	}},
	objStatus: {name: "task status", members: []memberRow{
		{names: [3]string{"state", "state", "state"}, value: vState, fill03: true},
		{names: [3]string{"message", "message", "message"}, value: vObject, of: objMessage},
		{names: [3]string{"timestamp", "timestamp", "timestamp"}, value: vTimestamp},
	}, alias03Proto: map[string]string{"update": "message"}},
	objStatusUpdate: {name: "status update", kind: "status-update", members: []memberRow{
		{names: [3]string{"taskId", "taskId", "taskId"}, value: vString, fill03: true},
		{names: [3]string{"contextId", "contextId", "contextId"}, value: vString, fill03: true},
		{names: [3]string{"status", "status", "status"}, value: vObject, of: objStatus},
		finalMember,
		{names: [3]string{"metadata", "metadata", "metadata"}, value: vStruct},
	}},
	objArtifactUpdate: {name: "artifact update", kind: "artifact-update", members: []memberRow{
		{names: [3]string{"taskId", "taskId", "taskId"}, value: vString, fill03: true},
		{names: [3]string{"contextId", "contextId", "contextId"}, value: vString, fill03: true},
		{names: [3]string{"artifact", "artifact", "artifact"}, value: vObject, of: objArtifact},
		{names: [3]string{"append", "append", "append"}, value: vBool},
		{names: [3]string{"lastChunk", "lastChunk", "lastChunk"}, value: vBool},
		{names: [3]string{"metadata", "metadata", "metadata"}, value: vStruct},
	}},
	objArtifact: {name: "artifact", members: []memberRow{
		{names: [3]string{"artifactId", "artifactId", "artifactId"}, value: vString, fill03: true},
		{names: [3]string{"name", "name", "name"}, value: vString},
		{names: [3]string{"description", "description", "description"}, value: vString},
		{names: [3]string{"parts", "parts", "parts"}, value: vObjects, of: objPart, fill03: true},
		{names: [3]string{"metadata", "metadata", "metadata"}, value: vStruct},
		{names: [3]string{"extensions", "extensions", "extensions"}, value: vStrings},
	}},
	// objPart: 1.0 {text|raw|url|data, filename, mediaType, metadata};
	// 0.3 JSON-RPC {kind, text} | {kind, file: {bytes|uri, name, mimeType}}
	// | {kind, data}, each with metadata; 0.3 protobuf JSON {text} |
	// {file: {fileWithBytes|fileWithUri, mimeType}} | {data: {data}}.
	objPart: {name: "part", members: []memberRow{
		{names: [3]string{"text", "text", "text"}, value: vString},
		{names: [3]string{"metadata", "metadata", ""}, value: vStruct, without: refused, why: whyPartMeta},
	}},
	// objFile is the file of a 0.3 file part; 1.0 spells its members on
	// the part itself.
	objFile: {name: "file", members: []memberRow{
		{names: [3]string{"raw", "bytes", "fileWithBytes"}, value: vString},
		{names: [3]string{"url", "uri", "fileWithUri"}, value: vString},
		{names: [3]string{"filename", "name", ""}, value: vString, without: dropped, why: whyFilename},
		{names: [3]string{"mediaType", "mimeType", "mimeType"}, value: vString},
	}},
	// objTaskPushConfig: 1.0 flat {tenant, id, taskId, url, token,
	// authentication}; 0.3 JSON-RPC {taskId, pushNotificationConfig}; 0.3
	// protobuf JSON {name: "tasks/{taskId}/pushNotificationConfigs/{id}",
	// pushNotificationConfig}.
	objTaskPushConfig: {name: "task push notification config", members: []memberRow{
		{names: [3]string{"taskId", "taskId", ""}, value: vString},
		configMember,
		configNameMember,
	}},
	// objPushConfig is the 0.3 PushNotificationConfig, which 1.0 spells as
	// a TaskPushNotificationConfig (in a send's configuration).
	objPushConfig: {name: "push notification config", members: []memberRow{
		{names: [3]string{"id", "id", "id"}, value: vString},
		{names: [3]string{"url", "url", "url"}, value: vString},
		{names: [3]string{"token", "token", "token"}, value: vString},
		{names: [3]string{"authentication", "authentication", "authentication"}, value: vObject, of: objAuthentication},
		{names: [3]string{"taskId", "", ""}, value: vString, without: dropped, why: whyEnclosing},
		{names: [3]string{"tenant", "", ""}, value: vString, without: dropped, why: whyTenant},
	}},
	objAuthentication: {name: "authentication info", members: []memberRow{
		{names: [3]string{"scheme", "schemes", "schemes"}, value: vSchemes},
		{names: [3]string{"credentials", "credentials", "credentials"}, value: vString},
	}},
}

// The members of a 0.3 TaskPushNotificationConfig that 1.0 spells flat:
// the config itself, and the 0.3 protobuf JSON name that holds the task
// and config ids.
var (
	configMember     = memberRow{names: [3]string{"", "pushNotificationConfig", "pushNotificationConfig"}, value: vObject, of: objPushConfig}
	configNameMember = memberRow{names: [3]string{"", "", "name"}, value: vString}
)

// finalMember is the 0.3 status update's end-of-stream flag.
var finalMember = memberRow{names: [3]string{"", "final", "final"}, value: vBool, without: dropped, why: whyFinal, fill03: true}

// resultMembers name the object of a unary send answer or a stream event
// in each dialect: 1.0 and 0.3 protobuf JSON wrap it in a member of
// SendMessageResponse or StreamResponse; 0.3 JSON-RPC sends it bare and
// tells it by its kind. 0.3 protobuf JSON also reads "msg", the proto name
// of its message member.
var resultMembers = [...]struct {
	kind  objectKind
	names [3]string
}{
	{objTask, [3]string{"task", "", "task"}},
	{objMessage, [3]string{"message", "", "message"}},
	{objStatusUpdate, [3]string{"statusUpdate", "", "statusUpdate"}},
	{objArtifactUpdate, [3]string{"artifactUpdate", "", "artifactUpdate"}},
}

// protoMessageAlias is the proto name of the 0.3 message member, which
// 0.3 protobuf JSON readers accept beside its json_name "message".
const protoMessageAlias = "msg"

// The members of the push config list answer: 1.0 and 0.3 protobuf JSON
// {configs, nextPageToken}; 0.3 JSON-RPC a bare list.
var (
	listConfigsMember = memberRow{names: [3]string{"configs", "", "configs"}, value: vObjects, of: objTaskPushConfig}
	listNextMember    = memberRow{names: [3]string{"nextPageToken", "", "nextPageToken"}, value: vString, without: refused, why: whyNextPage}
)

// The spellings of roles, by dialect; 0.3 JSON-RPC has no unspecified
// role. Protobuf JSON readers also accept the enum numbers (the index).
var roleNames = [3][3]string{
	{"ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"},
	{"", "user", "agent"},
	{"ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"},
}

// stateName spells s in dialect d: 1.0 and 0.3 JSON-RPC as state.go's
// table, 0.3 protobuf JSON as 1.0 but for the 0.3 proto's CANCELLED.
func stateName(s State, d dialect) string {
	switch {
	case d == dialect03:
		return s.Wire(V03)
	case d == dialect03Proto && s == StateCanceled:
		return "TASK_STATE_CANCELLED"
	}
	return s.Wire(V10)
}

// The 0.3 JSON-RPC kind tags of parts.
const (
	partKindText = "text"
	partKindFile = "file"
	partKindData = "data"
)

// The members of parts that the tables do not list: 1.0 data (any JSON
// value; an object in 0.3 JSON-RPC, in 0.3 protobuf JSON wrapped once more
// as {"data": {...}}), the 0.3 file, and the 0.3 JSON-RPC kind tag.
const (
	partData   = "data"
	partFile   = "file"
	kindMember = "kind"
)

// rowOf is the row of object k whose 1.0 name is name10.
func rowOf(k objectKind, name10 string) *memberRow {
	t := &objectTables[k]
	for i := range t.members {
		if t.members[i].names[0] == name10 {
			return &t.members[i]
		}
	}
	panic("a2a: no bridging row " + name10 + " in " + t.name)
}

// The 0.3 protobuf JSON name of a push config: tasks/{taskId} with
// /pushNotificationConfigs/{id} when the config has an id.
const (
	taskResourcePrefix  = "tasks/"
	configResourceInfix = "/pushNotificationConfigs/"
)
