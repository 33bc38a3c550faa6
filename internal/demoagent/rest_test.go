package demoagent_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// restCase is one REST dialect: 1.0 at the root (also under a tenant) and
// 0.3 under /v1 with protobuf JSON bodies.
type restCase struct {
	name    string
	v       a2a.Version
	prefix  string
	message func(e *env, text, taskID string) map[string]any
	// canceled is the wire spelling of the canceled state.
	canceled string
	ctype    string
	// header is the A2A-Version the client sends; noVersion sends none.
	header a2a.Version
}

func restCases() []restCase {
	m10 := func(e *env, text, taskID string) map[string]any { return e.userMessage(a2a.V10, text, taskID) }
	proto03 := func(e *env, text, taskID string) map[string]any {
		m := map[string]any{"messageId": e.nextID("msg"), "role": "ROLE_USER", "content": []any{map[string]any{"text": text}}}
		if taskID != "" {
			m["taskId"] = taskID
		}
		return m
	}
	return []restCase{
		{"1.0", a2a.V10, "", m10, "TASK_STATE_CANCELED", "application/a2a+json", a2a.V10},
		// Paths outside /v1 exist only in 1.0, so a missing header still means 1.0.
		{"1.0-tenant-no-header", a2a.V10, "/acme", m10, "TASK_STATE_CANCELED", "application/a2a+json", noVersion},
		{"0.3", a2a.V03, "/v1", proto03, "TASK_STATE_CANCELLED", "application/json", noVersion},
	}
}

func TestRESTSendGetCancel(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, rc := range restCases() {
		t.Run(rc.name, func(t *testing.T) {
			code, h, body := e.rest(t, http.MethodPost, rc.prefix+"/message:send", rc.header, map[string]any{"message": rc.message(e, "hello rest", "")})
			if code != http.StatusOK || h.Get("Content-Type") != rc.ctype {
				t.Fatalf("HTTP %d %s: %s", code, h.Get("Content-Type"), body)
			}
			task := taskOf(t, body)
			if task.State != a2a.StateCompleted {
				t.Fatalf("state %s", task.State)
			}
			if got := path(t, decode(t, body), "task", "status", "state"); got != "TASK_STATE_COMPLETED" {
				t.Fatalf("wire state %v", got)
			}

			code, _, body = e.rest(t, http.MethodGet, rc.prefix+"/tasks/"+task.TaskID+"?historyLength=0", rc.header, nil)
			got := decode(t, body)
			if code != http.StatusOK || got["id"] != task.TaskID || len(path(t, got, "history").([]any)) != 0 ||
				path(t, got, "artifacts", 0, "parts", 0, "text") != "hello rest" {
				t.Fatalf("get: HTTP %d %s", code, body)
			}

			code, _, body = e.rest(t, http.MethodGet, rc.prefix+"/tasks/no-such-task", rc.header, nil)
			if code != http.StatusNotFound || restReason(t, rc.v, body) != "TASK_NOT_FOUND" {
				t.Fatalf("unknown task: HTTP %d %s", code, body)
			}

			waiting := map[string]any{"message": rc.message(e, "wait", ""), "configuration": map[string]any{"returnImmediately": true, "blocking": false}}
			code, _, body = e.rest(t, http.MethodPost, rc.prefix+"/message:send", rc.header, waiting)
			w := taskOf(t, body)
			if code != http.StatusOK || w.State.Terminal() {
				t.Fatalf("non-blocking send: HTTP %d %s", code, body)
			}
			code, _, body = e.rest(t, http.MethodPost, rc.prefix+"/tasks/"+w.TaskID+":cancel", rc.header, nil)
			if code != http.StatusOK || path(t, decode(t, body), "status", "state") != rc.canceled {
				t.Fatalf("cancel: HTTP %d %s", code, body)
			}
			code, _, body = e.rest(t, http.MethodPost, rc.prefix+"/tasks/"+w.TaskID+":cancel", rc.header, nil)
			if code != http.StatusConflict || restReason(t, rc.v, body) != "TASK_NOT_CANCELABLE" {
				t.Fatalf("second cancel: HTTP %d %s", code, body)
			}
		})
	}
}

