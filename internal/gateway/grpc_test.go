package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// grpcEnv is a gateway serving the demo mount over gRPC too, in front of a
// gRPC agent, with one client connection to its gRPC listener.
type grpcEnv struct {
	*gwtest.Env
	agent *grpcAgent
	conn  *grpc.ClientConn
	c10   a2a10.A2AServiceClient
	c03   a2a03.A2AServiceClient
	// addr is the gateway's gRPC listener.
	addr string
	stop context.CancelFunc
	done chan error
}

func startGRPCEnv(t *testing.T, opts ...gwtest.Option) *grpcEnv {
	t.Helper()
	agent := startGRPCAgent(t)
	ln := listen(t)
	opts = append([]gwtest.Option{func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: ln.Addr().String(), Upstream: agent.addr}
	}}, opts...)
	env := gwtest.Start(t, opts...)
	ctx, stop := context.WithCancel(context.Background())
	e := &grpcEnv{Env: env, agent: agent, addr: ln.Addr().String(), stop: stop, done: make(chan error, 1)}
	go func() { e.done <- env.GW.ServeGRPC(ctx, listen(t), listen(t), map[string]net.Listener{"demo": ln}) }()
	t.Cleanup(e.shutdown)
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e.conn, e.c10, e.c03 = conn, a2a10.NewA2AServiceClient(conn), a2a03.NewA2AServiceClient(conn)
	return e
}

// shutdown stops the gateway's listeners, once, and waits for Serve.
func (e *grpcEnv) shutdown() {
	if e.stop == nil {
		return
	}
	e.stop()
	e.stop = nil
	<-e.done
}

// as is a call context carrying tenant's bearer token as metadata.
func (e *grpcEnv) as(t *testing.T, tenant string, kv ...string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, append([]string{"authorization", "Bearer " + e.Token(t, tenant, "alice")}, kv...)...)
}

func msg10(id, text string) *a2a10.Message {
	return &a2a10.Message{MessageId: id, Role: a2a10.Role_ROLE_USER, Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: text}}}}
}

func msg03(id, text string) *a2a03.Message {
	return &a2a03.Message{MessageId: id, Role: a2a03.Role_ROLE_USER, Content: []*a2a03.Part{{Part: &a2a03.Part_Text{Text: text}}}}
}

// grpcCode is the status code of err, with its message for the failure.
func wantCode(t *testing.T, err error, want codes.Code) *status.Status {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != want {
		t.Fatalf("want %v, got %v (%q)", want, st.Code(), st.Message())
	}
	return st
}

// recvAll reads a server stream to its end and returns what came and
// the status that ended it (nil for OK).
func recvAll[T any](t *testing.T, s grpc.ServerStreamingClient[T]) ([]*T, error) {
	t.Helper()
	var out []*T
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

// TestGRPCOperations runs every operation the agent serves, in both
// versions, through the gateway's gRPC listener: unary and streaming.
func TestGRPCOperations(t *testing.T) {
	e := startGRPCEnv(t)
	ctx := e.as(t, "acme")

	t.Run("1.0", func(t *testing.T) {
		res, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("ops10-1", "hi")})
		if err != nil {
			t.Fatal(err)
		}
		task := res.GetTask()
		if task.GetId() == "" || task.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_COMPLETED {
			t.Fatalf("send: %v", res)
		}
		got, err := e.c10.GetTask(ctx, &a2a10.GetTaskRequest{Id: task.GetId()})
		if err != nil || got.GetId() != task.GetId() {
			t.Fatalf("get: %v %v", got, err)
		}
		st, err := e.c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("ops10-2", "hi")})
		if err != nil {
			t.Fatal(err)
		}
		events, err := recvAll(t, st)
		if err != nil || len(events) != 2 || events[1].GetStatusUpdate().GetStatus().GetState() != a2a10.TaskState_TASK_STATE_COMPLETED {
			t.Fatalf("stream: %v %v", events, err)
		}
		sub, err := e.c10.SubscribeToTask(ctx, &a2a10.SubscribeToTaskRequest{Id: events[0].GetTask().GetId()})
		if err != nil {
			t.Fatal(err)
		}
		if events, err := recvAll(t, sub); err != nil || len(events) != 1 {
			t.Fatalf("subscribe: %v %v", events, err)
		}
		open, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("ops10-3", "auth")})
		if err != nil {
			t.Fatal(err)
		}
		canceled, err := e.c10.CancelTask(ctx, &a2a10.CancelTaskRequest{Id: open.GetTask().GetId()})
		if err != nil || canceled.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_CANCELED {
			t.Fatalf("cancel: %v %v", canceled, err)
		}
		list, err := e.c10.ListTasks(ctx, &a2a10.ListTasksRequest{})
		if err != nil || len(list.GetTasks()) != 3 {
			t.Fatalf("list: %v %v", list, err)
		}
	})
	t.Run("0.3", func(t *testing.T) {
		res, err := e.c03.SendMessage(ctx, &a2a03.SendMessageRequest{Request: msg03("ops03-1", "hi")})
		if err != nil {
			t.Fatal(err)
		}
		task := res.GetTask()
		if task.GetId() == "" || task.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_COMPLETED {
			t.Fatalf("send: %v", res)
		}
		got, err := e.c03.GetTask(ctx, &a2a03.GetTaskRequest{Name: "tasks/" + task.GetId()})
		if err != nil || got.GetId() != task.GetId() {
			t.Fatalf("get: %v %v", got, err)
		}
		st, err := e.c03.SendStreamingMessage(ctx, &a2a03.SendMessageRequest{Request: msg03("ops03-2", "hi")})
		if err != nil {
			t.Fatal(err)
		}
		events, err := recvAll(t, st)
		if err != nil || len(events) != 2 || !events[1].GetStatusUpdate().GetFinal() {
			t.Fatalf("stream: %v %v", events, err)
		}
		sub, err := e.c03.TaskSubscription(ctx, &a2a03.TaskSubscriptionRequest{Name: "tasks/" + events[0].GetTask().GetId()})
		if err != nil {
			t.Fatal(err)
		}
		if events, err := recvAll(t, sub); err != nil || len(events) != 1 {
			t.Fatalf("subscribe: %v %v", events, err)
		}
		open, err := e.c03.SendMessage(ctx, &a2a03.SendMessageRequest{Request: msg03("ops03-3", "auth")})
		if err != nil {
			t.Fatal(err)
		}
		canceled, err := e.c03.CancelTask(ctx, &a2a03.CancelTaskRequest{Name: "tasks/" + open.GetTask().GetId()})
		if err != nil || canceled.GetStatus().GetState() != a2a03.TaskState_TASK_STATE_CANCELLED {
			t.Fatalf("cancel: %v %v", canceled, err)
		}
	})
}
