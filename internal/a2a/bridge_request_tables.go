package a2a

// The request side of the bridging table: for every method, each member of
// its params in each spelling, and what it carries. A request is read with
// the rows of its spelling (a member no row names is refused) and written
// with the rows of the agent's; a value whose row has no name in the
// agent's spelling is refused, or dropped where it says nothing (an empty
// metadata object, a zero page size), as docs/bridging.md says.

// spelling is how a request's params are named: 1.0 names them alike in
// every binding (protobuf JSON); 0.3 JSON-RPC, HTTP+JSON and gRPC each name
// the ids differently.
type spelling uint8

const (
	sp10 spelling = iota
	sp03RPC
	sp03REST
	sp03GRPC
	spellings
)

func spellingOf(f Form) spelling {
	switch {
	case f.Version == V10:
		return sp10
	case f.Binding == BindingREST:
		return sp03REST
	case f.Binding == BindingGRPC:
		return sp03GRPC
	}
	return sp03RPC
}

// slot is what a member carries.
type slot uint8

const (
	// The ids: read by the classifier into the Operation (and checked
	// there), so they are taken from it and written from it.
	slotTenant slot = iota + 1
	slotTaskID
	slotConfigID
	// slotTaskName is a 0.3 resource name of the task, "tasks/{id}";
	// slotConfigName of the push config, "tasks/{id}/pushNotificationConfigs/{cfg}".
	slotTaskName
	slotConfigName
	slotContextID
	// The values carried across.
	slotMessage
	slotConfiguration
	slotMetadata
	slotOutputModes
	slotHistoryLength
	slotReturnImmediately
	slotBlocking
	// slotPush is a push config: the one given with a send, or the config of
	// a 0.3 create.
	slotPush
	// slotPushWrap is the TaskPushNotificationConfig of a 0.3 gRPC create.
	slotPushWrap
	slotPageSize
	slotPageToken
	slotStatus
	slotStatusAfter
	slotIncludeArtifacts
	slots
)

// isID reports whether the Operation holds what s carries.
func (s slot) isID() bool { return s >= slotTenant && s <= slotContextID }

// valueKind is the JSON type a slot's value must have.
type valueKind uint8

const (
	kindObject valueKind = iota + 1
	kindString
	kindInt
	kindBool
	kindStrings
	// kindEnum is a protobuf enum: its name, or its number.
	kindEnum
)

var slotKinds = [slots]valueKind{
	slotMessage: kindObject, slotMetadata: kindObject,
	slotOutputModes: kindStrings, slotHistoryLength: kindInt,
	slotReturnImmediately: kindBool, slotBlocking: kindBool,
	slotPush:     kindObject,
	slotPageSize: kindInt, slotPageToken: kindString, slotStatus: kindEnum,
	slotStatusAfter: kindString, slotIncludeArtifacts: kindBool,
}

// reqMember is one member of a request: what it carries and its name per
// spelling ("" where the spelling has none). nested are the members of an
// object value (a send's configuration).
type reqMember struct {
	slot   slot
	names  [spellings]string
	nested *memberTable
}

// row builds a reqMember; names are in spelling order (1.0, 0.3 JSON-RPC,
// 0.3 HTTP+JSON, 0.3 gRPC).
func row(s slot, n10, n03, n03REST, n03GRPC string) reqMember {
	return reqMember{slot: s, names: [spellings]string{n10, n03, n03REST, n03GRPC}}
}

// sendConfiguration is a send's configuration. Clients mix 0.3's blocking
// and 1.0's returnImmediately (the classifier accepts both), so each
// spelling reads both; they are written in the agent's own.
var sendConfiguration = newTable(
	row(slotOutputModes, "acceptedOutputModes", "acceptedOutputModes", "acceptedOutputModes", "acceptedOutputModes"),
	row(slotHistoryLength, "historyLength", "historyLength", "historyLength", "historyLength"),
	row(slotReturnImmediately, "returnImmediately", "returnImmediately", "returnImmediately", "returnImmediately"),
	row(slotBlocking, "blocking", "blocking", "blocking", "blocking"),
	// 1.0 SendMessageConfiguration.task_push_notification_config; 0.3
	// MessageSendConfiguration.pushNotificationConfig (JSON-RPC) and
	// SendMessageConfiguration.push_notification (a2a.v1).
	row(slotPush, "taskPushNotificationConfig", "pushNotificationConfig", "pushNotification", "pushNotification"),
)

// pushWrap03 is the config of a 0.3 gRPC create (TaskPushNotificationConfig).
var tablePushWrap03 = newTable(
	row(slotConfigName, "", "", "", "name"),
	row(slotPush, "", "", "", "pushNotificationConfig"),
)

