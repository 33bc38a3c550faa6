package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// sourceAgent starts a demo agent of its own and mounts it on the gateway
// as name, following its tasks with short leases and intervals.
func sourceAgent(t *testing.T, name string, o demoagent.Options, src string) (*demoagent.Agent, gwtest.Option) {
	t.Helper()
	o.Logger = nil
	agent := demoagent.New(o)
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	t.Cleanup(func() { agent.Close(); srv.Close() })
	return agent, func(c *config.Config) {
		c.Agents = append(c.Agents, config.Agent{Name: name, URL: srv.URL, Push: fastSource(src)})
	}
}

// fastSource follows tasks with intervals short enough for a test.
func fastSource(src string) config.AgentPush {
	return config.AgentPush{PushSource: config.PushSource{
		Source:                src,
		LeaseTTL:              duration.Duration(1500 * time.Millisecond),
		ResubscribeMaxBackoff: duration.Duration(200 * time.Millisecond),
		PollInterval:          duration.Duration(100 * time.Millisecond),
		ReconcileInterval:     duration.Duration(time.Minute),
	}}
}

// sendWithPush starts a task on the agent mounted at base with a
// non-blocking JSON send in version v that carries a push config for url;
// it returns the task id.
func sendWithPush(t *testing.T, c *caller, base string, v a2a.Version, text, url string) string {
	t.Helper()
	var params string
	h := http.Header{}
	if v == a2a.V10 {
		h = v10()
		params = `{"message":` + c.msg10(text) + `,"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"url":"` + url + `","token":"consumer-token"}}}`
	} else {
		params = `{"message":` + c.msg03(text) + `,"configuration":{"blocking":false,"pushNotificationConfig":{"url":"` + url + `","token":"consumer-token"}}}`
	}
	resp, b := c.do(t, request{method: http.MethodPost, path: base + "/", header: h, body: rpcBody(a2a.MethodSend, v, c.nextID("send"), params)})
	ev, err := a2a.ParseRPCEvent(b)
	if resp.StatusCode != http.StatusOK || err != nil || ev.Kind != a2a.EventTask || ev.State.Terminal() {
		t.Fatalf("send with a push config: HTTP %d %v: %s", resp.StatusCode, err, b)
	}
	return ev.TaskID
}

// progress is what a consumer learned from its notifications: the
// artifacts in the order it first saw them, and the state after each.
type progress struct {
	artifacts []string
	states    []a2a.State
	// watchdog is the watchdog metadata of the last notification, if any.
	watchdog map[string]any
}

// readProgress reads notifications of a consumer of version v, each
// notification id once (a retried delivery repeats its id).
func readProgress(t *testing.T, v a2a.Version, calls []hookCall) progress {
	t.Helper()
	var p progress
	seen := map[string]bool{}
	ids := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			p.artifacts = append(p.artifacts, id)
		}
	}
	for _, c := range calls {
		if id := c.id(); id != "" {
			if ids[id] {
				continue
			}
			ids[id] = true
		}
		var obj map[string]any
		if err := json.Unmarshal(c.body, &obj); err != nil {
			t.Fatalf("notification is not JSON: %s", c.body)
		}
		task := obj
		if v == a2a.V10 {
			task, _ = obj["task"].(map[string]any)
		}
		arts, _ := task["artifacts"].([]any)
		for _, a := range arts {
			add(fmt.Sprint(a.(map[string]any)["artifactId"]))
		}
		if art, ok := obj["artifactUpdate"].(map[string]any); ok {
			add(art["artifact"].(map[string]any)["artifactId"].(string))
		}
		ev, err := a2a.ParseResult(c.body)
		if err != nil {
			t.Fatalf("notification unreadable: %v: %s", err, c.body)
		}
		if ev.Kind != a2a.EventArtifactUpdate {
			p.states = append(p.states, ev.State)
		}
		// 1.0 consumers get the status update's metadata, 0.3 ones the
		// task's, into which the relay folds it.
		holder := obj
		if v == a2a.V10 {
			holder, _ = obj["statusUpdate"].(map[string]any)
		}
		md, _ := holder["metadata"].(map[string]any)
		p.watchdog, _ = md[push.WatchdogMetadataKey].(map[string]any)
	}
	return p
}

func partIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "part-" + strconv.Itoa(i+1)
	}
	return out
}

