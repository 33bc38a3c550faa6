package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
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
	addr     string
	stop     context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

func startGRPCEnv(t *testing.T, opts ...gwtest.Option) *grpcEnv {
	t.Helper()
	return startGRPCOn(t, gwtest.Start, opts...)
}

// startGRPCOn is startGRPCEnv on an environment start makes (a push or
// auth-flow one).
func startGRPCOn(t *testing.T, start func(testing.TB, ...gwtest.Option) *gwtest.Env, opts ...gwtest.Option) *grpcEnv {
	t.Helper()
	agent := startGRPCAgent(t)
	ln := listen(t)
	opts = append([]gwtest.Option{func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: ln.Addr().String(), Upstream: agent.addr}
	}}, opts...)
	env := start(t, opts...)
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
	e.stopOnce.Do(func() {
		e.stop()
		<-e.done
	})
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

// TestGRPCMetadataBothWays: the caller's metadata reaches the agent without
// its credentials and with the deadline left; the agent's headers and
// trailers reach the caller by the allowlist only.
func TestGRPCMetadataBothWays(t *testing.T) {
	e := startGRPCEnv(t)
	ctx := e.as(t, "acme", "cookie", "session=1", "x-trace-note", "kept")
	deadline, _ := ctx.Deadline()
	var hdr, trl metadata.MD
	if _, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("md-1", "hi")}, grpc.Header(&hdr), grpc.Trailer(&trl)); err != nil {
		t.Fatal(err)
	}
	md := e.agent.lastCall(t, "SendMessage")
	for _, k := range []string{"authorization", "x-api-key", "cookie"} {
		if v := md.Get(k); len(v) > 0 {
			t.Errorf("the agent got the caller's %s: %q", k, v)
		}
	}
	if got := md.Get("x-trace-note"); len(got) != 1 || got[0] != "kept" {
		t.Errorf("the agent got x-trace-note %q, want the caller's", got)
	}
	// The caller sent no a2a-version; the agent must not read the 1.0
	// call as 0.3, and a 0.3 call says none.
	if got := md.Get("a2a-version"); len(got) != 1 || got[0] != "1.0" {
		t.Errorf("the agent got a2a-version %q on a 1.0 call, want 1.0", got)
	}
	v03 := metadata.AppendToOutgoingContext(ctx, "a2a-version", "1.0")
	if _, err := e.c03.SendMessage(v03, &a2a03.SendMessageRequest{Request: msg03("md-2", "hi")}); err != nil {
		t.Fatal(err)
	}
	if got := e.agent.lastCall(t, "SendMessage").Get("a2a-version"); len(got) != 0 {
		t.Errorf("the agent got a2a-version %q on a 0.3 call, want none", got)
	}
	e.agent.mu.Lock()
	agentDeadline := e.agent.deadlines[len(e.agent.deadlines)-1]
	e.agent.mu.Unlock()
	// The caller's deadline (testTimeout) is half the gateway's request
	// timeout: the agent must get the caller's, give or take the rounding
	// of grpc-timeout, not the gateway's.
	if agentDeadline.IsZero() || agentDeadline.After(deadline.Add(testTimeout/2)) {
		t.Errorf("the agent's deadline %v is not the caller's %v", agentDeadline, deadline)
	}
	if got := hdr.Get("a2a-extensions"); len(got) != 1 {
		t.Errorf("allowed header a2a-extensions not relayed: %v", hdr)
	}
	if got := hdr.Get("x-agent-secret"); len(got) != 0 {
		t.Errorf("header outside the allowlist relayed: %q", got)
	}
	if got := trl.Get("x-a2a-extensions"); len(got) != 1 {
		t.Errorf("allowed trailer x-a2a-extensions not relayed: %v", trl)
	}
	if got := trl.Get("x-agent-trailer"); len(got) != 0 {
		t.Errorf("trailer outside the allowlist relayed: %q", got)
	}
}

