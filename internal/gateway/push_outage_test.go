package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// inboundTap stands between the agent and the gateway's native webhook
// (the gateway's public URL names it), so the test sees when the agent
// stopped pushing.
type inboundTap struct {
	srv     *httptest.Server
	gateway atomic.Pointer[string]
	mu      sync.Mutex
	open    int       // posts in flight
	last    time.Time // when the last post was answered
}

func newInboundTap(t *testing.T) *inboundTap {
	t.Helper()
	tap := &inboundTap{}
	tap.srv = httptest.NewServer(http.HandlerFunc(tap.forward))
	t.Cleanup(tap.srv.Close)
	return tap
}

func (tap *inboundTap) forward(w http.ResponseWriter, r *http.Request) {
	tap.mu.Lock()
	tap.open++
	tap.mu.Unlock()
	defer func() {
		tap.mu.Lock()
		tap.open--
		tap.last = time.Now()
		tap.mu.Unlock()
	}()
	body, _ := io.ReadAll(r.Body)
	req, err := http.NewRequestWithContext(r.Context(), r.Method, *tap.gateway.Load()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// quiet reports whether no post arrived for d.
func (tap *inboundTap) quiet(d time.Duration) bool {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return tap.open == 0 && time.Since(tap.last) >= d
}

// agentState asks the agent itself, not the gateway (whose store is down),
// what state the task is in.
func agentState(t *testing.T, agentURL, task string) a2a.State {
	t.Helper()
	body := a2a.RPCRequest(a2a.V10, a2a.MethodGetTask, []byte(`1`), map[string]any{"id": task})
	req, err := http.NewRequest(http.MethodPost, agentURL+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionHeader, "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	ev, err := a2a.ParseRPCEvent(b.Bytes())
	if err != nil || ev.Kind != a2a.EventTask {
		t.Fatalf("GetTask at the agent: %v: %s", err, b.Bytes())
	}
	return ev.State
}

// Redis stops while a followed task runs to its end: every event the
// agent sends meanwhile (pushed natively, or streamed to the gateway's
// subscription) fails to reach the store, and the agent gives up pushing.
// The outage is shorter than the subscription lease, so the holder keeps
// the task throughout, as it does when only part of a Redis Cluster fails
// over. Once Redis is back, the holder reads the task again and the
// consumer gets every part and the terminal notification.
func TestPushTerminalNotificationSurvivesRedisOutage(t *testing.T) {
	for _, src := range []string{config.PushSourceNative, config.PushSourceStream} {
		t.Run(src, func(t *testing.T) {
			agent := demoagent.New(demoagent.Options{Push: src == config.PushSourceNative, StepDelay: 20 * time.Millisecond})
			srv := httptest.NewServer(agent)
			agent.SetBaseURL(srv.URL)
			t.Cleanup(func() { agent.Close(); srv.Close() })
			follow := fastSource(src)
			follow.LeaseTTL = duration.Duration(time.Minute)
			tap := newInboundTap(t)
			env := startPush(t, func(c *config.Config) {
				c.PublicURL = tap.srv.URL
				c.Agents = append(c.Agents, config.Agent{Name: "outage", URL: srv.URL, Push: follow})
			})
			tap.gateway.Store(&env.Gateway)
			// What was written before the outage survives it.
			if err := env.redis.Client(t).ConfigSet(context.Background(), "appendfsync", "always").Err(); err != nil {
				t.Fatal(err)
			}
			rcv := newWebhook(t)
			const parts = 6
			task := sendWithPush(t, env.acme, env.Gateway+"/agents/outage", a2a.V10, "parts 6 250ms", rcv.url())
			eventually(t, "the task followed at the agent", func() bool {
				if src == config.PushSourceNative {
					return len(registrations(t, agent, task)) > 0
				}
				return subscribes(agent, task) > 0
			})
			eventually(t, "a notification before the outage", func() bool { return len(rcv.acked()) > 0 })

			env.redis.Stop(t)
			stopped := time.Now()
			eventually(t, "the task's end at the agent", func() bool { return agentState(t, srv.URL, task).Terminal() })
			// The demo agent retries a push for 300ms, then drops it: the
			// outage outlasts its retries.
			eventually(t, "the agent giving up its pushes", func() bool { return tap.quiet(time.Second) })
			t.Logf("outage %s", time.Since(stopped))
			if got := readProgress(t, a2a.V10, rcv.acked()); len(got.states) > 0 && got.states[len(got.states)-1].Terminal() {
				t.Fatal("a terminal notification went out while Redis was down")
			}
			env.redis.Restart(t)

			wantAllParts(t, a2a.V10, rcv, parts)
		})
	}
}