func TestRESTStreamAndSubscribe(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, rc := range restCases() {
		t.Run(rc.name, func(t *testing.T) {
			s := e.restStream(t, http.MethodPost, rc.prefix+"/message:stream", rc.header, map[string]any{"message": rc.message(e, "stream 2", "")})
			want := []step{taskStep(a2a.StateSubmitted), statusStep(a2a.StateWorking), artifactStep(), artifactStep(), statusStep(a2a.StateCompleted)}
			equalSteps(t, s.all(t), withFinal(rc.v, want))
			if rc.v == a2a.V03 {
				if got := path(t, decode(t, s.data[2]), "artifactUpdate", "artifact", "parts", 0, "text"); got != "chunk 1 of 2" {
					t.Fatalf("0.3 artifact update %s", s.data[2])
				}
			}

			code, _, body := e.rest(t, http.MethodPost, rc.prefix+"/message:send", 0,
				map[string]any{"message": rc.message(e, "wait", ""), "configuration": map[string]any{"returnImmediately": true, "blocking": false}})
			w := taskOf(t, body)
			if code != http.StatusOK {
				t.Fatalf("HTTP %d %s", code, body)
			}
			get := e.restStream(t, http.MethodGet, rc.prefix+"/tasks/"+w.TaskID+":subscribe", rc.header, nil)
			post := e.restStream(t, http.MethodPost, rc.prefix+"/tasks/"+w.TaskID+":subscribe", rc.header, nil)
			for _, sub := range []*sse{get, post} {
				if ev := sub.mustNext(t); ev.Kind != a2a.EventTask || ev.TaskID != w.TaskID {
					t.Fatalf("subscription opens with %+v", ev)
				}
			}
			if code, _, body := e.rest(t, http.MethodPost, rc.prefix+"/tasks/"+w.TaskID+":cancel", rc.header, nil); code != http.StatusOK {
				t.Fatalf("cancel: HTTP %d %s", code, body)
			}
			for _, sub := range []*sse{get, post} {
				steps := sub.all(t)
				if last := steps[len(steps)-1]; last.kind != a2a.EventStatusUpdate || last.state != a2a.StateCanceled {
					t.Fatalf("subscription ends with %v", steps)
				}
			}
			code, _, body = e.rest(t, http.MethodGet, rc.prefix+"/tasks/"+w.TaskID+":subscribe", rc.header, nil)
			if code != http.StatusBadRequest || restReason(t, rc.v, body) != "UNSUPPORTED_OPERATION" {
				t.Fatalf("subscribe to a terminal task: HTTP %d %s", code, body)
			}
		})
	}
}

