// Package grpcwire is the gRPC wire form of A2A: the framing of messages in
// an HTTP/2 body, the method paths of both versions' services, strict
// decoding and classification of requests into the a2a.Operation the other
// bindings produce, byte-preserving splices of requests, transcoding of
// answers to and from the protobuf JSON of their version (the HTTP+JSON
// body of that version, so the rest of the gateway reads a gRPC answer like
// a REST one), and the mapping of A2A errors to gRPC statuses and back.
//
// It is the only package that links the generated protobuf types of both
// versions; internal/a2a stays free of them.
package grpcwire

import (
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// Service names, which decide the version of a call.
const (
	service10 = "lf.a2a.v1.A2AService"
	service03 = "a2a.v1.A2AService"
)

// rpc is one method of one version's service: its name, and the messages
// it takes and answers with (for a streaming method, each message of the
// stream).
type rpc struct {
	version  a2a.Version
	method   a2a.Method
	name     string
	request  proto.Message
	response proto.Message
}

// rpcs is the one table of gRPC methods. 0.3 has no ListTasks; its
// GetAgentCard is the authenticated (extended) card.
var rpcs = []rpc{
	{a2a.V10, a2a.MethodSend, "SendMessage", &a2a10.SendMessageRequest{}, &a2a10.SendMessageResponse{}},
	{a2a.V10, a2a.MethodStream, "SendStreamingMessage", &a2a10.SendMessageRequest{}, &a2a10.StreamResponse{}},
	{a2a.V10, a2a.MethodGetTask, "GetTask", &a2a10.GetTaskRequest{}, &a2a10.Task{}},
	{a2a.V10, a2a.MethodListTasks, "ListTasks", &a2a10.ListTasksRequest{}, &a2a10.ListTasksResponse{}},
	{a2a.V10, a2a.MethodCancelTask, "CancelTask", &a2a10.CancelTaskRequest{}, &a2a10.Task{}},
	{a2a.V10, a2a.MethodSubscribe, "SubscribeToTask", &a2a10.SubscribeToTaskRequest{}, &a2a10.StreamResponse{}},
	{a2a.V10, a2a.MethodPushConfigSet, "CreateTaskPushNotificationConfig", &a2a10.TaskPushNotificationConfig{}, &a2a10.TaskPushNotificationConfig{}},
	{a2a.V10, a2a.MethodPushConfigGet, "GetTaskPushNotificationConfig", &a2a10.GetTaskPushNotificationConfigRequest{}, &a2a10.TaskPushNotificationConfig{}},
	{a2a.V10, a2a.MethodPushConfigList, "ListTaskPushNotificationConfigs", &a2a10.ListTaskPushNotificationConfigsRequest{}, &a2a10.ListTaskPushNotificationConfigsResponse{}},
	{a2a.V10, a2a.MethodPushConfigDelete, "DeleteTaskPushNotificationConfig", &a2a10.DeleteTaskPushNotificationConfigRequest{}, &emptypb.Empty{}},
	{a2a.V10, a2a.MethodExtendedCard, "GetExtendedAgentCard", &a2a10.GetExtendedAgentCardRequest{}, &a2a10.AgentCard{}},

	{a2a.V03, a2a.MethodSend, "SendMessage", &a2a03.SendMessageRequest{}, &a2a03.SendMessageResponse{}},
	{a2a.V03, a2a.MethodStream, "SendStreamingMessage", &a2a03.SendMessageRequest{}, &a2a03.StreamResponse{}},
	{a2a.V03, a2a.MethodGetTask, "GetTask", &a2a03.GetTaskRequest{}, &a2a03.Task{}},
	{a2a.V03, a2a.MethodCancelTask, "CancelTask", &a2a03.CancelTaskRequest{}, &a2a03.Task{}},
	{a2a.V03, a2a.MethodSubscribe, "TaskSubscription", &a2a03.TaskSubscriptionRequest{}, &a2a03.StreamResponse{}},
	{a2a.V03, a2a.MethodPushConfigSet, "CreateTaskPushNotificationConfig", &a2a03.CreateTaskPushNotificationConfigRequest{}, &a2a03.TaskPushNotificationConfig{}},
	{a2a.V03, a2a.MethodPushConfigGet, "GetTaskPushNotificationConfig", &a2a03.GetTaskPushNotificationConfigRequest{}, &a2a03.TaskPushNotificationConfig{}},
	{a2a.V03, a2a.MethodPushConfigList, "ListTaskPushNotificationConfig", &a2a03.ListTaskPushNotificationConfigRequest{}, &a2a03.ListTaskPushNotificationConfigResponse{}},
	{a2a.V03, a2a.MethodPushConfigDelete, "DeleteTaskPushNotificationConfig", &a2a03.DeleteTaskPushNotificationConfigRequest{}, &emptypb.Empty{}},
	{a2a.V03, a2a.MethodExtendedCard, "GetAgentCard", &a2a03.GetAgentCardRequest{}, &a2a03.AgentCard{}},
}

func lookup(v a2a.Version, m a2a.Method) (*rpc, bool) {
	for i := range rpcs {
		if rpcs[i].version == v && rpcs[i].method == m {
			return &rpcs[i], true
		}
	}
	return nil, false
}

func serviceOf(v a2a.Version) string {
	if v == a2a.V10 {
		return service10
	}
	return service03
}

// ParsePath reads a gRPC method path, "/lf.a2a.v1.A2AService/SendMessage"
// (1.0) or "/a2a.v1.A2AService/SendMessage" (0.3), into the version and the
// method; ok is false for any other path. Names are matched exactly, as
// gRPC servers do.
func ParsePath(path string) (v a2a.Version, m a2a.Method, ok bool) {
	svc, name, found := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !found || !strings.HasPrefix(path, "/") {
		return 0, a2a.MethodUnknown, false
	}
	switch svc {
	case service10:
		v = a2a.V10
	case service03:
		v = a2a.V03
	default:
		return 0, a2a.MethodUnknown, false
	}
	for _, r := range rpcs {
		if r.version == v && r.name == name {
			return v, r.method, true
		}
	}
	return 0, a2a.MethodUnknown, false
}

// Path is the method path of m in version v, for the gateway's own calls.
func Path(v a2a.Version, m a2a.Method) (string, bool) {
	r, ok := lookup(v, m)
	if !ok {
		return "", false
	}
	return "/" + serviceOf(v) + "/" + r.name, true
}

// descriptorOf returns the descriptor of a table message.
func descriptorOf(m proto.Message) protoreflect.MessageDescriptor {
	return m.ProtoReflect().Descriptor()
}

// newOf returns a new empty message of the type of m.
func newOf(m proto.Message) proto.Message {
	return m.ProtoReflect().New().Interface()
}
