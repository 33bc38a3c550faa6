package gateway_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// grpcAgent is a gRPC A2A agent on loopback serving both versions' services
// from one task table, for the gateway's gRPC tests. A message's text
// steers it: "hold" keeps a stream open until the caller leaves, "fail"
// answers with an error carrying the agent's own message and details,
// "auth" leaves the task auth-required. It records what reached it.
type grpcAgent struct {
	addr string

	mu    sync.Mutex
	tasks map[string]*agentTask
	n     int
	// calls are the metadata of every call, by method name.
	calls map[string][]metadata.MD
	// sends counts the sends of each message id.
	sends map[string]int
	// deadlines are the deadlines the calls came with (zero: none).
	deadlines []time.Time
	// cancelled receives the task id of a held stream whose caller left.
	cancelled chan string
	// last10 and last03 are the messages of the last send of each
	// version, unary or streaming; stream10 and stream03 the
	// configurations of the last streaming send of each version.
	last10   *a2a10.Message
	last03   *a2a03.Message
	stream10 *a2a10.SendMessageConfiguration
	stream03 *a2a03.SendMessageConfiguration
}

type agentTask struct {
	id, contextID string
	state         int32 // the TaskState number, the same in both versions
}

const (
	stateWorking      = 2
	stateCompleted    = 3
	stateCanceled     = 5
	stateAuthRequired = 8
)

func startGRPCAgent(t *testing.T) *grpcAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &grpcAgent{
		addr: ln.Addr().String(), tasks: map[string]*agentTask{}, calls: map[string][]metadata.MD{},
		sends: map[string]int{}, cancelled: make(chan string, 16),
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(a.unary), grpc.StreamInterceptor(a.stream))
	a2a10.RegisterA2AServiceServer(srv, &agent10{a: a})
	a2a03.RegisterA2AServiceServer(srv, &agent03{a: a})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return a
}

func (a *grpcAgent) record(ctx context.Context, method string) {
	md, _ := metadata.FromIncomingContext(ctx)
	dl, _ := ctx.Deadline()
	a.mu.Lock()
	defer a.mu.Unlock()
	name := method[strings.LastIndex(method, "/")+1:]
	a.calls[name] = append(a.calls[name], md.Copy())
	a.deadlines = append(a.deadlines, dl)
}

func (a *grpcAgent) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	a.record(ctx, info.FullMethod)
	// Metadata both ways: a header and trailers, one of them allowed.
	_ = grpc.SetHeader(ctx, metadata.Pairs("a2a-extensions", "https://example.com/ext", "x-agent-secret", "task-of-another"))
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-a2a-extensions", "https://example.com/trailer", "x-agent-trailer", "internal"))
	return h(ctx, req)
}

func (a *grpcAgent) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	a.record(ss.Context(), info.FullMethod)
	return h(srv, ss)
}

// lastCall is the metadata of the last call of method.
func (a *grpcAgent) lastCall(t *testing.T, method string) metadata.MD {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	calls := a.calls[method]
	if len(calls) == 0 {
		t.Fatalf("the agent saw no %s call", method)
	}
	return calls[len(calls)-1]
}

// lastMetadata is the message metadata of the last send of version.
func (a *grpcAgent) lastMetadata(t *testing.T, version string) *structpb.Struct {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case version == "1.0" && a.last10 != nil:
		return a.last10.GetMetadata()
	case version == "0.3" && a.last03 != nil:
		return a.last03.GetMetadata()
	}
	t.Fatalf("the agent got no %s send", version)
	return nil
}

// streamPushed says whether the last streaming send of version came with
// a push config.
func (a *grpcAgent) streamPushed(version string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if version == "0.3" {
		return a.stream03.GetPushNotification() != nil
	}
	return a.stream10.GetTaskPushNotificationConfig() != nil
}

func (a *grpcAgent) sendsOf(messageID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sends[messageID]
}

// send runs one message: a task of its own, or the one it continues.
func (a *grpcAgent) send(messageID, taskID, contextID, text string) (*agentTask, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sends[messageID]++
	if text == "fail" {
		return nil, agentFailure()
	}
	t := a.tasks[taskID]
	if t == nil {
		a.n++
		t = &agentTask{id: fmt.Sprintf("gtask-%d", a.n), contextID: contextID}
		if t.contextID == "" {
			t.contextID = fmt.Sprintf("gctx-%d", a.n)
		}
		a.tasks[t.id] = t
	}
	switch text {
	case "hold":
		t.state = stateWorking
	case "auth":
		t.state = stateAuthRequired
	default:
		t.state = stateCompleted
	}
	c := *t
	return &c, nil
}

