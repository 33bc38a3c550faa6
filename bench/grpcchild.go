package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"

	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// grpcUpstream is the gRPC agent of the gRPC rows: SendMessage answers a
// completed task named after the message (so that every request creates a
// task of its own), and SendStreamingMessage sends a working task and then
// holds the stream open until its caller leaves (the idle streams).
type grpcUpstream struct {
	a2a10.UnimplementedA2AServiceServer
}

func (grpcUpstream) SendMessage(_ context.Context, r *a2a10.SendMessageRequest) (*a2a10.SendMessageResponse, error) {
	return &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: benchTask(r, a2a10.TaskState_TASK_STATE_COMPLETED)}}, nil
}

func (grpcUpstream) SendStreamingMessage(r *a2a10.SendMessageRequest, ss grpc.ServerStreamingServer[a2a10.StreamResponse]) error {
	if err := ss.Send(&a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Task{Task: benchTask(r, a2a10.TaskState_TASK_STATE_WORKING)}}); err != nil {
		return err
	}
	<-ss.Context().Done()
	return nil
}

func benchTask(r *a2a10.SendMessageRequest, state a2a10.TaskState) *a2a10.Task {
	id := r.GetMessage().GetMessageId()
	return &a2a10.Task{Id: "task-" + id, ContextId: "ctx-" + id, Status: &a2a10.TaskStatus{State: state}}
}

func runGRPCUpstreamChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("grpcupstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := grpc.NewServer()
	a2a10.RegisterA2AServiceServer(srv, grpcUpstream{})
	return serveGRPCUntil(ctx, *addr, srv)
}

// runGRPCProxyChild is the gRPC baseline: a transparent grpc-go proxy of
// the same bytes, which reads no message (a raw codec and an unknown
// service handler).
func runGRPCProxyChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("grpcproxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	target := fs.String("target", "", "upstream host:port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	conn, err := grpc.NewClient(*target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
	if err != nil {
		return err
	}
	defer conn.Close()
	srv := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, in grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(in)
		out, err := conn.NewStream(in.Context(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err != nil {
			return err
		}
		var req mem.BufferSlice
		if err := in.RecvMsg(&req); err != nil {
			return err
		}
		if err := out.SendMsg(req); err != nil {
			return err
		}
		if err := out.CloseSend(); err != nil {
			return err
		}
		for {
			var msg mem.BufferSlice
			if err := out.RecvMsg(&msg); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			if err := in.SendMsg(msg); err != nil {
				return err
			}
		}
	}))
	return serveGRPCUntil(ctx, *addr, srv)
}

// rawCodec passes messages through as bytes, under the proto codec's
// name so that the content type stays application/grpc+proto.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(mem.BufferSlice)
	if !ok {
		return nil, fmt.Errorf("raw codec: %T is not a buffer", v)
	}
	return b, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*mem.BufferSlice)
	if !ok {
		return fmt.Errorf("raw codec: %T is not a buffer", v)
	}
	// The buffers are freed after Unmarshal returns: keep a copy.
	*p = mem.BufferSlice{mem.SliceBuffer(data.Materialize())}
	return nil
}

func (rawCodec) Name() string { return "proto" }

func serveGRPCUntil(ctx context.Context, addr string, srv *grpc.Server) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	return srv.Serve(l)
}
