package demoagent

import (
	"context"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	pb "github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// grpc10 serves lf.a2a.v1.A2AService, A2A 1.0. Each method names the
// HTTP+JSON request it stands for: the path of the 1.0 binding, below
// /{tenant} when the request names one, with the path's members left out
// of the query.
type grpc10 struct {
	pb.UnimplementedA2AServiceServer
	a *Agent
}

func path10(tenant string, segs ...string) string {
	if tenant != "" {
		segs = append([]string{tenant}, segs...)
	}
	return escapedPath(segs...)
}

func (s grpc10) SendMessage(ctx context.Context, in *pb.SendMessageRequest) (*pb.SendMessageResponse, error) {
	return grpcUnary[pb.SendMessageResponse](ctx, s.a, a2a.V10, a2a.MethodSend, in,
		postForm(path10(in.GetTenant(), "message:send"), in))
}

func (s grpc10) SendStreamingMessage(in *pb.SendMessageRequest, st grpc.ServerStreamingServer[pb.StreamResponse]) error {
	return grpcStream(st.Context(), s.a, a2a.V10, a2a.MethodStream, in,
		postForm(path10(in.GetTenant(), "message:stream"), in), st.Send)
}

func (s grpc10) GetTask(ctx context.Context, in *pb.GetTaskRequest) (*pb.Task, error) {
	return grpcUnary[pb.Task](ctx, s.a, a2a.V10, a2a.MethodGetTask, in,
		getForm(path10(in.GetTenant(), "tasks", in.GetId()), in, "tenant", "id"))
}

func (s grpc10) ListTasks(ctx context.Context, in *pb.ListTasksRequest) (*pb.ListTasksResponse, error) {
	return grpcUnary[pb.ListTasksResponse](ctx, s.a, a2a.V10, a2a.MethodListTasks, in,
		getForm(path10(in.GetTenant(), "tasks"), in, "tenant"))
}

func (s grpc10) CancelTask(ctx context.Context, in *pb.CancelTaskRequest) (*pb.Task, error) {
	return grpcUnary[pb.Task](ctx, s.a, a2a.V10, a2a.MethodCancelTask, in,
		postForm(path10(in.GetTenant(), "tasks", in.GetId()+":cancel"), nil))
}

func (s grpc10) SubscribeToTask(in *pb.SubscribeToTaskRequest, st grpc.ServerStreamingServer[pb.StreamResponse]) error {
	return grpcStream(st.Context(), s.a, a2a.V10, a2a.MethodSubscribe, in,
		getForm(path10(in.GetTenant(), "tasks", in.GetId()+":subscribe"), in, "tenant", "id"), st.Send)
}

func (s grpc10) CreateTaskPushNotificationConfig(ctx context.Context, in *pb.TaskPushNotificationConfig) (*pb.TaskPushNotificationConfig, error) {
	return grpcUnary[pb.TaskPushNotificationConfig](ctx, s.a, a2a.V10, a2a.MethodPushConfigSet, in,
		postForm(path10(in.GetTenant(), "tasks", in.GetTaskId(), "pushNotificationConfigs"), in))
}

func (s grpc10) GetTaskPushNotificationConfig(ctx context.Context, in *pb.GetTaskPushNotificationConfigRequest) (*pb.TaskPushNotificationConfig, error) {
	return grpcUnary[pb.TaskPushNotificationConfig](ctx, s.a, a2a.V10, a2a.MethodPushConfigGet, in,
		getForm(path10(in.GetTenant(), "tasks", in.GetTaskId(), "pushNotificationConfigs", in.GetId()), in, "tenant", "taskId", "id"))
}

func (s grpc10) ListTaskPushNotificationConfigs(ctx context.Context, in *pb.ListTaskPushNotificationConfigsRequest) (*pb.ListTaskPushNotificationConfigsResponse, error) {
	return grpcUnary[pb.ListTaskPushNotificationConfigsResponse](ctx, s.a, a2a.V10, a2a.MethodPushConfigList, in,
		getForm(path10(in.GetTenant(), "tasks", in.GetTaskId(), "pushNotificationConfigs"), in, "tenant", "taskId"))
}

func (s grpc10) GetExtendedAgentCard(ctx context.Context, in *pb.GetExtendedAgentCardRequest) (*pb.AgentCard, error) {
	return grpcUnary[pb.AgentCard](ctx, s.a, a2a.V10, a2a.MethodExtendedCard, in,
		getForm(path10(in.GetTenant(), "extendedAgentCard"), in, "tenant"))
}

func (s grpc10) DeleteTaskPushNotificationConfig(ctx context.Context, in *pb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	f := getForm(path10(in.GetTenant(), "tasks", in.GetTaskId(), "pushNotificationConfigs", in.GetId()), in, "tenant", "taskId", "id")
	f.method = http.MethodDelete
	return grpcUnary[emptypb.Empty](ctx, s.a, a2a.V10, a2a.MethodPushConfigDelete, in, f)
}
