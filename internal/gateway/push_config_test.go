package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// pushCall is one push-config operation in one version and binding.
type pushCall struct {
	method     a2a.Method
	httpMethod string
	path       string // REST, below the agent's mount
	params     string // JSON-RPC params or REST body
}

// pushDialect builds the push-config calls of one version and binding.
type pushDialect struct {
	name    string
	v       a2a.Version
	rest    bool
	create  func(task, cfgID, url string) pushCall
	get     func(task, cfgID string) pushCall
	list    func(task string) pushCall
	del     func(task, cfgID string) pushCall
	created func(task, cfgID, url string) string // the exact answer to create and get
	listed  func(task string, configs ...string) string
	deleted string // the JSON-RPC result of delete; REST answers 204
}

func pushDialects() []pushDialect {
	v10Config := func(task, cfgID, url string) string {
		return `{"id":"` + cfgID + `","taskId":"` + task + `","url":"` + url + `","token":"tok","authentication":{"scheme":"Bearer"}}`
	}
	v03Inner := func(cfgID, url string) string {
		return `{"id":"` + cfgID + `","url":"` + url + `","token":"tok","authentication":{"schemes":["Bearer"]}}`
	}
	base := func(v a2a.Version) string {
		if v == a2a.V03 {
			return "/v1/tasks/"
		}
		return "/tasks/"
	}
	list := func(wrapped bool) func(string, ...string) string {
		return func(_ string, configs ...string) string {
			if wrapped {
				return `{"configs":[` + strings.Join(configs, ",") + `],"nextPageToken":""}`
			}
			return `[` + strings.Join(configs, ",") + `]`
		}
	}
	return []pushDialect{
		{
			name: "1.0 JSON-RPC", v: a2a.V10,
			create: func(task, cfgID, url string) pushCall {
				return pushCall{method: a2a.MethodPushConfigSet, params: withoutEmptyID(`{"taskId":"` + task + `","id":"` + cfgID + `","url":"` + url + `","token":"tok","authentication":{"scheme":"Bearer"}}`)}
			},
			get: func(task, cfgID string) pushCall {
				return pushCall{method: a2a.MethodPushConfigGet, params: `{"taskId":"` + task + `","id":"` + cfgID + `"}`}
			},
			list: func(task string) pushCall {
				return pushCall{method: a2a.MethodPushConfigList, params: `{"taskId":"` + task + `"}`}
			},
			del: func(task, cfgID string) pushCall {
				return pushCall{method: a2a.MethodPushConfigDelete, params: `{"taskId":"` + task + `","id":"` + cfgID + `"}`}
			},
			created: v10Config, listed: list(true), deleted: `{}`,
		},
		{
			name: "1.0 HTTP+JSON", v: a2a.V10, rest: true,
			create: func(task, cfgID, url string) pushCall {
				return pushCall{httpMethod: http.MethodPost, path: base(a2a.V10) + task + "/pushNotificationConfigs",
					params: withoutEmptyID(`{"id":"` + cfgID + `","url":"` + url + `","token":"tok","authentication":{"scheme":"Bearer"}}`)}
			},
			get: func(task, cfgID string) pushCall {
				return pushCall{httpMethod: http.MethodGet, path: base(a2a.V10) + task + "/pushNotificationConfigs/" + cfgID}
			},
			list: func(task string) pushCall {
				return pushCall{httpMethod: http.MethodGet, path: base(a2a.V10) + task + "/pushNotificationConfigs"}
			},
			del: func(task, cfgID string) pushCall {
				return pushCall{httpMethod: http.MethodDelete, path: base(a2a.V10) + task + "/pushNotificationConfigs/" + cfgID}
			},
			created: v10Config, listed: list(true),
		},
		{
			name: "0.3 JSON-RPC", v: a2a.V03,
			create: func(task, cfgID, url string) pushCall {
				return pushCall{method: a2a.MethodPushConfigSet, params: `{"taskId":"` + task + `","pushNotificationConfig":` + withoutEmptyID(v03Inner(cfgID, url)) + `}`}
			},
			get: func(task, cfgID string) pushCall {
				return pushCall{method: a2a.MethodPushConfigGet, params: `{"id":"` + task + `","pushNotificationConfigId":"` + cfgID + `"}`}
			},
			list: func(task string) pushCall {
				return pushCall{method: a2a.MethodPushConfigList, params: `{"id":"` + task + `"}`}
			},
			del: func(task, cfgID string) pushCall {
				return pushCall{method: a2a.MethodPushConfigDelete, params: `{"id":"` + task + `","pushNotificationConfigId":"` + cfgID + `"}`}
			},
			created: func(task, cfgID, url string) string {
				return `{"taskId":"` + task + `","pushNotificationConfig":` + v03Inner(cfgID, url) + `}`
			},
			listed: list(false), deleted: `null`,
		},
		{
			name: "0.3 HTTP+JSON", v: a2a.V03, rest: true,
			create: func(task, cfgID, url string) pushCall {
				return pushCall{httpMethod: http.MethodPost, path: base(a2a.V03) + task + "/pushNotificationConfigs",
					params: `{"name":"tasks/` + task + `/pushNotificationConfigs/` + cfgID + `","pushNotificationConfig":` + withoutEmptyID(v03Inner(cfgID, url)) + `}`}
			},
			get: func(task, cfgID string) pushCall {
				return pushCall{httpMethod: http.MethodGet, path: base(a2a.V03) + task + "/pushNotificationConfigs/" + cfgID}
			},
			list: func(task string) pushCall {
				return pushCall{httpMethod: http.MethodGet, path: base(a2a.V03) + task + "/pushNotificationConfigs"}
			},
			del: func(task, cfgID string) pushCall {
				return pushCall{httpMethod: http.MethodDelete, path: base(a2a.V03) + task + "/pushNotificationConfigs/" + cfgID}
			},
			created: func(task, cfgID, url string) string {
				return `{"name":"tasks/` + task + `/pushNotificationConfigs/` + cfgID + `","pushNotificationConfig":` + v03Inner(cfgID, url) + `}`
			},
			listed: list(true),
		},
	}
}

