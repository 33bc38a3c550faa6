package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

func TestGuardRefusesWhatTheProtocolForbids(t *testing.T) {
	agent, url := startDemo(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url)

	finished := p.send10(t, "complete hello", "", false)
	if finished.State != a2a.StateCompleted {
		t.Fatalf("setup: task is %s", finished.State)
	}
	waiting := p.send10(t, "input", "", false)
	if waiting.State != a2a.StateInputRequired {
		t.Fatalf("setup: task is %s", waiting.State)
	}
	p.flush(t)

	tests := []struct {
		name   string
		v      a2a.Version
		method a2a.Method
		params string
		code   int
		msg    string
	}{
		{
			name: "send to a terminal task", v: a2a.V10, method: a2a.MethodSend,
			params: message10(finished.TaskID, "", "more"), code: a2a.ErrUnsupportedOperation.Code, msg: "referenceTaskIds",
		},
		{
			name: "stream to a terminal task", v: a2a.V10, method: a2a.MethodStream,
			params: message10(finished.TaskID, "", "more"), code: a2a.ErrUnsupportedOperation.Code, msg: "referenceTaskIds",
		},
		{
			name: "0.3 send to a terminal task", v: a2a.V03, method: a2a.MethodSend,
			params: `{"message":{"kind":"message","messageId":"` + newID() + `","role":"user","taskId":"` + finished.TaskID + `","parts":[{"kind":"text","text":"more"}]}}`,
			code:   a2a.ErrUnsupportedOperation.Code, msg: "completed",
		},
		{
			name: "cancel of a terminal task", v: a2a.V10, method: a2a.MethodCancelTask,
			params: `{"id":"` + finished.TaskID + `"}`, code: a2a.ErrTaskNotCancelable.Code, msg: "already completed",
		},
		{
			name: "task and context that do not belong together", v: a2a.V10, method: a2a.MethodSend,
			params: message10(waiting.TaskID, "another-context", "yes"), code: a2a.ErrInvalidParams.Code, msg: "contextId",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(agent.Requests())
			ev, body := p.rpc(t, tt.v, tt.method, tt.params)
			if ev.Kind != a2a.EventError || ev.ErrorCode != tt.code || !strings.Contains(string(body), tt.msg) {
				t.Errorf("answer = %s, want error %d mentioning %q", body, tt.code, tt.msg)
			}
			if after := len(agent.Requests()); after != before {
				t.Errorf("the agent received %d requests; refused ones must not be forwarded", after-before)
			}
		})
	}

	// What the gateway does not know, or knows to be allowed, passes.
	pass := []struct {
		name   string
		params string
		want   func(a2a.Event) bool
	}{
		{"unknown task", message10("no-such-task", "", "hi"), func(ev a2a.Event) bool {
			return ev.Kind == a2a.EventError && ev.ErrorCode == a2a.ErrTaskNotFound.Code
		}},
		{"the answer to an interrupted task", message10(waiting.TaskID, waiting.ContextID, "yes"), func(ev a2a.Event) bool {
			return ev.Kind == a2a.EventTask && ev.State == a2a.StateCompleted
		}},
	}
	for _, tt := range pass {
		t.Run(tt.name, func(t *testing.T) {
			before := countMethod(agent.Requests(), a2a.MethodSend)
			ev, body := p.rpc(t, a2a.V10, a2a.MethodSend, tt.params)
			if !tt.want(ev) {
				t.Errorf("unexpected answer: %s", body)
			}
			if countMethod(agent.Requests(), a2a.MethodSend) != before+1 {
				t.Error("the request did not reach the agent")
			}
		})
	}
	p.flush(t)
	if rec := getRecord(t, st, waiting.TaskID); path(rec) != "unknown>input-required>working>completed" && path(rec) != "unknown>input-required>completed" {
		t.Errorf("history = %s", path(rec))
	}
}

// message10 is the params of a 1.0 send naming a task and a context.
func message10(taskID, contextID, text string) string {
	extra := `,"taskId":"` + taskID + `"`
	if contextID != "" {
		extra += `,"contextId":"` + contextID + `"`
	}
	return `{"message":{"messageId":"` + newID() + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]` + extra + `}}`
}

func countMethod(reqs []demoagent.Received, m a2a.Method) int {
	n := 0
	for _, r := range reqs {
		if r.Op.Method == m {
			n++
		}
	}
	return n
}
