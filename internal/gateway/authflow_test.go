package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/a2a-gateway/a2a-gateway/authz/flow"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// The auth-flow tests run a gateway on Redis in front of the demo agent,
// mounted three more times at its SecurePath (every task there asks for a
// credential first): "cal" takes the credential as its Authorization
// header and has an OAuth client for a stub provider started by the test,
// "calmeta" takes it in the message metadata, "calhdr" in a header.
const (
	authKeyOldEnv = "A2AGW_TEST_AUTHFLOW_KEY_OLD"
	authKeyNewEnv = "A2AGW_TEST_AUTHFLOW_KEY_NEW"
	idpSecretEnv  = "A2AGW_TEST_IDP_SECRET"
	credHeader    = "X-Calendar-Token"
	redisPrefix   = "a2agw"
)

type authEnv struct {
	*gwtest.Env
	rdb   *redis.Client
	logs  *authLogBuffer
	idp   *stubIdP
	alice *caller
}

func startAuthEnv(t *testing.T, ttl time.Duration) *authEnv {
	t.Helper()
	srv := redistest.Start(t)
	idp := newStubIdP(t)
	t.Setenv(authKeyOldEnv, base64.StdEncoding.EncodeToString(authRandom(32)))
	t.Setenv(authKeyNewEnv, hex.EncodeToString(authRandom(32)))
	t.Setenv(idpSecretEnv, idp.secret)
	logs := &authLogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := gwtest.StartLogged(t, log, func(cfg *config.Config) {
		cfg.Store.Redis.Addrs = []string{srv.Addr()}
		cfg.AuthFlows = config.AuthFlowOptions{
			ChallengeTTL:  duration.Duration(ttl),
			SweepInterval: duration.Duration(100 * time.Millisecond),
			Keys: []config.AuthFlowKey{
				{ID: "k1", KeyEnv: authKeyOldEnv},
				{ID: "k2", KeyEnv: authKeyNewEnv, Active: true},
			},
		}
		secure := cfg.Agents[0].URL + demoagent.SecurePath
		cfg.Agents = append(cfg.Agents,
			config.Agent{Name: "cal", URL: secure, AuthFlow: &config.AgentAuthFlow{OAuth: &config.OAuthClient{
				AuthorizationURL: idp.srv.URL + "/authorize", TokenURL: idp.srv.URL + "/token",
				ClientID: idp.clientID, ClientSecretEnv: idpSecretEnv,
			}}},
			config.Agent{Name: "calmeta", URL: secure, AuthFlow: &config.AgentAuthFlow{Delivery: config.DeliverMetadata}},
			config.Agent{Name: "calhdr", URL: secure, AuthFlow: &config.AgentAuthFlow{Delivery: config.DeliverHeader, Header: credHeader}},
		)
	})
	idp.setRedirect(env.Gateway + config.AuthCallbackPath)
	return &authEnv{Env: env, rdb: srv.Client(t), logs: logs, idp: idp, alice: newCaller(t, env)}
}

// authCase is one protocol version and binding the flow is driven in.
type authCase struct {
	name    string
	version a2a.Version
	rpc     bool
	stream  bool
}

var (
	af10 = authCase{name: "jsonrpc 1.0", version: a2a.V10, rpc: true}
	af03 = authCase{name: "jsonrpc 0.3", version: a2a.V03, rpc: true}
)

// message is a user message in fc's dialect, resuming taskID when set.
func (fc authCase) message(id, text, taskID string) string {
	var m string
	switch {
	case fc.version == a2a.V10:
		m = `{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]`
	case fc.rpc:
		m = `{"kind":"message","messageId":"` + id + `","role":"user","parts":[{"kind":"text","text":"` + text + `"}]`
	default: // 0.3 HTTP+JSON is protobuf JSON
		m = `{"messageId":"` + id + `","role":"ROLE_USER","content":[{"text":"` + text + `"}]`
	}
	if taskID != "" {
		m += `,"taskId":"` + taskID + `"`
	}
	return m + "}"
}

// request sends params (a JSON object holding "message" and more) as
// method m in fc's binding, to the named agent.
func (fc authCase) request(ae *authEnv, agent string, m a2a.Method, params string, h http.Header) request {
	if h == nil {
		h = http.Header{}
	}
	if fc.version == a2a.V10 {
		h.Set(a2a.VersionHeader, "1.0")
	}
	base := ae.Gateway + "/agents/" + agent
	if fc.rpc {
		body := `{"jsonrpc":"2.0","id":"rq","method":"` + a2a.RPCMethodName(m, fc.version) + `","params":` + params + `}`
		return request{method: http.MethodPost, path: base + "/", header: h, body: []byte(body), rpc: true}
	}
	method, path := a2a.RESTPath(m, fc.version, "", "")
	return request{method: method, path: base + path, header: h, body: []byte(params)}
}