// requestMembers are the params of every method, per spelling. 0.3 over
// HTTP+JSON carries the ids in the path (and the task in a create's name);
// its get, list and delete have no body, their members are the query.
var requestMembers = [...]*memberTable{
	MethodSend: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotMessage, "message", "message", "message", "message"),
		reqMember{slot: slotConfiguration, names: [spellings]string{"configuration", "configuration", "configuration", "configuration"}, nested: sendConfiguration},
		row(slotMetadata, "metadata", "metadata", "metadata", "metadata"),
	),
	MethodGetTask: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "id", "id", "", ""),
		row(slotTaskName, "", "", "", "name"),
		row(slotHistoryLength, "historyLength", "historyLength", "historyLength", "historyLength"),
		row(slotMetadata, "", "metadata", "", ""),
	),
	MethodListTasks: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotContextID, "contextId", "", "", ""),
		row(slotStatus, "status", "", "", ""),
		row(slotPageSize, "pageSize", "", "", ""),
		row(slotPageToken, "pageToken", "", "", ""),
		row(slotHistoryLength, "historyLength", "", "", ""),
		row(slotStatusAfter, "statusTimestampAfter", "", "", ""),
		row(slotIncludeArtifacts, "includeArtifacts", "", "", ""),
	),
	MethodCancelTask: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "id", "id", "", ""),
		row(slotTaskName, "", "", "", "name"),
		row(slotMetadata, "metadata", "metadata", "", ""),
	),
	MethodSubscribe: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "id", "id", "", ""),
		row(slotTaskName, "", "", "", "name"),
		row(slotMetadata, "", "metadata", "", ""),
	),
	// A 1.0 create's params are the config itself (TaskPushNotificationConfig,
	// flat); 0.3 wraps the config (PushNotificationConfig) with the task.
	MethodPushConfigSet: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "taskId", "taskId", "taskId", ""),
		row(slotTaskName, "", "", "", "parent"),
		row(slotConfigName, "", "", "name", ""),
		row(slotConfigID, "", "", "", "configId"),
		row(slotPush, "", "pushNotificationConfig", "pushNotificationConfig", ""),
		reqMember{slot: slotPushWrap, names: [spellings]string{sp03GRPC: "config"}, nested: tablePushWrap03},
	),
	MethodPushConfigGet: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "taskId", "id", "", ""),
		row(slotConfigID, "id", "pushNotificationConfigId", "", ""),
		row(slotConfigName, "", "", "", "name"),
		row(slotMetadata, "", "metadata", "", ""),
	),
	MethodPushConfigList: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "taskId", "id", "", ""),
		row(slotTaskName, "", "", "", "parent"),
		row(slotPageSize, "pageSize", "", "pageSize", "pageSize"),
		row(slotPageToken, "pageToken", "", "pageToken", "pageToken"),
		row(slotMetadata, "", "metadata", "", ""),
	),
	MethodPushConfigDelete: newTable(
		row(slotTenant, "tenant", "", "", ""),
		row(slotTaskID, "taskId", "id", "", ""),
		row(slotConfigID, "id", "pushNotificationConfigId", "", ""),
		row(slotConfigName, "", "", "", "name"),
		row(slotMetadata, "", "metadata", "", ""),
	),
	MethodExtendedCard: newTable(
		row(slotTenant, "tenant", "", "", ""),
	),
}

// tableOf is the params table of m (a stream is read as a send).
func tableOf(m Method) *memberTable {
	if m == MethodStream {
		m = MethodSend
	}
	if int(m) < len(requestMembers) {
		return requestMembers[m]
	}
	return nil
}

// The members of a 1.0 push config the request table reads as ids: its
// tenant and task are the Operation's, written by the request, not by the
// config's translation.
var pushConfigIDKeys = members("tenant", "taskId")

// memberTable is a table of members, indexed for reading.
type memberTable struct {
	rows []reqMember
	// keys are the member names of each spelling, at the indexes in rows.
	keys [spellings][]member
	at   [spellings][]int
}

func newTable(rows ...reqMember) *memberTable {
	t := &memberTable{rows: rows}
	for sp := range spellings {
		for i, m := range rows {
			if m.names[sp] != "" {
				t.keys[sp] = append(t.keys[sp], members(m.names[sp])[0])
				t.at[sp] = append(t.at[sp], i)
			}
		}
	}
	return t
}

// find is the row whose name in sp is name (or its snake_case alias).
func (t *memberTable) find(sp spelling, name string) *reqMember {
	for i, k := range t.keys[sp] {
		if name == k.name || name == k.alias {
			return &t.rows[t.at[sp][i]]
		}
	}
	return nil
}

// carries reports whether spelling sp has a member for s, at any depth.
func (t *memberTable) carries(sp spelling, s slot) bool {
	for _, m := range t.rows {
		if m.names[sp] == "" {
			continue
		}
		if m.slot == s || m.nested != nil && m.nested.carries(sp, s) {
			return true
		}
	}
	return false
}
