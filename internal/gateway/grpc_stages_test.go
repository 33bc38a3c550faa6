package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2a-gateway/a2a-gateway/authz/flow"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// grpcMsg is a message a test sends, in either version.
type grpcMsg struct {
	id, text string
	// taskID, when set, is the task the message continues.
	taskID   string
	metadata *structpb.Struct
	// pushURL, when set, is a push config given with the send.
	pushURL, pushToken string
}

// grpcTask is what a unary send answered, in either version.
type grpcTask struct {
	id       string
	state    int32 // the TaskState number, the same in both versions
	metadata *structpb.Struct
	raw      proto.Message
}

// grpcVersion drives one of the gateway's gRPC services, so that a case
// runs over both versions.
type grpcVersion struct {
	name string
	// completed is the completed state as the version's JSON (its push
	// notifications) spells it.
	completed string
	send      func(context.Context, *grpcEnv, grpcMsg) (grpcTask, error)
	// stream sends streaming and reads the stream to its end: the task id
	// of every event.
	stream func(*testing.T, context.Context, *grpcEnv, grpcMsg) ([]string, error)
}

// streamTaskIDs reads s to its end and returns the task id of every event,
// as id reads it; err is the error opening s gave, if any.
func streamTaskIDs[T any](t *testing.T, s grpc.ServerStreamingClient[T], err error, id func(*T) string) ([]string, error) {
	t.Helper()
	if err != nil {
		return nil, err
	}
	events, err := recvAll(t, s)
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = id(ev)
	}
	return ids, err
}

var grpcVersions = []grpcVersion{
	{
		name:      "1.0",
		completed: `"state":"TASK_STATE_COMPLETED"`,
		send: func(ctx context.Context, e *grpcEnv, m grpcMsg) (grpcTask, error) {
			res, err := e.c10.SendMessage(ctx, m.req10())
			task := res.GetTask()
			return grpcTask{task.GetId(), int32(task.GetStatus().GetState()), task.GetMetadata(), res}, err
		},
		stream: func(t *testing.T, ctx context.Context, e *grpcEnv, m grpcMsg) ([]string, error) {
			st, err := e.c10.SendStreamingMessage(ctx, m.req10())
			return streamTaskIDs(t, st, err, func(ev *a2a10.StreamResponse) string {
				if ev.GetTask() != nil {
					return ev.GetTask().GetId()
				}
				return ev.GetStatusUpdate().GetTaskId()
			})
		},
	},
	{
		name:      "0.3",
		completed: `"state":"completed"`,
		send: func(ctx context.Context, e *grpcEnv, m grpcMsg) (grpcTask, error) {
			res, err := e.c03.SendMessage(ctx, m.req03())
			task := res.GetTask()
			return grpcTask{task.GetId(), int32(task.GetStatus().GetState()), task.GetMetadata(), res}, err
		},
		stream: func(t *testing.T, ctx context.Context, e *grpcEnv, m grpcMsg) ([]string, error) {
			st, err := e.c03.SendStreamingMessage(ctx, m.req03())
			return streamTaskIDs(t, st, err, func(ev *a2a03.StreamResponse) string {
				if ev.GetTask() != nil {
					return ev.GetTask().GetId()
				}
				return ev.GetStatusUpdate().GetTaskId()
			})
		},
	},
}

func (m grpcMsg) req10() *a2a10.SendMessageRequest {
	msg := msg10(m.id, m.text)
	msg.TaskId, msg.Metadata = m.taskID, m.metadata
	req := &a2a10.SendMessageRequest{Message: msg}
	if m.pushURL != "" {
		req.Configuration = &a2a10.SendMessageConfiguration{
			TaskPushNotificationConfig: &a2a10.TaskPushNotificationConfig{Url: m.pushURL, Token: m.pushToken},
		}
	}
	return req
}

func (m grpcMsg) req03() *a2a03.SendMessageRequest {
	msg := msg03(m.id, m.text)
	msg.TaskId, msg.Metadata = m.taskID, m.metadata
	req := &a2a03.SendMessageRequest{Request: msg}
	if m.pushURL != "" {
		req.Configuration = &a2a03.SendMessageConfiguration{
			PushNotification: &a2a03.PushNotificationConfig{Url: m.pushURL, Token: m.pushToken},
		}
	}
	return req
}

// TestGRPCLifecycle: a gRPC stream's events are tracked like SSE ones.
func TestGRPCLifecycle(t *testing.T) {
	t.Setenv("A2AGW_GRPC_TEST_OPS_TOKEN", lcOpsToken)
	e := startGRPCEnv(t, func(c *config.Config) { c.Lifecycle.OpsTokenEnv = "A2AGW_GRPC_TEST_OPS_TOKEN" })
	for _, v := range grpcVersions {
		t.Run(v.name, func(t *testing.T) {
			ids, err := v.stream(t, e.as(t, "acme"), e, grpcMsg{id: "lc-" + v.name, text: "hi"})
			if err != nil || len(ids) != 2 {
				t.Fatalf("stream: %v %v", ids, err)
			}
			lcFlush(t, e.Env)
			rec := lcRecord(t, e.Env, ids[0])
			if rec.State != "completed" || rec.Tenant != "acme" || rec.Version != v.name {
				t.Fatalf("lifecycle record: %+v", rec)
			}
			if got := lcPath(rec); got == "" {
				t.Fatalf("no transitions recorded: %+v", rec)
			}
		})
	}
}