// send sends a message (a stream when fc says so) and returns the HTTP
// status and every result payload of the answer.
func (fc authCase) send(t *testing.T, ae *authEnv, c *caller, agent, text, taskID string, h http.Header) (int, [][]byte) {
	t.Helper()
	m := a2a.MethodSend
	if fc.stream {
		m = a2a.MethodStream
	}
	// Callers count their ids from 1: a random part keeps two callers'
	// message ids apart.
	rq := fc.request(ae, agent, m, `{"message":`+fc.message(c.nextID("m-"+rand.Text()[:8]), text, taskID)+`}`, h)
	if !fc.stream {
		resp, b := c.do(t, rq)
		return resp.StatusCode, [][]byte{b}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := c.client.Do(c.newRequest(t, ctx, rq))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, [][]byte{b}
	}
	var out [][]byte
	rd := a2a.NewSSEReader(resp.Body, 1<<20)
	for {
		ev, err := rd.Next()
		if err != nil {
			return resp.StatusCode, out
		}
		out = append(out, append([]byte(nil), ev.Data...))
		// The demo agent keeps an interrupted task's stream open.
		if st := stateOf(t, fc, ev.Data); st == a2a.StateAuthRequired || st.Terminal() {
			return resp.StatusCode, out
		}
	}
}

// object is the task or status update in a payload: the JSON-RPC result,
// without the 1.0 wrapper; nil for an error.
func (fc authCase) object(t *testing.T, payload []byte) map[string]any {
	t.Helper()
	m := decode(t, payload)
	if fc.rpc {
		if m["error"] != nil {
			return nil
		}
		m, _ = m["result"].(map[string]any)
	}
	for _, w := range []string{"task", "statusUpdate"} {
		if inner, ok := m[w].(map[string]any); ok && len(m) == 1 {
			return inner
		}
	}
	if _, ok := m["error"]; ok && !fc.rpc {
		return nil
	}
	return m
}

func stateOf(t *testing.T, fc authCase, payload []byte) a2a.State {
	t.Helper()
	ev, err := parse(payload, fc.rpc)
	if err != nil {
		t.Fatalf("unreadable answer: %v: %s", err, payload)
	}
	return ev.State
}

// challengeIn returns the challenge the gateway added to an auth-required
// answer: the last payload that carries one.
func challengeIn(t *testing.T, fc authCase, payloads [][]byte) (taskID string, challenge map[string]any, obj map[string]any) {
	t.Helper()
	for _, p := range payloads {
		o := fc.object(t, p)
		if o == nil {
			t.Fatalf("error answer: %s", p)
		}
		if id, ok := o["id"].(string); ok && taskID == "" {
			taskID = id
		}
		if id, ok := o["taskId"].(string); ok && taskID == "" {
			taskID = id
		}
		md, _ := o["metadata"].(map[string]any)
		if ch, ok := md[flow.ChallengeMetadataKey].(map[string]any); ok {
			challenge, obj = ch, o
		}
	}
	if challenge == nil {
		t.Fatalf("no challenge in the answer:\n%s", bytes.Join(payloads, []byte("\n")))
	}
	return taskID, challenge, obj
}

// startAuthTask starts a task on agent that asks for a credential and
// returns it with the challenge the gateway issued for it.
func startAuthTask(t *testing.T, ae *authEnv, c *caller, fc authCase, agent string) (string, map[string]any) {
	t.Helper()
	status, payloads := fc.send(t, ae, c, agent, "complete calendar", "", nil)
	if status != http.StatusOK {
		t.Fatalf("start: HTTP %d: %s", status, payloads)
	}
	taskID, ch, obj := challengeIn(t, fc, payloads)
	if stateOf(t, fc, payloads[len(payloads)-1]) != a2a.StateAuthRequired || taskID == "" {
		t.Fatalf("the task is not auth-required: %s", payloads[len(payloads)-1])
	}
	// The agent's status message reaches the caller as the agent sent it.
	st, _ := obj["status"].(map[string]any)
	if msg, _ := json.Marshal(st["message"]); !bytes.Contains(msg, []byte("Authorization required")) || !bytes.Contains(msg, []byte("calendar.read")) {
		t.Fatalf("the agent's status message is missing: %s", msg)
	}
	want := map[string]any{"status": "open", "scheme": "oauth2", "scopes": []any{"calendar.read"},
		"authorizeUrl": "https://auth.example.com/oauth2/authorize"}
	for k, v := range want {
		if !reflect.DeepEqual(ch[k], v) {
			t.Fatalf("challenge %s = %v, want %v (challenge %v)", k, ch[k], v, ch)
		}
	}
	if id, _ := ch["id"].(string); len(id) != 43 || ch["completeUrl"] != ae.Gateway+"/auth/challenges/"+id {
		t.Fatalf("challenge id and URL: %v", ch)
	}
	return taskID, ch
}