// TestGRPCErrors: the agent's errors reach the caller as the gateway's error
// for the agent's code, never with its message or details; the gateway's
// own refusals carry their status and ErrorInfo.
func TestGRPCErrors(t *testing.T) {
	e := startGRPCEnv(t)
	for _, tc := range []struct {
		name   string
		call   func() error
		code   codes.Code
		reason string
	}{
		{"agent error 1.0", func() error {
			_, err := e.c10.SendMessage(e.as(t, "acme"), &a2a10.SendMessageRequest{Message: msg10("err-1", "fail")})
			return err
		}, codes.FailedPrecondition, "TASK_NOT_CANCELABLE"},
		{"agent error in a 1.0 stream", func() error {
			st, err := e.c10.SendStreamingMessage(e.as(t, "acme"), &a2a10.SendMessageRequest{Message: msg10("err-2", "fail")})
			if err != nil {
				return err
			}
			_, err = recvAll(t, st)
			return err
		}, codes.FailedPrecondition, "TASK_NOT_CANCELABLE"},
		{"agent error 0.3", func() error {
			_, err := e.c03.SendMessage(e.as(t, "acme"), &a2a03.SendMessageRequest{Request: msg03("err-3", "fail")})
			return err
		}, codes.FailedPrecondition, ""},
		{"no credential", func() error {
			_, err := e.c10.GetTask(context.Background(), &a2a10.GetTaskRequest{Id: "gtask-1"})
			return err
		}, codes.Unauthenticated, "UNAUTHENTICATED"},
		{"no credential, streaming", func() error {
			st, err := e.c10.SubscribeToTask(context.Background(), &a2a10.SubscribeToTaskRequest{Id: "gtask-1"})
			if err != nil {
				return err
			}
			_, err = recvAll(t, st)
			return err
		}, codes.Unauthenticated, "UNAUTHENTICATED"},
		{"unknown method", func() error {
			return e.conn.Invoke(e.as(t, "acme"), "/lf.a2a.v1.A2AService/Nope", &a2a10.GetTaskRequest{}, &a2a10.Task{})
		}, codes.Unimplemented, "METHOD_NOT_FOUND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := wantCode(t, tc.call(), tc.code)
			if strings.Contains(st.Message(), "agent-internal") || strings.Contains(st.Message(), "gtask-secret") {
				t.Errorf("the agent's message reached the caller: %q", st.Message())
			}
			for _, d := range st.Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok && len(info.GetMetadata()) > 0 && info.GetMetadata()["taskId"] != "" {
					t.Errorf("the agent's details reached the caller: %v", info)
				}
			}
			if tc.reason != "" {
				info := errorInfo(t, st)
				if info.GetReason() != tc.reason || info.GetDomain() != "a2a-protocol.org" {
					t.Errorf("ErrorInfo %v, want reason %s", info, tc.reason)
				}
			}
		})
	}
}

func errorInfo(t *testing.T, st *status.Status) *errdetails.ErrorInfo {
	t.Helper()
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	t.Fatalf("status %v carries no ErrorInfo", st.Proto())
	return nil
}