func (a *grpcAgent) task(id string) (*agentTask, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tasks[id]
	if t == nil {
		st, _ := status.New(codes.NotFound, "no task "+id+" here").WithDetails(&errdetails.ErrorInfo{Reason: "TASK_NOT_FOUND", Domain: "a2a-protocol.org"})
		return nil, st.Err()
	}
	c := *t
	return &c, nil
}

func (a *grpcAgent) cancel(id string) (*agentTask, error) {
	if _, err := a.task(id); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tasks[id].state = stateCanceled
	c := *a.tasks[id]
	return &c, nil
}

func (a *grpcAgent) list() []agentTask {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]agentTask, 0, len(a.tasks))
	for i := 1; i <= a.n; i++ {
		if t := a.tasks[fmt.Sprintf("gtask-%d", i)]; t != nil {
			out = append(out, *t)
		}
	}
	return out
}

// agentFailure is an error with the agent's own message and details, which
// the gateway must not relay.
func agentFailure() error {
	st, _ := status.New(codes.FailedPrecondition, "agent-internal: task gtask-secret cannot").WithDetails(
		&errdetails.ErrorInfo{Reason: "TASK_NOT_CANCELABLE", Domain: "a2a-protocol.org", Metadata: map[string]string{"taskId": "gtask-secret"}})
	return st.Err()
}

// hold keeps a stream open until its caller leaves, and says so.
func (a *grpcAgent) hold(ctx context.Context, id string) error {
	<-ctx.Done()
	a.cancelled <- id
	return ctx.Err()
}

func text10(m *a2a10.Message) string {
	for _, p := range m.GetParts() {
		if t := p.GetText(); t != "" {
			return t
		}
	}
	return ""
}

func text03(m *a2a03.Message) string {
	for _, p := range m.GetContent() {
		if t := p.GetText(); t != "" {
			return t
		}
	}
	return ""
}

// agent10 serves lf.a2a.v1.A2AService.
type agent10 struct {
	a2a10.UnimplementedA2AServiceServer
	a *grpcAgent
}

func (s *agent10) pb(t *agentTask) *a2a10.Task {
	return &a2a10.Task{Id: t.id, ContextId: t.contextID, Status: &a2a10.TaskStatus{State: a2a10.TaskState(t.state)}}
}

func (s *agent10) SendMessage(ctx context.Context, r *a2a10.SendMessageRequest) (*a2a10.SendMessageResponse, error) {
	m := r.GetMessage()
	s.a.mu.Lock()
	s.a.last10 = m
	s.a.mu.Unlock()
	t, err := s.a.send(m.GetMessageId(), m.GetTaskId(), m.GetContextId(), text10(m))
	if err != nil {
		return nil, err
	}
	return &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: s.pb(t)}}, nil
}

func (s *agent10) SendStreamingMessage(r *a2a10.SendMessageRequest, ss grpc.ServerStreamingServer[a2a10.StreamResponse]) error {
	m := r.GetMessage()
	s.a.mu.Lock()
	s.a.last10, s.a.stream10 = m, r.GetConfiguration()
	s.a.mu.Unlock()
	text := text10(m)
	t, err := s.a.send(m.GetMessageId(), m.GetTaskId(), m.GetContextId(), text)
	if err != nil {
		return err
	}
	working := &agentTask{id: t.id, contextID: t.contextID, state: stateWorking}
	if err := ss.Send(&a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Task{Task: s.pb(working)}}); err != nil {
		return err
	}
	if text == "hold" {
		return s.a.hold(ss.Context(), t.id)
	}
	return ss.Send(&a2a10.StreamResponse{Payload: &a2a10.StreamResponse_StatusUpdate{StatusUpdate: &a2a10.TaskStatusUpdateEvent{
		TaskId: t.id, ContextId: t.contextID, Status: &a2a10.TaskStatus{State: a2a10.TaskState(t.state)},
	}}})
}

func (s *agent10) GetTask(ctx context.Context, r *a2a10.GetTaskRequest) (*a2a10.Task, error) {
	t, err := s.a.task(r.GetId())
	if err != nil {
		return nil, err
	}
	return s.pb(t), nil
}

func (s *agent10) CancelTask(ctx context.Context, r *a2a10.CancelTaskRequest) (*a2a10.Task, error) {
	t, err := s.a.cancel(r.GetId())
	if err != nil {
		return nil, err
	}
	return s.pb(t), nil
}