// authCall calls a challenge endpoint (a path below the gateway, or a
// full URL) as c.
func authCall(t *testing.T, ae *authEnv, c *caller, method, path string, body any) (*http.Response, []byte) {
	t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(path, "http") {
		path = ae.Gateway + path
	}
	return c.do(t, request{method: method, path: path, body: b})
}

func handOver(t *testing.T, ae *authEnv, c *caller, ch map[string]any, credential string) {
	t.Helper()
	resp, b := authCall(t, ae, c, http.MethodPost, ch["completeUrl"].(string)+"/credential", map[string]any{"credential": credential})
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "completed" {
		t.Fatalf("hand-off: HTTP %d: %s", resp.StatusCode, b)
	}
}

// TestAuthFlowOAuth walks the whole OAuth flow against the demo agent and
// a stub provider that checks PKCE: challenge, authorization, callback,
// the token stored encrypted, resume, the agent holding the token, the
// task completed; then replays of the challenge and of the callback.
func TestAuthFlowOAuth(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	c := ae.alice
	taskID, ch := startAuthTask(t, ae, c, af10, "cal")
	if !reflect.DeepEqual(ch["methods"], []any{"direct", "oauth"}) {
		t.Fatalf("methods: %v", ch["methods"])
	}

	resp, b := authCall(t, ae, c, http.MethodPost, ch["completeUrl"].(string)+"/oauth", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("oauth start: HTTP %d: %s", resp.StatusCode, b)
	}
	authURL := decode(t, b)["authorizationUrl"].(string)
	callback := ae.idp.authorize(t, authURL)
	resp, b = ae.anonymous(t, callback)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: HTTP %d: %s", resp.StatusCode, b)
	}
	code := authCallbackCode(t, callback)
	token := ae.idp.lastToken()

	// Stored encrypted, with the active key, bound to nothing readable.
	raw := ae.redisDump(t)
	if !strings.Contains(raw, redisPrefix+":achc:") || !strings.Contains(raw, "k2:") {
		t.Fatalf("no sealed credential in Redis:\n%s", raw)
	}
	for _, secret := range []string{token, code} {
		if strings.Contains(raw, secret) {
			t.Fatal("Redis holds the token or the code in the clear")
		}
	}
	resp, b = authCall(t, ae, c, http.MethodGet, ch["completeUrl"].(string), nil)
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "completed" {
		t.Fatalf("challenge after the callback: HTTP %d: %s", resp.StatusCode, b)
	}

	status, payloads := af10.send(t, ae, c, "cal", "go on", taskID, nil)
	if status != http.StatusOK || stateOf(t, af10, payloads[0]) != a2a.StateCompleted {
		t.Fatalf("resume: HTTP %d: %s", status, payloads[0])
	}
	if got := ae.Agent.Credentials(taskID); !reflect.DeepEqual(got, []string{"Bearer " + token}) {
		t.Fatalf("the agent received %d credentials, want the token once", len(got))
	}
	if raw := ae.redisDump(t); strings.Contains(raw, redisPrefix+":achc:") {
		t.Fatal("the credential is still stored after its use")
	}

	// The used challenge cannot be completed again, nor the callback replayed.
	resp, b = authCall(t, ae, c, http.MethodPost, ch["completeUrl"].(string)+"/credential", map[string]any{"credential": "another"})
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("completing a used challenge: HTTP %d: %s", resp.StatusCode, b)
	}
	resp, b = ae.anonymous(t, callback)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("replayed callback: HTTP %d: %s", resp.StatusCode, b)
	}
	if n := ae.idp.exchanges(); n != 1 {
		t.Fatalf("the provider exchanged %d codes, want 1", n)
	}

	mfs := scrape(t, ae.Admin)
	for _, want := range []struct {
		name   string
		labels map[string]string
	}{
		{"auth_challenges_opened_total", map[string]string{"agent": "cal"}},
		{"auth_challenges_completed_total", map[string]string{"agent": "cal", "method": "oauth"}},
		{"auth_resumes_total", map[string]string{"agent": "cal", "outcome": "completed"}},
		{"auth_challenges_refused_total", map[string]string{"agent": "unknown", "reason": "state"}},
	} {
		if got := authMetric(mfs, want.name, want.labels); got != 1 {
			t.Errorf("%s%v = %v, want 1", want.name, want.labels, got)
		}
	}
	if h := authHistCount(mfs, "auth_challenge_resume_seconds", map[string]string{"agent": "cal"}); h != 1 {
		t.Errorf("auth_challenge_resume_seconds count = %d, want 1", h)
	}
	ae.assertNoSecrets(t, token, code, ae.idp.secret)
}

