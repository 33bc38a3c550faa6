package demoagent_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

var bothVersions = []a2a.Version{a2a.V10, a2a.V03}

func TestStreamingScenarios(t *testing.T) {
	e := newEnv(t, demoagent.Options{Push: true})
	var (
		sub  = a2a.StateSubmitted
		work = a2a.StateWorking
		done = a2a.StateCompleted
	)
	art := artifactStep()
	cases := []struct {
		text string
		want []step
	}{
		{"hello there", []step{taskStep(sub), statusStep(work), art, statusStep(done)}},
		{"complete", []step{taskStep(sub), statusStep(work), art, statusStep(done)}},
		{"stream 4", []step{taskStep(sub), statusStep(work), art, art, art, art, statusStep(done)}},
		{"slow 20ms", []step{taskStep(sub), statusStep(work), art, statusStep(done)}},
		{"fail", []step{taskStep(sub), statusStep(work), statusStep(a2a.StateFailed)}},
		{"REJECT please", []step{taskStep(sub), statusStep(a2a.StateRejected)}},
		{"input", []step{taskStep(sub), statusStep(work), statusStep(a2a.StateInputRequired)}},
		{"Auth", []step{taskStep(sub), statusStep(work), statusStep(a2a.StateAuthRequired)}},
		{"message hi", []step{messageStep()}},
		{"push", []step{taskStep(sub), statusStep(work), art, art, art, statusStep(done)}},
		{"stream many", []step{taskStep(sub), statusStep(work), statusStep(a2a.StateFailed)}},
		{"slow forever", []step{taskStep(sub), statusStep(work), statusStep(a2a.StateFailed)}},
	}
	for _, v := range bothVersions {
		for _, tc := range cases {
			t.Run(v.String()+"/"+tc.text, func(t *testing.T) {
				s := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, tc.text, "")}, nil)
				equalSteps(t, s.all(t), withFinal(v, tc.want))
				id := s.events[0].TaskID
				for _, ev := range s.events {
					if ev.TaskID != id {
						t.Fatalf("events name tasks %q and %q", id, ev.TaskID)
					}
				}
			})
		}
	}
}

func TestBlockingScenarios(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	cases := []struct {
		text string
		want a2a.State
	}{
		{"anything at all", a2a.StateCompleted},
		{"stream 2", a2a.StateCompleted},
		{"slow 10ms", a2a.StateCompleted},
		{"fail", a2a.StateFailed},
		{"reject", a2a.StateRejected},
		{"input", a2a.StateInputRequired},
		{"auth", a2a.StateAuthRequired},
		{"push", a2a.StateCompleted},
	}
	for _, v := range bothVersions {
		for _, tc := range cases {
			t.Run(v.String()+"/"+tc.text, func(t *testing.T) {
				res := mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, tc.text, "")}, nil))
				if ev := taskOf(t, res); ev.State != tc.want {
					t.Fatalf("state %s, want %s", ev.State, tc.want)
				}
			})
		}
		t.Run(v.String()+"/message", func(t *testing.T) {
			res := mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "message hello", "")}, nil))
			ev, err := a2a.ParseResult(res)
			if err != nil || ev.Kind != a2a.EventMessage || ev.TaskID != "" || ev.ContextID == "" {
				t.Fatalf("want a message without task, got %+v %v: %s", ev, err, res)
			}
			if !strings.Contains(string(res), "hello") {
				t.Fatalf("reply does not echo the text: %s", res)
			}
		})
	}
}

// nonBlocking returns send params that ask the agent not to wait.
func nonBlocking(v a2a.Version, msg map[string]any) map[string]any {
	conf := map[string]any{"blocking": false}
	if v == a2a.V10 {
		conf = map[string]any{"returnImmediately": true}
	}
	return map[string]any{"message": msg, "configuration": conf}
}

