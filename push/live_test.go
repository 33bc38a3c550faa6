package push_test

import (
	"context"
	"encoding/json"
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

// testLiveTTL is the live mark of the client streams in these tests.
const testLiveTTL = 300 * time.Millisecond

// clientStream publishes the events of a client's stream as the gateway's
// observer does, through a relay of its own (another replica's, say),
// counting them.
type clientStream struct {
	relay *push.Relay
	mu    sync.Mutex
	n     int
}

func newClientStream(t *testing.T, st store.Store) *clientStream {
	t.Helper()
	r, err := push.NewRelay(push.RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: discardQueue{}, LiveTTL: testLiveTTL})
	if err != nil {
		t.Fatal(err)
	}
	return &clientStream{relay: r}
}

func (c *clientStream) publish(ctx context.Context, ev a2a.Event, res []byte) error {
	_, err := c.relay.Publish(ctx, push.Event{
		Agent: agentName, TaskID: ev.TaskID, ContextID: ev.ContextID, Version: a2a.V10,
		Kind: ev.Kind, State: ev.State, Payload: res, Live: true,
	})
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return err
}

func (c *clientStream) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// countingQueue counts the notifications a replica's own relay enqueues.
type countingQueue struct {
	mu sync.Mutex
	n  int
}

func (q *countingQueue) Enqueue(context.Context, store.Delivery) error {
	q.mu.Lock()
	q.n++
	q.mu.Unlock()
	return nil
}

func (q *countingQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// subscriptions lists when the agent was asked to stream task.
func subscriptions(agent *demoagent.Agent, task string) []time.Time {
	var out []time.Time
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodSubscribe && r.Op.TaskID == task {
			out = append(out, r.At)
		}
	}
	return out
}

var errClientLeft = errors.New("the client left")

// loggedParts lists the artifact ids of the task's event log in the order
// they first appear, in task snapshots or artifact updates.
func loggedParts(t *testing.T, r *push.Relay, task string) []string {
	t.Helper()
	events, _, err := r.Replay(context.Background(), agentName, task, "", store.MaxEventLogReadLimit)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	add := func(art any) {
		id, _ := art.(map[string]any)["artifactId"].(string)
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, le := range events {
		var obj struct {
			Task struct {
				Artifacts []any `json:"artifacts"`
			} `json:"task"`
			ArtifactUpdate struct {
				Artifact any `json:"artifact"`
			} `json:"artifactUpdate"`
		}
		if err := json.Unmarshal(le.Payload, &obj); err != nil {
			t.Fatalf("logged event: %v: %s", err, le.Payload)
		}
		for _, a := range obj.Task.Artifacts {
			add(a)
		}
		if obj.ArtifactUpdate.Artifact != nil {
			add(obj.ArtifactUpdate.Artifact)
		}
	}
	return out
}

// While a client's stream publishes a task, the replica holding the task
// does not subscribe to it; the client leaves mid-task, and the replica
// takes over once the live mark lapses: the log ends with every part, in
// order, and the terminal state.
func TestSubscriberTakesOverWhenTheClientLeaves(t *testing.T) {
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	agent, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	r := newReplica(t, st, url, "replica", time.Second)
	r.run(t)
	client := newClientStream(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), subTimeout)
	defer cancel()
	params := map[string]any{"message": map[string]any{
		"messageId": "m-live", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "parts 12 100ms"}},
	}}
	var task string
	var left time.Time
	arts := 0
	err := r.px.CallStream(ctx, agentName, a2a.V10, a2a.MethodStream, params, func(ev a2a.Event, res []byte) error {
		if ev.TaskID == "" {
			return nil
		}
		if task == "" {
			// The gateway registers an inline config before it publishes.
			task = ev.TaskID
			c := store.PushConfig{Agent: agentName, TaskID: task, ID: "c1", Tenant: "acme", Version: a2a.V10, URL: "https://hooks.example/a2a"}
			if _, err := st.PushConfigs().Put(ctx, c); err != nil {
				return err
			}
		}
		if err := client.publish(ctx, ev, res); err != nil {
			return err
		}
		if ev.Kind == a2a.EventArtifactUpdate {
			arts++
		}
		if arts < 4 {
			return nil
		}
		waitFor(t, "the replica holding the task", func() bool { return r.metrics.get().held == 1 })
		if subs := subscriptions(agent, task); len(subs) != 0 {
			t.Fatalf("the replica subscribed to a task a client's stream publishes: %v", subs)
		}
		left = time.Now()
		return errClientLeft
	})
	if !errors.Is(err, errClientLeft) {
		t.Fatalf("the client's stream ended with %v", err)
	}
	waitFor(t, "the terminal event", func() bool {
		_, states, _ := logged(t, r.relay, task)
		return len(states) > 0 && states[len(states)-1] == a2a.StateCompleted
	})
	if got, _, _ := logged(t, r.relay, task); !slices.Equal(got, parts(12)) {
		t.Fatalf("logged artifacts %v", got)
	}
	subs := subscriptions(agent, task)
	if len(subs) == 0 || subs[0].Before(left) {
		t.Fatalf("subscriptions at %v; want the first after the client left at %v", subs, left)
	}
}

// A replica that follows a task upstream lets go of its stream once a
// client's stream publishes the task, and follows it again when that
// stream ends: the log still ends with every part and the terminal state.
func TestSubscriberLeavesTheStreamToALiveClient(t *testing.T) {
	st := store.NewRedis(redistest.Start(t).Client(t), store.Options{})
	agent, url := demo(t, demoagent.Options{StepDelay: 10 * time.Millisecond})
	own := &countingQueue{}
	r := newReplicaWith(t, st, url, "replica", time.Second, own)
	r.run(t)
	task := watchTask(t, st, r.px, "parts 40 50ms")
	waitFor(t, "the replica following the task upstream", func() bool {
		return len(subscriptions(agent, task)) == 1 && own.count() >= 2
	})
	client := newClientStream(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), subTimeout)
	defer cancel()
	streamed := make(chan error, 1)
	go func() {
		streamed <- r.px.CallStream(ctx, agentName, a2a.V10, a2a.MethodSubscribe, a2a.TaskParams{ID: task}, func(ev a2a.Event, res []byte) error {
			if ev.TaskID != task {
				return nil
			}
			return client.publish(ctx, ev, res)
		})
	}()
	// The replica is quiet while the client's stream goes on.
	lastOwn, clientAt := -1, 0
	waitFor(t, "five events of the client's stream with none of the replica's", func() bool {
		if n := own.count(); n != lastOwn {
			lastOwn, clientAt = n, client.count()
		}
		return client.count()-clientAt >= 5
	})
	if n := agent.DropStreams(); n != 1 {
		t.Fatalf("the agent had %d streams of the task open, want the client's alone", n)
	}
	if err := <-streamed; err != nil {
		t.Fatalf("the client's stream: %v", err)
	}
	waitFor(t, "the terminal event", func() bool {
		_, states, _ := logged(t, r.relay, task)
		return len(states) > 0 && states[len(states)-1] == a2a.StateCompleted
	})
	if got := loggedParts(t, r.relay, task); !slices.Equal(got, parts(40)) {
		t.Fatalf("logged artifacts %v", got)
	}
	if subs := subscriptions(agent, task); len(subs) < 3 {
		t.Fatalf("%d subscriptions; want the replica's, the client's and the replica's again", len(subs))
	}
}