// TestGRPCTenants: two tenants' calls share one HTTP/2 connection and are
// authenticated one by one; another tenant's task is NOT_FOUND exactly as
// an unknown one, status and details byte for byte, in both versions.
func TestGRPCTenants(t *testing.T) {
	e := startGRPCEnv(t)
	acme, globex := e.as(t, "acme"), e.as(t, "globex")
	res, err := e.c10.SendMessage(acme, &a2a10.SendMessageRequest{Message: msg10("ten-1", "auth")})
	if err != nil {
		t.Fatal(err)
	}
	own := res.GetTask().GetId()
	if _, err := e.c10.SendMessage(globex, &a2a10.SendMessageRequest{Message: msg10("ten-2", "hi")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c10.GetTask(acme, &a2a10.GetTaskRequest{Id: own}); err != nil {
		t.Fatalf("the owner cannot read its task: %v", err)
	}
	statusBytes := func(err error) []byte {
		t.Helper()
		st := wantCode(t, err, codes.NotFound)
		b, merr := proto.Marshal(st.Proto())
		if merr != nil {
			t.Fatal(merr)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, id string) error
	}{
		{"1.0 get", func(ctx context.Context, id string) error {
			_, err := e.c10.GetTask(ctx, &a2a10.GetTaskRequest{Id: id})
			return err
		}},
		{"1.0 cancel", func(ctx context.Context, id string) error {
			_, err := e.c10.CancelTask(ctx, &a2a10.CancelTaskRequest{Id: id})
			return err
		}},
		{"1.0 subscribe", func(ctx context.Context, id string) error {
			st, err := e.c10.SubscribeToTask(ctx, &a2a10.SubscribeToTaskRequest{Id: id})
			if err != nil {
				return err
			}
			_, err = recvAll(t, st)
			return err
		}},
		{"1.0 send continuing it", func(ctx context.Context, id string) error {
			m := msg10("ten-"+id, "hi")
			m.TaskId = id
			_, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: m})
			return err
		}},
		{"0.3 get", func(ctx context.Context, id string) error {
			_, err := e.c03.GetTask(ctx, &a2a03.GetTaskRequest{Name: "tasks/" + id})
			return err
		}},
		{"1.0 streaming send continuing it", func(ctx context.Context, id string) error {
			m := msg10("ten-s-"+id, "hi")
			m.TaskId = id
			st, err := e.c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: m})
			if err != nil {
				return err
			}
			_, err = recvAll(t, st)
			return err
		}},
		{"1.0 send referring to it", func(ctx context.Context, id string) error {
			m := msg10("ten-r-"+id, "hi")
			m.ReferenceTaskIds = []string{id}
			_, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: m})
			return err
		}},
		{"1.0 push config create", func(ctx context.Context, id string) error {
			_, err := e.c10.CreateTaskPushNotificationConfig(ctx, &a2a10.TaskPushNotificationConfig{TaskId: id, Url: "https://hooks.example.com/a2a"})
			return err
		}},
		{"1.0 push config get", func(ctx context.Context, id string) error {
			_, err := e.c10.GetTaskPushNotificationConfig(ctx, &a2a10.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"})
			return err
		}},
		{"1.0 push config list", func(ctx context.Context, id string) error {
			_, err := e.c10.ListTaskPushNotificationConfigs(ctx, &a2a10.ListTaskPushNotificationConfigsRequest{TaskId: id})
			return err
		}},
		{"1.0 push config delete", func(ctx context.Context, id string) error {
			_, err := e.c10.DeleteTaskPushNotificationConfig(ctx, &a2a10.DeleteTaskPushNotificationConfigRequest{TaskId: id, Id: "cfg-1"})
			return err
		}},
		{"0.3 cancel", func(ctx context.Context, id string) error {
			_, err := e.c03.CancelTask(ctx, &a2a03.CancelTaskRequest{Name: "tasks/" + id})
			return err
		}},
		{"0.3 subscribe", func(ctx context.Context, id string) error {
			st, err := e.c03.TaskSubscription(ctx, &a2a03.TaskSubscriptionRequest{Name: "tasks/" + id})
			if err != nil {
				return err
			}
			_, err = recvAll(t, st)
			return err
		}},
		{"0.3 send continuing it", func(ctx context.Context, id string) error {
			m := msg03("ten3-"+id, "hi")
			m.TaskId = id
			_, err := e.c03.SendMessage(ctx, &a2a03.SendMessageRequest{Request: m})
			return err
		}},
		{"0.3 push config get", func(ctx context.Context, id string) error {
			_, err := e.c03.GetTaskPushNotificationConfig(ctx, &a2a03.GetTaskPushNotificationConfigRequest{Name: "tasks/" + id + "/pushNotificationConfigs/cfg-1"})
			return err
		}},
		{"0.3 push config list", func(ctx context.Context, id string) error {
			_, err := e.c03.ListTaskPushNotificationConfig(ctx, &a2a03.ListTaskPushNotificationConfigRequest{Parent: "tasks/" + id})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			foreign := statusBytes(tc.call(globex, own))
			unknown := statusBytes(tc.call(globex, "gtask-unknown"))
			if !bytes.Equal(foreign, unknown) {
				t.Errorf("a foreign task reads differently from an unknown one:\n%x\n%x", foreign, unknown)
			}
		})
	}
	list, err := e.c10.ListTasks(globex, &a2a10.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range list.GetTasks() {
		if task.GetId() == own {
			t.Errorf("globex's list shows acme's task %s", own)
		}
	}
}

