package push

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
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
		snap = foldOnto(t, snap, p)
	}
	return snap
}

// foldOnto folds one payload into snap.
func foldOnto(t *testing.T, snap, payload []byte) []byte {
	t.Helper()
	ev, err := loggedEvent(store.TaskRef{Agent: "a", TaskID: "t1"}, payload)
	if err == nil {
		snap, err = foldEvent(snap, ev)
	}
	if err != nil {
		t.Fatal(err)
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
		if !strings.Contains(string(got[i].payload), want) || shapeOf(got[i].payload) != a2a.V03 {
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

// streamTask is the 1.0 task of an agent that reported working and then
// appended chunks 1..n of one artifact, ended when done.
func streamTask(n int, done bool) []byte {
	state := "TASK_STATE_WORKING"
	if done {
		state = "TASK_STATE_COMPLETED"
	}
	var parts []string
	for i := 1; i <= n; i++ {
		parts = append(parts, `{"text":"chunk `+fmt.Sprint(i)+`"}`)
	}
	arts := ""
	if n > 0 {
		arts = `{"artifactId":"a1","name":"stream","parts":[` + strings.Join(parts, ",") + `]}`
	}
	return []byte(`{"task":{"id":"t1","contextId":"c1","status":{"state":"` + state + `","timestamp":"2026-01-01T00:00:0` + fmt.Sprint(map[bool]int{false: 1, true: 2}[done]) + `Z"},"artifacts":[` + arts + `]}}`)
}

func TestMissedDiffs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		log        [][]byte
		task       []byte
		want       string
		lastChunks int
	}{
		{"new parts only, working first", [][]byte{task10("TASK_STATE_SUBMITTED")}, streamTask(2, false), "status_update:working artifact_update:unknown:a1 artifact_update:unknown:a1", 0},
		{"appended to the logged parts", [][]byte{task10("TASK_STATE_SUBMITTED"), streamTask(2, false)}, streamTask(5, false), "artifact_update:unknown:a1 artifact_update:unknown:a1 artifact_update:unknown:a1", 0},
		{"a read older than the log", [][]byte{task10("TASK_STATE_SUBMITTED"), streamTask(5, false)}, streamTask(3, false), "", 0},
		{"the end: the last part is the last chunk, the status last", [][]byte{task10("TASK_STATE_SUBMITTED"), streamTask(3, false)}, streamTask(4, true), "artifact_update:unknown:a1 status_update:completed", 1},
		{"an older status", [][]byte{task10("TASK_STATE_SUBMITTED"), streamTask(3, true)}, streamTask(3, false), "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := missed(snapOf(t, tc.log...), tc.task, a2a.V10)
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(t, got); d != tc.want {
				t.Fatalf("missed: %q, want %q", d, tc.want)
			}
			last := 0
			for _, u := range got {
				if strings.Contains(string(u.payload), `"lastChunk":true`) {
					last++
				}
			}
			if last != tc.lastChunks {
				t.Fatalf("%d updates claim the last chunk, want %d", last, tc.lastChunks)
			}
		})
	}
}

// A part is named by its place: the same text later in the artifact is
// another event, the same part with lastChunk set is the same one.
func TestPartEventID(t *testing.T) {
	part := map[string]any{"text": "the"}
	a, _ := partEventID("t1", "a1", 3, part)
	b, _ := partEventID("t1", "a1", 4, part)
	if a == b {
		t.Fatal("a repeated part at another place has the same id")
	}
	snap := snapOf(t, task10("TASK_STATE_SUBMITTED"), streamTask(3, false))
	open, _ := missed(snap, streamTask(4, false), a2a.V10)
	end, _ := missed(snap, streamTask(4, true), a2a.V10)
	if len(open) != 1 || open[0].id == "" || open[0].id != end[0].id || bytes.Equal(open[0].payload, end[0].payload) {
		t.Fatalf("the fourth chunk read before and after the end: %+v, %+v", open, end)
	}
}

