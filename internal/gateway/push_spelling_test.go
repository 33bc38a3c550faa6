package gateway_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// pushSpelling is a name a client may give an inline push config, in the
// send's params (top) or in their configuration.
type pushSpelling struct {
	top bool
	key string
}

// Every name some version or binding gives an inline push config, in both
// of the forms protobuf JSON parsers accept, and escaped.
var pushSpellings = []pushSpelling{
	{false, "pushNotificationConfig"}, {false, "push_notification_config"}, // 0.3 JSON-RPC
	{false, "pushNotification"}, {false, "push_notification"}, // 0.3 HTTP+JSON
	{false, "taskPushNotificationConfig"}, {false, "task_push_notification_config"}, // 1.0
	{false, `\u0074askPushNotificationConfig`},
	{true, "pushNotification"}, {true, "push_notification"}, // legacy tasks/send
}

// inlineDialect is a send in one version and binding.
type inlineDialect struct {
	name      string
	v         a2a.Version
	rest      bool
	canonical pushSpelling
	// known leaves out the member no version defines, which a bridge
	// refuses.
	known bool
}

var inlineDialects = []inlineDialect{
	{"0.3 JSON-RPC", a2a.V03, false, pushSpellings[0], false},
	{"0.3 HTTP+JSON", a2a.V03, true, pushSpellings[2], false},
	{"1.0 JSON-RPC", a2a.V10, false, pushSpellings[4], false},
	{"1.0 HTTP+JSON", a2a.V10, true, pushSpellings[4], false},
}

// request is a streaming-free send that completes, with the config under sp.
func (d inlineDialect) request(c *caller, sp pushSpelling, url string) request {
	member := `"` + sp.key + `":{"url":"` + url + `","token":"tok-1"}`
	conf, top := "", ""
	if sp.top {
		top = "," + member
	} else {
		conf = member
	}
	var msg string
	switch {
	case d.v == a2a.V10:
		msg = c.msg10("complete hi")
	case d.rest:
		msg = c.proto03("complete hi")
	default:
		msg = c.msg03("complete hi")
	}
	if d.known {
		msg = strings.Replace(msg, ","+future, "", 1)
	}
	params := `{"message":` + msg + `,"configuration":{` + conf + `}` + top + `}`
	h := header(a2a.VersionHeader, d.v.String())
	if d.rest {
		path := "/message:send"
		if d.v == a2a.V03 {
			path = "/v1/message:send"
		}
		return request{method: http.MethodPost, path: path, header: h, body: []byte(params)}
	}
	return request{method: http.MethodPost, path: "/", header: h, rpc: true, body: rpcBody(a2a.MethodSend, d.v, "s", params)}
}

// sendsReceived returns the sends the agent got.
func sendsReceived(env *pushEnv) [][]byte {
	var out [][]byte
	for _, r := range env.Agent.Requests() {
		if r.Op.Method == a2a.MethodSend {
			out = append(out, r.Body)
		}
	}
	return out
}

// Every spelling of an inline push config, in every version and binding,
// meets the webhook URL policy as the canonical one does. A tenant without
// an allowlist is refused with the same answer before the agent hears of
// the send; for a tenant whose allowlist admits the receiver, the agent
// gets the send without the config (never the URL), and the gateway
// registers the config for the task and delivers to it.
func TestPushSpellingsNeverReachTheAgent(t *testing.T) {
	env := startPush(t)
	pushSpellingsNeverReachTheAgent(t, env, inlineDialects)
	// The legacy dialect has no push through the gateway, in any spelling.
	for _, sp := range pushSpellings {
		t.Run("legacy/"+sp.key, func(t *testing.T) {
			env.Agent.ResetRequests()
			member := `"` + sp.key + `":{"url":"http://127.0.0.1:1/x"}`
			params := `{"id":"` + env.acme.nextID("legacy-task") + `","message":` + legacyMsg("complete") + `,` + member + `}`
			if !sp.top {
				params = `{"id":"` + env.acme.nextID("legacy-task") + `","message":` + legacyMsg("complete") + `,"configuration":{` + member + `}}`
			}
			_, b := env.acme.do(t, request{method: http.MethodPost, path: "/", rpc: true, body: rpcBody(a2a.MethodSend, a2a.VLegacy, "l", params)})
			if _, code, _ := a2a.UnwrapRPC(b); code != a2a.ErrPushNotSupported.Code {
				t.Fatalf("legacy send with %s: %s; want PushNotificationNotSupported", sp.key, b)
			}
			if sends := sendsReceived(env); len(sends) != 0 {
				t.Fatalf("a refused send reached the agent: %s", sends[0])
			}
		})
	}
}

// pushSpellingsNeverReachTheAgent checks every spelling of an inline push
// config in each of dialects, through env's demo agent.
func pushSpellingsNeverReachTheAgent(t *testing.T, env *pushEnv, dialects []inlineDialect) {
	t.Helper()
	globex := newCaller(t, env.Env)
	globex.token = env.Token(t, "globex", "gina")
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			rcv := newWebhook(t)
			resp, want := globex.do(t, d.request(globex, d.canonical, rcv.url()))
			if resp.StatusCode == http.StatusOK && !d.rest {
				if _, code, _ := a2a.UnwrapRPC(want); code != a2a.ErrInvalidParams.Code {
					t.Fatalf("the canonical spelling: %s; want InvalidParams", want)
				}
			} else if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("the canonical spelling: HTTP %d: %s", resp.StatusCode, want)
			}
			wantStatus := resp.StatusCode
			for _, sp := range pushSpellings {
				t.Run(sp.key, func(t *testing.T) {
					env.Agent.ResetRequests()
					resp, got := globex.do(t, d.request(globex, sp, rcv.url()))
					if resp.StatusCode != wantStatus || !bytes.Equal(got, want) {
						t.Fatalf("without an allowlist: HTTP %d %s; the canonical spelling got HTTP %d %s", resp.StatusCode, got, wantStatus, want)
					}
					if sends := sendsReceived(env); len(sends) != 0 {
						t.Fatalf("a refused send reached the agent: %s", sends[0])
					}

					resp, got = env.acme.do(t, d.request(env.acme, sp, rcv.url()))
					ev, err := parse(got, !d.rest)
					if resp.StatusCode != http.StatusOK || err != nil || ev.Kind != a2a.EventTask {
						t.Fatalf("with an allowlist: HTTP %d %v: %s", resp.StatusCode, err, got)
					}
					sends := sendsReceived(env)
					if len(sends) != 1 {
						t.Fatalf("the agent got %d sends, want 1", len(sends))
					}
					if bytes.Contains(sends[0], []byte(rcv.url())) || bytes.Contains(sends[0], []byte("tok-1")) {
						t.Fatalf("the agent saw the config: %s", sends[0])
					}
					d10 := pushDialects()[0]
					_, list, code := env.acme.call(t, d10, d10.list(ev.TaskID), "rq")
					if code != 0 || !bytes.Contains(list, []byte(rcv.url())) {
						t.Fatalf("the config is not registered for task %s: %s", ev.TaskID, list)
					}
				})
			}
		})
	}
}