// stateRank orders states as a task moves through them.
func stateRank(s a2a.State) int {
	switch {
	case s == a2a.StateSubmitted:
		return 0
	case s.Terminal():
		return 2
	}
	return 1
}

// wantAllParts waits for the terminal notification and checks that every
// part arrived, in order, and the states never went back.
func wantAllParts(t *testing.T, v a2a.Version, rcv *webhook, n int) progress {
	t.Helper()
	var p progress
	eventually(t, "the terminal notification", func() bool {
		p = readProgress(t, v, rcv.acked())
		return len(p.states) > 0 && p.states[len(p.states)-1].Terminal()
	})
	if want := partIDs(n); !slices.Equal(p.artifacts, want) {
		t.Fatalf("artifacts %v, want %v", p.artifacts, want)
	}
	for i := 1; i < len(p.states); i++ {
		if stateRank(p.states[i]) < stateRank(p.states[i-1]) {
			t.Fatalf("states went back: %v", p.states)
		}
	}
	if last := p.states[len(p.states)-1]; last != a2a.StateCompleted {
		t.Fatalf("the task ended %s", last)
	}
	return p
}

// subscribes counts the subscriptions to task the agent received.
func subscribes(agent *demoagent.Agent, task string) int {
	n := 0
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodSubscribe && r.Op.TaskID == task {
			n++
		}
	}
	return n
}

// sourceMetric reads one agent's series of a push metric; 0 when absent.
func sourceMetric(t *testing.T, admin, name, agent string) float64 {
	t.Helper()
	return max(pushMetric(scrape(t, admin), name+`{agent="`+agent+`"}`), 0)
}

var bothVersions = []a2a.Version{a2a.V10, a2a.V03}

// An agent without push support: the gateway follows the task's stream and
// the consumer of a plain JSON send gets every event, then the end.
func TestPushSourceStreamsALongTask(t *testing.T) {
	_, plain := sourceAgent(t, "plain", demoagent.Options{StepDelay: 20 * time.Millisecond}, config.PushSourceAuto)
	env := startPush(t, plain)
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			rcv := newWebhook(t)
			sendWithPush(t, env.acme, env.Gateway+"/agents/plain", v, "parts 8 100ms", rcv.url())
			wantAllParts(t, v, rcv, 8)
		})
	}
	eventually(t, "the ended tasks let go", func() bool {
		return sourceMetric(t, env.Admin, "a2agw_push_upstream_subscriptions", "plain") == 0
	})
}

// The agent drops the stream mid-task, twice: the gateway subscribes again
// and nothing is missing.
func TestPushSourceResubscribesAfterADrop(t *testing.T) {
	agent, plain := sourceAgent(t, "plain", demoagent.Options{StepDelay: 20 * time.Millisecond}, config.PushSourceStream)
	env := startPush(t, plain)
	rcv := newWebhook(t)
	task := sendWithPush(t, env.acme, env.Gateway+"/agents/plain", a2a.V10, "parts 10 150ms", rcv.url())
	for drop := 1; drop <= 2; drop++ {
		eventually(t, fmt.Sprintf("subscription %d", drop), func() bool { return subscribes(agent, task) >= drop })
		eventually(t, "a part after the subscription", func() bool {
			return len(readProgress(t, a2a.V10, rcv.acked()).artifacts) >= 2*drop
		})
		eventually(t, "an open stream to drop", func() bool { return agent.DropStreams() > 0 })
	}
	wantAllParts(t, a2a.V10, rcv, 10)
	if subscribes(agent, task) < 3 {
		t.Fatalf("the gateway subscribed %d times; want a new subscription after each drop", subscribes(agent, task))
	}
	if sourceMetric(t, env.Admin, "a2agw_push_upstream_resubscribes_total", "plain") < 2 {
		t.Fatal("resubscriptions not counted")
	}
}