// The task's reads come in any order (a 0.3 push of an older task, two
// replicas' reads from the same log), and each is reconciled with the log
// as it is then: the consumers' view of the task only ever grows, chunk by
// chunk in the agent's order, each chunk once, and ends with the task.
func TestReconcileUnderRandomInterleavings(t *testing.T) {
	const chunks = 20
	for seed := range uint64(100) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		var log [][]byte
		var snap []byte // the log, folded
		ids := map[string]bool{}
		publish := func(us []update) {
			for _, u := range us {
				id := u.id
				if id == "" {
					id = EventID(u.payload)
				}
				if !ids[id] { // the log takes an event once
					ids[id] = true
					log = append(log, u.payload)
					snap = foldOnto(t, snap, u.payload)
				}
			}
		}
		publish([]update{{payload: task10("TASK_STATE_SUBMITTED")}})
		agent := 0 // chunks the agent stored so far
		for agent <= chunks {
			agent = min(agent+rnd.IntN(3), chunks+1)
			// Two reads from the same log, of states at most a few
			// chunks apart, either first.
			var us [][]update
			for range 1 + rnd.IntN(2) {
				n := max(0, min(agent, chunks)-rnd.IntN(4))
				u, err := missed(snap, streamTask(n, n == chunks && agent > chunks), a2a.V10)
				if err != nil {
					t.Fatal(err)
				}
				us = append(us, u)
			}
			rnd.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
			for _, u := range us {
				publish(u)
			}
		}
		final, err := missed(snap, streamTask(chunks, true), a2a.V10)
		if err != nil {
			t.Fatal(err)
		}
		publish(final)
		prev := -1
		var view []byte
		for i := range log {
			view = foldOnto(t, view, log[i])
			var task map[string]any
			if err := json.Unmarshal(view, &task); err != nil {
				t.Fatal(err)
			}
			arts, _ := task["artifacts"].([]any)
			n := 0
			if len(arts) == 1 {
				parts := arts[0].(map[string]any)["parts"].([]any)
				for j, p := range parts {
					if p.(map[string]any)["text"] != "chunk "+fmt.Sprint(j+1) {
						t.Fatalf("seed %d: event %d: parts %v out of order", seed, i, parts)
					}
				}
				n = len(parts)
			}
			if n < prev {
				t.Fatalf("seed %d: event %d: the artifact went from %d to %d parts", seed, i, prev, n)
			}
			prev = n
			if i == len(log)-1 && (n != chunks || stateOfStatus(task["status"]) != a2a.StateCompleted) {
				t.Fatalf("seed %d: the log ends %s with %d parts", seed, stateOfStatus(task["status"]), n)
			}
		}
	}
}

// FuzzMissed reconciles any logged task with any agent's task: no input
// makes it fail other than with an error, and once its updates are in the
// log, the same read brings no artifact update again (a stale or repeated
// read never re-emits).
func FuzzMissed(f *testing.F) {
	for _, seed := range [][2][]byte{
		{task10("TASK_STATE_SUBMITTED"), streamTask(3, false)},
		{streamTask(5, false), streamTask(3, false)},                 // a read older than the log
		{streamTask(3, false), streamTask(3, true)},                  // the end of an unchanged artifact
		{task10("TASK_STATE_WORKING", "a1=x"), streamTask(2, false)}, // a replaced artifact
		{task10("TASK_STATE_WORKING", "a1=the"), task10("TASK_STATE_WORKING", "a1=the", "a1=the")},
		{[]byte(`{"task":{"id":"t1","status":{}}}`), []byte(`{"task":{"id":"t1","artifacts":[{"parts":[]},{"artifactId":7},null]}}`)},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, logged, task []byte) {
		ev, err := loggedEvent(store.TaskRef{Agent: "a", TaskID: "t1"}, logged)
		if err != nil || ev.Kind != a2a.EventTask {
			return
		}
		snap, err := foldEvent(nil, ev)
		if err != nil {
			return
		}
		// The agent's answer passes the strict reader before it is
		// reconciled (read, Inbound).
		if _, err := a2a.ParseResult(task); err != nil {
			return
		}
		us, err := missed(snap, task, a2a.V10)
		if err != nil {
			return
		}
		for _, u := range us {
			ev, err := loggedEvent(store.TaskRef{Agent: "a", TaskID: "t1"}, u.payload)
			if err != nil {
				t.Fatalf("update %s unreadable: %v", u.payload, err)
			}
			if snap, err = foldEvent(snap, ev); err != nil {
				t.Fatalf("update %s does not fold: %v", u.payload, err)
			}
		}
		again, err := missed(snap, task, a2a.V10)
		if err != nil {
			t.Fatalf("the second read: %v", err)
		}
		for _, u := range again {
			if u.kind == a2a.EventArtifactUpdate {
				t.Fatalf("read again after %d updates, it re-emits %s", len(us), u.payload)
			}
		}
	})
}

// shapeOf is the version whose shape payload has.
func shapeOf(payload []byte) a2a.Version {
	_, v, _ := a2a.ParseResultShape(payload)
	return v
}

// foldEvent folds a logged event into snap as the relay does.
func foldEvent(snap []byte, ev Event) ([]byte, error) {
	return a2a.FoldTask(snap, ev.Payload, ev.Version, ev.Kind, ev.TaskID, ev.ContextID)
}
