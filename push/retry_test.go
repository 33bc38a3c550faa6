package push_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// gateQueue stands for a delivery queue whose store is down while closed:
// it refuses every notification then, and keeps each one once after.
type gateQueue struct {
	mu       sync.Mutex
	closed   bool
	refused  map[string]int // attempts refused, by notification id
	accepted []string       // notification ids, in the order first taken
}

var errQueueDown = errors.New("the queue's store is down")

func (q *gateQueue) Enqueue(_ context.Context, d store.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		if q.refused == nil {
			q.refused = map[string]int{}
		}
		q.refused[d.ID]++
		return errQueueDown
	}
	if !slices.Contains(q.accepted, d.ID) {
		q.accepted = append(q.accepted, d.ID)
	}
	return nil
}

func (q *gateQueue) set(closed bool) {
	q.mu.Lock()
	q.closed = closed
	q.mu.Unlock()
}

func (q *gateQueue) refusals(id string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.refused[id]
}

func (q *gateQueue) taken() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.accepted)
}

func watched(t *testing.T, st store.Store, task string) bool {
	t.Helper()
	refs, err := st.PushConfigs().Watched(context.Background(), store.MaxWatchedListLimit)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(refs, store.TaskRef{Agent: agentName, TaskID: task})
}

// getTask reads the task from the agent until it is in state want.
func getTask(t *testing.T, r *replica, task string, want a2a.State) []byte {
	t.Helper()
	var res []byte
	waitFor(t, "the task "+want.String()+" at the agent", func() bool {
		var err error
		res, err = r.px.Call(context.Background(), agentName, a2a.V10, a2a.MethodGetTask, a2a.TaskParams{ID: task})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := a2a.ParseResult(res)
		return err == nil && ev.State == want
	})
	return res
}

// The terminal event reached the event log but its notification did not
// reach the queue (the store failed in between), and the publisher
// stopped there. The task stays watched; its follower finds the task
// ended at the agent and in the log, and publishes the logged event again
// once the queue takes it, under the same notification id: only then is
// the task no longer watched.
func TestSubscriberRepublishesALoggedTerminalEvent(t *testing.T) {
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	_, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	q := &gateQueue{closed: true}
	r := newReplicaWith(t, st, url, "replica", time.Second, q)
	task := watchTask(t, st, r.px, "complete")
	res := getTask(t, r, task, a2a.StateCompleted)
	p, err := r.relay.Publish(context.Background(), push.Event{
		Agent: agentName, TaskID: task, Version: a2a.V10, Kind: a2a.EventTask, State: a2a.StateCompleted, Payload: res,
	})
	if err == nil || !p.Terminal {
		t.Fatalf("publish with the queue down: %+v, %v", p, err)
	}
	if !watched(t, st, task) {
		t.Fatal("a task whose terminal notification was not enqueued left the watched index")
	}

	r.run(t)
	waitFor(t, "the follower trying again", func() bool { return q.refusals(p.ID) >= 3 })
	if !watched(t, st, task) {
		t.Fatal("the follower let go of a task whose terminal notification was never enqueued")
	}
	q.set(false)
	waitFor(t, "the task out of the watched index", func() bool { return !watched(t, st, task) })
	if got := q.taken(); !slices.Contains(got, p.ID) {
		t.Fatalf("the queue took %v, not the logged terminal event %s", got, p.ID)
	}
	waitFor(t, "the follower letting go", func() bool { return r.metrics.get().held == 0 })
}

// Events published while the queue is down are kept (the first is logged
// already, but not enqueued) and published again, in their order and
// under their own ids, once it is back.
func TestSubscriberPublishKeepsFailedEvents(t *testing.T) {
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	_, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	q := &gateQueue{closed: true}
	r := newReplicaWith(t, st, url, "replica", time.Second, q)
	r.run(t)
	task := watchTask(t, st, r.px, "wait")
	var ids []string
	for _, art := range []string{"x-1", "x-2", "x-3"} {
		payload := []byte(`{"artifactUpdate":{"taskId":"` + task + `","artifact":{"artifactId":"` + art + `","parts":[{"text":"` + art + `"}]}}}`)
		ev := push.Event{Agent: agentName, TaskID: task, Version: a2a.V10, Kind: a2a.EventArtifactUpdate, Payload: payload}
		if err := r.sub.Publish(context.Background(), ev); err == nil {
			t.Fatalf("%s published with the queue down", art)
		}
		ids = append(ids, push.EventID(payload))
	}
	// The first was logged; the others wait behind it, to keep the order.
	if arts, _, _ := logged(t, r.relay, task); !slices.Equal(arts, []string{"x-1"}) {
		t.Fatalf("logged artifacts %v", arts)
	}
	q.set(false)
	waitFor(t, "the kept events in the queue", func() bool {
		got := q.taken()
		return !slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(got, id) })
	})
	var order []string
	for _, id := range q.taken() {
		if slices.Contains(ids, id) {
			order = append(order, id)
		}
	}
	if !slices.Equal(order, ids) {
		t.Fatalf("enqueued in the order %v, want %v", order, ids)
	}
	if arts, _, _ := logged(t, r.relay, task); !slices.Equal(arts, []string{"x-1", "x-2", "x-3"}) {
		t.Fatalf("logged artifacts %v", arts)
	}
}