// TestAuthFlowDirectHandOff detects auth-required and resumes in both
// protocol versions and bindings, answers and streams, with each delivery.
func TestAuthFlowDirectHandOff(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	for _, tc := range []struct {
		fc    authCase
		agent string
	}{
		{af10, "cal"},
		{af03, "cal"},
		{authCase{name: "jsonrpc 0.3 stream", version: a2a.V03, rpc: true, stream: true}, "cal"},
		{authCase{name: "rest 1.0 stream", version: a2a.V10, stream: true}, "cal"},
		{authCase{name: "rest 0.3", version: a2a.V03}, "cal"},
		{authCase{name: "jsonrpc 1.0 stream", version: a2a.V10, rpc: true, stream: true}, "calmeta"},
		{authCase{name: "rest 1.0", version: a2a.V10}, "calmeta"},
	} {
		t.Run(tc.fc.name+" "+tc.agent, func(t *testing.T) {
			c := ae.alice
			taskID, ch := startAuthTask(t, ae, c, tc.fc, tc.agent)
			cred := "direct-" + rand.Text()
			handOver(t, ae, c, ch, cred)
			status, payloads := tc.fc.send(t, ae, c, tc.agent, "go on", taskID, nil)
			if last := payloads[len(payloads)-1]; status != http.StatusOK || stateOf(t, tc.fc, last) != a2a.StateCompleted {
				t.Fatalf("resume: HTTP %d: %s", status, bytes.Join(payloads, []byte("\n")))
			}
			if got := ae.Agent.Credentials(taskID); !reflect.DeepEqual(got, []string{"Bearer " + cred}) {
				t.Fatalf("the agent received %d credentials, want the hand-off once", len(got))
			}
			ae.assertNoSecrets(t, cred)
		})
	}
}

// TestAuthFlowHeaderDelivery hands the credential over in the configured
// header, which callers cannot set themselves.
func TestAuthFlowHeaderDelivery(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	c := ae.alice
	taskID, ch := startAuthTask(t, ae, c, af10, "calhdr")
	forged := http.Header{}
	forged.Set(credHeader, "forged")
	if status, payloads := af10.send(t, ae, c, "calhdr", "with a forged header", taskID, forged); status != http.StatusOK {
		t.Fatalf("send: HTTP %d: %s", status, payloads)
	}
	cred := "header-" + rand.Text()
	handOver(t, ae, c, ch, cred)
	if status, payloads := af10.send(t, ae, c, "calhdr", "go on", taskID, nil); status != http.StatusOK {
		t.Fatalf("resume: HTTP %d: %s", status, payloads)
	}
	var seen []string
	for _, r := range ae.Agent.Requests() {
		if r.Op.TaskID == taskID {
			seen = append(seen, r.Header.Get(credHeader))
		}
	}
	if !reflect.DeepEqual(seen, []string{"", cred}) {
		t.Fatalf("the agent saw %s values %q, want none and then the credential", credHeader, seen)
	}
}

