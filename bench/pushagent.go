package bench

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// pushAgent is the agent of the push-relay run. A streaming send starts a
// task that streams events events, one every interval (back to back when
// zero): the task, then artifact updates, then the completed status. The
// pace is the agent's own, as a real agent's is, so the gateway is offered
// a known rate rather than a burst written ahead into socket buffers,
// where each event would age before the gateway even read it. Each event
// carries its place in the task and the time it was written, in
// metadata.bench, for the receiver to check and time. While a task runs,
// SubscribeToTask gets its snapshot and the rest of its events (the relay's
// subscriber may follow it, as it follows every task with a push config);
// GetTask answers its state.
type pushAgent struct {
	events   int
	interval time.Duration
	seq      atomic.Uint64
	wire     pushWire

	mu    sync.Mutex
	tasks map[string]*pushTask
}

// pushWire holds the protocol spellings the agent answers with.
type pushWire struct {
	stream, subscribe, get string
	working, completed     string
}

// pushTask is one task and the events it has streamed, for subscribers.
type pushTask struct {
	id, contextID string
	mu            sync.Mutex
	cond          *sync.Cond
	results       [][]byte // the events written so far
	done          bool
}

func newPushAgent(events int, interval time.Duration) *pushAgent {
	return &pushAgent{
		events:   max(events, 2),
		interval: max(interval, 0),
		tasks:    map[string]*pushTask{},
		wire: pushWire{
			stream:    a2a.RPCMethodName(a2a.MethodStream, a2a.V10),
			subscribe: a2a.RPCMethodName(a2a.MethodSubscribe, a2a.V10),
			get:       a2a.RPCMethodName(a2a.MethodGetTask, a2a.V10),
			working:   a2a.StateWorking.Wire(a2a.V10),
			completed: a2a.StateCompleted.Wire(a2a.V10),
		},
	}
}

// pushRequest is what the agent reads of a JSON-RPC request.
type pushRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ID string `json:"id"`
	} `json:"params"`
}

func (a *pushAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/.well-known/agent-card.json" {
		a.serveCard(w, r)
		return
	}
	var req pushRequest
	if r.Method != http.MethodPost || json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes)).Decode(&req) != nil || len(req.ID) == 0 {
		http.Error(w, "POST a JSON-RPC request", http.StatusBadRequest)
		return
	}
	switch req.Method {
	case a.wire.stream:
		a.serveSend(w, req.ID)
	case a.wire.subscribe:
		a.serveSubscribe(w, req.ID, req.Params.ID)
	case a.wire.get:
		a.serveGet(w, req.ID, req.Params.ID)
	default:
		writeRPCError(w, req.ID, a2a.ErrMethodNotFound)
	}
}

