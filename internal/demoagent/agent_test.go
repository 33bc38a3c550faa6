package demoagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"slices"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

func TestCards(t *testing.T) {
	for _, push := range []bool{true, false} {
		e := newEnv(t, demoagent.Options{Name: "Card Agent", Push: push})
		for _, p := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
			code, h, body := e.rest(t, http.MethodGet, p, noVersion, nil)
			if code != http.StatusOK || h.Get("ETag") == "" {
				t.Fatalf("%s: HTTP %d %v", p, code, h)
			}
			c := decode(t, body)
			if c["name"] != "Card Agent" || c["url"] != e.url || c["preferredTransport"] != "JSONRPC" || c["protocolVersion"] != "0.3.0" {
				t.Fatalf("0.3 fields: %s", body)
			}
			if path(t, c, "capabilities", "pushNotifications") != push || path(t, c, "capabilities", "streaming") != true ||
				path(t, c, "capabilities", "extendedAgentCard") != true {
				t.Fatalf("capabilities: %v", c["capabilities"])
			}
			ifaces := path(t, c, "supportedInterfaces").([]any)
			want := []string{"JSONRPC 1.0", "HTTP+JSON 1.0", "JSONRPC 0.3", "HTTP+JSON 0.3"}
			if len(ifaces) != len(want) {
				t.Fatalf("interfaces %v", ifaces)
			}
			for i, w := range want {
				got := path(t, ifaces[i], "protocolBinding").(string) + " " + path(t, ifaces[i], "protocolVersion").(string)
				if got != w || path(t, ifaces[i], "url") != e.url {
					t.Fatalf("interface %d is %v, want %s", i, ifaces[i], w)
				}
			}
			if len(path(t, c, "additionalInterfaces").([]any)) != 2 || path(t, c, "securitySchemes", "bearer") == nil {
				t.Fatalf("card %s", body)
			}

			req, _ := http.NewRequest(http.MethodGet, e.url+p, nil)
			req.Header.Set("If-None-Match", h.Get("ETag"))
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotModified {
				t.Fatalf("revalidation answered %d", resp.StatusCode)
			}
		}
		code, _, body := e.rest(t, http.MethodGet, "/.well-known/agent-card.json", noVersion, nil)
		public := len(path(t, decode(t, body), "skills").([]any))
		if code != http.StatusOK || public != 12 {
			t.Fatalf("skills: %d", public)
		}

		extended := [][]byte{
			mustResult(t, e.rpc(t, a2a.V10, a2a.MethodExtendedCard, map[string]any{}, nil)),
			mustResult(t, e.rpc(t, a2a.V03, a2a.MethodExtendedCard, nil, nil)),
		}
		for _, p := range []string{"/extendedAgentCard", "/v1/card"} {
			code, _, body := e.rest(t, http.MethodGet, p, noVersion, nil)
			if code != http.StatusOK {
				t.Fatalf("%s: HTTP %d %s", p, code, body)
			}
			extended = append(extended, body)
		}
		for i, b := range extended {
			if n := len(path(t, decode(t, b), "skills").([]any)); n != public+1 {
				t.Fatalf("extended card %d has %d skills, want %d", i, n, public+1)
			}
		}
	}
}

func TestVersionNegotiation(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	h := http.Header{a2a.VersionHeader: {"9.9"}}
	r := e.rpcNamed(t, noVersion, "SendMessage", map[string]any{"message": e.userMessage(a2a.V10, "hi", "")}, h)
	wantRPCError(t, r, a2a.ErrVersionNotSupported.Code)

	// A 1.0 method without the header is read as 1.0.
	res := mustResult(t, e.rpcNamed(t, noVersion, "SendMessage", map[string]any{"message": e.userMessage(a2a.V10, "hi", "")}, nil))
	if got := path(t, decode(t, res), "task", "status", "state"); got != "TASK_STATE_COMPLETED" {
		t.Fatalf("state %v", got)
	}
	wantRPCError(t, e.rpcNamed(t, a2a.V10, "tasks/unknown", map[string]any{}, nil), a2a.ErrMethodNotFound.Code)

	req, _ := http.NewRequest(http.MethodPost, e.url+"/", bytes.NewReader([]byte("{not json")))
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ev, err := a2a.ParseRPCEvent(b); err != nil || ev.ErrorCode != a2a.ErrParse.Code {
		t.Fatalf("bad JSON answered %s", b)
	}
}