// TestAuthFlowExpiredChallenge lets completed challenges expire: the
// expiry is counted and shown, the resume is refused with the documented
// error in each version's shape and names a fresh challenge, the old
// credential never reaches the agent, and the fresh challenge completes
// the task.
func TestAuthFlowExpiredChallenge(t *testing.T) {
	ae := startAuthEnv(t, 3*time.Second)
	c := ae.alice
	rest10 := authCase{name: "rest 1.0", version: a2a.V10}
	rest03 := authCase{name: "rest 0.3", version: a2a.V03}
	cases := []struct {
		fc    authCase
		check func(t *testing.T, resp *http.Response, b []byte)
	}{
		{af10, func(t *testing.T, resp *http.Response, b []byte) {
			e, _ := decode(t, b)["error"].(map[string]any)
			if resp.StatusCode != http.StatusOK || e["code"] != float64(-32059) || !strings.Contains(string(b), `"reason":"AUTH_CHALLENGE_EXPIRED"`) {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
			}
		}},
		{af03, func(t *testing.T, resp *http.Response, b []byte) {
			e, _ := decode(t, b)["error"].(map[string]any)
			if resp.StatusCode != http.StatusOK || e["code"] != float64(-32059) {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
			}
		}},
		{rest10, func(t *testing.T, resp *http.Response, b []byte) {
			e, _ := decode(t, b)["error"].(map[string]any)
			if resp.StatusCode != http.StatusForbidden || e["status"] != "PERMISSION_DENIED" || !strings.Contains(string(b), `"reason":"AUTH_CHALLENGE_EXPIRED"`) {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
			}
		}},
		{rest03, func(t *testing.T, resp *http.Response, b []byte) {
			if resp.StatusCode != http.StatusForbidden || decode(t, b)["code"] != float64(-32059) {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
			}
		}},
	}
	tasks := make([]string, len(cases))
	challenges := make([]map[string]any, len(cases))
	stale := make([]string, len(cases))
	for i, tc := range cases {
		tasks[i], challenges[i] = startAuthTask(t, ae, c, tc.fc, "cal")
		stale[i] = "stale-" + rand.Text()
		handOver(t, ae, c, challenges[i], stale[i])
	}
	eventually(t, "the sweep expires the challenges", func() bool {
		return authMetric(scrape(t, ae.Admin), "auth_challenges_expired_total", map[string]string{"agent": "cal"}) == float64(len(cases))
	})
	resp, b := authCall(t, ae, c, http.MethodGet, challenges[0]["completeUrl"].(string), nil)
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "expired" {
		t.Fatalf("expired challenge: HTTP %d: %s", resp.StatusCode, b)
	}
	// The next answer about the task says so; the task stays auth-required.
	_, b = c.do(t, af10.request(ae, "cal", a2a.MethodGetTask, `{"id":"`+tasks[0]+`"}`, nil))
	if _, got, _ := challengeIn(t, af10, [][]byte{b}); got["status"] != "expired" || stateOf(t, af10, b) != a2a.StateAuthRequired {
		t.Fatalf("GetTask after expiry: %s", b)
	}
	before := len(ae.Agent.Requests())
	fresh := make([]string, len(cases))
	for i, tc := range cases {
		t.Run(tc.fc.name, func(t *testing.T) {
			resp, b := c.do(t, tc.fc.request(ae, "cal", a2a.MethodSend, `{"message":`+tc.fc.message(c.nextID("m"), "go on", tasks[i])+`}`, nil))
			tc.check(t, resp, b)
			fresh[i] = resp.Header.Get(flow.ChallengeHeader)
			if fresh[i] == "" || fresh[i] == challenges[i]["completeUrl"] || !strings.Contains(string(b), fresh[i]) {
				t.Fatalf("no fresh challenge named (%q): %s", fresh[i], b)
			}
		})
	}
	if len(ae.Agent.Requests()) != before {
		t.Fatal("a refused message reached the agent")
	}
	resp, b = authCall(t, ae, c, http.MethodGet, challenges[0]["completeUrl"].(string), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the expired challenge after its replacement: HTTP %d: %s", resp.StatusCode, b)
	}
	resp, b = authCall(t, ae, c, http.MethodGet, fresh[0], nil)
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "open" {
		t.Fatalf("fresh challenge: HTTP %d: %s", resp.StatusCode, b)
	}
	cred := "fresh-" + rand.Text()
	handOver(t, ae, c, decode(t, b), cred)
	status, payloads := af10.send(t, ae, c, "cal", "go on", tasks[0], nil)
	if status != http.StatusOK || stateOf(t, af10, payloads[0]) != a2a.StateCompleted {
		t.Fatalf("resume with the fresh challenge: HTTP %d: %s", status, payloads[0])
	}
	if got := ae.Agent.Credentials(tasks[0]); !reflect.DeepEqual(got, []string{"Bearer " + cred}) {
		t.Fatal("the agent did not receive exactly the fresh credential")
	}
	for _, task := range tasks[1:] {
		if len(ae.Agent.Credentials(task)) != 0 {
			t.Fatal("an expired credential reached the agent")
		}
	}
	if got := authMetric(scrape(t, ae.Admin), "auth_challenges_refused_total", map[string]string{"agent": "cal", "reason": "expired"}); got != float64(len(cases)) {
		t.Fatalf("refusals for expiry: %v", got)
	}
	ae.assertNoSecrets(t, append(stale, cred)...)
}

// TestAuthFlowOtherCallers: another subject of the tenant and another
// tenant can neither read, complete nor use alice's challenge, and what
// they get is what an unknown challenge gets.
func TestAuthFlowOtherCallers(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	taskID, ch := startAuthTask(t, ae, ae.alice, af10, "cal")
	u := ch["completeUrl"].(string)
	unknown := ae.Gateway + "/auth/challenges/" + base64.RawURLEncoding.EncodeToString(authRandom(32))
	bob := newCaller(t, ae.Env)
	bob.token = ae.Token(t, "acme", "bob")
	eve := newCaller(t, ae.Env)
	eve.token = ae.Token(t, "globex", "eve")
	for _, call := range []struct {
		method, suffix string
		body           any
	}{
		{http.MethodGet, "", nil},
		{http.MethodPost, "/credential", map[string]any{"credential": "intruder"}},
		{http.MethodPost, "/oauth", nil},
	} {
		ref, refBody := authCall(t, ae, ae.alice, call.method, unknown+call.suffix, call.body)
		if ref.StatusCode != http.StatusNotFound {
			t.Fatalf("%s unknown%s: HTTP %d: %s", call.method, call.suffix, ref.StatusCode, refBody)
		}
		for name, who := range map[string]*caller{"bob": bob, "eve": eve} {
			resp, b := authCall(t, ae, who, call.method, u+call.suffix, call.body)
			if resp.StatusCode != ref.StatusCode || !bytes.Equal(b, refBody) {
				t.Fatalf("%s: %s %s: HTTP %d %s; unknown: HTTP %d %s", name, call.method, call.suffix, resp.StatusCode, b, ref.StatusCode, refBody)
			}
		}
	}
	resp, b := authCall(t, ae, ae.alice, http.MethodGet, ae.Gateway+"/auth/challenges/"+ch["id"].(string), nil)
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "open" {
		t.Fatalf("alice's challenge after the attempts: HTTP %d: %s", resp.StatusCode, b)
	}
	cred := "alice-" + rand.Text()
	handOver(t, ae, ae.alice, ch, cred)
	// Bob may message the tenant's task, but carries nothing of alice's;
	// eve cannot even see the task.
	if status, payloads := af10.send(t, ae, bob, "cal", "bob here", taskID, nil); status != http.StatusOK || stateOf(t, af10, payloads[0]) != a2a.StateAuthRequired {
		t.Fatalf("bob's message: HTTP %d: %s", status, payloads[0])
	}
	if status, payloads := af10.send(t, ae, eve, "cal", "eve here", taskID, nil); status != http.StatusOK || !strings.Contains(string(payloads[0]), "-32001") {
		t.Fatalf("eve's message: HTTP %d: %s", status, payloads[0])
	}
	if n := len(ae.Agent.Credentials(taskID)); n != 0 {
		t.Fatalf("the agent received %d credentials from other callers' messages", n)
	}
	status, payloads := af10.send(t, ae, ae.alice, "cal", "go on", taskID, nil)
	if status != http.StatusOK || stateOf(t, af10, payloads[0]) != a2a.StateCompleted {
		t.Fatalf("alice's resume: HTTP %d: %s", status, payloads[0])
	}
	ae.assertNoSecrets(t, cred)
}

