package gateway_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// resumeEnv starts a gateway with the push relay on, its event log in a
// real Redis kept for retention (0: the default), in front of the demo
// agent.
func resumeEnv(t *testing.T, retention time.Duration) *gwtest.Env {
	t.Helper()
	srv := redistest.Start(t)
	key := resumeSigningKey(t)
	return gwtest.Start(t, func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Push.Enabled = true
		c.Push.Signing.KeyFiles = []string{key}
		c.Push.EventLog.Retention = duration.Duration(retention)
	})
}

// resumeSigningKey writes a notification signing key for the relay.
func resumeSigningKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "push-signing.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// resumeCaller is a caller of a tenant of its own: message ids, which
// dedupe keeps per tenant, start over with every caller.
func resumeCaller(t *testing.T, env *gwtest.Env) *caller {
	t.Helper()
	c := newCaller(t, env)
	c.token = env.Token(t, "t-"+strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), "alice")
	return c
}

// dialect is one version and binding of the protocol, as a caller speaks it.
type dialect struct {
	name    string
	version a2a.Version
	rpc     bool
}

var resumeDialects = []dialect{
	{"1.0 JSON-RPC", a2a.V10, true},
	{"1.0 REST", a2a.V10, false},
	{"0.3 JSON-RPC", a2a.V03, true},
	{"0.3 REST", a2a.V03, false},
}

func (d dialect) header() http.Header {
	if d.version == a2a.V10 {
		return v10()
	}
	return http.Header{}
}

// stream is a streaming send of text.
func (d dialect) stream(c *caller, text string) request {
	if d.rpc {
		msg := c.msg03(text)
		if d.version == a2a.V10 {
			msg = c.msg10(text)
		}
		return request{method: http.MethodPost, path: "/", header: d.header(), rpc: true,
			body: rpcBody(a2a.MethodStream, d.version, c.nextID("rs"), `{"message":`+msg+`}`)}
	}
	msg := c.proto03(text)
	if d.version == a2a.V10 {
		msg = c.msg10(text)
	}
	method, path := a2a.RESTPath(a2a.MethodStream, d.version, "", "")
	return request{method: method, path: path, header: d.header(), body: []byte(`{"message":` + msg + `}`)}
}

// subscribe is a subscription to task, resuming after lastID when set.
func (d dialect) subscribe(c *caller, task, lastID string) request {
	rq := request{method: http.MethodGet, header: d.header(), rpc: d.rpc}
	if d.rpc {
		rq.method, rq.path = http.MethodPost, "/"
		rq.body = rpcBody(a2a.MethodSubscribe, d.version, c.nextID("rs"), `{"id":"`+task+`"}`)
	} else {
		_, rq.path = a2a.RESTPath(a2a.MethodSubscribe, d.version, task, "")
	}
	if lastID != "" {
		rq.header.Set(a2a.LastEventIDHeader, lastID)
	}
	return rq
}

// sseEvent is one event as a client of the gateway reads it.
type sseEvent struct {
	id     string
	ev     a2a.Event
	result []byte
}

func (e sseEvent) String() string { return e.ev.Kind.String() + "/" + e.ev.State.String() + " " + e.id }

// read reads the next event: its id, what it is and its bare result.
func (s *stream) read(t *testing.T) (sseEvent, error) {
	t.Helper()
	raw, err := s.rd.Next()
	if err != nil {
		return sseEvent{}, err
	}
	out := sseEvent{id: raw.ID, result: append([]byte(nil), raw.Data...)}
	if s.rpc {
		ev, res, err := a2a.ParseRPCEventResult(raw.Data)
		if err != nil {
			t.Fatalf("unreadable event: %v: %s", err, raw.Data)
		}
		out.ev, out.result = ev, append([]byte(nil), res...)
	} else if out.ev, err = a2a.ParseResult(raw.Data); err != nil {
		t.Fatalf("unreadable event: %v: %s", err, raw.Data)
	}
	return out, nil
}

