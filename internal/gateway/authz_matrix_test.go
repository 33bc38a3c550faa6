package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

// The helpers of the authorization tests carry an "az" prefix: other test
// files of this package define their own request helpers.

// azTimeout only keeps a broken test from hanging; nothing asserts on time.
const azTimeout = 30 * time.Second

// azDialect is one way of speaking A2A to the gateway.
type azDialect struct {
	name    string
	version a2a.Version
	binding a2a.Binding
}

func (d azDialect) rest() bool { return d.binding == a2a.BindingREST }

var (
	azRPC10  = azDialect{"1.0-jsonrpc", a2a.V10, a2a.BindingJSONRPC}
	azRPC03  = azDialect{"0.3-jsonrpc", a2a.V03, a2a.BindingJSONRPC}
	azREST10 = azDialect{"1.0-rest", a2a.V10, a2a.BindingREST}
	azREST03 = azDialect{"0.3-rest", a2a.V03, a2a.BindingREST}
	// azLegacy is the pre-0.2 tasks/send dialect, in which clients choose task ids.
	azLegacy = azDialect{"0.1-jsonrpc", a2a.VLegacy, a2a.BindingJSONRPC}

	azDialects = []azDialect{azRPC10, azRPC03, azREST10, azREST03}
)

// azWorld is a gateway with its demo agent, as the authorization tests use it.
type azWorld struct {
	agent *demoagent.Agent
	// base is the agent's mount on the gateway, gateway the public base;
	// admin the admin listener.
	base    string
	gateway string
	admin   string
	// sink receives the demo agent's push notifications.
	sink   string
	policy authz.Policy
	mint   func(tenant, subject string, scopes []string) string
	http   *http.Client
	seq    atomic.Int64
}

// azPolicy returns a gwtest option that sets the policy of every mount.
func azPolicy(p authz.Policy) gwtest.Option {
	return func(c *config.Config) {
		for i := range c.Agents {
			c.Agents[i].Policy = p
		}
	}
}

// azTwin mounts the demo agent a second time as "twin", at the same URL
// spelt with a trailing slash: both mounts share records by default.
func azTwin(c *config.Config) {
	c.Agents = append(c.Agents, config.Agent{Name: "twin", URL: c.Agents[0].URL + "/"})
}

// azAlias mounts the demo agent a second time as "alias", at another
// spelling of its URL, and gives both mounts one namespace.
func azAlias(c *config.Config) {
	c.Agents[0].Namespace = "shared"
	c.Agents = append(c.Agents, config.Agent{Name: "alias", URL: strings.Replace(c.Agents[0].URL, "127.0.0.1", "localhost", 1), Namespace: "shared"})
}

// azRedis starts a real redis-server and returns the option that points
// the gateway's store at it.
func azRedis(t *testing.T) (*redistest.Server, gwtest.Option) {
	t.Helper()
	srv := redistest.Start(t)
	return srv, func(c *config.Config) { c.Store.Redis.Addrs = []string{srv.Addr()} }
}

// newAzWorld starts a gateway through gwtest.
func newAzWorld(t *testing.T, policy authz.Policy, opts ...gwtest.Option) *azWorld {
	t.Helper()
	w := &azWorld{sink: azSink(t), policy: policy}
	env := gwtest.Start(t, append(opts, azPolicy(policy))...)
	w.agent, w.base, w.gateway, w.admin = env.Agent, env.AgentBase, env.Gateway, env.Admin
	w.mint = func(tenant, subject string, scopes []string) string { return env.Token(t, tenant, subject, scopes...) }
	w.http = azHTTPClient(t)
	return w
}

// azSink is a push-notification receiver that accepts everything.
func azSink(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook"
}

func azHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func (w *azWorld) id(prefix string) string {
	return prefix + "-" + strconv.FormatInt(w.seq.Add(1), 10)
}

// azUnknown is an id nobody has used.
func azUnknown(prefix string) string { return prefix + "-" + rand.Text() }

// azClient is one caller: a tenant and subject with a token.
type azClient struct {
	w       *azWorld
	tenant  string
	subject string
	token   string
	// mount is the mount the client speaks to ("" for the world's base).
	mount string
}

func (w *azWorld) client(tenant, subject string, scopes ...string) *azClient {
	if len(scopes) == 0 {
		scopes = gwtest.AllScopes
	}
	return &azClient{w: w, tenant: tenant, subject: subject, token: w.mint(tenant, subject, scopes)}
}

// via is the same caller speaking to another mount.
func (c *azClient) via(mount string) *azClient {
	v := *c
	v.mount = mount
	return &v
}

func (c *azClient) base() string {
	if c.mount == "" {
		return c.w.base
	}
	return c.w.gateway + "/agents/" + c.mount
}

func (c *azClient) String() string {
	if c.mount != "" {
		return c.tenant + "/" + c.subject + "@" + c.mount
	}
	return c.tenant + "/" + c.subject
}

// azCall is one HTTP request below the agent's mount.
type azCall struct {
	method string
	path   string
	body   []byte
	// rpcID is the JSON-RPC id ("" for REST).
	rpcID   string
	version a2a.Version
}

func (c azCall) String() string { return c.method + " " + c.path + " " + string(c.body) }

// azReply is an answer; for a stream, body is the first event's data.
type azReply struct {
	status int
	header http.Header
	body   []byte
	stream bool
}

func (r azReply) String() string {
	kind := "body"
	switch {
	case r.stream && len(r.body) == 0:
		kind = "stream that ended without an event"
	case r.stream:
		kind = "first event"
	}
	return "HTTP " + strconv.Itoa(r.status) + " " + r.header.Get("Content-Type") + " " + kind + " " + string(r.body)
}

