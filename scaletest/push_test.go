package scaletest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// webhookSecretEnv holds the Standard Webhooks secret the gateways sign
// with, so every notification carries its id in webhook-id.
const webhookSecretEnv = "SCALETEST_WEBHOOK_SECRET"

// withPushRelay turns the relay on: signed notifications to receivers on
// loopback (allowed for tenant acme only), retried quickly so that a run
// with a failover finishes in seconds, and short subscription and delivery
// leases so that what a killed replica held is taken over in time.
func withPushRelay(t *testing.T) func(*config.Config) {
	t.Helper()
	key, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "push.pem")
	if err := jose.WritePrivateKeyPEM(keyPath, key); err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	// The gateway processes inherit the test's environment.
	t.Setenv(webhookSecretEnv, "whsec_"+base64.StdEncoding.EncodeToString(secret))
	schedule := make([]duration.Duration, 30)
	for i := range schedule {
		schedule[i] = duration.Duration(300 * time.Millisecond)
	}
	return func(c *config.Config) {
		c.Push = config.PushOptions{
			Enabled:          true,
			Signing:          config.PushSigning{KeyFiles: []string{keyPath}, KeyIDs: []string{"scaletest-push"}},
			WebhookSecretEnv: webhookSecretEnv,
			Tenants:          map[string]config.PushTenant{"acme": {Allowlist: []string{"127.0.0.1/32:*"}}},
			Delivery: config.PushDelivery{
				Schedule: schedule, Timeout: duration.Duration(2 * time.Second),
				PollInterval: duration.Duration(50 * time.Millisecond), BreakerFailures: -1,
				// The shortest the timeout allows: the queues the killed
				// replica was delivering are taken over within it.
				LeaseTTL: duration.Duration(4 * time.Second),
			},
		}
		for i := range c.Agents {
			c.Agents[i].Push.LeaseTTL = duration.Duration(time.Second)
			c.Agents[i].Push.ResubscribeMaxBackoff = duration.Duration(time.Second)
			c.Agents[i].Push.PollInterval = duration.Duration(500 * time.Millisecond)
		}
	}
}

// receiver is a webhook on loopback that acknowledges every notification
// and keeps each one once, by its id.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	seen  map[string]bool
	tasks map[string][]a2a.Event // by task id, in arrival order
	calls int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{seen: map[string]bool{}, tasks: map[string][]a2a.Event{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ev, _ := a2a.ParseResult(body)
		r.mu.Lock()
		r.calls++
		if id := req.Header.Get(push.HeaderWebhookID); !r.seen[id] {
			r.seen[id] = true
			r.tasks[ev.TaskID] = append(r.tasks[ev.TaskID], ev)
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/hooks/a2a" }

// has reports whether the notification with id arrived.
func (r *receiver) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[id]
}

// terminal reports whether a notification for taskID carried a terminal state.
func (r *receiver) terminal(taskID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.tasks[taskID] {
		if ev.Kind != a2a.EventArtifactUpdate && ev.State.Terminal() {
			return true
		}
	}
	return false
}

// describe lists the notifications received for taskID.
func (r *receiver) describe(taskID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, ev := range r.tasks[taskID] {
		fmt.Fprintf(&b, "%s %s; ", ev.Kind, ev.State)
	}
	return b.String()
}

// pushTask is one streamed task with a push config, as its client saw it.
type pushTask struct {
	id         string
	events     []string // notification ids of the events the client got
	terminal   bool     // the client saw the terminal event
	start, end time.Time
	via        string
	err        error
}

// runPush streams tasks with an inline push config through the replicas
// in turn until the load stops.
func (l *load) runPush(c caller, rcv *receiver) {
	for n := 0; !l.stopped(); n++ {
		g := l.w.next()
		params := sendParams(newID("push"), "stream 3", "", "")
		params["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"url": rcv.url(), "token": "tok-" + strconv.Itoa(n)}}
		pt := &pushTask{via: g.name, start: time.Now()}
		pt.err = l.w.stream(g, c, a2a.MethodStream, params, func(ev a2a.Event, result []byte) {
			pt.id = ev.TaskID
			pt.events = append(pt.events, push.EventID(result))
			pt.terminal = pt.terminal || ev.Kind != a2a.EventArtifactUpdate && ev.State.Terminal()
		})
		pt.end = time.Now()
		l.mu.Lock()
		l.pushTasks = append(l.pushTasks, pt)
		l.mu.Unlock()
		if pt.err != nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// stream sends a streaming request to g as c and calls each with every
// event's result until the stream ends.
func (w *world) stream(g *gateway, c caller, m a2a.Method, params any, each func(a2a.Event, []byte)) error {
	body := a2a.RPCRequest(a2a.V10, m, json.RawMessage(strconv.FormatInt(rpcID.Add(1), 10)), params)
	req, err := http.NewRequest(http.MethodPost, g.base+"/agents/demo/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionHeader, "1.0")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rd := a2a.NewSSEReader(resp.Body, 1<<20)
	for {
		sse, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ev, err := a2a.ParseRPCEvent(sse.Data)
		if err != nil || ev.Kind == a2a.EventError {
			return fmt.Errorf("stream event %s (%v)", sse.Data, err)
		}
		res, _, _ := a2a.UnwrapRPC(sse.Data)
		each(ev, res)
	}
}

// verifyPush waits until the receiver has, for every streamed task whose
// id the client learnt, a terminal notification, and, for every stream
// that ran outside the Redis outage, a notification for each event its
// client saw. Inside the outage an event whose publication failed is
// still reflected in the task's later notifications (the relay's
// subscription republishes the task), so there only the terminal one is
// required. It returns a summary.
func (w *world) verifyPush(t *testing.T, l *load, rcv *receiver, outageFrom, outageTo time.Time) string {
	t.Helper()
	var strict, lenient, events int
	deadline := time.Now().Add(60 * time.Second)
	missing := func() []string {
		var out []string
		for _, pt := range l.pushTasks {
			if pt.id == "" {
				continue
			}
			if !rcv.terminal(pt.id) {
				out = append(out, fmt.Sprintf("task %s (via %s, streamed from %s to %s after the outage began, client saw %d events, terminal %v, stream error %v): no terminal notification; received %s",
					pt.id, pt.via, pt.start.Sub(outageFrom).Round(time.Millisecond), pt.end.Sub(outageFrom).Round(time.Millisecond), len(pt.events), pt.terminal, pt.err, rcv.describe(pt.id)))
			}
			if pt.end.Before(outageFrom) || pt.start.After(outageTo) {
				for _, id := range pt.events {
					if !rcv.has(id) {
						out = append(out, fmt.Sprintf("task %s (via %s): event %s the client saw was never notified", pt.id, pt.via, id))
					}
				}
			}
		}
		return out
	}
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	for _, m := range missing() {
		t.Errorf("LOST notification: %s", m)
	}
	for _, pt := range l.pushTasks {
		if pt.id == "" {
			continue
		}
		events += len(pt.events)
		if pt.end.Before(outageFrom) || pt.start.After(outageTo) {
			strict++
		} else {
			lenient++
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	return fmt.Sprintf("%d streamed tasks with a push config (%d outside the outage, every event checked; %d during it, terminal checked), %d events seen by clients, %d distinct notifications received in %d requests",
		strict+lenient, strict, lenient, events, len(rcv.seen), rcv.calls)
}