// An agent without streaming: the gateway polls the task to its end,
// whether the card said so (auto) or the stream was refused (stream).
func TestPushSourcePollsAnAgentWithoutStreaming(t *testing.T) {
	agent := demoagent.New(demoagent.Options{NoStreaming: true, StepDelay: 20 * time.Millisecond})
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	t.Cleanup(func() { agent.Close(); srv.Close() })
	env := startPush(t, func(c *config.Config) {
		c.Agents = append(c.Agents,
			config.Agent{Name: "poll-auto", URL: srv.URL, Push: fastSource(config.PushSourceAuto)},
			config.Agent{Name: "poll-stream", URL: srv.URL, Push: fastSource(config.PushSourceStream)})
	})
	for _, name := range []string{"poll-auto", "poll-stream"} {
		t.Run(name, func(t *testing.T) {
			rcv := newWebhook(t)
			sendWithPush(t, env.acme, env.Gateway+"/agents/"+name, a2a.V10, "parts 5 150ms", rcv.url())
			wantAllParts(t, a2a.V10, rcv, 5)
		})
	}
	for _, name := range []string{"poll-auto", "poll-stream"} {
		if n := sourceMetric(t, env.Admin, "a2agw_push_upstream_polling_fallbacks_total", name); n != 1 {
			t.Fatalf("%s: %v polling fallbacks counted, want 1", name, n)
		}
	}
}

// inboundRegistration is the gateway's own push config as the agent got it.
type inboundRegistration struct {
	url, token string
}

// registrations lists the push configs the agent received for task.
func registrations(t *testing.T, agent *demoagent.Agent, task string) []inboundRegistration {
	t.Helper()
	var out []inboundRegistration
	for _, r := range agent.Requests() {
		if r.Op.Method != a2a.MethodPushConfigSet || r.Op.TaskID != task {
			continue
		}
		c, e := a2a.ParsePushConfig(r.Op.PushConfig)
		if e != nil {
			t.Fatalf("the agent got an unreadable push config: %s", r.Body)
		}
		out = append(out, inboundRegistration{url: c.URL, token: c.Token})
	}
	return out
}

// A push-capable agent: the gateway registers its own webhook with a
// secret and relays what the agent pushes; the consumer's webhook never
// reaches the agent, and the webhook refuses anything without the secret.
func TestPushSourceNativeIngestion(t *testing.T) {
	agent, native := sourceAgent(t, "native", demoagent.Options{Push: true, StepDelay: 20 * time.Millisecond}, config.PushSourceAuto)
	env := startPush(t, native)
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			rcv := newWebhook(t)
			task := sendWithPush(t, env.acme, env.Gateway+"/agents/native", v, "parts 6 150ms", rcv.url())
			wantAllParts(t, v, rcv, 6)
			regs := registrations(t, agent, task)
			if len(regs) == 0 {
				t.Fatal("the gateway registered no webhook at the agent")
			}
			for _, r := range regs {
				if !strings.HasPrefix(r.url, env.Gateway+push.InboundPath+"native/") || len(r.token) < 20 {
					t.Fatalf("the agent got push configs %+v", regs)
				}
			}
			for _, r := range agent.Requests() {
				if bytes.Contains(r.Body, []byte(rcv.srv.URL)) || bytes.Contains(r.Body, []byte("consumer-token")) {
					t.Fatalf("the consumer's webhook reached the agent: %s", r.Body)
				}
			}
			if n := subscribes(agent, task); n != 0 {
				t.Fatalf("the gateway subscribed %d times to a task the agent pushes", n)
			}
		})
	}
}