// withoutEmptyID drops `"id":"",` so the config is sent without an id.
func withoutEmptyID(s string) string { return strings.Replace(s, `"id":"",`, "", 1) }

// call makes one push-config call and returns the HTTP status and the
// result (JSON-RPC) or body (REST); errCode is the JSON-RPC error code.
func (c *caller) call(t *testing.T, d pushDialect, pc pushCall, rpcID string) (status int, result []byte, errCode int) {
	t.Helper()
	h := http.Header{}
	if d.v == a2a.V10 {
		h = v10()
	}
	if d.rest {
		var body []byte
		if pc.params != "" {
			body = []byte(pc.params)
		}
		resp, b := c.do(t, request{method: pc.httpMethod, path: pc.path, header: h, body: body})
		return resp.StatusCode, b, 0
	}
	resp, b := c.do(t, request{method: http.MethodPost, path: "/", header: h, body: rpcBody(pc.method, d.v, rpcID, pc.params)})
	res, code, err := a2a.UnwrapRPC(b)
	if err != nil {
		t.Fatalf("not a JSON-RPC answer: %v: %s", err, b)
	}
	if res == nil {
		return resp.StatusCode, b, code
	}
	return resp.StatusCode, res, 0
}

func TestPushConfigCRUD(t *testing.T) {
	env := startPush(t)
	acme := env.acme
	globex := newCaller(t, env.Env)
	globex.token = env.Token(t, "globex", "gina")
	rcv := newWebhook(t)
	for _, d := range pushDialects() {
		t.Run(d.name, func(t *testing.T) {
			task := acme.waitingTask(t)
			env.Agent.ResetRequests()
			ok := func(what string, pc pushCall, want string) {
				t.Helper()
				status, got, code := acme.call(t, d, pc, "rq")
				if status != http.StatusOK || code != 0 || canonicalJSON(t, got) != canonicalJSON(t, []byte(want)) {
					t.Fatalf("%s: HTTP %d code %d\n got %s\nwant %s", what, status, code, got, want)
				}
			}
			ok("create", d.create(task, "cfg-1", rcv.url()), d.created(task, "cfg-1", rcv.url()))
			ok("get", d.get(task, "cfg-1"), d.created(task, "cfg-1", rcv.url()))

			// Without an id the gateway names the config: 0.3 SDKs use the
			// task id, 1.0 gets a generated one.
			_, got, code := acme.call(t, d, d.create(task, "", rcv.url()), "rq")
			if code != 0 {
				t.Fatalf("create without an id: error %d: %s", code, got)
			}
			generated := pushConfigIDOf(t, d, got)
			if d.v == a2a.V03 && generated != task || d.v == a2a.V10 && (generated == "" || generated == task) {
				t.Fatalf("create without an id named it %q", generated)
			}
			ok("list", d.list(task), d.listed(task, d.created(task, "cfg-1", rcv.url()), d.created(task, generated, rcv.url())))
			if d.v == a2a.V03 && !d.rest {
				// 0.3 lets a get name only the task.
				ok("get by task", pushCall{method: a2a.MethodPushConfigGet, params: `{"id":"` + task + `"}`}, d.created(task, task, rcv.url()))
			}

			// Another tenant learns nothing: its answers are those for a
			// task that does not exist, byte for byte.
			for _, pc := range []struct {
				name            string
				foreign, absent pushCall
			}{
				{"get", d.get(task, "cfg-1"), d.get("no-such-task", "cfg-1")},
				{"list", d.list(task), d.list("no-such-task")},
				{"create", d.create(task, "cfg-x", rcv.url()), d.create("no-such-task", "cfg-x", rcv.url())},
				{"delete", d.del(task, "cfg-1"), d.del("no-such-task", "cfg-1")},
			} {
				fs, fb, fc := globex.call(t, d, pc.foreign, "same-id")
				as, ab, ac := globex.call(t, d, pc.absent, "same-id")
				if fs != as || fc != ac || !bytes.Equal(fb, ab) || (fc != a2a.ErrTaskNotFound.Code && fs != http.StatusNotFound) {
					t.Fatalf("%s by another tenant: HTTP %d code %d %s\nunknown task: HTTP %d code %d %s", pc.name, fs, fc, fb, as, ac, ab)
				}
			}

			status, got, code := acme.call(t, d, d.del(task, "cfg-1"), "rq")
			switch {
			case d.rest && status != http.StatusNoContent:
				t.Fatalf("delete: HTTP %d: %s", status, got)
			case !d.rest && (code != 0 || string(got) != d.deleted):
				t.Fatalf("delete: code %d result %s, want %s", code, got, d.deleted)
			}
			status, got, code = acme.call(t, d, d.get(task, "cfg-1"), "rq")
			if code != a2a.ErrTaskNotFound.Code && status != http.StatusNotFound {
				t.Fatalf("get after delete: HTTP %d code %d: %s", status, code, got)
			}
			if _, got, code := acme.call(t, d, d.del(task, "cfg-1"), "rq"); code == 0 && !d.rest {
				t.Fatalf("delete of a deleted config succeeded: %s", got)
			}
			ok("list after delete", d.list(task), d.listed(task, d.created(task, generated, rcv.url())))

			// The agent may see the gateway's own webhook (its native push
			// source), never the consumer's.
			for _, r := range env.Agent.Requests() {
				if bytes.Contains(r.Body, []byte(rcv.srv.URL)) || r.Op.Method.PushConfig() && !bytes.Contains(r.Body, []byte("/push/inbound/")) {
					t.Fatalf("the agent saw a consumer's push config: %s %s %s", r.HTTPMethod, r.Path, r.Body)
				}
			}
		})
	}
}

