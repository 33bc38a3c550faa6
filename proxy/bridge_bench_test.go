package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// BenchmarkBridgeSend compares a blocking send of a 0.3 JSON-RPC caller
// bridged to a 1.0 JSON-RPC agent with the same send of a 1.0 caller,
// forwarded unchanged, through a gateway without stages: what the bridge
// itself costs. cpu-ns/op is the process's CPU time per send, the agent's
// and the client's included.
func BenchmarkBridgeSend(b *testing.B) {
	task := `{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-01T00:00:00Z"},` +
		`"history":[{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("hello ", 40) + `"}],"taskId":"t-1","contextId":"c-1"}],` +
		`"artifacts":[{"artifactId":"a-1","name":"echo","parts":[{"text":"` + strings.Repeat("world ", 60) + `"}]}],"metadata":{"k":"v"}}}`
	// Both callers send id "r-1", which the bridge passes on to the agent.
	answer := `{"jsonrpc":"2.0","id":"r-1","result":` + task + `}`
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	b.Cleanup(agent.Close)
	e := start(b, agent.URL, withConfig(func(c *config.Config) {
		c.Agents[0].Bridge = &config.AgentBridge{Agent: config.BridgeInterface{Version: "1.0", Binding: "JSONRPC"}}
	}))
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
	}{
		{"unbridged", v10(), string(rpcBody(a2a.MethodSend, a2a.V10, `"r-1"`, `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`))},
		{"bridged", http.Header{}, string(rpcBody(a2a.MethodSend, a2a.V03, `"r-1"`, `{"message":{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":true}}`))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cpu0 := benchCPU()
			b.ResetTimer()
			for range b.N {
				req, _ := http.NewRequest(http.MethodPost, e.base+"/", strings.NewReader(tc.body))
				req.Header = tc.header.Clone()
				req.Header.Set("Content-Type", "application/json")
				resp, err := e.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("HTTP %d", resp.StatusCode)
				}
			}
			b.ReportMetric(float64(benchCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func benchCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