// mustRead reads an event the stream must have.
func (s *stream) mustRead(t *testing.T) sseEvent {
	t.Helper()
	e, err := s.read(t)
	if err != nil {
		t.Fatalf("want an event, got %v", err)
	}
	return e
}

// readToEnd reads the rest of a stream, which must end cleanly.
func (s *stream) readToEnd(t *testing.T) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		e, err := s.read(t)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream broke after %d events: %v", len(out), err)
		}
		out = append(out, e)
	}
}

// collector reads a stream to its end in the background.
type collector struct {
	s      *stream
	mu     sync.Mutex
	events []sseEvent
	done   chan struct{}
}

func collect(t *testing.T, s *stream) *collector {
	c := &collector{s: s, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			raw, err := s.rd.Next()
			if err != nil {
				return
			}
			e := sseEvent{id: raw.ID}
			var perr error
			if s.rpc {
				var res []byte
				e.ev, res, perr = a2a.ParseRPCEventResult(raw.Data)
				e.result = append([]byte(nil), res...)
			} else {
				e.ev, perr = a2a.ParseResult(raw.Data)
				e.result = append([]byte(nil), raw.Data...)
			}
			if perr != nil {
				t.Errorf("unreadable event: %v: %s", perr, raw.Data)
				return
			}
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *collector) snapshot() []sseEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// after returns the events so far after the one with id, and whether it
// is there.
func (c *collector) after(id string) ([]sseEvent, bool) { return eventsAfter(c.snapshot(), id) }

func eventsAfter(evs []sseEvent, id string) ([]sseEvent, bool) {
	for i, e := range evs {
		if e.id == id {
			return evs[i+1:], true
		}
	}
	return nil, false
}

func (c *collector) wait(t *testing.T) []sseEvent {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(testTimeout):
		t.Fatal("the watching stream did not end")
	}
	return c.snapshot()
}

func ids(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	return out
}

// wantEventIDs checks that every event carries the id of its result, the
// key the event log keeps it under.
func wantEventIDs(t *testing.T, evs []sseEvent) {
	t.Helper()
	for _, e := range evs {
		if e.id == "" || e.id != push.EventID(e.result) {
			t.Errorf("event %s carries id %q, want push.EventID of its result %q", e, e.id, push.EventID(e.result))
		}
	}
}

// dropMidTask streams a long task as one client, which drops its stream
// after a few events while a second stream of the same tenant (another
// device) follows the task and, through the gateway, keeps its event log
// going. It returns the dropped stream's last id, the task and the
// second stream.
func dropMidTask(t *testing.T, c *caller, d dialect) (lastID, task string, watcher *collector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	first := c.open(t, ctx, d.stream(c, "parts 8 150ms"))
	head := first.mustRead(t)
	if head.ev.Kind != a2a.EventTask {
		t.Fatalf("first event %s, want the task", head)
	}
	task = head.ev.TaskID
	watcher = collect(t, c.open(t, ctx, d.subscribe(c, task, "")))
	seen := []sseEvent{head}
	for parts := 0; parts < 2; {
		e := first.mustRead(t)
		seen = append(seen, e)
		if e.ev.Kind == a2a.EventArtifactUpdate {
			parts++
		}
	}
	wantEventIDs(t, seen)
	lastID = seen[len(seen)-1].id
	first.close()
	// The watcher must have the last event the first stream got, and more
	// after it: the events the first stream misses.
	eventually(t, "the watching stream is two events past the drop", func() bool {
		rest, ok := watcher.after(lastID)
		return ok && len(rest) >= 2
	})
	return lastID, task, watcher
}