// An event published from outside the subscriber (a send's answer, a
// client's stream) may reach the relay after the task's follower has
// published a later view of the task: it is taken as the log stands then.
// Each case is one kind of stale event, and none of them may move the log
// back; what is new in them still goes.
func TestSubscriberPublishNeverMovesTheLogBack(t *testing.T) {
	ctx := context.Background()
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	_, url := demo(t, demoagent.Options{})
	r := newReplica(t, st, url, "replica", time.Second)
	at := func(s int) string { return time.Date(2026, 12, 2, 10, 0, s, 0, time.UTC).Format(time.RFC3339Nano) }
	task := func(state string, s int, arts string) []byte {
		return []byte(`{"task":{"id":"t1","contextId":"c1","status":{"state":"` + state + `","timestamp":"` + at(s) + `"},"artifacts":[` + arts + `]}}`)
	}
	status := func(state string, s int) []byte {
		return []byte(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"` + state + `","timestamp":"` + at(s) + `"}}}`)
	}
	ev := func(kind a2a.EventKind, state a2a.State, payload []byte) push.Event {
		return push.Event{Agent: agentName, TaskID: "t1", ContextID: "c1", Version: a2a.V10, Kind: kind, State: state, Payload: payload}
	}
	// The follower's read came first: the task works, with one part.
	if _, err := r.relay.Publish(ctx, ev(a2a.EventTask, a2a.StateWorking, task("TASK_STATE_WORKING", 2, `{"artifactId":"a","parts":[{"text":"p1"}]}`))); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		ev         push.Event
		wantStates []a2a.State
		wantArts   []string
	}{
		{"the send's answer, read before the follower's", ev(a2a.EventTask, a2a.StateSubmitted, task("TASK_STATE_SUBMITTED", 1, "")),
			[]a2a.State{a2a.StateWorking}, nil},
		{"a status older than the logged one", ev(a2a.EventStatusUpdate, a2a.StateSubmitted, status("TASK_STATE_SUBMITTED", 1)),
			[]a2a.State{a2a.StateWorking}, nil},
		{"a status the logged one cannot move to, however new", ev(a2a.EventStatusUpdate, a2a.StateSubmitted, status("TASK_STATE_SUBMITTED", 3)),
			[]a2a.State{a2a.StateWorking}, nil},
		{"a task showing one part more: only that part goes", ev(a2a.EventTask, a2a.StateWorking, task("TASK_STATE_WORKING", 2, `{"artifactId":"a","parts":[{"text":"p1"},{"text":"p2"}]}`)),
			[]a2a.State{a2a.StateWorking}, []string{"a"}},
		{"the task's end", ev(a2a.EventStatusUpdate, a2a.StateCompleted, status("TASK_STATE_COMPLETED", 4)),
			[]a2a.State{a2a.StateWorking, a2a.StateCompleted}, []string{"a"}},
		{"a status after the end", ev(a2a.EventStatusUpdate, a2a.StateWorking, status("TASK_STATE_WORKING", 5)),
			[]a2a.State{a2a.StateWorking, a2a.StateCompleted}, []string{"a"}},
		{"a task after the end, showing an earlier state", ev(a2a.EventTask, a2a.StateWorking, task("TASK_STATE_WORKING", 3, `{"artifactId":"a","parts":[{"text":"p1"},{"text":"p2"}]}`)),
			[]a2a.State{a2a.StateWorking, a2a.StateCompleted}, []string{"a"}},
	}
	for _, s := range steps {
		if err := r.sub.Publish(ctx, s.ev); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		arts, states, _ := logged(t, r.relay, "t1")
		if !slices.Equal(states, s.wantStates) || !slices.Equal(arts, s.wantArts) {
			t.Fatalf("after %s: the log holds states %v and artifact updates %v, want %v and %v", s.name, states, arts, s.wantStates, s.wantArts)
		}
	}
}
