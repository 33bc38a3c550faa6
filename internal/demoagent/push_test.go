package demoagent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

type pushed struct {
	header http.Header
	body   []byte
}

// receiver is a webhook that records every POST in arrival order. It
// answers 500 to the first failFirst requests.
type receiver struct {
	url       string
	mu        sync.Mutex
	got       []pushed
	failFirst int
	seen      int
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	t.Helper()
	r := &receiver{failFirst: failFirst}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.seen++
		if r.seen <= r.failFirst {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		r.got = append(r.got, pushed{header: req.Header.Clone(), body: b})
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	return r
}

// wait returns the pushes once n have arrived.
func (r *receiver) wait(t *testing.T, n int) []pushed {
	t.Helper()
	eventually(t, "push notifications", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got) >= n
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pushed(nil), r.got...)
}

func pushSteps(t *testing.T, ps []pushed) []step {
	t.Helper()
	out := make([]step, len(ps))
	for i, p := range ps {
		ev, err := a2a.ParseResult(p.body)
		if err != nil {
			t.Fatalf("push %d unreadable: %v: %s", i, err, p.body)
		}
		out[i] = step{kind: ev.Kind, state: ev.State, final: ev.Final}
	}
	return out
}

func assertPushHeaders(t *testing.T, ps []pushed, contentType, token, authorization string) {
	t.Helper()
	for i, p := range ps {
		if p.header.Get("Content-Type") != contentType || p.header.Get("X-A2A-Notification-Token") != token || p.header.Get("Authorization") != authorization {
			t.Fatalf("push %d headers %v", i, p.header)
		}
	}
}

func TestPush10Inline(t *testing.T) {
	e := newEnv(t, demoagent.Options{Push: true})
	rcv := newReceiver(t, 1) // the first attempt fails and is retried
	params := map[string]any{
		"message": e.userMessage(a2a.V10, "push", ""),
		"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{
			"url": rcv.url, "token": "tok-10", "authentication": map[string]any{"scheme": "Bearer", "credentials": "push-secret"},
		}},
	}
	task := taskOf(t, mustResult(t, e.rpc(t, a2a.V10, a2a.MethodSend, params, nil)))
	got := rcv.wait(t, 5)
	want := []step{statusStep(a2a.StateWorking), artifactStep(), artifactStep(), artifactStep(), statusStep(a2a.StateCompleted)}
	equalSteps(t, pushSteps(t, got), want)
	assertPushHeaders(t, got, "application/a2a+json", "tok-10", "Bearer push-secret")
	for i, p := range got {
		if ev, _ := a2a.ParseResult(p.body); ev.TaskID != task.TaskID {
			t.Fatalf("push %d names task %q", i, ev.TaskID)
		}
	}

	r := mustResult(t, e.rpc(t, a2a.V10, a2a.MethodPushConfigList, map[string]any{"taskId": task.TaskID}, nil))
	var list struct {
		Configs []map[string]any `json:"configs"`
	}
	if err := json.Unmarshal(r, &list); err != nil || len(list.Configs) != 1 || list.Configs[0]["url"] != rcv.url || list.Configs[0]["taskId"] != task.TaskID {
		t.Fatalf("inline config not listed: %v %s", err, r)
	}
}

func TestPush03SetThenResume(t *testing.T) {
	e := newEnv(t, demoagent.Options{Push: true})
	rcv := newReceiver(t, 0)
	task := taskOf(t, mustResult(t, e.rpc(t, a2a.V03, a2a.MethodSend, map[string]any{"message": e.userMessage(a2a.V03, "input", "")}, nil)))
	set := map[string]any{"taskId": task.TaskID, "pushNotificationConfig": map[string]any{
		"url": rcv.url, "token": "tok-03", "authentication": map[string]any{"schemes": []string{"Basic"}, "credentials": "dXNlcjpwYXNz"},
	}}
	cfg := decode(t, mustResult(t, e.rpc(t, a2a.V03, a2a.MethodPushConfigSet, set, nil)))
	if path(t, cfg, "taskId") != task.TaskID || path(t, cfg, "pushNotificationConfig", "id") == "" {
		t.Fatalf("set answered %v", cfg)
	}
	done := taskOf(t, mustResult(t, e.rpc(t, a2a.V03, a2a.MethodSend, map[string]any{"message": e.userMessage(a2a.V03, "yes", task.TaskID)}, nil)))
	if done.State != a2a.StateCompleted {
		t.Fatalf("state %s", done.State)
	}
	got := rcv.wait(t, 3)
	// 0.3 pushes carry the whole task: working, working with the artifact, completed.
	equalSteps(t, pushSteps(t, got), []step{taskStep(a2a.StateWorking), taskStep(a2a.StateWorking), taskStep(a2a.StateCompleted)})
	assertPushHeaders(t, got, "application/json", "tok-03", "Basic dXNlcjpwYXNz")
	if last := decode(t, got[2].body); last["kind"] != "task" || path(t, last, "artifacts", 0, "parts", 0, "text") != "You answered: yes" {
		t.Fatalf("last push %s", got[2].body)
	}
}

