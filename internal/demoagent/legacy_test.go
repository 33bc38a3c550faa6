package demoagent_test

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

func legacyParams(taskID, session, text string) map[string]any {
	return map[string]any{
		"id": taskID, "sessionId": session,
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}},
	}
}

func TestLegacySend(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	cases := []struct {
		text string
		want a2a.State
		// wire is the state string a legacy client must see.
		wire string
	}{
		{"hello", a2a.StateCompleted, "completed"},
		{"fail", a2a.StateFailed, "failed"},
		{"input", a2a.StateInputRequired, "input-required"},
		// Legacy has no auth-required or rejected: they map onto input and failure.
		{"auth", a2a.StateInputRequired, "input-required"},
		{"reject", a2a.StateFailed, "failed"},
		{"message hi", a2a.StateCompleted, "completed"},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			id, session := e.nextID("legacy-task"), e.nextID("session")
			res := mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodSend, legacyParams(id, session, tc.text), nil))
			ev := taskOf(t, res)
			if ev.TaskID != id || ev.ContextID != session || ev.State != tc.want {
				t.Fatalf("got %+v: %s", ev, res)
			}
			m := decode(t, res)
			if path(t, m, "status", "state") != tc.wire || path(t, m, "sessionId") != session || m["kind"] != nil || m["contextId"] != nil {
				t.Fatalf("not a legacy task: %s", res)
			}
			// tasks/get is shared with 0.3; a legacy task is answered in legacy.
			got := mustResult(t, e.rpcNamed(t, a2a.V03, a2a.RPCMethodName(a2a.MethodGetTask, a2a.V03), map[string]any{"id": id}, nil))
			if g := decode(t, got); g["sessionId"] != session || path(t, g, "status", "state") != tc.wire {
				t.Fatalf("tasks/get of a legacy task: %s", got)
			}
		})
	}
}

func TestLegacyResumeAndSubscribe(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	id, session := e.nextID("legacy-task"), e.nextID("session")
	first := taskOf(t, mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodSend, legacyParams(id, session, "input"), nil)))
	if first.State != a2a.StateInputRequired {
		t.Fatalf("state %s", first.State)
	}
	res := mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodSend, legacyParams(id, session, "my answer"), nil))
	if ev := taskOf(t, res); ev.State != a2a.StateCompleted {
		t.Fatalf("resumed to %s", ev.State)
	}
	if got := path(t, decode(t, res), "artifacts", 0, "parts", 0, "text"); got != "You answered: my answer" {
		t.Fatalf("artifact text %v", got)
	}
	wantRPCError(t, e.rpc(t, a2a.VLegacy, a2a.MethodSend, legacyParams(id, session, "again"), nil), a2a.ErrUnsupportedOperation.Code)
}

func TestLegacySendSubscribe(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	id := e.nextID("legacy-task")
	s := e.rpcStream(t, a2a.VLegacy, a2a.MethodStream, legacyParams(id, "s", "stream 2"), nil)
	got := s.all(t)
	want := []step{
		{kind: a2a.EventStatusUpdate, state: a2a.StateSubmitted},
		{kind: a2a.EventStatusUpdate, state: a2a.StateWorking},
		artifactStep(), artifactStep(),
		{kind: a2a.EventStatusUpdate, state: a2a.StateCompleted, final: true},
	}
	equalSteps(t, got, want)
	for i, ev := range s.events {
		if ev.TaskID != id {
			t.Fatalf("event %d names task %q", i, ev.TaskID)
		}
	}
	art := decode(t, s.data[3])
	if path(t, art, "result", "artifact", "parts", 0, "type") != "text" || path(t, art, "result", "artifact", "append") != true ||
		path(t, art, "result", "artifact", "lastChunk") != true {
		t.Fatalf("legacy artifact event %s", s.data[3])
	}
}

func TestLegacyPushNotification(t *testing.T) {
	e := newEnv(t, demoagent.Options{Push: true})
	rcv := newReceiver(t, 0)
	id := e.nextID("legacy-task")
	first := taskOf(t, mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodSend, legacyParams(id, "s", "input"), nil)))
	if first.State != a2a.StateInputRequired {
		t.Fatalf("state %s", first.State)
	}
	set := map[string]any{"id": id, "pushNotificationConfig": map[string]any{"url": rcv.url, "token": "legacy-token"}}
	got := decode(t, mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodPushConfigSet, set, nil)))
	if got["id"] != id || path(t, got, "pushNotificationConfig", "url") != rcv.url {
		t.Fatalf("set answered %v", got)
	}
	got = decode(t, mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodPushConfigGet, map[string]any{"id": id}, nil)))
	if path(t, got, "pushNotificationConfig", "token") != "legacy-token" {
		t.Fatalf("get answered %v", got)
	}
	mustResult(t, e.rpc(t, a2a.VLegacy, a2a.MethodSend, legacyParams(id, "s", "fine"), nil))
	pushes := rcv.wait(t, 3)
	equalSteps(t, pushSteps(t, pushes), []step{taskStep(a2a.StateWorking), taskStep(a2a.StateWorking), taskStep(a2a.StateCompleted)})
	assertPushHeaders(t, pushes, "application/json", "legacy-token", "")
	if last := decode(t, pushes[2].body); last["sessionId"] != "s" || last["kind"] != nil {
		t.Fatalf("legacy push %s", pushes[2].body)
	}
}