func TestWaitCancelAndTerminalErrors(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			res := mustResult(t, e.rpc(t, v, a2a.MethodSend, nonBlocking(v, e.userMessage(v, "wait", "")), nil))
			task := taskOf(t, res)
			if task.State.Terminal() || task.State.Interrupted() {
				t.Fatalf("non-blocking send returned %s", task.State)
			}
			id := map[string]any{"id": task.TaskID}
			eventually(t, "working", func() bool {
				return taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodGetTask, id, nil))).State == a2a.StateWorking
			})

			first := e.rpcStream(t, v, a2a.MethodSubscribe, id, nil)
			second := e.rpcStream(t, v, a2a.MethodSubscribe, id, nil)
			for _, s := range []*sse{first, second} {
				if ev := s.mustNext(t); ev.Kind != a2a.EventTask || ev.State != a2a.StateWorking || ev.TaskID != task.TaskID {
					t.Fatalf("subscription opens with %+v", ev)
				}
			}

			canceled := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodCancelTask, id, nil)))
			if canceled.State != a2a.StateCanceled {
				t.Fatalf("cancel answered %s", canceled.State)
			}
			for _, s := range []*sse{first, second} {
				equalSteps(t, s.all(t), withFinal(v, []step{taskStep(a2a.StateWorking), statusStep(a2a.StateCanceled)}))
			}

			wantRPCError(t, e.rpc(t, v, a2a.MethodCancelTask, id, nil), a2a.ErrTaskNotCancelable.Code)
			wantRPCError(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "more", task.TaskID)}, nil), a2a.ErrUnsupportedOperation.Code)
			wantRPCError(t, e.rpc(t, v, a2a.MethodSubscribe, id, nil), a2a.ErrUnsupportedOperation.Code)
			unknown := map[string]any{"id": "no-such-task"}
			wantRPCError(t, e.rpc(t, v, a2a.MethodGetTask, unknown, nil), a2a.ErrTaskNotFound.Code)
			wantRPCError(t, e.rpc(t, v, a2a.MethodCancelTask, unknown, nil), a2a.ErrTaskNotFound.Code)
			wantRPCError(t, e.rpc(t, v, a2a.MethodSubscribe, unknown, nil), a2a.ErrTaskNotFound.Code)
			wantRPCError(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "hi", "no-such-task")}, nil), a2a.ErrTaskNotFound.Code)
		})
	}
}

func TestCancelInterruptedTask(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "input", "")}, nil)))
			res := mustResult(t, e.rpc(t, v, a2a.MethodCancelTask, map[string]any{"id": task.TaskID}, nil))
			if got := taskOf(t, res).State; got != a2a.StateCanceled {
				t.Fatalf("cancel of an input-required task answered %s", got)
			}
		})
	}
}

func TestInputResumes(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		t.Run(v.String()+"/streaming", func(t *testing.T) {
			s := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "input", "")}, nil)
			s.all(t)
			id := s.events[0].TaskID
			resumed := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "forty-two", id)}, nil)
			equalSteps(t, resumed.all(t), withFinal(v, []step{taskStep(a2a.StateWorking), artifactStep(), statusStep(a2a.StateCompleted)}))
			if resumed.events[0].TaskID != id {
				t.Fatalf("resumed stream names task %q, want %q", resumed.events[0].TaskID, id)
			}
			got := mustResult(t, e.rpc(t, v, a2a.MethodGetTask, map[string]any{"id": id}, nil))
			if !strings.Contains(string(got), "You answered: forty-two") {
				t.Fatalf("the artifact does not carry the answer: %s", got)
			}
		})
		t.Run(v.String()+"/blocking", func(t *testing.T) {
			task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "input", "")}, nil)))
			wantRPCError(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": withContext(e.userMessage(v, "x", task.TaskID), "another-context")}, nil), a2a.ErrInvalidParams.Code)
			done := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "blue", task.TaskID)}, nil)))
			if done.State != a2a.StateCompleted || done.TaskID != task.TaskID || done.ContextID != task.ContextID {
				t.Fatalf("resume answered %+v, started as %+v", done, task)
			}
		})
	}
}

func withContext(m map[string]any, ctxID string) map[string]any {
	m["contextId"] = ctxID
	return m
}