// configID reads the config id from a create answer of pushDialect d.
func pushConfigIDOf(t *testing.T, d pushDialect, b []byte) string {
	t.Helper()
	var v struct {
		ID    string `json:"id"`
		Inner struct {
			ID string `json:"id"`
		} `json:"pushNotificationConfig"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if d.v == a2a.V03 {
		return v.Inner.ID
	}
	return v.ID
}

func TestPushConfigRefusals(t *testing.T) {
	env := startPush(t)
	task := env.acme.waitingTask(t)
	rcv := newWebhook(t)
	d := pushDialects()[0]
	for _, tc := range []struct {
		name, params, want string
	}{
		{"no url", `{"taskId":"` + task + `","id":"c"}`, "needs a url"},
		{"scheme without credentials", `{"taskId":"` + task + `","url":"` + rcv.url() + `","authentication":{"scheme":"Basic"}}`, "has no credentials"},
		{"credentials without scheme", `{"taskId":"` + task + `","url":"` + rcv.url() + `","authentication":{"credentials":"x"}}`, "no scheme"},
		{"control character in token", `{"taskId":"` + task + `","url":"` + rcv.url() + `","token":"a\nb"}`, "control character"},
		{"id too long", `{"taskId":"` + task + `","id":"` + strings.Repeat("i", 200) + `","url":"` + rcv.url() + `"}`, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, b, code := env.acme.call(t, d, pushCall{method: a2a.MethodPushConfigSet, params: tc.params}, "rq")
			if code != a2a.ErrInvalidParams.Code || !strings.Contains(string(b), tc.want) {
				t.Fatalf("code %d: %s; want InvalidParams saying %q", code, b, tc.want)
			}
		})
	}
	t.Run("legacy dialect", func(t *testing.T) {
		env.Agent.ResetRequests()
		body := rpcBody(a2a.MethodPushConfigSet, a2a.VLegacy, "rq", `{"id":"`+task+`","pushNotificationConfig":{"url":"`+rcv.url()+`"}}`)
		_, b := env.acme.do(t, request{method: http.MethodPost, path: "/", body: body})
		if _, code, _ := a2a.UnwrapRPC(b); code != a2a.ErrPushNotSupported.Code {
			t.Fatalf("legacy push config: %s", b)
		}
		for _, r := range env.Agent.Requests() {
			if bytes.Contains(r.Body, []byte(rcv.srv.URL)) {
				t.Fatalf("the legacy push config reached the agent: %s", r.Body)
			}
		}
	})
	t.Run("eleventh config", func(t *testing.T) {
		for i := range 10 {
			if _, b, code := env.acme.call(t, d, d.create(task, "c"+string(rune('a'+i)), rcv.url()), "rq"); code != 0 {
				t.Fatalf("config %d: %s", i, b)
			}
		}
		_, b, code := env.acme.call(t, d, d.create(task, "one-too-many", rcv.url()), "rq")
		if code != a2a.ErrInvalidParams.Code || !strings.Contains(string(b), "already has 10") {
			t.Fatalf("code %d: %s", code, b)
		}
	})
}

// An agent configured to receive push configs gets them, as before the
// relay: nothing is taken out, nothing answered by the gateway.
func TestPushConfigForwardedWhenConfigured(t *testing.T) {
	env := startPush(t, func(c *config.Config) { c.Agents[0].Push.ForwardConfigs = true })
	task := env.acme.waitingTask(t)
	rcv := newWebhook(t)
	env.Agent.ResetRequests()
	d := pushDialects()[0]
	if _, b, code := env.acme.call(t, d, d.create(task, "cfg-1", rcv.url()), "rq"); code != 0 {
		t.Fatalf("create: %s", b)
	}
	var seen bool
	for _, r := range env.Agent.Requests() {
		seen = seen || r.Op.Method == a2a.MethodPushConfigSet && bytes.Contains(r.Body, []byte(rcv.url()))
	}
	if !seen {
		t.Fatal("the agent did not receive the push config")
	}
}

// The card advertises push notifications when the relay serves them, even
// for an agent without push of its own, and says what the agent says when
// the agent receives configs itself.
func TestPushCardAdvertisesTheRelay(t *testing.T) {
	agent := demoagent.New(demoagent.Options{})
	srv := httptest.NewServer(agent)
	t.Cleanup(func() { agent.Close(); srv.Close() })
	agent.SetBaseURL(srv.URL)
	for _, tc := range []struct {
		forward bool
		want    bool
	}{{false, true}, {true, false}} {
		env := startPush(t, func(c *config.Config) {
			c.Agents[0].URL = srv.URL
			c.Agents[0].Push.ForwardConfigs = tc.forward
		})
		for _, v := range []string{"1.0", "0.3"} {
			resp, body := env.Do(t, http.MethodGet, env.AgentBase+"/.well-known/agent-card.json", "", v, nil)
			var card struct {
				Capabilities struct {
					PushNotifications bool `json:"pushNotifications"`
				} `json:"capabilities"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &card) != nil || card.Capabilities.PushNotifications != tc.want {
				t.Fatalf("forward_configs %v, card %s: HTTP %d: %s", tc.forward, v, resp.StatusCode, body)
			}
		}
	}
}

