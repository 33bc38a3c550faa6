package demoagent_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// partsSteps is what "parts n" streams after its opening task.
func partsSteps(n int) []step {
	out := []step{taskStep(a2a.StateSubmitted), statusStep(a2a.StateWorking)}
	for range n {
		out = append(out, artifactStep(), statusStep(a2a.StateWorking))
	}
	return append(out, statusStep(a2a.StateCompleted))
}

// artifactID reads the artifact id of an artifact update in either shape.
func artifactID(t *testing.T, v a2a.Version, data []byte) any {
	t.Helper()
	res := path(t, decode(t, data), "result")
	if v == a2a.V10 {
		return path(t, res, "artifactUpdate", "artifact", "artifactId")
	}
	return path(t, res, "artifact", "artifactId")
}

func TestPartsScenario(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			s := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "parts 3 1ms", "")}, nil)
			equalSteps(t, s.all(t), withFinal(v, partsSteps(3)))
			for i := 1; i <= 3; i++ {
				if got := artifactID(t, v, s.data[2*i]); got != "part-"+strconv.Itoa(i) {
					t.Fatalf("artifact %d has id %v", i, got)
				}
			}
			task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodGetTask, map[string]any{"id": s.events[0].TaskID}, nil)))
			if task.State != a2a.StateCompleted {
				t.Fatalf("task ended %s", task.State)
			}
		})
	}
	for _, text := range []string{"parts 0", "parts 1001", "parts x", "parts 2 forever"} {
		t.Run(text, func(t *testing.T) {
			s := e.rpcStream(t, a2a.V10, a2a.MethodStream, map[string]any{"message": e.userMessage(a2a.V10, text, "")}, nil)
			equalSteps(t, s.all(t), []step{taskStep(a2a.StateSubmitted), statusStep(a2a.StateWorking), statusStep(a2a.StateFailed)})
		})
	}
}

func TestNoStreaming(t *testing.T) {
	e := newEnv(t, demoagent.Options{NoStreaming: true})
	_, _, body := e.rest(t, http.MethodGet, "/.well-known/agent-card.json", noVersion, nil)
	if got := path(t, decode(t, body), "capabilities", "streaming"); got != false {
		t.Fatalf("card says streaming %v", got)
	}
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			msg := map[string]any{"message": e.userMessage(v, "parts 2 1ms", "")}
			wantRPCError(t, e.rpc(t, v, a2a.MethodStream, msg, nil), a2a.ErrUnsupportedOperation.Code)
			task := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodSend, msg, nil)))
			if task.State != a2a.StateCompleted {
				t.Fatalf("send ended %s", task.State)
			}
			wantRPCError(t, e.rpc(t, v, a2a.MethodSubscribe, map[string]any{"id": task.TaskID}, nil), a2a.ErrUnsupportedOperation.Code)
		})
	}
}

func TestDropStreams(t *testing.T) {
	e := newEnv(t, demoagent.Options{})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			s := e.rpcStream(t, v, a2a.MethodStream, map[string]any{"message": e.userMessage(v, "wait", "")}, nil)
			task := s.mustNext(t)
			if ev := s.mustNext(t); ev.State != a2a.StateWorking {
				t.Fatalf("second event %+v", ev)
			}
			if n := e.agent.DropStreams(); n != 1 {
				t.Fatalf("dropped %d streams, want 1", n)
			}
			if _, err := s.next(t); !errors.Is(err, io.EOF) {
				t.Fatalf("stream after the drop: %v", err)
			}
			id := map[string]any{"id": task.TaskID}
			if got := taskOf(t, mustResult(t, e.rpc(t, v, a2a.MethodGetTask, id, nil))).State; got != a2a.StateWorking {
				t.Fatalf("task after the drop is %s", got)
			}
			again := e.rpcStream(t, v, a2a.MethodSubscribe, id, nil)
			if ev := again.mustNext(t); ev.Kind != a2a.EventTask || ev.State != a2a.StateWorking {
				t.Fatalf("resubscription opens with %+v", ev)
			}
			mustResult(t, e.rpc(t, v, a2a.MethodCancelTask, id, nil))
			equalSteps(t, again.all(t), withFinal(v, []step{taskStep(a2a.StateWorking), statusStep(a2a.StateCanceled)}))
		})
	}
}
