package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// wantStreamRefusal checks a refused JSON-RPC streaming method as an SDK
// client reads it: HTTP 200, an event stream of one event whose data is
// the JSON-RPC error response to the request, then the end.
func wantStreamRefusal(t *testing.T, resp *http.Response, body []byte, id string, want *a2a.Error) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		t.Fatalf("HTTP %d %q, want 200 %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), a2a.SSEContentType, body)
	}
	// a2a-go's client takes every "data: " line as one response.
	n := 0
	for _, line := range bytes.Split(body, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("data: ")) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d data lines, want one: %q", n, body)
	}
	var got struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	data := rpcAnswer(t, resp, body)
	if err := json.Unmarshal(data, &got); err != nil || got.JSONRPC != "2.0" || got.Result != nil || got.Error == nil {
		t.Fatalf("not a JSON-RPC error response (%v): %s", err, data)
	}
	if got.Error.Code != want.Code || string(got.ID) != `"`+id+`"` {
		t.Fatalf("error %d for id %s, want %d for %q: %s", got.Error.Code, got.ID, want.Code, id, data)
	}
}

// TestRefusedStreamsAreEvents: through the whole pipeline, every JSON-RPC
// streaming method in every version, refused for another tenant's task or
// for bad params, answers with the error as the stream's one event; a
// missing credential stays an HTTP 401 with its challenge. None reaches
// the agent.
func TestRefusedStreamsAreEvents(t *testing.T) {
	env := gwtest.Start(t)
	alice := newCaller(t, env)
	bob := newCaller(t, env)
	bob.token = env.Token(t, "globex", "bob")

	resp, body := alice.do(t, request{method: http.MethodPost, path: "/", header: v10(), rpc: true,
		body: rpcBody(a2a.MethodSend, a2a.V10, "own-1", `{"message":`+alice.msg10("complete mine")+`}`)})
	ev, err := a2a.ParseRPCEvent(body)
	if err != nil || ev.TaskID == "" || resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's task: HTTP %d %v: %s", resp.StatusCode, err, body)
	}
	task := ev.TaskID

	type call struct {
		name   string
		v      a2a.Version
		m      a2a.Method
		params string
	}
	calls := func(c *caller) []call {
		return []call{
			{"SubscribeToTask", a2a.V10, a2a.MethodSubscribe, `{"id":"` + task + `"}`},
			{"tasks/resubscribe", a2a.V03, a2a.MethodSubscribe, `{"id":"` + task + `"}`},
			{"SendStreamingMessage", a2a.V10, a2a.MethodStream, `{"message":` + strings.Replace(c.msg10("complete theirs"), `"role"`, `"taskId":"`+task+`","role"`, 1) + `}`},
			{"message/stream", a2a.V03, a2a.MethodStream, `{"message":` + strings.Replace(c.msg03("complete theirs"), `"role"`, `"taskId":"`+task+`","role"`, 1) + `}`},
		}
	}
	rq := func(c call, id string) request {
		r := request{method: http.MethodPost, path: "/", rpc: true, body: rpcBody(c.m, c.v, id, c.params)}
		if c.v == a2a.V10 {
			r.header = v10()
		}
		return r
	}
	env.Agent.ResetRequests()
	for _, c := range calls(bob) {
		t.Run("foreign task/"+c.name, func(t *testing.T) {
			id := bob.nextID("s")
			resp, body := bob.do(t, rq(c, id))
			wantStreamRefusal(t, resp, body, id, a2a.ErrTaskNotFound)
		})
		t.Run("bad params/"+c.name, func(t *testing.T) {
			bad := c
			bad.params = `{"id":7,"message":"hi"}`
			id := alice.nextID("s")
			resp, body := alice.do(t, rq(bad, id))
			wantStreamRefusal(t, resp, body, id, a2a.ErrInvalidParams)
		})
		t.Run("unauthenticated/"+c.name, func(t *testing.T) {
			r := rq(c, "anon")
			r.anonymous = true
			resp, body := bob.do(t, r)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("HTTP %d %v: %s", resp.StatusCode, resp.Header, body)
			}
			if _, code, err := a2a.UnwrapRPC(body); err != nil || code != a2a.ErrUnauthenticated.Code {
				t.Fatalf("not the JSON-RPC 401 error (%v): %s", err, body)
			}
		})
	}
	if reqs := env.Agent.Requests(); len(reqs) != 0 {
		t.Fatalf("refused streams reached the agent: %d requests", len(reqs))
	}
}