func (s *agent10) SubscribeToTask(r *a2a10.SubscribeToTaskRequest, ss grpc.ServerStreamingServer[a2a10.StreamResponse]) error {
	t, err := s.a.task(r.GetId())
	if err != nil {
		return err
	}
	if err := ss.Send(&a2a10.StreamResponse{Payload: &a2a10.StreamResponse_Task{Task: s.pb(t)}}); err != nil {
		return err
	}
	if t.state == stateWorking {
		return s.a.hold(ss.Context(), t.id)
	}
	return nil
}

func (s *agent10) ListTasks(ctx context.Context, r *a2a10.ListTasksRequest) (*a2a10.ListTasksResponse, error) {
	out := &a2a10.ListTasksResponse{}
	for _, t := range s.a.list() {
		out.Tasks = append(out.Tasks, s.pb(&t))
	}
	out.PageSize = int32(len(out.Tasks))
	return out, nil
}

func (s *agent10) GetExtendedAgentCard(ctx context.Context, r *a2a10.GetExtendedAgentCardRequest) (*a2a10.AgentCard, error) {
	return nil, status.Error(codes.Unimplemented, "no extended card")
}

func (s *agent10) DeleteTaskPushNotificationConfig(ctx context.Context, r *a2a10.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// agent03 serves a2a.v1.A2AService.
type agent03 struct {
	a2a03.UnimplementedA2AServiceServer
	a *grpcAgent
}

func (s *agent03) pb(t *agentTask) *a2a03.Task {
	return &a2a03.Task{Id: t.id, ContextId: t.contextID, Status: &a2a03.TaskStatus{State: a2a03.TaskState(t.state)}}
}

// taskName reads a 0.3 resource name, tasks/{id}.
func taskName(name string) string { return strings.TrimPrefix(name, "tasks/") }

func (s *agent03) SendMessage(ctx context.Context, r *a2a03.SendMessageRequest) (*a2a03.SendMessageResponse, error) {
	m := r.GetRequest()
	s.a.mu.Lock()
	s.a.last03 = m
	s.a.mu.Unlock()
	t, err := s.a.send(m.GetMessageId(), m.GetTaskId(), m.GetContextId(), text03(m))
	if err != nil {
		return nil, err
	}
	return &a2a03.SendMessageResponse{Payload: &a2a03.SendMessageResponse_Task{Task: s.pb(t)}}, nil
}

func (s *agent03) SendStreamingMessage(r *a2a03.SendMessageRequest, ss grpc.ServerStreamingServer[a2a03.StreamResponse]) error {
	m := r.GetRequest()
	s.a.mu.Lock()
	s.a.last03, s.a.stream03 = m, r.GetConfiguration()
	s.a.mu.Unlock()
	text := text03(m)
	t, err := s.a.send(m.GetMessageId(), m.GetTaskId(), m.GetContextId(), text)
	if err != nil {
		return err
	}
	working := &agentTask{id: t.id, contextID: t.contextID, state: stateWorking}
	if err := ss.Send(&a2a03.StreamResponse{Payload: &a2a03.StreamResponse_Task{Task: s.pb(working)}}); err != nil {
		return err
	}
	if text == "hold" {
		return s.a.hold(ss.Context(), t.id)
	}
	return ss.Send(&a2a03.StreamResponse{Payload: &a2a03.StreamResponse_StatusUpdate{StatusUpdate: &a2a03.TaskStatusUpdateEvent{
		TaskId: t.id, ContextId: t.contextID, Status: &a2a03.TaskStatus{State: a2a03.TaskState(t.state)}, Final: true,
	}}})
}

func (s *agent03) GetTask(ctx context.Context, r *a2a03.GetTaskRequest) (*a2a03.Task, error) {
	t, err := s.a.task(taskName(r.GetName()))
	if err != nil {
		return nil, err
	}
	return s.pb(t), nil
}

func (s *agent03) CancelTask(ctx context.Context, r *a2a03.CancelTaskRequest) (*a2a03.Task, error) {
	t, err := s.a.cancel(taskName(r.GetName()))
	if err != nil {
		return nil, err
	}
	return s.pb(t), nil
}

func (s *agent03) TaskSubscription(r *a2a03.TaskSubscriptionRequest, ss grpc.ServerStreamingServer[a2a03.StreamResponse]) error {
	t, err := s.a.task(taskName(r.GetName()))
	if err != nil {
		return err
	}
	if err := ss.Send(&a2a03.StreamResponse{Payload: &a2a03.StreamResponse_Task{Task: s.pb(t)}}); err != nil {
		return err
	}
	if t.state == stateWorking {
		return s.a.hold(ss.Context(), t.id)
	}
	return nil
}