// serveCard describes an agent that streams and sends no push notifications
// of its own.
func (a *pushAgent) serveCard(w http.ResponseWriter, r *http.Request) {
	card := map[string]any{
		"name": "push-relay benchmark agent", "description": "streams events fast", "version": "1.0.0",
		"supportedInterfaces": []any{map[string]any{"url": "http://" + r.Host + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities":        map[string]any{"streaming": true, "pushNotifications": false},
		"defaultInputModes":   []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"}, "skills": []any{},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// serveSend starts a task and streams all its events.
func (a *pushAgent) serveSend(w http.ResponseWriter, id json.RawMessage) {
	n := a.seq.Add(1)
	t := &pushTask{id: "push-task-" + strconv.FormatUint(n, 10), contextID: "push-ctx-" + strconv.FormatUint(n, 10)}
	t.cond = sync.NewCond(&t.mu)
	a.mu.Lock()
	a.tasks[t.id] = t
	a.mu.Unlock()
	defer t.finish()
	startSSE(w)
	rc := http.NewResponseController(w)
	start := time.Now()
	for i := range a.events {
		if wait := time.Until(start.Add(time.Duration(i) * a.interval)); wait > 0 {
			time.Sleep(wait)
		}
		res := a.event(t, i)
		t.add(res)
		if a2a.WriteSSE(w, "", a2a.RPCResult(id, res)) != nil || rc.Flush() != nil {
			return
		}
	}
}

// event is the result of the task's event i, stamped now.
func (a *pushAgent) event(t *pushTask, i int) []byte {
	var b []byte
	switch {
	case i == 0:
		b = append(b, `{"task":{"id":"`...)
		b = append(b, t.id...)
		b = append(b, `","contextId":"`...)
		b = append(b, t.contextID...)
		b = append(b, `","status":{"state":"`...)
		b = append(b, a.wire.working...)
		b = append(b, `"}`...)
	case i == a.events-1:
		b = append(b, `{"statusUpdate":{"taskId":"`...)
		b = append(b, t.id...)
		b = append(b, `","contextId":"`...)
		b = append(b, t.contextID...)
		b = append(b, `","status":{"state":"`...)
		b = append(b, a.wire.completed...)
		b = append(b, `"}`...)
	default:
		b = append(b, `{"artifactUpdate":{"taskId":"`...)
		b = append(b, t.id...)
		b = append(b, `","contextId":"`...)
		b = append(b, t.contextID...)
		b = append(b, `","artifact":{"artifactId":"part-`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","parts":[{"text":"chunk `...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `"}]}`...)
	}
	b = append(b, `,"metadata":{"bench":{"seq":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	return append(b, `}}}}`...)
}

// serveSubscribe streams a running task: its snapshot, then every event
// written after this point. An ended task has nothing to subscribe to.
func (a *pushAgent) serveSubscribe(w http.ResponseWriter, id json.RawMessage, taskID string) {
	t := a.task(taskID)
	if t == nil {
		writeRPCError(w, id, a2a.ErrTaskNotFound)
		return
	}
	t.mu.Lock()
	next, done := len(t.results), t.done
	t.mu.Unlock()
	if done {
		writeRPCError(w, id, a2a.ErrUnsupportedOperation.WithMessage("the task is completed"))
		return
	}
	startSSE(w)
	rc := http.NewResponseController(w)
	if a2a.WriteSSE(w, "", a2a.RPCResult(id, a2a.TaskEvent(a2a.V10, a.snapshot(t, a.wire.working)))) != nil || rc.Flush() != nil {
		return
	}
	for {
		t.mu.Lock()
		for next == len(t.results) && !t.done {
			t.cond.Wait()
		}
		batch, done := t.results[next:], t.done
		t.mu.Unlock()
		for _, res := range batch {
			if a2a.WriteSSE(w, "", a2a.RPCResult(id, res)) != nil {
				return
			}
		}
		next += len(batch)
		if rc.Flush() != nil || (done && next == len(t.results)) {
			return
		}
	}
}

// serveGet answers the task as it is.
func (a *pushAgent) serveGet(w http.ResponseWriter, id json.RawMessage, taskID string) {
	t := a.task(taskID)
	if t == nil {
		writeRPCError(w, id, a2a.ErrTaskNotFound)
		return
	}
	t.mu.Lock()
	state := a.wire.working
	if t.done {
		state = a.wire.completed
	}
	t.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(a2a.RPCResult(id, a.snapshot(t, state)))
}

// snapshot is the task in state, the same bytes every time.
func (a *pushAgent) snapshot(t *pushTask, state string) []byte {
	return []byte(`{"id":"` + t.id + `","contextId":"` + t.contextID + `","status":{"state":"` + state + `"}}`)
}

func (a *pushAgent) task(id string) *pushTask {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tasks[id]
}

func (t *pushTask) add(res []byte) {
	t.mu.Lock()
	t.results = append(t.results, res)
	t.mu.Unlock()
	t.cond.Broadcast()
}

// finish marks the task ended.
func (t *pushTask) finish() {
	t.mu.Lock()
	t.done = true
	t.mu.Unlock()
	t.cond.Broadcast()
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", a2a.SSEContentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, e *a2a.Error) {
	a2a.WriteRPCError(w, a2a.V10, id, e)
}

// runPushAgentChild serves the push-relay run's agent.
func runPushAgentChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pushagent", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	events := fs.Int("events", defaultPushEvents, "events per task")
	interval := fs.Duration("interval", defaultPushInterval, "time between a task's events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return serveUntil(ctx, *addr, newPushAgent(*events, *interval))
}