func TestRESTListTasks(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	ctxID := e.nextID("ctx")
	var ids []string
	for range 5 {
		body := map[string]any{"message": withContext(e.userMessage(a2a.V10, "hello", ""), ctxID)}
		_, _, res := e.rest(t, http.MethodPost, "/message:send", noVersion, body)
		ids = append(ids, taskOf(t, res).TaskID)
	}
	_, _, res := e.rest(t, http.MethodPost, "/message:send", noVersion, map[string]any{"message": withContext(e.userMessage(a2a.V10, "fail", ""), ctxID)})
	failed := taskOf(t, res).TaskID
	e.rest(t, http.MethodPost, "/message:send", noVersion, map[string]any{"message": e.userMessage(a2a.V10, "hello", "")})

	type page struct {
		Tasks []struct {
			ID        string            `json:"id"`
			Artifacts []json.RawMessage `json:"artifacts"`
		} `json:"tasks"`
		NextPageToken *string `json:"nextPageToken"`
		PageSize      int     `json:"pageSize"`
		TotalSize     int     `json:"totalSize"`
	}
	list := func(query string) page {
		t.Helper()
		code, _, body := e.rest(t, http.MethodGet, "/tasks?"+query, noVersion, nil)
		if code != http.StatusOK {
			t.Fatalf("list %s: HTTP %d %s", query, code, body)
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil || p.NextPageToken == nil {
			t.Fatalf("list %s: %v %s", query, err, body)
		}
		return p
	}

	var seen []string
	token := ""
	for pages := 0; ; pages++ {
		p := list("contextId=" + ctxID + "&status=TASK_STATE_COMPLETED&pageSize=2&pageToken=" + token)
		if p.TotalSize != 5 || p.PageSize != 2 || len(p.Tasks) > 2 {
			t.Fatalf("page %d: %+v", pages, p)
		}
		for _, tk := range p.Tasks {
			if tk.Artifacts != nil {
				t.Fatal("artifacts listed without includeArtifacts")
			}
			seen = append(seen, tk.ID)
		}
		if token = *p.NextPageToken; token == "" {
			break
		}
	}
	if len(seen) != 5 {
		t.Fatalf("pages held %v", seen)
	}
	for i := range seen { // newest first
		if seen[i] != ids[len(ids)-1-i] {
			t.Fatalf("order %v, created %v", seen, ids)
		}
	}
	if p := list("contextId=" + ctxID + "&status=TASK_STATE_FAILED&includeArtifacts=true"); len(p.Tasks) != 1 || p.Tasks[0].ID != failed || p.PageSize != 50 {
		t.Fatalf("failed filter: %+v", p)
	}
	if p := list("contextId=" + ctxID + "&pageSize=1&includeArtifacts=true"); p.TotalSize != 6 || len(p.Tasks[0].Artifacts) != 0 || p.Tasks[0].ID != failed {
		t.Fatalf("unfiltered: %+v", p)
	}
	if p := list("pageSize=100"); p.TotalSize != 7 {
		t.Fatalf("all tasks: %+v", p)
	}

	for _, bad := range []string{"pageSize=0", "pageSize=101", "pageToken=bogus", "status=TASK_STATE_BOGUS", "historyLength=-1"} {
		code, _, body := e.rest(t, http.MethodGet, "/tasks?"+bad, noVersion, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "INVALID_PARAMS") {
			t.Fatalf("%s: HTTP %d %s", bad, code, body)
		}
	}

	// The same operation over JSON-RPC.
	r := mustResult(t, e.rpc(t, a2a.V10, a2a.MethodListTasks, map[string]any{"contextId": ctxID, "status": "TASK_STATE_FAILED"}, nil))
	var p page
	if err := json.Unmarshal(r, &p); err != nil || len(p.Tasks) != 1 || p.Tasks[0].ID != failed {
		t.Fatalf("JSON-RPC ListTasks: %v %s", err, r)
	}
}

func TestRESTErrors(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	cases := []struct {
		name, method, path string
		body               any
		status             int
		reason             string
	}{
		{"unknown path", http.MethodGet, "/nothing/here/at/all", nil, http.StatusNotFound, "METHOD_NOT_FOUND"},
		{"send without body", http.MethodPost, "/message:send", nil, http.StatusBadRequest, "INVALID_REQUEST"},
		{"send without message id", http.MethodPost, "/message:send", map[string]any{"message": map[string]any{"parts": []any{}}}, http.StatusBadRequest, "INVALID_PARAMS"},
		{"message to unknown task", http.MethodPost, "/message:send", map[string]any{"message": e.userMessage(a2a.V10, "hi", "nope")}, http.StatusNotFound, "TASK_NOT_FOUND"},
		{"push config without push", http.MethodGet, "/tasks/x/pushNotificationConfigs", nil, http.StatusBadRequest, "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.rest(t, tc.method, tc.path, noVersion, tc.body)
			if code != tc.status || path(t, decode(t, body), "error", "details", 0, "reason") != tc.reason {
				t.Fatalf("HTTP %d %s", code, body)
			}
		})
	}
}

// restReason reads the reason of an HTTP+JSON error in the shape of version
// v: 1.0's google.rpc.Status details, or the code of 0.3's {code, message}.
func restReason(t *testing.T, v a2a.Version, body []byte) string {
	t.Helper()
	if v == a2a.V10 {
		return path(t, decode(t, body), "error", "details", 0, "reason").(string)
	}
	var e struct {
		Code int `json:"code"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not a 0.3 error: %s", body)
	}
	for _, known := range []*a2a.Error{a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrUnsupportedOperation} {
		if known.Code == e.Code {
			return known.Reason
		}
	}
	return ""
}
