package push

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/a2a"
	"github.com/a2a-gateway/a2a-gateway/store"
)

// task10 is a 1.0 GetTask result: the task in state with the artifacts
// named, each holding one text part.
func task10(state string, arts ...string) []byte {
	var list []string
	for _, a := range arts {
		id, text, _ := strings.Cut(a, "=")
		list = append(list, `{"artifactId":"`+id+`","parts":[{"text":"`+text+`"}]}`)
	}
	return []byte(`{"task":{"id":"t1","contextId":"c1","status":{"state":"` + state + `","timestamp":"2026-01-01T00:00:00Z"},"artifacts":[` + strings.Join(list, ",") + `]}}`)
}

// snapOf folds payloads (1.0 results) into a snapshot, as a view does.
func snapOf(t *testing.T, payloads ...[]byte) []byte {
	t.Helper()
	var snap []byte
	for _, p := range payloads {
		ev, err := loggedEvent(store.TaskRef{Agent: "a", TaskID: "t1"}, p)
		if err != nil {
			t.Fatal(err)
		}
		if snap, err = foldEvent(snap, ev); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// describe renders updates as "kind:state:artifact" for comparison.
func describe(t *testing.T, us []update) string {
	t.Helper()
	var out []string
	for _, u := range us {
		var obj map[string]any
		if err := json.Unmarshal(u.payload, &obj); err != nil {
			t.Fatal(err)
		}
		s := u.kind.String() + ":" + u.state.String()
		if au, ok := obj["artifactUpdate"].(map[string]any); ok {
			s += ":" + fmt.Sprint(au["artifact"].(map[string]any)["artifactId"])
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestMissed(t *testing.T) {
	artifact := func(id, text string) []byte {
		return []byte(`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"` + id + `","parts":[{"text":"` + text + `"}]},"append":false,"lastChunk":true}}`)
	}
	chunk := func(id, text string) []byte {
		return []byte(`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"` + id + `","parts":[{"text":"` + text + `"}]},"append":true}}`)
	}
	for _, tc := range []struct {
		name string
		log  [][]byte
		task []byte
		want string
	}{
		{"empty log: the task itself", nil, task10("TASK_STATE_WORKING", "p1=a"), "task:working"},
		{"nothing missed", [][]byte{task10("TASK_STATE_WORKING", "p1=a")}, task10("TASK_STATE_WORKING", "p1=a"), ""},
		{
			"artifacts and then the status", [][]byte{task10("TASK_STATE_SUBMITTED")},
			task10("TASK_STATE_COMPLETED", "p1=a", "p2=b"), "artifact_update:unknown:p1 artifact_update:unknown:p2 status_update:completed",
		},
		{"a changed artifact", [][]byte{task10("TASK_STATE_WORKING", "p1=a", "p2=b")}, task10("TASK_STATE_WORKING", "p1=a", "p2=c"), "artifact_update:unknown:p2"},
		{
			"updates folded into the log count as seen", [][]byte{task10("TASK_STATE_WORKING"), artifact("p1", "a"), artifact("p2", "b")},
			task10("TASK_STATE_WORKING", "p1=a", "p2=b", "p3=c"), "artifact_update:unknown:p3",
		},
		{
			"appended chunks", [][]byte{task10("TASK_STATE_WORKING"), artifact("p1", "a"), chunk("p1", "b")},
			[]byte(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-01T00:00:00Z"},"artifacts":[{"artifactId":"p1","parts":[{"text":"a"},{"text":"b"}]}]}}`), "",
		},
		{"a new status", [][]byte{task10("TASK_STATE_WORKING")}, task10("TASK_STATE_INPUT_REQUIRED"), "status_update:input-required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var snap []byte
			if tc.log != nil {
				snap = snapOf(t, tc.log...)
			}
			got, err := missed(snap, tc.task, a2a.V10)
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(t, got); d != tc.want {
				t.Fatalf("missed: %q, want %q", d, tc.want)
			}
		})
	}
}

// Updates are rendered in the agent's version: a 0.3 agent's log gets 0.3
// events, with the kind and the final flag a 0.3 stream would carry.
func TestMissedRendersTheAgentsVersion(t *testing.T) {
	snap := snapOf(t, task10("TASK_STATE_WORKING"))
	task03 := []byte(`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed","timestamp":"2026-01-01T00:00:00Z"},"artifacts":[{"artifactId":"p1","parts":[{"kind":"text","text":"a"}]}]}`)
	got, err := missed(snap, task03, a2a.V03)
	if err != nil || len(got) != 2 {
		t.Fatalf("missed: %v %v", got, err)
	}
	for i, want := range []string{`"kind":"artifact-update"`, `"final":true`} {
		if !strings.Contains(string(got[i].payload), want) || payloadVersion(got[i].payload) != a2a.V03 {
			t.Fatalf("update %d: %s, want %s", i, got[i].payload, want)
		}
	}
	if got[1].state != a2a.StateCompleted {
		t.Fatalf("status update state %s", got[1].state)
	}
}

func TestLeaseNameStaysWithinTheStoreBound(t *testing.T) {
	short := leaseName(store.TaskRef{Agent: "demo", TaskID: "t1"})
	long := leaseName(store.TaskRef{Agent: "demo", TaskID: strings.Repeat("x", store.MaxNameBytes)})
	other := leaseName(store.TaskRef{Agent: "demo", TaskID: strings.Repeat("y", store.MaxNameBytes)})
	if short != "push-sub:demo:t1" || len(long) > store.MaxNameBytes || long == other {
		t.Fatalf("lease names %q, %q, %q", short, long, other)
	}
}

func TestRetryDelay(t *testing.T) {
	limit := 2 * time.Second
	for n := 1; n <= 10; n++ {
		ceiling := min(250*time.Millisecond<<(n-1), limit)
		for range 50 {
			if d := retryDelay(n, limit); d < 0 || d > ceiling {
				t.Fatalf("retryDelay(%d) = %s, want within [0, %s]", n, d, ceiling)
			}
		}
	}
}
