package demoagent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// post sends a JSON body to a path of the agent and reads the answer.
func (e *env) post(t *testing.T, path string, v a2a.Version, body any, h http.Header) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, e.url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = versionHeader(h, v)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// Below SecurePath every task asks for a credential first, whatever the
// message says, in every binding; the root keeps its scenarios.
func TestSecurePath(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	rpc := func(path, text, taskID string, h http.Header) a2a.Event {
		t.Helper()
		status, b := e.post(t, path, a2a.V10, map[string]any{
			"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{"message": e.userMessage(a2a.V10, text, taskID)},
		}, h)
		ev, err := a2a.ParseRPCEvent(b)
		if status != http.StatusOK || err != nil {
			t.Fatalf("HTTP %d %v: %s", status, err, b)
		}
		return ev
	}
	if ev := rpc("/", "complete hello", "", nil); ev.State != a2a.StateCompleted {
		t.Fatalf("root: %s", ev.State)
	}
	ev := rpc(demoagent.SecurePath+"/", "complete hello", "", nil)
	if ev.State != a2a.StateAuthRequired {
		t.Fatalf("secure path: %s", ev.State)
	}
	if again := rpc(demoagent.SecurePath+"/", "still no credential", ev.TaskID, nil); again.State != a2a.StateAuthRequired {
		t.Fatalf("without a credential: %s", again.State)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer granted")
	if done := rpc(demoagent.SecurePath+"/", "here it is", ev.TaskID, h); done.State != a2a.StateCompleted {
		t.Fatalf("with a credential: %s", done.State)
	}
	if got := e.agent.Credentials(ev.TaskID); len(got) != 1 || got[0] != "Bearer granted" {
		t.Fatalf("credentials: %q", got)
	}

	status, b := e.post(t, demoagent.SecurePath+"/message:send", a2a.V10, map[string]any{"message": e.userMessage(a2a.V10, "message hi", "")}, nil)
	if ev, err := a2a.ParseResult(b); status != http.StatusOK || err != nil || ev.State != a2a.StateAuthRequired {
		t.Fatalf("secure REST send: HTTP %d %v: %s", status, err, b)
	}
	resp, err := e.client.Get(e.url + demoagent.SecurePath + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("secure card: HTTP %d", resp.StatusCode)
	}
	// Only the path itself is secure: below /securex (a 1.0 tenant prefix
	// to this agent) tasks run their scenario.
	status, b = e.post(t, demoagent.SecurePath+"x/message:send", a2a.V10, map[string]any{"message": e.userMessage(a2a.V10, "complete hi", "")}, nil)
	if ev, err := a2a.ParseResult(b); status != http.StatusOK || err != nil || ev.State != a2a.StateCompleted {
		t.Fatalf("%sx: HTTP %d %v: %s", demoagent.SecurePath, status, err, b)
	}
}
