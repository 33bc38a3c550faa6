package gateway_test

import (
	"encoding/hex"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// A task asks for a credential after the send that started it answered,
// so the gateway learns of it only from the task's push source (the
// agent's native push, or the upstream subscription): the auth flow opens
// a challenge all the same, and the consumer hears of the auth-required
// state.
func TestPushSourceAuthRequiredOpensAChallenge(t *testing.T) {
	for _, src := range []string{config.PushSourceNative, config.PushSourceStream} {
		t.Run(src, func(t *testing.T) {
			agent := demoagent.New(demoagent.Options{Push: src == config.PushSourceNative, StepDelay: 300 * time.Millisecond})
			srv := httptest.NewServer(agent)
			agent.SetBaseURL(srv.URL)
			t.Cleanup(func() { agent.Close(); srv.Close() })
			t.Setenv(authKeyNewEnv, hex.EncodeToString(authRandom(32)))
			env := startPush(t, func(c *config.Config) {
				c.AuthFlows = config.AuthFlowOptions{Keys: []config.AuthFlowKey{{ID: "k1", KeyEnv: authKeyNewEnv, Active: true}}}
				c.Agents = append(c.Agents, config.Agent{
					Name: "cal", URL: srv.URL + demoagent.SecurePath, Push: fastSource(src),
					AuthFlow: &config.AgentAuthFlow{Delivery: config.DeliverMetadata},
				})
			})
			opened := func() float64 {
				return authMetric(scrape(t, env.Admin), "auth_challenges_opened_total", map[string]string{"agent": "cal"})
			}
			rcv := newWebhook(t)
			sendWithPush(t, env.acme, env.Gateway+"/agents/cal", a2a.V10, "what is on my calendar", rcv.url())
			// The proxy shows the auth flow the send's answer before the
			// caller gets it: no challenge came from there.
			if n := opened(); n != 0 {
				t.Fatalf("%v challenges opened by the send's answer", n)
			}
			eventually(t, "the challenge", func() bool { return opened() == 1 })
			eventually(t, "the auth-required notification", func() bool {
				p := readProgress(t, a2a.V10, rcv.acked())
				return len(p.states) > 0 && p.states[len(p.states)-1] == a2a.StateAuthRequired
			})
		})
	}
}