// TestGRPCDedupe: a retried message id reaches the agent once, unary and
// streaming, in both versions; the retry gets the first answer.
func TestGRPCDedupe(t *testing.T) {
	e := startGRPCEnv(t)
	for _, v := range grpcVersions {
		t.Run(v.name, func(t *testing.T) {
			ctx := e.as(t, "acme")
			unary := grpcMsg{id: "dup-unary-" + v.name, text: "hi"}
			first, err := v.send(ctx, e, unary)
			if err != nil {
				t.Fatal(err)
			}
			again, err := v.send(ctx, e, unary)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(first.raw, again.raw) || e.agent.sendsOf(unary.id) != 1 {
				t.Fatalf("retry: %v after %v; the agent saw the message %d times", again.raw, first.raw, e.agent.sendsOf(unary.id))
			}
			streamed := grpcMsg{id: "dup-stream-" + v.name, text: "hi"}
			for range 2 {
				if ids, err := v.stream(t, ctx, e, streamed); err != nil || len(ids) == 0 {
					t.Fatalf("stream: %v %v", ids, err)
				}
			}
			if n := e.agent.sendsOf(streamed.id); n != 1 {
				t.Fatalf("the agent saw the streamed message %d times", n)
			}
		})
	}
}

// TestGRPCCancelPropagates: a caller leaving a stream cancels the agent's.
func TestGRPCCancelPropagates(t *testing.T) {
	e := startGRPCEnv(t)
	ctx, cancel := context.WithCancel(e.as(t, "acme"))
	st, err := e.c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("cancel-1", "hold")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case id := <-e.agent.cancelled:
		if id != first.GetTask().GetId() {
			t.Fatalf("the agent's stream of %s ended, want %s", id, first.GetTask().GetId())
		}
	case <-time.After(testTimeout):
		t.Fatal("the agent's stream outlived its caller")
	}
}

// TestGRPCHealthAndDrain: the listener's health is SERVING, NOT_SERVING
// once shutdown begins; an open stream is then ended with UNAVAILABLE.
func TestGRPCHealthAndDrain(t *testing.T) {
	e := startGRPCEnv(t, func(c *config.Config) { c.Shutdown.StreamGrace = duration.Duration(time.Millisecond) })
	health := healthpb.NewHealthClient(e.conn)
	ctx := e.as(t, "acme")
	for _, svc := range []string{"", "lf.a2a.v1.A2AService", "a2a.v1.A2AService"} {
		res, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("check %q: %v %v", svc, res, err)
		}
	}
	_, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: "other.Service"})
	wantCode(t, err, codes.NotFound)

	watch, err := health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch: %v %v", res, err)
	}
	st, err := e.c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("drain-1", "hold")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	go e.shutdown()
	if res, err := watch.Recv(); err != nil || res.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("watch during shutdown: %v %v", res, err)
	}
	_, err = recvAll(t, st)
	wantCode(t, err, codes.Unavailable)
}

// TestGRPCCard: the rewritten card lists the gRPC listener, both versions.
func TestGRPCCard(t *testing.T) {
	e := startGRPCEnv(t)
	for _, v := range []string{"1.0", "0.3"} {
		_, body := e.Do(t, http.MethodGet, e.AgentBase+"/.well-known/agent-card.json", "", v, nil)
		if !bytes.Contains(body, []byte(`"url":"`+e.addr+`"`)) || !bytes.Contains(body, []byte(`"GRPC"`)) {
			t.Errorf("%s card lists no gRPC interface at %s: %s", v, e.addr, body)
		}
	}
}