// With push.verify_endpoints on, a webhook is challenged at registration:
// one that echoes the challenge is registered, one that accepts any POST
// (someone else's API) is refused, and neither hears of the task before.
func TestPushConfigEndpointChallenge(t *testing.T) {
	env := startPush(t, func(c *config.Config) { c.Push.VerifyEndpoints = true })
	task := env.acme.waitingTask(t)
	var challenges atomic.Int32
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Type, Challenge string }
		if json.NewDecoder(r.Body).Decode(&in) == nil && in.Type == push.ChallengeType {
			challenges.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]string{"challenge": in.Challenge})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(echo.Close)
	sink := newWebhook(t)
	d := pushDialects()[0]
	if _, b, code := env.acme.call(t, d, d.create(task, "echo", echo.URL+"/hook"), "rq"); code != 0 {
		t.Fatalf("an endpoint that answers the challenge was refused: %s", b)
	}
	if _, b, code := env.acme.call(t, d, d.create(task, "echo-again", echo.URL+"/hook"), "rq"); code != 0 || challenges.Load() != 1 {
		t.Fatalf("registering a verified endpoint again: %s, %d challenges (want 1)", b, challenges.Load())
	}
	_, b, code := env.acme.call(t, d, d.create(task, "sink", sink.url()), "rq")
	if code != a2a.ErrInvalidParams.Code || !strings.Contains(string(b), "ownership challenge") {
		t.Fatalf("an endpoint that does not echo the challenge: code %d: %s", code, b)
	}
	for _, c := range sink.all() {
		if !bytes.Contains(c.body, []byte(push.ChallengeType)) {
			t.Fatalf("the refused endpoint got more than the challenge: %s", c.body)
		}
	}
}
