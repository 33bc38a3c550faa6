package demoagent

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	pb "github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
)

// grpc03 serves a2a.v1.A2AService, A2A 0.3. Its requests name tasks and
// configs by resource names ("tasks/{id}/pushNotificationConfigs/{cfg}"),
// which are the 0.3 HTTP+JSON paths below /v1.
type grpc03 struct {
	pb.UnimplementedA2AServiceServer
	a *Agent
}

// path03 is the HTTP+JSON path of a resource name, each segment escaped,
// with an optional suffix such as ":cancel". A name of the wrong shape
// yields a path of another method, which grpcCall refuses.
func path03(name, suffix string) string {
	return "/v1" + escapedPath(strings.Split(name, "/")...) + suffix
}

func (s grpc03) SendMessage(ctx context.Context, in *pb.SendMessageRequest) (*pb.SendMessageResponse, error) {
	return grpcUnary[pb.SendMessageResponse](ctx, s.a, a2a.V03, a2a.MethodSend, in, postForm("/v1/message:send", in))
}

func (s grpc03) SendStreamingMessage(in *pb.SendMessageRequest, st grpc.ServerStreamingServer[pb.StreamResponse]) error {
	return grpcStream(st.Context(), s.a, a2a.V03, a2a.MethodStream, in, postForm("/v1/message:stream", in), st.Send)
}

func (s grpc03) GetTask(ctx context.Context, in *pb.GetTaskRequest) (*pb.Task, error) {
	return grpcUnary[pb.Task](ctx, s.a, a2a.V03, a2a.MethodGetTask, in, getForm(path03(in.GetName(), ""), in, "name"))
}

func (s grpc03) CancelTask(ctx context.Context, in *pb.CancelTaskRequest) (*pb.Task, error) {
	return grpcUnary[pb.Task](ctx, s.a, a2a.V03, a2a.MethodCancelTask, in, postForm(path03(in.GetName(), ":cancel"), nil))
}

func (s grpc03) TaskSubscription(in *pb.TaskSubscriptionRequest, st grpc.ServerStreamingServer[pb.StreamResponse]) error {
	return grpcStream(st.Context(), s.a, a2a.V03, a2a.MethodSubscribe, in,
		getForm(path03(in.GetName(), ":subscribe"), in, "name"), st.Send)
}

// CreateTaskPushNotificationConfig posts the config, as the HTTP+JSON
// binding does; config_id names it when the config itself carries no id.
func (s grpc03) CreateTaskPushNotificationConfig(ctx context.Context, in *pb.CreateTaskPushNotificationConfigRequest) (*pb.TaskPushNotificationConfig, error) {
	cfg, _ := proto.Clone(in.GetConfig()).(*pb.TaskPushNotificationConfig)
	if cfg == nil {
		cfg = &pb.TaskPushNotificationConfig{}
	}
	if inner := cfg.GetPushNotificationConfig(); inner != nil && inner.GetId() == "" {
		inner.Id = in.GetConfigId()
	}
	return grpcUnary[pb.TaskPushNotificationConfig](ctx, s.a, a2a.V03, a2a.MethodPushConfigSet, in,
		postForm(path03(in.GetParent(), "/pushNotificationConfigs"), cfg))
}

func (s grpc03) GetTaskPushNotificationConfig(ctx context.Context, in *pb.GetTaskPushNotificationConfigRequest) (*pb.TaskPushNotificationConfig, error) {
	return grpcUnary[pb.TaskPushNotificationConfig](ctx, s.a, a2a.V03, a2a.MethodPushConfigGet, in,
		getForm(path03(in.GetName(), ""), in, "name"))
}

func (s grpc03) ListTaskPushNotificationConfig(ctx context.Context, in *pb.ListTaskPushNotificationConfigRequest) (*pb.ListTaskPushNotificationConfigResponse, error) {
	return grpcUnary[pb.ListTaskPushNotificationConfigResponse](ctx, s.a, a2a.V03, a2a.MethodPushConfigList, in,
		getForm(path03(in.GetParent(), "/pushNotificationConfigs"), in, "parent"))
}

func (s grpc03) GetAgentCard(ctx context.Context, in *pb.GetAgentCardRequest) (*pb.AgentCard, error) {
	return grpcUnary[pb.AgentCard](ctx, s.a, a2a.V03, a2a.MethodExtendedCard, in, getForm("/v1/card", in))
}

func (s grpc03) DeleteTaskPushNotificationConfig(ctx context.Context, in *pb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	f := getForm(path03(in.GetName(), ""), in, "name")
	f.method = http.MethodDelete
	return grpcUnary[emptypb.Empty](ctx, s.a, a2a.V03, a2a.MethodPushConfigDelete, in, f)
}
