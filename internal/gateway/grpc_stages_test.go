package gateway_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2a-gateway/a2a-gateway/authz/flow"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// TestGRPCLifecycle: a gRPC stream's events are tracked like SSE ones.
func TestGRPCLifecycle(t *testing.T) {
	t.Setenv("A2AGW_GRPC_TEST_OPS_TOKEN", lcOpsToken)
	e := startGRPCEnv(t, func(c *config.Config) { c.Lifecycle.OpsTokenEnv = "A2AGW_GRPC_TEST_OPS_TOKEN" })
	st, err := e.c10.SendStreamingMessage(e.as(t, "acme"), &a2a10.SendMessageRequest{Message: msg10("lc-1", "hi")})
	if err != nil {
		t.Fatal(err)
	}
	events, err := recvAll(t, st)
	if err != nil || len(events) != 2 {
		t.Fatalf("stream: %v %v", events, err)
	}
	lcFlush(t, e.Env)
	rec := lcRecord(t, e.Env, events[0].GetTask().GetId())
	if rec.State != "completed" || rec.Tenant != "acme" || rec.Version != "1.0" {
		t.Fatalf("lifecycle record: %+v", rec)
	}
	if got := lcPath(rec); got == "" {
		t.Fatalf("no transitions recorded: %+v", rec)
	}
}

// TestGRPCPushRelay: a push config given with a gRPC streaming send is
// taken out of what the agent gets, and the webhook gets the stream's
// events.
func TestGRPCPushRelay(t *testing.T) {
	rcv := newWebhook(t)
	e := startGRPCOn(t, func(t testing.TB, opts ...gwtest.Option) *gwtest.Env { return startPush(t.(*testing.T), opts...).Env })
	req := &a2a10.SendMessageRequest{
		Message: msg10("push-1", "hi"),
		Configuration: &a2a10.SendMessageConfiguration{
			TaskPushNotificationConfig: &a2a10.TaskPushNotificationConfig{Url: rcv.url(), Token: "consumer-token"},
		},
	}
	st, err := e.c10.SendStreamingMessage(e.as(t, "acme"), req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := recvAll(t, st)
	if err != nil || len(events) != 2 {
		t.Fatalf("stream: %v %v", events, err)
	}
	id := events[0].GetTask().GetId()
	eventually(t, "the webhook hears the task complete", func() bool {
		for _, h := range rcv.acked() {
			if bytes.Contains(h.body, []byte(id)) && bytes.Contains(h.body, []byte("COMPLETED")) {
				return true
			}
		}
		return false
	})
	if e.agent.lastStreamConfig() != nil {
		t.Fatal("the push config given with the send reached the agent")
	}
}

// TestGRPCAuthRequired: an agent's auth-required answer over gRPC carries
// the gateway's challenge in its metadata (the message re-encoded), and a
// caller's own credential metadata is taken out of what the agent gets.
func TestGRPCAuthRequired(t *testing.T) {
	t.Setenv(authKeyNewEnv, base64.StdEncoding.EncodeToString(authRandom(32)))
	e := startGRPCEnv(t, func(c *config.Config) {
		c.AuthFlows = config.AuthFlowOptions{Keys: []config.AuthFlowKey{{ID: "k1", KeyEnv: authKeyNewEnv, Active: true}}}
		c.Agents[0].AuthFlow = &config.AgentAuthFlow{Delivery: config.DeliverMetadata}
	})
	m := msg10("auth-1", "auth")
	m.Metadata = &structpb.Struct{Fields: map[string]*structpb.Value{
		flow.CredentialMetadataKey: structpb.NewStringValue("forged"),
		"kept":                     structpb.NewBoolValue(true),
	}}
	res, err := e.c10.SendMessage(e.as(t, "acme"), &a2a10.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	task := res.GetTask()
	if task.GetStatus().GetState() != a2a10.TaskState_TASK_STATE_AUTH_REQUIRED {
		t.Fatalf("send: %v", res)
	}
	challenge := task.GetMetadata().GetFields()[flow.ChallengeMetadataKey].GetStructValue()
	if challenge == nil || challenge.GetFields()["completeUrl"].GetStringValue() == "" {
		t.Fatalf("the auth-required task carries no challenge: %v", task.GetMetadata())
	}
	got := e.agent.lastMessage(t)
	if _, ok := got.GetMetadata().GetFields()[flow.CredentialMetadataKey]; ok {
		t.Errorf("the caller's credential metadata reached the agent: %v", got.GetMetadata())
	}
	if !got.GetMetadata().GetFields()["kept"].GetBoolValue() {
		t.Errorf("the caller's other metadata did not reach the agent: %v", got.GetMetadata())
	}
}