// do sends the call. A stream is read up to its first event and then
// abandoned, so a stream that should never have opened cannot hang the test.
func (c *azClient) do(t *testing.T, call azCall) azReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), azTimeout)
	defer cancel()
	resp := c.send(t, ctx, call)
	defer resp.Body.Close()
	r := azReply{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		r.stream = true
		// A stream that ends before its first event leaves body empty.
		if ev, err := a2a.NewSSEReader(resp.Body, 1<<20).Next(); err == nil {
			r.body = ev.Data
		}
		return r
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read answer: %v", call, err)
	}
	r.body = b
	return r
}

// send sends the call and returns the response with its body unread.
func (c *azClient) send(t *testing.T, ctx context.Context, call azCall) *http.Response {
	t.Helper()
	var body io.Reader
	if call.body != nil {
		body = bytes.NewReader(call.body)
	}
	req, err := http.NewRequestWithContext(ctx, call.method, c.base()+call.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if call.version == a2a.V10 {
		req.Header.Set(a2a.VersionHeader, "1.0")
	}
	if call.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.w.http.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
	return resp
}

func azJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (w *azWorld) rpcCall(t *testing.T, d azDialect, m a2a.Method, params any) azCall {
	t.Helper()
	id := w.id("rpc")
	name := a2a.RPCMethodName(m, d.version)
	if name == "" {
		t.Fatalf("%s has no JSON-RPC method for %s", d.name, m)
	}
	body := azJSON(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": name, "params": params})
	return azCall{method: http.MethodPost, path: "/", body: body, rpcID: id, version: d.version}
}

func (w *azWorld) restCall(t *testing.T, d azDialect, m a2a.Method, task, cfg string, body any) azCall {
	t.Helper()
	method, path := a2a.RESTPath(m, d.version, task, cfg)
	if path == "" {
		t.Fatalf("%s has no REST path for %s", d.name, m)
	}
	c := azCall{method: method, path: path, version: d.version}
	if body != nil {
		c.body = azJSON(t, body)
	}
	return c
}

// azMsg is the content of a message to send.
type azMsg struct {
	text      string
	taskID    string
	contextID string
	refs      []string
}

// message renders m in the shape of dialect d.
func (w *azWorld) message(d azDialect, m azMsg) map[string]any {
	var out map[string]any
	switch {
	case d.version == a2a.VLegacy:
		return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": m.text}}}
	case d.version == a2a.V10:
		out = map[string]any{"role": "ROLE_USER", "parts": []any{map[string]any{"text": m.text}}}
	case d.rest():
		out = map[string]any{"role": "ROLE_USER", "content": []any{map[string]any{"text": m.text}}}
	default:
		out = map[string]any{"kind": "message", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": m.text}}}
	}
	out["messageId"] = w.id("msg")
	if m.taskID != "" {
		out["taskId"] = m.taskID
	}
	if m.contextID != "" {
		out["contextId"] = m.contextID
	}
	if m.refs != nil {
		out["referenceTaskIds"] = m.refs
	}
	return out
}

// sendCall sends m; a non-blocking send returns as soon as the task exists.
// In the legacy dialect m.taskID is the client-chosen task id and
// m.contextID the session.
func (w *azWorld) sendCall(t *testing.T, d azDialect, streaming, nonBlocking bool, m azMsg) azCall {
	t.Helper()
	method := a2a.MethodSend
	if streaming {
		method = a2a.MethodStream
	}
	params := map[string]any{"message": w.message(d, m)}
	if d.version == a2a.VLegacy {
		params["id"] = m.taskID
		if m.contextID != "" {
			params["sessionId"] = m.contextID
		}
	}
	if nonBlocking {
		params["configuration"] = map[string]any{"returnImmediately": true, "blocking": false}
	}
	if d.rest() {
		return w.restCall(t, d, method, "", "", params)
	}
	return w.rpcCall(t, d, method, params)
}

// taskCall is get, cancel or subscribe (POST for REST subscribe).
func (w *azWorld) taskCall(t *testing.T, d azDialect, m a2a.Method, task string) azCall {
	t.Helper()
	if !d.rest() {
		return w.rpcCall(t, d, m, map[string]any{"id": task})
	}
	c := w.restCall(t, d, m, task, "", nil)
	if m == a2a.MethodSubscribe {
		c.method = http.MethodPost
	}
	return c
}

// pushCall is one of the four push-config operations on task.
func (w *azWorld) pushCall(t *testing.T, d azDialect, m a2a.Method, task, cfg string) azCall {
	t.Helper()
	inner := map[string]any{"id": cfg, "url": w.sink}
	switch {
	case d.rest():
		var body any
		if m == a2a.MethodPushConfigSet {
			body = inner
			if d.version == a2a.V03 {
				body = map[string]any{"pushNotificationConfig": inner}
			}
		}
		return w.restCall(t, d, m, task, cfg, body)
	case d.version == a2a.V10:
		params := map[string]any{"taskId": task}
		if m != a2a.MethodPushConfigList {
			params["id"] = cfg
		}
		if m == a2a.MethodPushConfigSet {
			params["url"] = w.sink
		}
		return w.rpcCall(t, d, m, params)
	case d.version == a2a.VLegacy:
		params := map[string]any{"id": task}
		if m == a2a.MethodPushConfigSet {
			params["pushNotificationConfig"] = map[string]any{"url": w.sink}
		}
		return w.rpcCall(t, d, m, params)
	}
	switch m {
	case a2a.MethodPushConfigSet:
		return w.rpcCall(t, d, m, map[string]any{"taskId": task, "pushNotificationConfig": inner})
	case a2a.MethodPushConfigList:
		return w.rpcCall(t, d, m, map[string]any{"id": task})
	}
	return w.rpcCall(t, d, m, map[string]any{"id": task, "pushNotificationConfigId": cfg})
}

// azRPCError is a JSON-RPC error member.
type azRPCError struct {
	Code int             `json:"code"`
	Data json.RawMessage `json:"data"`
}

func (r azReply) rpcError() *azRPCError {
	var env struct {
		Error *azRPCError `json:"error"`
	}
	if json.Unmarshal(r.body, &env) != nil {
		return nil
	}
	return env.Error
}

func (r azReply) restReason() string {
	var env struct {
		Error struct {
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &env) != nil || len(env.Error.Details) == 0 {
		return ""
	}
	return env.Error.Details[0].Reason
}

// rest03Code reads the code of a 0.3 HTTP+JSON error ({"code", "message"}).
func (r azReply) rest03Code() int {
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(r.body, &e) != nil {
		return 0
	}
	return e.Code
}

// is reports whether r is the protocol error e as binding b writes it.
// Over JSON-RPC a refused streaming method is an event stream whose one
// event is the error (body holds it); REST refuses streams with a status.
func (r azReply) is(b a2a.Binding, e *a2a.Error) bool {
	if b == a2a.BindingREST {
		return !r.stream && r.status == e.HTTPStatus && (r.restReason() == e.Reason || r.rest03Code() == e.Code)
	}
	re := r.rpcError()
	return r.status == http.StatusOK && re != nil && re.Code == e.Code
}

// ok reports whether r is a success in binding b.
func (r azReply) ok(b a2a.Binding) bool {
	if r.status < 200 || r.status > 299 {
		return false
	}
	return b == a2a.BindingREST || r.rpcError() == nil
}

// event reads the task and context an answer (or first stream event) names.
func (r azReply) event(t *testing.T, b a2a.Binding) a2a.Event {
	t.Helper()
	var ev a2a.Event
	var err error
	if b == a2a.BindingREST {
		ev, err = a2a.ParseResult(r.body)
	} else {
		ev, err = a2a.ParseRPCEvent(r.body)
	}
	if err != nil {
		t.Fatalf("answer not readable (%v): %s", err, r)
	}
	return ev
}

// mustOK sends the call and fails unless it succeeds.
func (c *azClient) mustOK(t *testing.T, d azDialect, call azCall) azReply {
	t.Helper()
	r := c.do(t, call)
	if !r.ok(d.binding) {
		t.Fatalf("%s %s: %s: want success, got %s", c, d.name, call, r)
	}
	return r
}

// azTask is a task as its creator saw it.
type azTask struct {
	// label says how it was made, for test names.
	label string
	d     azDialect
	id    string
	ctx   string
	state a2a.State
	// pushConfig names the push config its owner created ("" when none).
	pushConfig string
}

// create starts a task with text; wait tasks are sent non-blocking.
func (c *azClient) create(t *testing.T, d azDialect, text string) azTask {
	t.Helper()
	m := azMsg{text: text}
	if d.version == a2a.VLegacy {
		m.taskID = azUnknown("legacy-task")
	}
	ev := c.mustOK(t, d, c.w.sendCall(t, d, false, text == "wait", m)).event(t, d.binding)
	if ev.TaskID == "" || ev.ContextID == "" {
		t.Fatalf("%s %s: send %q answered no task: %+v", c, d.name, text, ev)
	}
	return azTask{label: d.name + "-" + strings.Fields(text)[0], d: d, id: ev.TaskID, ctx: ev.ContextID, state: ev.State}
}

// requestCount is the demo agent's request count: a diff of it around a
// call says whether the call reached the agent.
func (w *azWorld) requestCount(t *testing.T) int {
	t.Helper()
	n := len(w.agent.Requests())
	// The agent keeps 10000 requests; at the cap a count no longer grows.
	if n > 9000 {
		t.Fatalf("the demo agent's request log is nearly full (%d); the request diff would be blind", n)
	}
	return n
}

// unreached sends call and fails if it reached the agent.
func (c *azClient) unreached(t *testing.T, call azCall) azReply {
	t.Helper()
	before := c.w.requestCount(t)
	r := c.do(t, call)
	if n := c.w.requestCount(t) - before; n != 0 {
		t.Errorf("%s: %s reached the agent (%d requests)", c, call, n)
	}
	return r
}

// normalized replaces the call's JSON-RPC id in the answer, the one part of
// two answers to different requests that may differ.
func normalized(r azReply, call azCall) []byte {
	if call.rpcID == "" {
		return r.body
	}
	return bytes.ReplaceAll(r.body, azJSONString(call.rpcID), []byte(`"<id>"`))
}

func azJSONString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// indistinguishable checks that attempt (on a foreign id) and reference (on
// an unknown id) were both refused as TaskNotFound before reaching the
// agent, with byte-identical answers.
func (c *azClient) indistinguishable(t *testing.T, d azDialect, attempt, reference azCall) {
	t.Helper()
	got := c.unreached(t, attempt)
	ref := c.unreached(t, reference)
	if !ref.is(d.binding, a2a.ErrTaskNotFound) {
		t.Errorf("%s %s: unknown id: %s\nwant TaskNotFound, got %s", c, d.name, reference, ref)
		return
	}
	if got.status != ref.status || got.stream != ref.stream ||
		got.header.Get("Content-Type") != ref.header.Get("Content-Type") ||
		!bytes.Equal(normalized(got, attempt), normalized(ref, reference)) {
		t.Errorf("%s %s: foreign id answered differently from an unknown id\nattempt:   %s\n  answer:  %s\nreference: %s\n  answer:  %s",
			c, d.name, attempt, got, reference, ref)
	}
}

// azBuild returns the request against task, ctx and cfg in dialect d, or
// false when the dialect has no such request.
type azBuild func(t *testing.T, w *azWorld, d azDialect, task, ctx, cfg string) (azCall, bool)

// azAttack is one operation a caller tries on someone else's task or context.
type azAttack struct {
	name  string
	build azBuild
	// claims says whether an unknown id in the request would be reserved for
	// the caller (a legacy task id, or a context id when the policy allows
	// client-chosen ones) rather than refused. Then the reference is the
	// same kind of request on an unknown task id.
	claims func(p authz.Policy) bool
}

func azNever(authz.Policy) bool  { return false }
func azAlways(authz.Policy) bool { return true }
func azClientContexts(p authz.Policy) bool {
	return p.ClientContextIDs == nil || *p.ClientContextIDs
}

func azTaskOp(m a2a.Method) azBuild {
	return func(t *testing.T, w *azWorld, d azDialect, task, _, _ string) (azCall, bool) {
		if d.version == a2a.VLegacy {
			return azCall{}, false
		}
		return w.taskCall(t, d, m, task), true
	}
}

func azPushOp(m a2a.Method) azBuild {
	return func(t *testing.T, w *azWorld, d azDialect, task, _, cfg string) (azCall, bool) {
		if d.version == a2a.VLegacy && m != a2a.MethodPushConfigSet && m != a2a.MethodPushConfigGet {
			return azCall{}, false
		}
		return w.pushCall(t, d, m, task, cfg), true
	}
}

func azSendOp(streaming bool, msg func(task, ctx string) azMsg) azBuild {
	return func(t *testing.T, w *azWorld, d azDialect, task, ctx, _ string) (azCall, bool) {
		if d.version == a2a.VLegacy {
			return azCall{}, false
		}
		return w.sendCall(t, d, streaming, true, msg(task, ctx)), true
	}
}

func azLegacySend(streaming bool, msg func(task, ctx string) azMsg) azBuild {
	return func(t *testing.T, w *azWorld, d azDialect, task, ctx, _ string) (azCall, bool) {
		if d.version != a2a.VLegacy {
			return azCall{}, false
		}
		return w.sendCall(t, d, streaming, false, msg(task, ctx)), true
	}
}

// azAttacks is every operation that names a task or a context.
func azAttacks() []azAttack {
	toTask := func(task, _ string) azMsg { return azMsg{text: "answer", taskID: task} }
	inContext := func(_, ctx string) azMsg { return azMsg{text: "complete", contextID: ctx} }
	referencing := func(task, _ string) azMsg { return azMsg{text: "complete", refs: []string{task}} }
	legacyTask := func(task, _ string) azMsg { return azMsg{text: "complete", taskID: task} }
	legacySession := func(_, ctx string) azMsg {
		return azMsg{text: "complete", taskID: azUnknown("legacy-task"), contextID: ctx}
	}
	subscribeGet := func(t *testing.T, w *azWorld, d azDialect, task, _, _ string) (azCall, bool) {
		if !d.rest() {
			return azCall{}, false
		}
		return w.restCall(t, d, a2a.MethodSubscribe, task, "", nil), true
	}
	return []azAttack{
		{"get", azTaskOp(a2a.MethodGetTask), azNever},
		{"cancel", azTaskOp(a2a.MethodCancelTask), azNever},
		{"subscribe", azTaskOp(a2a.MethodSubscribe), azNever},
		{"subscribe-GET", subscribeGet, azNever},
		{"push-config-create", azPushOp(a2a.MethodPushConfigSet), azNever},
		{"push-config-get", azPushOp(a2a.MethodPushConfigGet), azNever},
		{"push-config-list", azPushOp(a2a.MethodPushConfigList), azNever},
		{"push-config-delete", azPushOp(a2a.MethodPushConfigDelete), azNever},
		{"send-taskId", azSendOp(false, toTask), azNever},
		{"stream-taskId", azSendOp(true, toTask), azNever},
		{"send-contextId", azSendOp(false, inContext), azClientContexts},
		{"stream-contextId", azSendOp(true, inContext), azClientContexts},
		{"send-referenceTaskIds", azSendOp(false, referencing), azNever},
		{"stream-referenceTaskIds", azSendOp(true, referencing), azNever},
		{"legacy-send-id", azLegacySend(false, legacyTask), azAlways},
		{"legacy-sendSubscribe-id", azLegacySend(true, legacyTask), azAlways},
		{"legacy-send-sessionId", azLegacySend(false, legacySession), azClientContexts},
	}
}

// reference is the same request on ids nobody owns. When the request would
// reserve an unknown id instead of refusing it, the reference is the
// dialect's request on an unknown task id that is looked up, not reserved.
func (a azAttack) reference(t *testing.T, w *azWorld, d azDialect, cfg string) azCall {
	t.Helper()
	task, ctx := azUnknown("task"), azUnknown("ctx")
	if !a.claims(w.policy) {
		call, _ := a.build(t, w, d, task, ctx, cfg)
		return call
	}
	if d.version == a2a.VLegacy {
		if strings.HasPrefix(a.name, "legacy-sendSubscribe") {
			// A streaming reference, so both answers are event streams.
			return w.rpcCall(t, d, a2a.MethodSubscribe, map[string]any{"id": task})
		}
		return w.pushCall(t, d, a2a.MethodPushConfigGet, task, "")
	}
	return w.sendCall(t, d, strings.HasPrefix(a.name, "stream"), true, azMsg{text: "answer", taskID: task})
}

// victimTasks are the tasks the owner creates in every dialect: one that
// keeps working (with a push config), one waiting for input and a
// completed one; legacy has no non-blocking send, so no working task.
func victimTasks(t *testing.T, owner *azClient) []azTask {
	t.Helper()
	var out []azTask
	for _, d := range append(slices.Clone(azDialects), azLegacy) {
		texts := []string{"wait", "input", "complete hello"}
		if d.version == a2a.VLegacy {
			texts = texts[1:]
		}
		for _, text := range texts {
			tk := owner.create(t, d, text)
			if text == "wait" || d.version == a2a.VLegacy {
				tk.pushConfig = owner.w.id("cfg")
				owner.mustOK(t, d, owner.w.pushCall(t, d, a2a.MethodPushConfigSet, tk.id, tk.pushConfig))
			}
			out = append(out, tk)
		}
	}
	return out
}

// attackAll tries every operation in every dialect on every victim task.
func attackAll(t *testing.T, attacker *azClient, victims []azTask) {
	t.Helper()
	w := attacker.w
	for _, v := range victims {
		cfg := v.pushConfig
		if cfg == "" {
			cfg = w.id("cfg")
		}
		for _, d := range append(slices.Clone(azDialects), azLegacy) {
			for _, a := range azAttacks() {
				attempt, ok := a.build(t, w, d, v.id, v.ctx, cfg)
				if !ok {
					continue
				}
				t.Run(v.label+"/"+d.name+"/"+a.name, func(t *testing.T) {
					attacker.indistinguishable(t, d, attempt, a.reference(t, w, d, cfg))
				})
			}
		}
	}
}

// listAll pages through ListTasks (1.0) with the given query and returns
// the task ids and the size of each page.
func (c *azClient) listAll(t *testing.T, d azDialect, pageSize int, contextID string) (ids []string, pages []int) {
	t.Helper()
	token := ""
	for range 1000 {
		r := c.mustOK(t, d, c.w.listCall(t, d, pageSize, contextID, token))
		page := azListPage(t, d, r)
		var pageIDs []string
		for _, tk := range page.Tasks {
			pageIDs = append(pageIDs, tk.ID)
		}
		ids = append(ids, pageIDs...)
		pages = append(pages, len(pageIDs))
		if page.NextPageToken == "" {
			return ids, pages
		}
		token = page.NextPageToken
	}
	t.Fatalf("%s: ListTasks did not end after 1000 pages", c)
	return nil, nil
}

type azPage struct {
	Tasks []struct {
		ID string `json:"id"`
	} `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
}

func azListPage(t *testing.T, d azDialect, r azReply) azPage {
	t.Helper()
	body := r.body
	if !d.rest() {
		var env struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatalf("ListTasks answer: %v: %s", err, r)
		}
		body = env.Result
	}
	var p azPage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("ListTasks page: %v: %s", err, r)
	}
	return p
}

func (w *azWorld) listCall(t *testing.T, d azDialect, pageSize int, contextID, token string) azCall {
	t.Helper()
	if !d.rest() {
		params := map[string]any{"pageSize": pageSize}
		if contextID != "" {
			params["contextId"] = contextID
		}
		if token != "" {
			params["pageToken"] = token
		}
		return w.rpcCall(t, d, a2a.MethodListTasks, params)
	}
	q := url.Values{"pageSize": {strconv.Itoa(pageSize)}}
	if contextID != "" {
		q.Set("contextId", contextID)
	}
	if token != "" {
		q.Set("pageToken", token)
	}
	c := w.restCall(t, d, a2a.MethodListTasks, "", "", nil)
	c.path += "?" + q.Encode()
	return c
}

var azListDialects = []azDialect{azRPC10, azREST10}

// listsNoForeign checks that the caller's task lists hold none of the
// victims' tasks, and that listing a victim's context looks like listing
// an unknown one.
func listsNoForeign(t *testing.T, c *azClient, victims []azTask) {
	t.Helper()
	foreign := map[string]bool{}
	for _, v := range victims {
		foreign[v.id] = true
	}
	for _, d := range azListDialects {
		ids, _ := c.listAll(t, d, 100, "")
		for _, id := range ids {
			if foreign[id] {
				t.Errorf("%s %s: ListTasks shows foreign task %s", c, d.name, id)
			}
		}
		for _, v := range victims {
			c.indistinguishable(t, d, c.w.listCall(t, d, 50, v.ctx, ""), c.w.listCall(t, d, 50, azUnknown("ctx"), ""))
		}
	}
}

// ownerSucceeds runs every operation as actor on tasks creator makes in
// dialect d, and expects each to work.
func ownerSucceeds(t *testing.T, creator, actor *azClient, d azDialect) {
	t.Helper()
	w := actor.w
	waiting := creator.create(t, d, "wait")
	input := creator.create(t, d, "input")

	if ev := actor.mustOK(t, d, w.taskCall(t, d, a2a.MethodGetTask, waiting.id)).event(t, d.binding); ev.TaskID != waiting.id {
		t.Errorf("%s %s: get answered task %q, want %q", actor, d.name, ev.TaskID, waiting.id)
	}
	subs := []azCall{w.taskCall(t, d, a2a.MethodSubscribe, waiting.id)}
	if d.rest() {
		subs = append(subs, w.restCall(t, d, a2a.MethodSubscribe, waiting.id, "", nil))
	}
	for _, sub := range subs {
		r := actor.mustOK(t, d, sub)
		if ev := r.event(t, d.binding); !r.stream || ev.TaskID != waiting.id {
			t.Errorf("%s %s: %s: want a stream starting with the task, got %s", actor, d.name, sub, r)
		}
	}
	cfg := w.id("cfg")
	for _, m := range []a2a.Method{a2a.MethodPushConfigSet, a2a.MethodPushConfigGet, a2a.MethodPushConfigList, a2a.MethodPushConfigDelete} {
		actor.mustOK(t, d, w.pushCall(t, d, m, waiting.id, cfg))
	}
	if ev := actor.mustOK(t, d, w.sendCall(t, d, false, false, azMsg{text: "fine", taskID: input.id})).event(t, d.binding); ev.TaskID != input.id {
		t.Errorf("%s %s: answer to the input task answered task %q", actor, d.name, ev.TaskID)
	}
	for _, streaming := range []bool{false, true} {
		r := actor.mustOK(t, d, w.sendCall(t, d, streaming, true, azMsg{text: "complete", contextID: waiting.ctx, refs: []string{waiting.id}}))
		if ev := r.event(t, d.binding); ev.ContextID != waiting.ctx || ev.TaskID == "" || ev.TaskID == waiting.id {
			t.Errorf("%s %s: follow-up in the context answered %+v", actor, d.name, ev)
		}
	}
	if d.version == a2a.V10 {
		ids, _ := actor.listAll(t, d, 100, waiting.ctx)
		if !slices.Contains(ids, waiting.id) {
			t.Errorf("%s %s: ListTasks of the context %s lacks task %s: %v", actor, d.name, waiting.ctx, waiting.id, ids)
		}
	}
	if ev := actor.mustOK(t, d, w.taskCall(t, d, a2a.MethodCancelTask, waiting.id)).event(t, d.binding); ev.State != a2a.StateCanceled {
		t.Errorf("%s %s: cancel left the task %s", actor, d.name, ev.State)
	}
}

// legacyOwnerSucceeds resumes a legacy task under its client-chosen id and
// reads its push config.
func legacyOwnerSucceeds(t *testing.T, creator, actor *azClient) {
	t.Helper()
	w := actor.w
	tk := creator.create(t, azLegacy, "input")
	actor.mustOK(t, azLegacy, w.pushCall(t, azLegacy, a2a.MethodPushConfigSet, tk.id, ""))
	actor.mustOK(t, azLegacy, w.pushCall(t, azLegacy, a2a.MethodPushConfigGet, tk.id, ""))
	ev := actor.mustOK(t, azLegacy, w.sendCall(t, azLegacy, false, false, azMsg{text: "fine", taskID: tk.id})).event(t, azLegacy.binding)
	if ev.TaskID != tk.id || ev.State != a2a.StateCompleted {
		t.Errorf("%s: legacy follow-up answered %+v", actor, ev)
	}
}

type azStore struct {
	name string
	opt  func(t *testing.T) []gwtest.Option
}

func azStores() []azStore {
	return []azStore{
		{"memory", func(*testing.T) []gwtest.Option { return nil }},
		{"redis", func(t *testing.T) []gwtest.Option { _, o := azRedis(t); return []gwtest.Option{o} }},
	}
}

// azLayout is a way of mounting the demo agent: the owner creates tasks
// through the first mount ("demo"), and every mount of the layout is tried
// by attackers and by the owner's tenant.
type azLayout struct {
	name   string
	opt    gwtest.Option
	mounts []string
}

func azLayouts() []azLayout {
	return []azLayout{
		// The same mount, and a second mount of the same URL.
		{"one-url", azTwin, []string{"demo", "twin"}},
		// A second mount of another URL with the namespace of the first.
		{"shared-namespace", azAlias, []string{"alias"}},
	}
}

func TestCrossTenantMatrix(t *testing.T) {
	noClientContexts := false
	modes := []struct {
		name   string
		policy authz.Policy
	}{
		{"per-tenant", authz.Policy{}},
		{"per-subject", authz.Policy{Ownership: config.OwnerSubject, ClientContextIDs: &noClientContexts}},
	}
	for _, st := range azStores() {
		for _, mode := range modes {
			for _, layout := range azLayouts() {
				t.Run(st.name+"/"+mode.name+"/"+layout.name, func(t *testing.T) {
					w := newAzWorld(t, mode.policy, append(st.opt(t), layout.opt)...)
					alice := w.client("tenant-a", "alice")
					carol := w.client("tenant-a", "carol")
					bob := w.client("tenant-b", "bob")
					victims := victimTasks(t, alice)
					bob.create(t, azRPC10, "complete mine") // so bob's lists are not trivially empty

					attackers := []*azClient{bob}
					if mode.policy.Ownership == config.OwnerSubject {
						attackers = append(attackers, carol)
					}
					actors := []*azClient{alice}
					if mode.policy.Ownership != config.OwnerSubject {
						actors = append(actors, carol)
					}
					for _, mount := range layout.mounts {
						for _, attacker := range attackers {
							t.Run(mount+"/"+attacker.tenant+"-"+attacker.subject, func(t *testing.T) {
								attackAll(t, attacker.via(mount), victims)
								listsNoForeign(t, attacker.via(mount), victims)
							})
						}
						for _, actor := range actors {
							t.Run(mount+"/owner-"+actor.subject, func(t *testing.T) {
								for _, d := range azDialects {
									t.Run(d.name, func(t *testing.T) { ownerSucceeds(t, alice, actor.via(mount), d) })
								}
								t.Run(azLegacy.name, func(t *testing.T) { legacyOwnerSucceeds(t, alice, actor.via(mount)) })
							})
						}
					}
				})
			}
		}
	}
}

func TestListTasksPagingAfterFiltering(t *testing.T) {
	w := newAzWorld(t, authz.Policy{})
	alice := w.client("tenant-a", "alice")
	bob := w.client("tenant-b", "bob")
	var mine, theirs []string
	for i := range 7 {
		mine = append(mine, alice.create(t, azRPC10, "complete a"+strconv.Itoa(i)).id)
		if i < 5 {
			theirs = append(theirs, bob.create(t, azRPC10, "complete b"+strconv.Itoa(i)).id)
		}
	}
	for _, d := range azListDialects {
		t.Run(d.name, func(t *testing.T) {
			for _, c := range []struct {
				who  *azClient
				want []string
			}{{alice, mine}, {bob, theirs}} {
				ids, pages := c.who.listAll(t, d, 2, "")
				if got, want := slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(c.want)); !slices.Equal(got, want) {
					t.Errorf("%s: pages hold %v, want each of %v once", c.who, ids, want)
				}
				for i, n := range pages {
					if last := i == len(pages)-1; (!last && n != 2) || (last && (n < 1 || n > 2)) {
						t.Errorf("%s: page sizes %v: every page but the last must hold 2 tasks, the last 1 or 2", c.who, pages)
						break
					}
				}
			}
		})
	}
}

func TestListTasksRefusesForeignPageTokens(t *testing.T) {
	w := newAzWorld(t, authz.Policy{})
	alice := w.client("tenant-a", "alice")
	for i := range 3 {
		alice.create(t, azRPC10, "complete "+strconv.Itoa(i))
	}
	gw := func(cursor string) string { return "gw1." + base64.RawURLEncoding.EncodeToString([]byte(cursor)) }
	// The agent's own token format, handed to the gateway unwrapped.
	agentToken := base64.RawURLEncoding.EncodeToString([]byte("after:2"))
	refusedByGateway := []string{"garbage", "gw1.", "gw1.!!!", gw(`{"k":-1}`), gw(`{"k":101}`), gw(`not json`), agentToken, gw(`{"u":"forged"}`)}
	for _, d := range azListDialects {
		t.Run(d.name, func(t *testing.T) {
			for _, tok := range refusedByGateway {
				if r := alice.unreached(t, w.listCall(t, d, 2, "", tok)); !r.is(d.binding, a2a.ErrInvalidParams) {
					t.Errorf("pageToken %q: want InvalidParams, got %s", tok, r)
				}
			}
		})
	}
}

// azLog is a goroutine-safe log sink.
type azLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *azLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *azLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records decodes the JSON log lines.
func (l *azLog) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON (%v): %s", err, line)
		}
		out = append(out, rec)
	}
	return out
}

// audited reports whether a log record carries every attribute of want.
func (l *azLog) audited(t *testing.T, want map[string]string) bool {
	t.Helper()
	for _, rec := range l.records(t) {
		match := true
		for k, v := range want {
			if s, _ := rec[k].(string); s != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// newAuditedWorld starts a gateway through gwtest with a JSON logger at
// debug level writing to log, so tests can read the audit lines.
func newAuditedWorld(t *testing.T, policy authz.Policy, log io.Writer) *azWorld {
	t.Helper()
	w := &azWorld{sink: azSink(t), policy: policy, http: azHTTPClient(t)}
	env := gwtest.StartLogged(t, slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})), azPolicy(policy))
	w.agent, w.base, w.gateway, w.admin = env.Agent, env.AgentBase, env.Gateway, env.Admin
	w.mint = func(tenant, subject string, scopes []string) string { return env.Token(t, tenant, subject, scopes...) }
	return w
}

// metric reads one sample from the admin /metrics page; labels are the
// label pairs in the order the metric declares them. Absent is 0.
func (w *azWorld) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := w.http.Get(w.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d %v", resp.StatusCode, err)
	}
	var sel strings.Builder
	sel.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			sel.WriteByte('{')
		} else {
			sel.WriteByte(',')
		}
		sel.WriteString(labels[i] + "=" + strconv.Quote(labels[i+1]))
	}
	if len(labels) > 0 {
		sel.WriteByte('}')
	}
	prefix := sel.String() + " "
	for _, line := range strings.Split(string(page), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return f
		}
	}
	return 0
}

func (w *azWorld) denials(t *testing.T, op, reason string) float64 {
	t.Helper()
	return w.metric(t, "a2agw_authz_denials_total", "agent", "demo", "operation", op, "reason", reason)
}

// denied checks that r is PermissionDenied as binding b writes it.
func azDenied(t *testing.T, d azDialect, what string, r azReply) {
	t.Helper()
	if !r.is(d.binding, a2a.ErrPermissionDenied) {
		t.Errorf("%s %s: want PermissionDenied, got %s", d.name, what, r)
	}
	if d.rest() && r.status != http.StatusForbidden {
		t.Errorf("%s %s: REST status %d, want 403", d.name, what, r.status)
	}
}

// noTokenLogged checks that no token, nor its signature, reached the log.
func noTokenLogged(t *testing.T, log *azLog, clients ...*azClient) {
	t.Helper()
	text := log.String()
	for _, c := range clients {
		sig := c.token[strings.LastIndexByte(c.token, '.')+1:]
		if strings.Contains(text, c.token) || strings.Contains(text, sig) {
			t.Errorf("the log holds the bearer token of %s", c)
		}
	}
}

func TestPolicyTenantAllowList(t *testing.T) {
	log := &azLog{}
	w := newAuditedWorld(t, authz.Policy{Tenants: []string{"tenant-a"}}, log)
	alice := w.client("tenant-a", "alice")
	bob := w.client("tenant-b", "bob")
	tk := alice.create(t, azRPC10, "wait")

	for _, d := range azDialects {
		azDenied(t, d, "send", bob.unreached(t, w.sendCall(t, d, false, true, azMsg{text: "complete"})))
		azDenied(t, d, "stream", bob.unreached(t, w.sendCall(t, d, true, true, azMsg{text: "complete"})))
		azDenied(t, d, "get", bob.unreached(t, w.taskCall(t, d, a2a.MethodGetTask, tk.id)))
		alice.create(t, d, "complete allowed")
	}
	for _, d := range azListDialects {
		azDenied(t, d, "list", bob.unreached(t, w.listCall(t, d, 10, "", "")))
	}
	for op, want := range map[string]float64{"send": 4, "stream": 4, "get": 4, "list": 2} {
		if got := w.denials(t, op, "tenant_not_allowed"); got != want {
			t.Errorf("authz_denials_total{operation=%q,reason=tenant_not_allowed} = %v, want %v", op, got, want)
		}
	}
	want := map[string]string{"msg": "authorization", "decision": "deny", "reason": "tenant_not_allowed",
		"tenant": "tenant-b", "subject": "bob", "agent": "demo", "operation": "get", "task_id": tk.id}
	if !log.audited(t, want) {
		t.Errorf("no audit record %v in the log:\n%s", want, log)
	}
	noTokenLogged(t, log, alice, bob)
}

func TestPolicyOperationScopes(t *testing.T) {
	log := &azLog{}
	w := newAuditedWorld(t, authz.Policy{Scopes: map[string][]string{"cancel": {"a2a:tasks.cancel"}}}, log)
	alice := w.client("tenant-a", "alice")
	noCancel := w.client("tenant-a", "alice", "a2a:tasks.read", "a2a:tasks.write")

	for _, d := range azDialects {
		tk := alice.create(t, d, "wait")
		azDenied(t, d, "cancel without the scope", noCancel.unreached(t, w.taskCall(t, d, a2a.MethodCancelTask, tk.id)))
		// Operations the policy does not list need no scope.
		noCancel.mustOK(t, d, w.taskCall(t, d, a2a.MethodGetTask, tk.id))
		if ev := alice.mustOK(t, d, w.taskCall(t, d, a2a.MethodCancelTask, tk.id)).event(t, d.binding); ev.State != a2a.StateCanceled {
			t.Errorf("%s: cancel with the scope left the task %s", d.name, ev.State)
		}
		want := map[string]string{"msg": "authorization", "decision": "deny", "reason": "missing_scope",
			"tenant": "tenant-a", "subject": "alice", "agent": "demo", "operation": "cancel", "task_id": tk.id}
		if !log.audited(t, want) {
			t.Errorf("no audit record %v in the log:\n%s", want, log)
		}
	}
	if got := w.denials(t, "cancel", "missing_scope"); got != 4 {
		t.Errorf("authz_denials_total{operation=cancel,reason=missing_scope} = %v, want 4", got)
	}
	noTokenLogged(t, log, alice, noCancel)
}

func TestPolicyDefaultScopes(t *testing.T) {
	log := &azLog{}
	w := newAuditedWorld(t, authz.Policy{Scopes: map[string][]string{
		"*":    {"a2a:tasks.read"},
		"send": {"a2a:tasks.write"},
	}}, log)
	writer := w.client("tenant-a", "alice", "a2a:tasks.write")
	reader := w.client("tenant-a", "alice", "a2a:tasks.read")

	for _, d := range azDialects {
		// send lists its own scopes, so "*" does not apply to it.
		tk := writer.create(t, d, "wait")
		azDenied(t, d, "get without the default scope", writer.unreached(t, w.taskCall(t, d, a2a.MethodGetTask, tk.id)))
		reader.mustOK(t, d, w.taskCall(t, d, a2a.MethodGetTask, tk.id))
		azDenied(t, d, "send without its scope", reader.unreached(t, w.sendCall(t, d, false, true, azMsg{text: "complete"})))
		azDenied(t, d, "stream without the default scope", writer.unreached(t, w.sendCall(t, d, true, true, azMsg{text: "complete"})))
		reader.mustOK(t, d, w.sendCall(t, d, true, true, azMsg{text: "complete", contextID: tk.ctx}))
	}
	for op, want := range map[string]float64{"get": 4, "send": 4, "stream": 4} {
		if got := w.denials(t, op, "missing_scope"); got != want {
			t.Errorf("authz_denials_total{operation=%q,reason=missing_scope} = %v, want %v", op, got, want)
		}
	}
	noTokenLogged(t, log, writer, reader)
}

// A foreign task is refused for ownership, and the audit record says so.
func TestOwnershipDenialIsAudited(t *testing.T) {
	log := &azLog{}
	w := newAuditedWorld(t, authz.Policy{}, log)
	alice := w.client("tenant-a", "alice")
	bob := w.client("tenant-b", "bob")
	tk := alice.create(t, azREST10, "wait")
	if r := bob.unreached(t, w.taskCall(t, azREST10, a2a.MethodCancelTask, tk.id)); !r.is(a2a.BindingREST, a2a.ErrTaskNotFound) {
		t.Fatalf("foreign cancel: want TaskNotFound, got %s", r)
	}
	want := map[string]string{"msg": "authorization", "decision": "deny", "reason": "not_owner",
		"tenant": "tenant-b", "subject": "bob", "agent": "demo", "operation": "cancel", "task_id": tk.id}
	if !log.audited(t, want) {
		t.Errorf("no audit record %v in the log:\n%s", want, log)
	}
	if got := w.denials(t, "cancel", "not_owner"); got != 1 {
		t.Errorf("authz_denials_total{operation=cancel,reason=not_owner} = %v, want 1", got)
	}
	noTokenLogged(t, log, alice, bob)
}