func TestAuthResumes(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		t.Run(v.String()+"/header", func(t *testing.T) {
			s := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "auth", "")}, nil)
			s.all(t)
			id := s.events[0].TaskID
			assertAuthRequest(t, v, s.data[len(s.data)-1])

			// A reply without a credential is asked again.
			again := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "here you go", id)}, nil)
			equalSteps(t, again.all(t), withFinal(v, []step{taskStep(a2a.StateWorking), statusStep(a2a.StateAuthRequired)}))
			if c := e.agent.Credentials(id); len(c) != 0 {
				t.Fatalf("credentials recorded without any sent: %q", c)
			}

			h := http.Header{"Authorization": {"Bearer user-token-1"}}
			resumed := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "granted", id)}, h)
			equalSteps(t, resumed.all(t), withFinal(v, []step{taskStep(a2a.StateWorking), artifactStep(), statusStep(a2a.StateCompleted)}))
			if c := e.agent.Credentials(id); len(c) != 1 || c[0] != "Bearer user-token-1" {
				t.Fatalf("credentials %q", c)
			}
			if strings.Contains(string(resumed.data[len(resumed.data)-2]), "user-token-1") {
				t.Fatal("the credential is echoed back")
			}
		})
		t.Run(v.String()+"/metadata", func(t *testing.T) {
			task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": e.userMessage(v, "auth", "")}, nil)))
			msg := e.userMessage(v, "granted", task.TaskID)
			msg["metadata"] = map[string]any{"a2a-gateway/credential": "in-band-secret"}
			done := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, map[string]any{"message": msg}, nil)))
			if done.State != a2a.StateCompleted {
				t.Fatalf("state %s after the credential", done.State)
			}
			if c := e.agent.Credentials(task.TaskID); len(c) != 1 || c[0] != "in-band-secret" {
				t.Fatalf("credentials %q", c)
			}
		})
	}
	if c := e.agent.Credentials("no-such-task"); c != nil {
		t.Fatalf("credentials for an unknown task: %q", c)
	}
}

// assertAuthRequest checks the auth-required status message carries the
// structured description in the version's data-part shape.
func assertAuthRequest(t *testing.T, v a2a.Version, data []byte) {
	t.Helper()
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	ev := decode(t, env.Result)
	var dataPart any
	if v == a2a.V10 {
		if got := path(t, ev, "statusUpdate", "status", "state"); got != "TASK_STATE_AUTH_REQUIRED" {
			t.Fatalf("state %v", got)
		}
		dataPart = path(t, ev, "statusUpdate", "status", "message", "parts", 1)
	} else {
		if got := path(t, ev, "status", "state"); got != "auth-required" {
			t.Fatalf("state %v", got)
		}
		dataPart = path(t, ev, "status", "message", "parts", 1)
		if path(t, dataPart, "kind") != "data" {
			t.Fatalf("0.3 data part without kind: %v", dataPart)
		}
	}
	if path(t, dataPart, "data", "scheme") != "oauth2" || path(t, dataPart, "data", "scopes", 0) != "calendar.read" ||
		path(t, dataPart, "data", "authorizationUrl") == nil {
		t.Fatalf("data part %v", dataPart)
	}
}

func TestNeverStaysOpenUntilClose(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	s := e.rpcStream(t, a2a.V10, a2a.MethodStream, map[string]any{"message": e.userMessage(a2a.V10, "never", "")}, nil)
	for range 3 {
		s.mustNext(t)
	}
	equalSteps(t, s.steps(), []step{taskStep(a2a.StateSubmitted), statusStep(a2a.StateWorking), statusStep(a2a.StateWorking)})
	got := mustResult(t, e.rpc(t, a2a.V10, a2a.MethodGetTask, map[string]any{"id": s.events[0].TaskID}, nil))
	if !strings.Contains(string(got), "never finishes") {
		t.Fatalf("no progress message in %s", got)
	}
	e.agent.Close()
	equalSteps(t, s.all(t), []step{taskStep(a2a.StateSubmitted), statusStep(a2a.StateWorking), statusStep(a2a.StateWorking)})
	// A closed agent refuses work rather than starting tasks nobody runs.
	r := e.rpc(t, a2a.V10, a2a.MethodSend, map[string]any{"message": e.userMessage(a2a.V10, "hi", "")}, nil)
	wantRPCError(t, r, a2a.ErrInternal.Code)
}