// TestResumeStream: a client whose stream dropped mid-task reconnects
// with Last-Event-ID and receives exactly the events it missed, then the
// live ones, in order, though the demo agent cannot replay; after the task
// ended, the missed events alone, the last one terminal.
func TestResumeStream(t *testing.T) {
	env := resumeEnv(t, 0)
	for _, d := range resumeDialects {
		t.Run(d.name+"/mid-task", func(t *testing.T) {
			t.Parallel()
			c := resumeCaller(t, env)
			lastID, task, watcher := dropMidTask(t, c, d)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			resumed := c.open(t, ctx, d.subscribe(c, task, lastID)).readToEnd(t)
			want, _ := eventsAfter(watcher.wait(t), lastID)
			// The agent's resubscription starts with a snapshot of the task:
			// it is the one event the watcher did not get.
			var snapshots int
			got := slices.DeleteFunc(slices.Clone(resumed), func(e sseEvent) bool {
				if e.ev.Kind == a2a.EventTask {
					snapshots++
					return true
				}
				return false
			})
			if !slices.Equal(ids(got), ids(want)) || snapshots > 1 {
				t.Fatalf("resumed stream\n%s\nwant the watcher's events after the drop\n%s\nand at most one task snapshot",
					strings.Join(ids(resumed), "\n"), strings.Join(ids(want), "\n"))
			}
			if last := resumed[len(resumed)-1]; !last.ev.State.Terminal() {
				t.Fatalf("resumed stream ends with %s", last)
			}
			wantEventIDs(t, resumed)
		})
		t.Run(d.name+"/after the end", func(t *testing.T) {
			t.Parallel()
			c := resumeCaller(t, env)
			lastID, task, watcher := dropMidTask(t, c, d)
			want, _ := eventsAfter(watcher.wait(t), lastID)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			resumed := c.open(t, ctx, d.subscribe(c, task, lastID)).readToEnd(t)
			if !slices.Equal(ids(resumed), ids(want)) {
				t.Fatalf("resumed stream\n%s\nwant\n%s", strings.Join(ids(resumed), "\n"), strings.Join(ids(want), "\n"))
			}
			wantEventIDs(t, resumed)
		})
	}
}

// TestResumeConvertsToCallerVersion: events logged from a 1.0 stream are
// replayed to a 0.3 caller in the 0.3 shape, under their logged ids.
func TestResumeConvertsToCallerVersion(t *testing.T) {
	env := resumeEnv(t, 0)
	c := resumeCaller(t, env)
	v10rpc, v03rpc := resumeDialects[0], resumeDialects[2]
	lastID, task, watcher := dropMidTask(t, c, v10rpc)
	want, _ := eventsAfter(watcher.wait(t), lastID)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resumed := c.open(t, ctx, v03rpc.subscribe(c, task, lastID)).readToEnd(t)
	if !slices.Equal(ids(resumed), ids(want)) {
		t.Fatalf("resumed stream\n%s\nwant\n%s", strings.Join(ids(resumed), "\n"), strings.Join(ids(want), "\n"))
	}
	for _, e := range resumed {
		if m := decode(t, e.result); m["kind"] == nil || m["statusUpdate"] != nil || m["artifactUpdate"] != nil {
			t.Errorf("replayed event %s is not in the 0.3 shape: %s", e, e.result)
		}
	}
	if last := decode(t, resumed[len(resumed)-1].result); last["final"] != true {
		t.Errorf("the last replayed event is not final: %v", last)
	}
}

// TestResumeForeignTask: another tenant naming the task with a valid event
// id gets the answer an unknown task gets.
func TestResumeForeignTask(t *testing.T) {
	env := resumeEnv(t, 0)
	owner := resumeCaller(t, env)
	d := resumeDialects[0]
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := owner.open(t, ctx, d.stream(owner, "wait"))
	head := s.mustRead(t)
	wantEventIDs(t, []sseEvent{head})

	stranger := newCaller(t, env)
	stranger.token = env.Token(t, "globex", "mallory")
	for _, d := range resumeDialects {
		ask := func(task string) (int, string) {
			rq := d.subscribe(stranger, task, head.id)
			if d.rpc {
				rq.body = rpcBody(a2a.MethodSubscribe, d.version, "same-id", `{"id":"`+task+`"}`)
			}
			resp, body := stranger.do(t, rq)
			return resp.StatusCode, strings.ReplaceAll(string(body), task, "{task}")
		}
		gotStatus, got := ask(head.ev.TaskID)
		wantStatus, want := ask("no-such-task")
		if gotStatus != wantStatus || got != want || !strings.Contains(got, "not found") {
			t.Errorf("%s: foreign task answered %d %s; unknown task %d %s", d.name, gotStatus, got, wantStatus, want)
		}
	}
}