func TestPushSourceInboundRefusals(t *testing.T) {
	agent, native := sourceAgent(t, "native", demoagent.Options{Push: true, StepDelay: 20 * time.Millisecond}, config.PushSourceAuto)
	env := startPush(t, native, func(c *config.Config) { c.Limits.MaxEventBytes = 4096 })
	rcv := newWebhook(t)
	task := sendWithPush(t, env.acme, env.Gateway+"/agents/native", a2a.V10, "wait", rcv.url())
	var reg inboundRegistration
	eventually(t, "the gateway's registration at the agent", func() bool {
		regs := registrations(t, agent, task)
		if len(regs) > 0 {
			reg = regs[len(regs)-1] // the latest holder's secret is the one honoured
		}
		return len(regs) > 0
	})
	working := []byte(`{"statusUpdate":{"taskId":"` + task + `","status":{"state":"TASK_STATE_WORKING"}}}`)
	other := env.Gateway + push.InboundPath + "native/no-such-task"
	for _, tc := range []struct {
		name, method, url, token string
		body                     []byte
		want                     int
	}{
		{"no token", http.MethodPost, reg.url, "", working, http.StatusUnauthorized},
		{"wrong token", http.MethodPost, reg.url, reg.token + "x", working, http.StatusUnauthorized},
		{"unknown task", http.MethodPost, other, reg.token, working, http.StatusUnauthorized},
		{"unknown agent", http.MethodPost, env.Gateway + push.InboundPath + "nobody/" + task, reg.token, working, http.StatusUnauthorized},
		{"GET", http.MethodGet, reg.url, reg.token, nil, http.StatusMethodNotAllowed},
		{"too large", http.MethodPost, reg.url, reg.token, bytes.Repeat([]byte(" "), 8192), http.StatusRequestEntityTooLarge},
		{"not A2A", http.MethodPost, reg.url, reg.token, []byte(`{"hello":"world"}`), http.StatusBadRequest},
		{"another task", http.MethodPost, reg.url, reg.token, []byte(`{"statusUpdate":{"taskId":"other","status":{"state":"TASK_STATE_WORKING"}}}`), http.StatusBadRequest},
		{"accepted", http.MethodPost, reg.url, reg.token, working, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set(a2a.NotificationTokenHeader, tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, b.Bytes(), tc.want)
			}
			if tc.want == http.StatusUnauthorized && b.String() != "unknown task or wrong notification token\n" {
				t.Fatalf("the refusal tells more than it should: %q", b.String())
			}
		})
	}
}

// The watchdog: a task whose agent falls silent is declared orphaned, and
// its consumer hears so explicitly; a task over its budget is escalated.
func TestPushSourceWatchdogNotifications(t *testing.T) {
	for _, tc := range []struct {
		name, action string
		adjust       func(c *config.Config)
	}{
		{"orphaned", "orphaned", func(c *config.Config) { c.Lifecycle.OrphanAfter = duration.Duration(1500 * time.Millisecond) }},
		{"escalated", "escalate", func(c *config.Config) {
			c.Agents[len(c.Agents)-1].Watchdog = config.WatchdogOptions{Working: duration.Duration(400 * time.Millisecond), Action: config.WatchdogEscalate}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, plain := sourceAgent(t, "plain", demoagent.Options{StepDelay: 20 * time.Millisecond}, config.PushSourceStream)
			env := startPush(t, plain, func(c *config.Config) {
				c.Lifecycle.SweepInterval = duration.Duration(100 * time.Millisecond)
				tc.adjust(c)
			})
			rcv := newWebhook(t)
			sendWithPush(t, env.acme, env.Gateway+"/agents/plain", a2a.V10, "never", rcv.url())
			var p progress
			eventually(t, "the watchdog notification", func() bool {
				p = readProgress(t, a2a.V10, rcv.acked())
				return p.watchdog != nil
			})
			if p.watchdog["action"] != tc.action || p.watchdog["reason"] == "" || p.states[len(p.states)-1] != a2a.StateWorking {
				t.Fatalf("watchdog notification %v after states %v", p.watchdog, p.states)
			}
			if tc.action == "orphaned" {
				// Its consumer was told; nobody follows the task any more.
				eventually(t, "the orphan let go", func() bool {
					return sourceMetric(t, env.Admin, "a2agw_push_upstream_subscriptions", "plain") == 0
				})
			}
		})
	}
}

// An agent with tenant routing is told the task owner's tenant in every
// call the gateway makes to follow the task.
func TestPushSourceCarriesTheTenant(t *testing.T) {
	agent, routed := sourceAgent(t, "routed", demoagent.Options{StepDelay: 20 * time.Millisecond}, config.PushSourceStream)
	env := startPush(t, routed, func(c *config.Config) { c.Agents[len(c.Agents)-1].TenantRouting = true })
	rcv := newWebhook(t)
	task := sendWithPush(t, env.acme, env.Gateway+"/agents/routed", a2a.V10, "parts 3 100ms", rcv.url())
	wantAllParts(t, a2a.V10, rcv, 3)
	calls := 0
	for _, r := range agent.Requests() {
		if r.Op.TaskID != task || (r.Op.Method != a2a.MethodSubscribe && r.Op.Method != a2a.MethodGetTask) {
			continue
		}
		calls++
		if r.Op.Tenant != "acme" {
			t.Fatalf("%s named tenant %q: %s", r.Op.Method, r.Op.Tenant, r.Body)
		}
	}
	if calls == 0 {
		t.Fatal("the gateway made no call to follow the task")
	}
}
