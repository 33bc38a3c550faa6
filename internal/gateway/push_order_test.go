package gateway_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// orderView is what a consumer knows of a streamed task after one
// notification: its state, the texts of its artifact's parts, and whether a
// notification claimed the artifact's last chunk.
type orderView struct {
	state     a2a.State
	parts     []string
	lastChunk bool
}

// orderViews folds one task's notifications, each notification id once,
// into the consumer's view after each.
func orderViews(t *testing.T, v a2a.Version, taskID string, calls []hookCall) []orderView {
	t.Helper()
	var out []orderView
	var cur orderView
	ids := map[string]bool{}
	for _, c := range calls {
		if ids[c.id()] {
			continue
		}
		ids[c.id()] = true
		ev, err := a2a.ParseResult(c.body)
		if err != nil {
			t.Fatalf("notification unreadable: %v: %s", err, c.body)
		}
		if ev.TaskID != taskID {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(c.body, &obj); err != nil {
			t.Fatal(err)
		}
		if v == a2a.V03 {
			// A 0.3 consumer gets the whole task each time.
			cur = orderView{state: ev.State, parts: streamParts(obj), lastChunk: cur.lastChunk}
		} else if au, ok := obj["artifactUpdate"].(map[string]any); ok {
			art, _ := au["artifact"].(map[string]any)
			parts := streamParts(map[string]any{"artifacts": []any{art}})
			if appendParts, _ := au["append"].(bool); appendParts {
				parts = append(slices.Clone(cur.parts), parts...)
			}
			last, _ := au["lastChunk"].(bool)
			cur = orderView{state: cur.state, parts: parts, lastChunk: cur.lastChunk || last}
		} else {
			cur.state = ev.State
			if task, ok := obj["task"].(map[string]any); ok {
				cur.parts = streamParts(task)
			}
		}
		out = append(out, cur)
	}
	return out
}

// streamParts reads the part texts of a task's artifacts.
func streamParts(task map[string]any) []string {
	var out []string
	arts, _ := task["artifacts"].([]any)
	for _, a := range arts {
		art, _ := a.(map[string]any)
		parts, _ := art["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			out = append(out, fmt.Sprint(pm["text"]))
		}
	}
	return out
}

const (
	orderTasks  = 20
	orderChunks = 20
	orderRuns   = 20
)

// checkOrder reports how the consumer's views of one task stray from the
// order a client's stream of it shows: the artifact only grows, chunk by
// chunk in the agent's order, never repeats a chunk, and the state never
// goes back; the task ends completed with every chunk, and nothing comes
// after the end. Views a stream shows one by one may come collapsed into
// one: what the agent did before the gateway followed the task is read
// from the task.
func checkOrder(views []orderView) error {
	var want []string
	for i := 1; i <= orderChunks; i++ {
		want = append(want, "chunk "+strconv.Itoa(i)+" of "+strconv.Itoa(orderChunks))
	}
	for i, v := range views {
		if len(v.parts) > len(want) || !slices.Equal(v.parts, want[:len(v.parts)]) {
			return fmt.Errorf("notification %d: parts %q are not the chunks in order", i, v.parts)
		}
		if v.lastChunk && len(v.parts) != orderChunks {
			return fmt.Errorf("notification %d: lastChunk claimed after %d of %d chunks", i, len(v.parts), orderChunks)
		}
		if i == 0 {
			continue
		}
		prev := views[i-1]
		switch {
		case prev.state.Terminal():
			return fmt.Errorf("notification %d after the end", i)
		case len(v.parts) < len(prev.parts):
			return fmt.Errorf("notification %d: the artifact went from %d to %d chunks", i, len(prev.parts), len(v.parts))
		case stateRank(v.state) < stateRank(prev.state):
			return fmt.Errorf("notification %d: the state went back from %s to %s", i, prev.state, v.state)
		case len(v.parts) == len(prev.parts) && v.state == prev.state && v.lastChunk == prev.lastChunk:
			return fmt.Errorf("notification %d repeats the one before", i)
		}
	}
	if len(views) == 0 {
		return fmt.Errorf("no notification")
	}
	if last := views[len(views)-1]; last.state != a2a.StateCompleted || len(last.parts) != orderChunks {
		return fmt.Errorf("the task ended %s with %d chunks", last.state, len(last.parts))
	}
	return nil
}

// An agent that pushes natively, followed from the middle of its work:
// the gateway registers its webhook while the chunks stream, and reads
// the task for what came before. Every consumer sees every task's chunks
// in the agent's order, each once, whichever of the agent's pushes and
// the gateway's reads of the task came first; the run is repeated to
// give the race its chances.
func TestPushSourceNativeOrder(t *testing.T) {
	_, native := sourceAgent(t, "native", demoagent.Options{Push: true, StepDelay: 3 * time.Millisecond}, config.PushSourceAuto)
	quick := func(c *config.Config) {
		// A short lease finds each task within a few chunks.
		c.Agents[len(c.Agents)-1].Push.LeaseTTL = duration.Duration(300 * time.Millisecond)
	}
	env := startPush(t, native, quick)
	hooks := make([]*webhook, orderTasks)
	for i := range hooks {
		hooks[i] = newWebhook(t)
	}
	bad := 0
	for run := range orderRuns {
		v := bothVersions[run%2]
		tasks := make([]string, orderTasks)
		for i := range tasks {
			tasks[i] = sendWithPush(t, env.acme, env.Gateway+"/agents/native", v, "stream "+strconv.Itoa(orderChunks), hooks[i].url())
		}
		for i, task := range tasks {
			var views []orderView
			eventually(t, "the terminal notification of task "+task, func() bool {
				views = orderViews(t, v, task, hooks[i].acked())
				return len(views) > 0 && views[len(views)-1].state.Terminal()
			})
			if err := checkOrder(views); err != nil {
				bad++
				t.Errorf("run %d (%s), task %s: %v; views %+v", run, v, task, err, views)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d tasks out of order", bad, orderRuns*orderTasks)
	}
}
