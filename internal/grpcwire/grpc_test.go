package grpcwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// These tests put the wire form between real grpc-go clients and servers
// over h2c on loopback.

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// wireServer answers gRPC calls with this package alone, as the gateway
// does: GetTask with a task, SubscribeToTask with two events and then an
// error in the trailers, every refused request with a trailers-only error.
func wireServer(t *testing.T) string {
	ln := listen(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, m, ok := ParsePath(r.URL.Path)
		if !ok {
			WriteError(w, a2a.V10, a2a.ErrMethodNotFound)
			return
		}
		msg, err := ReadMessage(r.Body, 1<<20)
		if err != nil {
			WriteError(w, v, a2a.ErrInvalidRequest.WithMessage(err.Error()))
			return
		}
		op, e := Classify(v, m, msg)
		if e != nil {
			WriteError(w, v, e)
			return
		}
		if op.TaskID != "task-1" {
			WriteError(w, v, a2a.ErrTaskNotFound)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.WriteHeader(http.StatusOK)
		switch m {
		case a2a.MethodGetTask:
			enc, err := EncodeAnswer(op, []byte(`{"id":"task-1","contextId":"`+op.Tenant+`","status":{"state":"TASK_STATE_WORKING"}}`))
			if err != nil {
				t.Error(err)
			}
			_, _ = w.Write(AppendMessage(nil, enc))
			SetStatusTrailer(w.Header(), v, nil)
		case a2a.MethodSubscribe:
			for _, ev := range []string{`{"task":{"id":"task-1","status":{"state":"TASK_STATE_WORKING"}}}`, `{"statusUpdate":{"taskId":"task-1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`} {
				enc, err := EncodeAnswer(op, []byte(ev))
				if err != nil {
					t.Error(err)
				}
				_, _ = w.Write(AppendMessage(nil, enc))
				w.(http.Flusher).Flush()
			}
			SetStatusTrailer(w.Header(), v, a2a.ErrUnavailable.WithRetryAfter(3e9))
		default:
			SetStatusTrailer(w.Header(), v, a2a.ErrUnsupportedOperation)
		}
	})
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func TestGRPCGoClient(t *testing.T) {
	conn, err := grpc.NewClient(wireServer(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := a2a10.NewA2AServiceClient(conn)
	ctx := context.Background()

	task, err := client.GetTask(ctx, &a2a10.GetTaskRequest{Tenant: "acme", Id: "task-1"})
	if err != nil || task.GetId() != "task-1" || task.GetContextId() != "acme" || task.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_WORKING {
		t.Fatalf("GetTask: %v %v", task, err)
	}

	_, err = client.GetTask(ctx, &a2a10.GetTaskRequest{Id: "other"})
	st := status.Convert(err)
	if st.Code() != codes.NotFound || st.Message() != a2a.ErrTaskNotFound.Message {
		t.Fatalf("unknown task: %v", err)
	}
	if info := errorInfo(st); info == nil || info.Reason != "TASK_NOT_FOUND" || info.Domain != a2a.ErrorDomain {
		t.Errorf("ErrorInfo %v", st.Details())
	}

	_, err = client.GetTask(ctx, &a2a10.GetTaskRequest{})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || errorInfo(st).GetReason() != "INVALID_PARAMS" {
		t.Errorf("a request without id: %v", err)
	}

	stream, err := client.SubscribeToTask(ctx, &a2a10.SubscribeToTaskRequest{Id: "task-1"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err = stream.Recv()
		if err != nil {
			break
		}
		n++
	}
	st = status.Convert(err)
	if n != 2 || st.Code() != codes.Unavailable {
		t.Fatalf("stream: %d events, then %v", n, err)
	}
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry.GetRetryDelay().GetSeconds() != 3 {
		t.Errorf("retry details %v", st.Details())
	}
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// agent is a grpc-go A2A 1.0 server.
type agent struct {
	a2a10.UnimplementedA2AServiceServer
}

func (agent) GetTask(_ context.Context, req *a2a10.GetTaskRequest) (*a2a10.Task, error) {
	if req.GetId() != "task-1" {
		st, _ := status.New(codes.NotFound, "task not found").WithDetails(&errdetails.ErrorInfo{Reason: "TASK_NOT_FOUND", Domain: a2a.ErrorDomain})
		return nil, st.Err()
	}
	return &a2a10.Task{Id: "task-1", ContextId: "c", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_COMPLETED}}, nil
}

func (agent) SubscribeToTask(req *a2a10.SubscribeToTaskRequest, s grpc.ServerStreamingServer[a2a10.StreamResponse]) error {
	for range 3 {
		ev := &a2a10.StreamResponse{Payload: &a2a10.StreamResponse_StatusUpdate{StatusUpdate: &a2a10.TaskStatusUpdateEvent{TaskId: req.GetId(), ContextId: "c", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_WORKING}}}}
		if err := s.Send(ev); err != nil {
			return err
		}
	}
	return status.Error(codes.FailedPrecondition, "done")
}

// call makes one call to a grpc-go server with this package alone, as the
// gateway's forwarder and own calls do, and returns the answer messages
// and the status read from the trailers.
func call(t *testing.T, addr string, v a2a.Version, m a2a.Method, params string) ([][]byte, int, bool, error) {
	t.Helper()
	path, _ := Path(v, m)
	msg, err := EncodeRequest(v, m, []byte(params))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(AppendMessage(nil, msg)))
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Te", "trailers")
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs [][]byte
	for {
		m, err := ReadMessage(resp.Body, 1<<20)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	h := resp.Trailer
	if len(msgs) == 0 && resp.Header.Get("Grpc-Status") != "" {
		h = resp.Header // trailers-only
	}
	code, ok, err := ReadStatus(h)
	return msgs, code, ok, err
}

func TestGRPCGoServer(t *testing.T) {
	ln := listen(t)
	s := grpc.NewServer()
	a2a10.RegisterA2AServiceServer(s, agent{})
	go func() { _ = s.Serve(ln) }()
	defer s.Stop()
	addr := ln.Addr().String()

	msgs, _, ok, err := call(t, addr, a2a.V10, a2a.MethodGetTask, `{"id":"task-1"}`)
	if len(msgs) != 1 || ok || err != nil {
		t.Fatalf("GetTask: %d messages, %v %v", len(msgs), ok, err)
	}
	op := &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, Binding: a2a.BindingGRPC}
	if ev, _, err := ReadAnswer(op, msgs[0]); err != nil || ev.TaskID != "task-1" || ev.State != a2a.StateCompleted {
		t.Errorf("answer: %+v %v", ev, err)
	}

	msgs, code, ok, err := call(t, addr, a2a.V10, a2a.MethodGetTask, `{"id":"other"}`)
	if len(msgs) != 0 || code != a2a.ErrTaskNotFound.Code || !ok || err != nil {
		t.Errorf("unknown task: %d messages, %d %v %v", len(msgs), code, ok, err)
	}

	msgs, code, ok, err = call(t, addr, a2a.V10, a2a.MethodSubscribe, `{"id":"task-1"}`)
	if len(msgs) != 3 || code != a2a.ErrTaskNotCancelable.Code || !ok || err != nil {
		t.Errorf("stream: %d messages, %d %v %v", len(msgs), code, ok, err)
	}

	_, code, ok, err = call(t, addr, a2a.V10, a2a.MethodCancelTask, `{"id":"task-1"}`)
	if code != a2a.ErrMethodNotFound.Code || !ok || err != nil {
		t.Errorf("unimplemented: %d %v %v", code, ok, err)
	}
}