func TestPushConfigCRUD(t *testing.T) {
	e := newEnv(t, demoagent.Options{Push: true})
	rcv := newReceiver(t, 0)
	t.Run("1.0 JSON-RPC", func(t *testing.T) {
		v := a2a.V10
		task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, nonBlocking(v, e.userMessage(v, "wait", "")), nil)))
		created := decode(t, mustResult(t, e.rpc(t, v, a2a.MethodPushConfigSet, map[string]any{"taskId": task.TaskID, "id": "cfg-1", "url": rcv.url, "token": "t1"}, nil)))
		if created["id"] != "cfg-1" || created["taskId"] != task.TaskID || created["token"] != "t1" {
			t.Fatalf("create answered %v", created)
		}
		ids := map[string]any{"taskId": task.TaskID, "id": "cfg-1"}
		if got := decode(t, mustResult(t, e.rpc(t, v, a2a.MethodPushConfigGet, ids, nil))); got["url"] != rcv.url {
			t.Fatalf("get answered %v", got)
		}
		mustResult(t, e.rpc(t, v, a2a.MethodPushConfigDelete, ids, nil))
		wantRPCError(t, e.rpc(t, v, a2a.MethodPushConfigGet, ids, nil), a2a.ErrTaskNotFound.Code)
		wantRPCError(t, e.rpc(t, v, a2a.MethodPushConfigSet, map[string]any{"taskId": task.TaskID, "url": "ftp://example.com/x"}, nil), a2a.ErrInvalidParams.Code)
		wantRPCError(t, e.rpc(t, v, a2a.MethodPushConfigSet, map[string]any{"taskId": "no-such-task", "url": rcv.url}, nil), a2a.ErrTaskNotFound.Code)
	})
	t.Run("0.3 JSON-RPC", func(t *testing.T) {
		v := a2a.V03
		task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, nonBlocking(v, e.userMessage(v, "wait", "")), nil)))
		for _, id := range []string{"a", "b"} {
			mustResult(t, e.rpc(t, v, a2a.MethodPushConfigSet, map[string]any{"taskId": task.TaskID, "pushNotificationConfig": map[string]any{"id": id, "url": rcv.url}}, nil))
		}
		var list []map[string]any
		if err := json.Unmarshal(mustResult(t, e.rpc(t, v, a2a.MethodPushConfigList, map[string]any{"id": task.TaskID}, nil)), &list); err != nil || len(list) != 2 {
			t.Fatalf("list: %v %v", err, list)
		}
		ids := map[string]any{"id": task.TaskID, "pushNotificationConfigId": "a"}
		if got := decode(t, mustResult(t, e.rpc(t, v, a2a.MethodPushConfigGet, ids, nil))); path(t, got, "pushNotificationConfig", "id") != "a" {
			t.Fatalf("get answered %v", got)
		}
		if r := mustResult(t, e.rpc(t, v, a2a.MethodPushConfigDelete, ids, nil)); string(r) != "null" {
			t.Fatalf("0.3 delete answered %s", r)
		}
		wantRPCError(t, e.rpc(t, v, a2a.MethodPushConfigDelete, ids, nil), a2a.ErrTaskNotFound.Code)
	})
	for _, rc := range restCases() {
		t.Run("REST "+rc.name, func(t *testing.T) {
			_, _, body := e.rest(t, http.MethodPost, rc.prefix+"/message:send", rc.header,
				map[string]any{"message": rc.message(e, "wait", ""), "configuration": map[string]any{"returnImmediately": true, "blocking": false}})
			task := taskOf(t, body)
			base := rc.prefix + "/tasks/" + task.TaskID + "/pushNotificationConfigs"
			create := map[string]any{"id": "r1", "url": rcv.url}
			if rc.v == a2a.V03 {
				create = map[string]any{"pushNotificationConfig": create}
			}
			code, _, body := e.rest(t, http.MethodPost, base, rc.header, create)
			if code != http.StatusOK {
				t.Fatalf("create: HTTP %d %s", code, body)
			}
			code, _, body = e.rest(t, http.MethodGet, base, rc.header, nil)
			var list struct {
				Configs []json.RawMessage `json:"configs"`
			}
			if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil || len(list.Configs) != 1 {
				t.Fatalf("list: HTTP %d %s", code, body)
			}
			if code, _, body = e.rest(t, http.MethodGet, base+"/r1", rc.header, nil); code != http.StatusOK {
				t.Fatalf("get: HTTP %d %s", code, body)
			}
			if code, _, body = e.rest(t, http.MethodDelete, base+"/r1", rc.header, nil); code != http.StatusNoContent || len(body) != 0 {
				t.Fatalf("delete: HTTP %d %s", code, body)
			}
			if code, _, body = e.rest(t, http.MethodGet, base+"/r1", rc.header, nil); code != http.StatusNotFound {
				t.Fatalf("get after delete: HTTP %d %s", code, body)
			}
		})
	}
}

func TestPushDisabled(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "hi", "")}, nil)))
		wantRPCError(t, e.rpc(t, v, a2a.MethodPushConfigList, map[string]any{"id": task.TaskID, "taskId": task.TaskID}, nil), a2a.ErrPushNotSupported.Code)
	}
	inline := map[string]any{
		"message":       e.userMessage(a2a.V03, "hi", ""),
		"configuration": map[string]any{"pushNotificationConfig": map[string]any{"url": "http://127.0.0.1:1/hook"}},
	}
	wantRPCError(t, e.rpc(t, a2a.V03, a2a.MethodSend, inline, nil), a2a.ErrPushNotSupported.Code)
}
