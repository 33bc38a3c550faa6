package proxy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// BenchmarkBridgeGRPCSend: a blocking send to a 1.0 gRPC agent, by a 1.0
// gRPC caller (forwarded unchanged), a 0.3 gRPC caller and a 1.0 JSON-RPC
// caller (both bridged), through a gateway without stages. cpu-ns/op is
// the process's CPU time per send, the agent's and the client's included.
func BenchmarkBridgeGRPCSend(b *testing.B) {
	task := &a2a10.Task{Id: "t-1", ContextId: "c-1", Status: &a2a10.TaskStatus{State: a2a10.TaskState_TASK_STATE_COMPLETED},
		History:   []*a2a10.Message{{MessageId: "m-1", Role: a2a10.Role_ROLE_USER, TaskId: "t-1", ContextId: "c-1", Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: strings.Repeat("hello ", 40)}}}}},
		Artifacts: []*a2a10.Artifact{{ArtifactId: "a-1", Name: "echo", Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: strings.Repeat("world ", 60)}}}}},
	}
	answer, err := proto.Marshal(&a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: task}})
	if err != nil {
		b.Fatal(err)
	}
	addr := scriptedGRPCAgent(b, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(grpcwire.AppendMessage(nil, answer))
		w.Header().Set("Grpc-Status", "0")
	})
	e := start(b, "http://127.0.0.1:1", withConfig(func(c *config.Config) {
		c.Agents[0].GRPC = &config.AgentGRPC{Listen: "127.0.0.1:0", Upstream: addr}
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "GRPC"}}
	}))
	conn := grpcFront(b, e.gw)
	c10, c03 := a2a10.NewA2AServiceClient(conn), a2a03.NewA2AServiceClient(conn)
	ctx := context.Background()
	rpc := string(rpcBody(a2a.MethodSend, a2a.V10, `"r-1"`, `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`))
	for _, tc := range []struct {
		name string
		send func() error
	}{
		{"grpc10-unbridged", func() error {
			_, err := c10.SendMessage(ctx, &a2a10.SendMessageRequest{Message: text10("m-1", "hi")})
			return err
		}},
		{"grpc03-bridged", func() error {
			_, err := c03.SendMessage(ctx, &a2a03.SendMessageRequest{Request: text03("m-1", "hi"), Configuration: &a2a03.SendMessageConfiguration{Blocking: true}})
			return err
		}},
		{"jsonrpc10-bridged", func() error {
			req, _ := http.NewRequest(http.MethodPost, e.base+"/", strings.NewReader(rpc))
			req.Header = v10()
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("HTTP %d", resp.StatusCode)
			}
			return nil
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cpu0 := benchCPU()
			b.ResetTimer()
			for range b.N {
				if err := tc.send(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