// TestResumeExpiredEventID: once the event log has dropped the id (past
// push.event_log.retention), the stream starts from the task as it is now
// and goes on live.
func TestResumeExpiredEventID(t *testing.T) {
	const retention = time.Second
	env := resumeEnv(t, retention)
	c := resumeCaller(t, env)
	d := resumeDialects[0]
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s := c.open(t, ctx, d.stream(c, "wait"))
	var last sseEvent
	for last.ev.State != a2a.StateWorking {
		last = s.mustRead(t)
	}
	s.close()
	task := last.ev.TaskID
	eventually(t, "the event log forgets the task's events", func() bool {
		_, found, err := env.GW.Relay().Replay(ctx, "demo", task, last.id, 1)
		return err == nil && !found
	})

	resumed := c.open(t, ctx, d.subscribe(c, task, last.id))
	snap := resumed.mustRead(t)
	if snap.ev.Kind != a2a.EventTask || snap.ev.State != a2a.StateWorking {
		t.Fatalf("first event %s, want the task as it is now", snap)
	}
	params := `{"id":"` + task + `"}`
	if resp, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodCancelTask, a2a.V10, c.nextID("rs"), params)}); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", resp.StatusCode, b)
	}
	rest := resumed.readToEnd(t)
	if len(rest) == 0 || rest[len(rest)-1].ev.State != a2a.StateCanceled {
		t.Fatalf("after the snapshot the stream got %s, want the live events up to canceled", strings.Join(ids(rest), ", "))
	}
	wantEventIDs(t, append([]sseEvent{snap}, rest...))
}

// TestResumeAgentRefuses: when the log holds events the caller missed but
// not the end of the task (nothing followed it when it ended), the caller
// gets the missed events and, the agent refusing to stream an ended task,
// a stream that ends cleanly after them.
func TestResumeAgentRefuses(t *testing.T) {
	env := resumeEnv(t, 0)
	c := resumeCaller(t, env)
	for _, d := range resumeDialects {
		t.Run(d.name, func(t *testing.T) {
			lastID, task, watcher := dropMidTask(t, c, d)
			watcher.s.close()
			watcher.wait(t)
			eventually(t, "the task completes", func() bool {
				_, b := c.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodGetTask, a2a.V10, c.nextID("rs"), `{"id":"`+task+`"}`)})
				ev, err := a2a.ParseRPCEvent(b)
				return err == nil && ev.State == a2a.StateCompleted
			})
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			// What the log holds after the drop: the watcher may have been
			// sent an event it did not read before it left.
			logged, found, err := env.GW.Relay().Replay(ctx, "demo", task, lastID, 1000)
			if err != nil || !found || len(logged) < 2 {
				t.Fatalf("event log after the drop: %d events, found %v, %v", len(logged), found, err)
			}
			var want []string
			for _, e := range logged {
				want = append(want, e.ID)
			}
			resumed := c.open(t, ctx, d.subscribe(c, task, lastID)).readToEnd(t)
			var got []string
			for _, e := range resumed {
				got = append(got, e.id)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("resumed stream %q, want the logged events %q", got, want)
			}
		})
	}
}

// TestResumeLongReplay: a replay longer than one read of the log comes
// whole and in order.
func TestResumeLongReplay(t *testing.T) {
	env := resumeEnv(t, 0)
	c := resumeCaller(t, env)
	d := resumeDialects[0]
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	all := c.open(t, ctx, d.stream(c, "parts 150 1ms")).readToEnd(t)
	if len(all) < 300 {
		t.Fatalf("the task streamed %d events, want more than 300", len(all))
	}
	resumed := c.open(t, ctx, d.subscribe(c, all[0].ev.TaskID, all[0].id)).readToEnd(t)
	if !slices.Equal(ids(resumed), ids(all[1:])) {
		t.Fatalf("resumed %d events, want the %d after the first:\n%s", len(resumed), len(all)-1, strings.Join(ids(resumed), "\n"))
	}
}