// TestAuthFlowCallbackRefusals: a tampered, missing, replayed or refused
// state never completes a challenge.
func TestAuthFlowCallbackRefusals(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	c := ae.alice
	_, ch := startAuthTask(t, ae, c, af10, "cal")
	start := func() string {
		resp, b := authCall(t, ae, c, http.MethodPost, ch["completeUrl"].(string)+"/oauth", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("oauth start: HTTP %d: %s", resp.StatusCode, b)
		}
		return ae.idp.authorize(t, decode(t, b)["authorizationUrl"].(string))
	}
	callback := start()
	tampered := authWithQuery(t, callback, "state", authFlipLast(authQuery(t, callback, "state")))
	for name, u := range map[string]string{
		"tampered state": tampered,
		"no state":       authWithQuery(t, callback, "state", ""),
		"other code":     authWithQuery(t, callback, "code", "made-up"),
	} {
		resp, b := ae.anonymous(t, u)
		if resp.StatusCode < 400 {
			t.Fatalf("%s: HTTP %d: %s", name, resp.StatusCode, b)
		}
	}
	// The made-up code used the real state: it is spent, so the real
	// code's callback is now a replay.
	if resp, b := ae.anonymous(t, callback); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback after its state was spent: HTTP %d: %s", resp.StatusCode, b)
	}
	// A new start replaces the state; the provider refusing access spends it.
	callback = start()
	if resp, b := ae.anonymous(t, authWithQuery(t, callback, "error", "access_denied")); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("refused access: HTTP %d: %s", resp.StatusCode, b)
	}
	if resp, b := ae.anonymous(t, callback); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback after a refusal: HTTP %d: %s", resp.StatusCode, b)
	}
	// Starting again replaces an unused state.
	first := start()
	second := start()
	if resp, b := ae.anonymous(t, first); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("replaced state: HTTP %d: %s", resp.StatusCode, b)
	}
	if resp, b := ae.anonymous(t, second); resp.StatusCode != http.StatusOK {
		t.Fatalf("current state: HTTP %d: %s", resp.StatusCode, b)
	}
	resp, b := authCall(t, ae, c, http.MethodGet, ch["completeUrl"].(string), nil)
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "completed" {
		t.Fatalf("challenge: HTTP %d: %s", resp.StatusCode, b)
	}
	// A completed challenge takes neither a second OAuth start nor a hand-off.
	for suffix, body := range map[string]any{"/oauth": nil, "/credential": map[string]any{"credential": "x"}} {
		resp, b := authCall(t, ae, c, http.MethodPost, ch["completeUrl"].(string)+suffix, body)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "AUTH_CHALLENGE_NOT_OPEN") {
			t.Fatalf("%s on a completed challenge: HTTP %d: %s", suffix, resp.StatusCode, b)
		}
	}
	ae.assertNoSecrets(t, ae.idp.lastToken(), ae.idp.secret)
}

