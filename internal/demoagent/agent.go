// Package demoagent is a self-contained A2A agent: the upstream behind the
// gateway's quickstart and integration tests. It speaks A2A 1.0, 0.3 and the
// pre-0.2 tasks/send dialect over JSON-RPC and HTTP+JSON, 1.0 and 0.3 over
// gRPC (GRPCServer), and the first word of each message picks a scenario
// that drives the task into any state.
//
// It accepts every caller and sends push notifications to any URL it is
// given: it is a test and demo peer, never an exposed service.
package demoagent

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Options configures an Agent. The zero value is usable.
type Options struct {
	// Name is the card name; default "Demo Agent".
	Name string
	// BaseURL is the public base URL written into the card. It is usually
	// known only after listening; see SetBaseURL.
	BaseURL string
	// StepDelay is the pause between streamed steps; zero or negative
	// means the default of 50ms.
	StepDelay time.Duration
	// Push advertises and sends native push notifications. Without it the
	// push-config methods answer PushNotificationNotSupported.
	Push bool
	// NoStreaming makes an agent without streaming: its card says so, and
	// streaming sends and subscriptions answer UnsupportedOperation.
	NoStreaming bool
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

const (
	defaultName      = "Demo Agent"
	defaultStepDelay = 50 * time.Millisecond
	// blockingLimit bounds how long a non-streaming send waits for the task
	// to stop or ask for something.
	blockingLimit = 30 * time.Second
	maxBodyBytes  = 4 << 20
	// maxRecorded and maxTasks bound memory of a long-running demo; the
	// oldest entries (for tasks: the oldest finished ones) go first.
	maxRecorded = 10000
	maxTasks    = 10000
)

// Received is one request as the agent saw it.
type Received struct {
	// Op is what package a2a read from the request; zero for card fetches.
	Op         a2a.Operation
	HTTPMethod string
	// Path is the URL path, or for a gRPC call its full method name
	// ("/lf.a2a.v1.A2AService/SendMessage"); Header then holds its metadata
	// and Body the request message in the protobuf encoding.
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time
}

// Agent is the demo agent. It is an http.Handler serving every binding on
// one base URL; Close stops its background work.
type Agent struct {
	name      string
	stepDelay time.Duration
	push      bool
	noStream  bool
	log       *slog.Logger
	client    *http.Client
	baseURL   atomic.Pointer[string]
	grpcAddr  atomic.Pointer[string]

	// ctx ends with Close; it bounds every runner, push and stream.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	tasks  map[string]*task
	order  []*task // by creation
	seq    uint64

	recMu    sync.Mutex
	received []Received
}

var _ http.Handler = (*Agent)(nil)

// New returns a running agent.
func New(o Options) *Agent {
	a := &Agent{
		name:      o.Name,
		stepDelay: o.StepDelay,
		push:      o.Push,
		noStream:  o.NoStreaming,
		log:       o.Logger,
		client:    newPushClient(),
		tasks:     map[string]*task{},
	}
	if a.name == "" {
		a.name = defaultName
	}
	if a.stepDelay <= 0 {
		a.stepDelay = defaultStepDelay
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.ctx, a.stop = context.WithCancel(context.Background())
	a.SetBaseURL(o.BaseURL)
	return a
}

// SetBaseURL sets the public base URL the card advertises.
func (a *Agent) SetBaseURL(u string) { a.baseURL.Store(&u) }

func (a *Agent) base() string { return *a.baseURL.Load() }

// Requests returns every request received since the last reset, in order.
func (a *Agent) Requests() []Received {
	a.recMu.Lock()
	defer a.recMu.Unlock()
	out := make([]Received, len(a.received))
	for i, r := range a.received {
		r.Header = r.Header.Clone()
		r.Body = append([]byte(nil), r.Body...)
		// The raw members of Op point into the recorded body.
		r.Op.ReferenceTaskIDs = append([]string(nil), r.Op.ReferenceTaskIDs...)
		r.Op.RPCID = append(json.RawMessage(nil), r.Op.RPCID...)
		r.Op.PushConfig = append(json.RawMessage(nil), r.Op.PushConfig...)
		out[i] = r
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (a *Agent) ResetRequests() {
	a.recMu.Lock()
	a.received = nil
	a.recMu.Unlock()
}

func (a *Agent) record(r *http.Request, op *a2a.Operation, body []byte) {
	a.keep(Received{HTTPMethod: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()}, op)
}

// keep records rec with the operation read from it, if any.
func (a *Agent) keep(rec Received, op *a2a.Operation) {
	if op != nil {
		rec.Op = *op
	}
	a.recMu.Lock()
	if len(a.received) >= maxRecorded {
		a.received = append(a.received[:0], a.received[1:]...)
	}
	a.received = append(a.received, rec)
	a.recMu.Unlock()
}

// Credentials returns the credentials an auth-required task received, in
// the order they arrived.
func (a *Agent) Credentials(taskID string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.tasks[taskID]; t != nil {
		return append([]string(nil), t.credentials...)
	}
	return nil
}

// DropStreams ends every open stream now, without a final event, as an
// agent that lost its connections would; the tasks go on. It returns how
// many streams it ended.
func (a *Agent) DropStreams() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, t := range a.tasks {
		for s := range t.subs {
			close(s.ch)
			delete(t.subs, s)
			n++
		}
	}
	return n
}

// Close stops every task runner, push sender and open stream, and waits
// for the runners and senders to return. Later requests are refused.
func (a *Agent) Close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.stop()
	a.wg.Wait()
}

// ServeHTTP routes cards, JSON-RPC (POST /) and HTTP+JSON (everything else).
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = secured(r)
	switch r.URL.Path {
	case wellKnownCardPath, legacyCardPath:
		a.record(r, nil, nil)
		a.serveCard(w, r)
		return
	}
	rpc := r.URL.Path == "/" && r.Method == http.MethodPost
	body, e := readBody(w, r)
	if e != nil {
		a.record(r, nil, nil)
		if rpc {
			a2a.WriteRPCError(w, a2a.V03, nil, e)
		} else {
			a2a.WriteRESTError(w, a2a.RESTVersion(r), e)
		}
		return
	}
	if rpc {
		a.serveRPC(w, r, body)
		return
	}
	a.serveREST(w, r, body)
}