// TestGRPCPushRelay: a push config given with a gRPC streaming send is
// taken out of what the agent gets, and the webhook gets the stream's
// events.
func TestGRPCPushRelay(t *testing.T) {
	rcv := newWebhook(t)
	e := startGRPCOn(t, func(t testing.TB, opts ...gwtest.Option) *gwtest.Env { return startPush(t.(*testing.T), opts...).Env })
	for _, v := range grpcVersions {
		t.Run(v.name, func(t *testing.T) {
			m := grpcMsg{id: "push-" + v.name, text: "hi", pushURL: rcv.url(), pushToken: "consumer-token"}
			ids, err := v.stream(t, e.as(t, "acme"), e, m)
			if err != nil || len(ids) != 2 {
				t.Fatalf("stream: %v %v", ids, err)
			}
			var done hookCall
			eventually(t, "the webhook hears the task complete", func() bool {
				for _, h := range rcv.acked() {
					if bytes.Contains(h.body, []byte(ids[0])) && bytes.Contains(h.body, []byte(v.completed)) {
						done = h
						return true
					}
				}
				return false
			})
			if got := done.header.Get(push.HeaderNotificationToken); got != m.pushToken {
				t.Errorf("the notification carries token %q, want the push config's", got)
			}
			if e.agent.streamPushed(v.name) {
				t.Fatal("the push config given with the send reached the agent")
			}
		})
	}
}

// TestGRPCAuthRequired: an agent's auth-required answer over gRPC carries
// the gateway's challenge in its metadata (the message re-encoded), a
// caller's own credential metadata is taken out of what the agent gets,
// and once the credential is handed over, the send continuing the task
// brings it to the agent in the message metadata.
func TestGRPCAuthRequired(t *testing.T) {
	t.Setenv(authKeyNewEnv, base64.StdEncoding.EncodeToString(authRandom(32)))
	e := startGRPCEnv(t, func(c *config.Config) {
		c.AuthFlows = config.AuthFlowOptions{Keys: []config.AuthFlowKey{{ID: "k1", KeyEnv: authKeyNewEnv, Active: true}}}
		c.Agents[0].AuthFlow = &config.AgentAuthFlow{Delivery: config.DeliverMetadata}
	})
	for _, v := range grpcVersions {
		t.Run(v.name, func(t *testing.T) {
			m := grpcMsg{id: "auth-" + v.name, text: "auth", metadata: &structpb.Struct{Fields: map[string]*structpb.Value{
				flow.CredentialMetadataKey: structpb.NewStringValue("forged"),
				"kept":                     structpb.NewBoolValue(true),
			}}}
			task, err := v.send(e.as(t, "acme"), e, m)
			if err != nil {
				t.Fatal(err)
			}
			if task.state != stateAuthRequired {
				t.Fatalf("send: %v", task.raw)
			}
			challenge := task.metadata.GetFields()[flow.ChallengeMetadataKey].GetStructValue()
			if challenge == nil || challenge.GetFields()["completeUrl"].GetStringValue() == "" {
				t.Fatalf("the auth-required task carries no challenge: %v", task.metadata)
			}
			got := e.agent.lastMetadata(t, v.name)
			if _, ok := got.GetFields()[flow.CredentialMetadataKey]; ok {
				t.Errorf("the caller's credential metadata reached the agent: %v", got)
			}
			if !got.GetFields()["kept"].GetBoolValue() {
				t.Errorf("the caller's other metadata did not reach the agent: %v", got)
			}

			cred := "grpc-handed-" + v.name
			resp, b := e.Do(t, http.MethodPost, challenge.GetFields()["completeUrl"].GetStringValue()+"/credential",
				e.Token(t, "acme", "alice"), "", []byte(`{"credential":"`+cred+`"}`))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("hand-off: HTTP %d: %s", resp.StatusCode, b)
			}
			resumed, err := v.send(e.as(t, "acme"), e, grpcMsg{id: "auth-resume-" + v.name, text: "go on", taskID: task.id})
			if err != nil || resumed.state != stateCompleted {
				t.Fatalf("resume: %v %v", resumed.raw, err)
			}
			if got := e.agent.lastMetadata(t, v.name).GetFields()[flow.CredentialMetadataKey].GetStringValue(); got != "Bearer "+cred {
				t.Fatalf("the agent got credential metadata %q, want the one handed over", got)
			}
		})
	}
}