// TestAuthFlowAgentResumesOnItsOwn: a task that leaves auth-required
// without the gateway's credential (here the client hands the agent one
// in band) closes its challenge, which then takes no credential. For an
// agent with delivery "metadata" the key is the gateway's: a caller's own
// is removed.
func TestAuthFlowAgentResumesOnItsOwn(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	c := ae.alice
	inBand := func(agent, taskID string) []byte {
		msg := `{"messageId":"` + c.nextID("m") + `","role":"ROLE_USER","parts":[{"text":"in band"}],"taskId":"` + taskID +
			`","metadata":{"` + flow.CredentialMetadataKey + `":"Bearer in-band"}}`
		resp, b := c.do(t, af10.request(ae, agent, a2a.MethodSend, `{"message":`+msg+`}`, nil))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("in-band message: HTTP %d: %s", resp.StatusCode, b)
		}
		return b
	}
	taskID, ch := startAuthTask(t, ae, c, af10, "cal")
	if b := inBand("cal", taskID); stateOf(t, af10, b) != a2a.StateCompleted {
		t.Fatalf("in-band resume: %s", b)
	}
	resp, b := authCall(t, ae, c, http.MethodPost, ch["completeUrl"].(string)+"/credential", map[string]any{"credential": "late"})
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("completing a closed challenge: HTTP %d: %s", resp.StatusCode, b)
	}
	if got := authMetric(scrape(t, ae.Admin), "auth_challenges_closed_total", map[string]string{"agent": "cal", "state": "completed"}); got != 1 {
		t.Fatalf("closed challenges: %v", got)
	}

	taskID, _ = startAuthTask(t, ae, c, af10, "calmeta")
	if b := inBand("calmeta", taskID); stateOf(t, af10, b) != a2a.StateAuthRequired {
		t.Fatalf("forged metadata credential: %s", b)
	}
	if n := len(ae.Agent.Credentials(taskID)); n != 0 {
		t.Fatal("a caller's own credential metadata reached a metadata-delivery agent")
	}
}

// anonymous GETs a URL without credentials and without following
// redirects, as a browser's callback would arrive.
func (ae *authEnv) anonymous(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	return ae.alice.do(t, request{method: http.MethodGet, path: u, anonymous: true})
}

// assertNoSecrets checks that no secret appears in the gateway's logs or
// its /metrics.
func (ae *authEnv) assertNoSecrets(t *testing.T, secrets ...string) {
	t.Helper()
	resp, err := http.Get(ae.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	logs := ae.logs.String()
	if !strings.Contains(logs, "auth challenge opened") {
		t.Fatal("the log capture saw nothing of the flow")
	}
	for _, s := range secrets {
		if s == "" {
			t.Fatal("an empty secret cannot be looked for")
		}
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold a secret (%d bytes)", len(s))
		}
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("/metrics holds a secret (%d bytes)", len(s))
		}
	}
}

