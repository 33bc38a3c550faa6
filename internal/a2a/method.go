package a2a

// Method is a protocol operation, independent of version and binding.
type Method uint8

const (
	MethodUnknown Method = iota
	MethodSend
	MethodStream
	MethodGetTask
	MethodListTasks
	MethodCancelTask
	MethodSubscribe
	MethodPushConfigSet
	MethodPushConfigGet
	MethodPushConfigList
	MethodPushConfigDelete
	MethodExtendedCard
)

// methodNames are the short names used in logs, metric labels and policy.
var methodNames = [...]string{
	MethodUnknown:          "unknown",
	MethodSend:             "send",
	MethodStream:           "stream",
	MethodGetTask:          "get",
	MethodListTasks:        "list",
	MethodCancelTask:       "cancel",
	MethodSubscribe:        "subscribe",
	MethodPushConfigSet:    "push_config_set",
	MethodPushConfigGet:    "push_config_get",
	MethodPushConfigList:   "push_config_list",
	MethodPushConfigDelete: "push_config_delete",
	MethodExtendedCard:     "extended_card",
}

// AllMethods lists every known method, for metric pre-registration and policy validation.
var AllMethods = []Method{
	MethodSend, MethodStream, MethodGetTask, MethodListTasks, MethodCancelTask, MethodSubscribe,
	MethodPushConfigSet, MethodPushConfigGet, MethodPushConfigList, MethodPushConfigDelete, MethodExtendedCard,
}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return "unknown"
}

// ParseMethodName maps a short name ("cancel") back to its Method.
func ParseMethodName(s string) (Method, bool) {
	for _, m := range AllMethods {
		if methodNames[m] == s {
			return m, true
		}
	}
	return MethodUnknown, false
}

// Streaming reports whether the method answers with an SSE stream.
func (m Method) Streaming() bool { return m == MethodStream || m == MethodSubscribe }

// TaskScoped reports whether the method names an existing task.
func (m Method) TaskScoped() bool {
	switch m {
	case MethodGetTask, MethodCancelTask, MethodSubscribe,
		MethodPushConfigSet, MethodPushConfigGet, MethodPushConfigList, MethodPushConfigDelete:
		return true
	}
	return false
}

// PushConfig reports whether the method manages push-notification configs.
func (m Method) PushConfig() bool {
	return m == MethodPushConfigSet || m == MethodPushConfigGet || m == MethodPushConfigList || m == MethodPushConfigDelete
}

// rpcMethod describes one JSON-RPC method name.
type rpcMethod struct {
	method  Method
	version Version
}

// rpcMethods is the one table of JSON-RPC method names across dialects.
// tasks/get, tasks/cancel and tasks/resubscribe carry the same shape in the
// legacy dialect and 0.3, so they are listed once as 0.3.
var rpcMethods = map[string]rpcMethod{
	// 1.0
	"SendMessage":                      {MethodSend, V10},
	"SendStreamingMessage":             {MethodStream, V10},
	"GetTask":                          {MethodGetTask, V10},
	"ListTasks":                        {MethodListTasks, V10},
	"CancelTask":                       {MethodCancelTask, V10},
	"SubscribeToTask":                  {MethodSubscribe, V10},
	"CreateTaskPushNotificationConfig": {MethodPushConfigSet, V10},
	"GetTaskPushNotificationConfig":    {MethodPushConfigGet, V10},
	"ListTaskPushNotificationConfigs":  {MethodPushConfigList, V10},
	"DeleteTaskPushNotificationConfig": {MethodPushConfigDelete, V10},
	"GetExtendedAgentCard":             {MethodExtendedCard, V10},
	// 0.2 / 0.3
	"message/send":                        {MethodSend, V03},
	"message/stream":                      {MethodStream, V03},
	"tasks/get":                           {MethodGetTask, V03},
	"tasks/cancel":                        {MethodCancelTask, V03},
	"tasks/resubscribe":                   {MethodSubscribe, V03},
	"tasks/pushNotificationConfig/set":    {MethodPushConfigSet, V03},
	"tasks/pushNotificationConfig/get":    {MethodPushConfigGet, V03},
	"tasks/pushNotificationConfig/list":   {MethodPushConfigList, V03},
	"tasks/pushNotificationConfig/delete": {MethodPushConfigDelete, V03},
	"agent/getAuthenticatedExtendedCard":  {MethodExtendedCard, V03},
	// pre-0.2
	"tasks/send":                 {MethodSend, VLegacy},
	"tasks/sendSubscribe":        {MethodStream, VLegacy},
	"tasks/pushNotification/set": {MethodPushConfigSet, VLegacy},
	"tasks/pushNotification/get": {MethodPushConfigGet, VLegacy},
}

// rpcMethodNames is rpcMethods the other way round: every bridged
// JSON-RPC request is spelled with it, so it is not searched for.
var rpcMethodNames = func() map[rpcMethod]string {
	names := make(map[rpcMethod]string, len(rpcMethods))
	for name, rm := range rpcMethods {
		names[rm] = name
	}
	return names
}()

// RPCMethodName is the JSON-RPC method name for m in version v ("" when
// the version has none). Used by the gateway when it calls an agent itself
// and when it bridges a request to a JSON-RPC agent.
func RPCMethodName(m Method, v Version) string {
	if name, ok := rpcMethodNames[rpcMethod{method: m, version: v}]; ok {
		return name
	}
	if v == VLegacy { // the shared 0.3 names
		return RPCMethodName(m, V03)
	}
	return ""
}