func TestRequestsLog(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	e.rest(t, http.MethodGet, "/.well-known/agent-card.json", noVersion, nil)
	h := http.Header{"X-Trace": {"abc"}}
	sent := map[string]any{"message": e.userMessage(a2a.V10, "hello", "")}
	res := mustResult(t, e.rpc(t, a2a.V10, a2a.MethodSend, sent, h))
	task := taskOf(t, res)
	e.rest(t, http.MethodGet, "/v1/tasks/"+task.TaskID, noVersion, nil)

	got := e.agent.Requests()
	if len(got) != 3 {
		t.Fatalf("%d requests recorded", len(got))
	}
	if got[0].Path != "/.well-known/agent-card.json" || got[0].Op.Method != a2a.MethodUnknown {
		t.Fatalf("card fetch recorded as %+v", got[0])
	}
	rpc := got[1]
	if rpc.HTTPMethod != http.MethodPost || rpc.Path != "/" || rpc.Header.Get("X-Trace") != "abc" || rpc.At.IsZero() ||
		rpc.Op.Method != a2a.MethodSend || rpc.Op.Version != a2a.V10 || rpc.Op.Binding != a2a.BindingJSONRPC ||
		rpc.Op.MessageID != sent["message"].(map[string]any)["messageId"] {
		t.Fatalf("JSON-RPC request recorded as %+v", rpc)
	}
	var body struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(rpc.Body, &body); err != nil || body.Method != "SendMessage" {
		t.Fatalf("body %s", rpc.Body)
	}
	if rest := got[2]; rest.Op.Method != a2a.MethodGetTask || rest.Op.Version != a2a.V03 || rest.Op.TaskID != task.TaskID || rest.Op.Binding != a2a.BindingREST {
		t.Fatalf("REST request recorded as %+v", rest)
	}
	// The log hands out copies.
	got[1].Body[0] = 'X'
	got[1].Header.Set("X-Trace", "changed")
	if again := e.agent.Requests(); again[1].Body[0] == 'X' || again[1].Header.Get("X-Trace") != "abc" {
		t.Fatal("Requests shares memory with the log")
	}
	e.agent.ResetRequests()
	if n := len(e.agent.Requests()); n != 0 {
		t.Fatalf("%d requests after reset", n)
	}
}

// TestNoGoroutineLeak checks that clients who leave, during a stream and
// during a blocking send, leave nothing running but the task itself.
func TestNoGoroutineLeak(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	mustResult(t, e.rpc(t, a2a.V10, a2a.MethodSend, map[string]any{"message": e.userMessage(a2a.V10, "warm up", "")}, nil))
	e.tr.CloseIdleConnections()
	settle := func(limit int) {
		t.Helper()
		eventually(t, "goroutines to wind down", func() bool {
			e.tr.CloseIdleConnections()
			return runtime.NumGoroutine() <= limit
		})
	}
	settle(runtime.NumGoroutine())
	base := runtime.NumGoroutine()

	var ids []string
	for _, v := range bothVersions {
		s := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "never", "")}, nil)
		for range 3 {
			s.mustNext(t)
		}
		ids = append(ids, s.events[0].TaskID)
		sub := e.rpcStream(t, v, a2a.MethodSubscribe, map[string]any{"id": s.events[0].TaskID}, nil)
		sub.mustNext(t)
		s.close()
		sub.close()

		ctx, cancel := context.WithCancel(context.Background())
		req := e.rpcRequest(t, ctx, v, a2a.RPCMethodName(a2a.MethodSend, v), map[string]any{"message": e.userMessage(v, "wait", "")}, nil)
		done := make(chan error, 1)
		go func() {
			resp, err := e.client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		var waitID string
		eventually(t, "the wait task", func() bool {
			waitID = newestTaskID(t, e)
			return waitID != "" && !slices.Contains(ids, waitID)
		})
		ids = append(ids, waitID)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("blocking send ended with %v", err)
		}
	}
	// Only the four task runners may remain.
	settle(base + len(ids))
	for _, id := range ids {
		mustResult(t, e.rpc(t, a2a.V10, a2a.MethodCancelTask, map[string]any{"id": id}, nil))
	}
	settle(base)
}

// newestTaskID is the newest task, found with ListTasks.
func newestTaskID(t *testing.T, e *env) string {
	t.Helper()
	var p struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(mustResult(t, e.rpc(t, a2a.V10, a2a.MethodListTasks, map[string]any{"pageSize": 1}, nil)), &p); err != nil || len(p.Tasks) == 0 {
		return ""
	}
	return p.Tasks[0].ID
}