// redisDump is every key and value under the gateway's prefix, as text.
func (ae *authEnv) redisDump(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var out strings.Builder
	iter := ae.rdb.Scan(ctx, 0, redisPrefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		out.WriteString(k + " ")
		switch ae.rdb.Type(ctx, k).Val() {
		case "string":
			out.WriteString(ae.rdb.Get(ctx, k).Val())
		case "hash":
			for f, v := range ae.rdb.HGetAll(ctx, k).Val() {
				out.WriteString(f + "=" + v + " ")
			}
		case "zset":
			out.WriteString(strings.Join(ae.rdb.ZRange(ctx, k, 0, -1).Val(), " "))
		case "set":
			out.WriteString(strings.Join(ae.rdb.SMembers(ctx, k).Val(), " "))
		case "list":
			out.WriteString(strings.Join(ae.rdb.LRange(ctx, k, 0, -1).Val(), " "))
		case "stream":
			for _, m := range ae.rdb.XRange(ctx, k, "-", "+").Val() {
				for f, v := range m.Values {
					out.WriteString(f + "=" + authString(v) + " ")
				}
			}
		}
		out.WriteByte('\n')
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func authString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// authMetric is the counter or gauge value of a2agw_<name> with labels; 0
// when absent.
func authMetric(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	if m := authFindMetric(mfs, name, labels); m != nil {
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return 0
}

func authHistCount(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) uint64 {
	if m := authFindMetric(mfs, name, labels); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func authFindMetric(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	mf := mfs[metrics.Namespace+"_"+name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.GetMetric() {
		match := true
		for _, lp := range m.GetLabel() {
			if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

func authRandom(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func authQuery(t *testing.T, raw, key string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get(key)
}

func authWithQuery(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func authCallbackCode(t *testing.T, callback string) string { return authQuery(t, callback, "code") }

// authFlipLast changes the last character of s.
func authFlipLast(s string) string {
	if s == "" {
		return "x"
	}
	last := s[len(s)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return s[:len(s)-1] + string(repl)
}

// authLogBuffer is a log sink safe for concurrent writes and reads.
type authLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *authLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *authLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stubIdP is an OAuth 2.0 authorization server on loopback: its authorize
// endpoint checks the request and redirects with a one-time code, its
// token endpoint checks the client, the redirect URI and the PKCE S256
// verifier before issuing a token.
type stubIdP struct {
	srv      *httptest.Server
	clientID string
	secret   string

	mu       sync.Mutex
	redirect string
	grants   map[string]idpGrant // by code
	tokens   []string
	issued   int
}

type idpGrant struct {
	challenge, redirect string
}

func newStubIdP(t *testing.T) *stubIdP {
	t.Helper()
	p := &stubIdP{clientID: "a2a-gateway-test", secret: "idp-secret-" + rand.Text(), grants: map[string]idpGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", p.serveAuthorize)
	mux.HandleFunc("POST /token", p.serveToken)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *stubIdP) setRedirect(u string) {
	p.mu.Lock()
	p.redirect = u
	p.mu.Unlock()
}

func (p *stubIdP) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case q.Get("response_type") != "code", q.Get("client_id") != p.clientID, q.Get("redirect_uri") != p.redirect,
		q.Get("code_challenge_method") != "S256", len(q.Get("code_challenge")) != 43, q.Get("state") == "",
		q.Get("scope") != "calendar.read":
		http.Error(w, "bad authorization request: "+q.Encode(), http.StatusBadRequest)
		return
	}
	code := "code-" + rand.Text()
	p.grants[code] = idpGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	back := url.Values{"code": {code}, "state": {q.Get("state")}}
	http.Redirect(w, r, p.redirect+"?"+back.Encode(), http.StatusFound)
}

func (p *stubIdP) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	code := r.PostForm.Get("code")
	g, known := p.grants[code]
	delete(p.grants, code) // one use, whatever happens
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	fail := func(e string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"` + e + `"}`))
	}
	switch {
	case id != p.clientID || secret != p.secret:
		fail("invalid_client")
	case r.PostForm.Get("grant_type") != "authorization_code" || !known || r.PostForm.Get("redirect_uri") != g.redirect:
		fail("invalid_grant")
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		fail("invalid_grant")
	default:
		tok := "tok-" + rand.Text()
		p.tokens = append(p.tokens, tok)
		p.issued++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"` + tok + `","token_type":"bearer","expires_in":3600,"refresh_token":"refresh-` + rand.Text() + `"}`))
	}
}

// authorize plays the person's browser at the provider: it follows the
// authorization URL and returns the redirect back to the gateway.
func (p *stubIdP) authorize(t *testing.T, authURL string) string {
	t.Helper()
	if !strings.HasPrefix(authURL, p.srv.URL+"/authorize?") {
		t.Fatalf("authorization URL not at the provider: %s", authURL)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("provider: HTTP %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Location")
}

func (p *stubIdP) lastToken() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tokens) == 0 {
		return ""
	}
	return p.tokens[len(p.tokens)-1]
}

func (p *stubIdP) exchanges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issued
}

// TestAuthFlowEndpointsRefuseBadInput: the endpoints need the caller's
// credential, read bounded, well-formed bodies and answer in the 1.0
// error shape; a refusal never quotes what was sent.
func TestAuthFlowEndpointsRefuseBadInput(t *testing.T) {
	ae := startAuthEnv(t, 10*time.Minute)
	c := ae.alice
	_, ch := startAuthTask(t, ae, c, af10, "cal")
	u := ch["completeUrl"].(string)
	resp, b := c.do(t, request{method: http.MethodGet, path: u, anonymous: true})
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credential: HTTP %d: %s", resp.StatusCode, b)
	}
	for name, body := range map[string]string{
		"not JSON":         `{"credential":`,
		"unknown member":   `{"credential":"x","colour":"red"}`,
		"empty credential": `{"credential":""}`,
		"line break":       `{"credential":"secret-a\r\nX-Injected: 1"}`,
		"bad scheme":       `{"credential":"secret-b","scheme":"Bearer token"}`,
		"negative expiry":  `{"credential":"secret-c","expiresIn":-1}`,
	} {
		resp, b := c.do(t, request{method: http.MethodPost, path: u + "/credential", body: []byte(body)})
		e, _ := decode(t, b)["error"].(map[string]any)
		if resp.StatusCode != http.StatusBadRequest || e["status"] != "INVALID_ARGUMENT" || strings.Contains(string(b), "secret-") {
			t.Errorf("%s: HTTP %d: %s", name, resp.StatusCode, b)
		}
	}
	for _, rq := range []request{
		{method: http.MethodGet, path: ae.Gateway + "/auth/elsewhere"},
		{method: http.MethodDelete, path: u},
		{method: http.MethodGet, path: ae.Gateway + "/auth/challenges/" + strings.Repeat("x", 200)},
	} {
		resp, b := c.do(t, rq)
		if resp.StatusCode != http.StatusNotFound || decode(t, b)["error"] == nil {
			t.Errorf("%s %s: HTTP %d: %s", rq.method, rq.path, resp.StatusCode, b)
		}
	}
	// None of that touched the challenge.
	resp, b = authCall(t, ae, c, http.MethodGet, u, nil)
	if resp.StatusCode != http.StatusOK || decode(t, b)["status"] != "open" {
		t.Fatalf("challenge: HTTP %d: %s", resp.StatusCode, b)
	}
}