// TestGRPCOnlyAgent: an agent whose card offers gRPC alone is fronted: its
// card is served, callers reach it, and the gateway's own calls (Call,
// CallStream) go over gRPC.
func TestGRPCOnlyAgent(t *testing.T) {
	var agentAddr string
	card := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"name":"grpc-only","description":"d","version":"1","capabilities":{"streaming":true},`+
			`"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[],`+
			`"supportedInterfaces":[{"url":"`+agentAddr+`","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`)
	}))
	t.Cleanup(card.Close)
	// No grpc.upstream: the address is the one the agent's card names.
	e := startGRPCEnv(t, func(c *config.Config) {
		agentAddr = c.Agents[0].GRPC.Upstream
		c.Agents[0].URL = card.URL
		c.Agents[0].GRPC.Upstream = ""
	})
	_, body := e.Do(t, http.MethodGet, e.AgentBase+"/.well-known/agent-card.json", "", "1.0", nil)
	if want := `"supportedInterfaces":[{"protocolBinding":"GRPC","protocolVersion":"1.0","url":"` + e.addr + `"}]`; !bytes.Contains(body, []byte(want)) {
		t.Fatalf("card: %s, want %s", body, want)
	}
	ctx := e.as(t, "acme")
	res, err := e.c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("only-1", "auth")})
	if err != nil {
		t.Fatal(err)
	}
	id := res.GetTask().GetId()
	px := e.GW.Proxy()
	got, err := px.Call(ctx, "demo", a2a.V10, a2a.MethodGetTask, a2a.TaskParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := a2a.ParseResult(got); err != nil || ev.TaskID != id || ev.State != a2a.StateAuthRequired {
		t.Fatalf("Call over gRPC: %s %v", got, err)
	}
	if got := e.agent.lastCall(t, "GetTask").Get("a2a-version"); len(got) != 1 || got[0] != "1.0" {
		t.Fatalf("the gateway's own 1.0 call carried a2a-version %q, want 1.0", got)
	}
	if _, err := px.Call(ctx, "demo", a2a.V10, a2a.MethodGetTask, a2a.TaskParams{ID: "gtask-unknown"}); err == nil {
		t.Fatal("Call of an unknown task succeeded")
	} else if ae := (*a2a.Error)(nil); !errors.As(err, &ae) || ae.Code != a2a.ErrTaskNotFound.Code {
		t.Fatalf("Call of an unknown task: %v, want the agent's TaskNotFound", err)
	}
	var events []a2a.Event
	err = px.CallStream(ctx, "demo", a2a.V03, a2a.MethodSubscribe, a2a.TaskParams{ID: id}, func(ev a2a.Event, _ []byte) error {
		events = append(events, ev)
		return nil
	})
	if err != nil || len(events) != 1 || events[0].TaskID != id {
		t.Fatalf("CallStream over gRPC: %v %v", events, err)
	}
	if md := e.agent.lastCall(t, "TaskSubscription"); len(md.Get("authorization")) != 0 {
		t.Fatalf("the gateway's own call carried a credential: %v", md)
	}
}

// TestGRPCOverTLS: a listener with a certificate serves gRPC over TLS
// (HTTP/2 by ALPN).
func TestGRPCOverTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gateway"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startGRPCEnv(t, func(c *config.Config) {
		c.Agents[0].GRPC.TLS = &config.ListenerTLS{CertFile: certFile, KeyFile: keyFile}
	})
	pool := x509.NewCertPool()
	pool.AddCert(must(x509.ParseCertificate(der)))
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := a2a10.NewA2AServiceClient(conn).SendMessage(e.as(t, "acme"), &a2a10.SendMessageRequest{Message: msg10("tls-1", "hi")})
	if err != nil || res.GetTask().GetId() == "" {
		t.Fatalf("send over TLS: %v %v", res, err)
	}
	// The h2c client of the environment gets nowhere on a TLS listener.
	ctx, cancel := context.WithTimeout(e.as(t, "acme"), time.Second)
	defer cancel()
	if _, err := e.c10.GetTask(ctx, &a2a10.GetTaskRequest{Id: res.GetTask().GetId()}); err == nil {
		t.Fatal("an h2c call succeeded on a TLS listener")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGRPCStreamCap: gRPC streams count against limits.max_streams with
// SSE ones; one over the cap is RESOURCE_EXHAUSTED with a retry hint.
func TestGRPCStreamCap(t *testing.T) {
	e := startGRPCEnv(t, func(c *config.Config) { c.Limits.MaxStreams = 1 })
	ctx := e.as(t, "acme")
	held, err := e.c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("cap-1", "hold")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Recv(); err != nil {
		t.Fatal(err)
	}
	st, err := e.c10.SendStreamingMessage(ctx, &a2a10.SendMessageRequest{Message: msg10("cap-2", "hi")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = recvAll(t, st)
	refused := wantCode(t, err, codes.ResourceExhausted)
	var hinted bool
	for _, d := range refused.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
			hinted = true
		}
	}
	if !hinted {
		t.Fatalf("no RetryInfo in %v", refused.Proto())
	}
}
