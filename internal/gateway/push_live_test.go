package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// A client streams a task with an inline push config: its stream feeds
// the relay, each notification named by the event's SSE id, and the
// gateway does not subscribe to the task upstream meanwhile. The client
// drops its stream mid-task; once the live mark lapses the gateway
// follows the task itself, and the consumer gets every part and the end.
func TestPushLiveStreamThenTakeover(t *testing.T) {
	agent, plain := sourceAgent(t, "plain", demoagent.Options{StepDelay: 20 * time.Millisecond}, config.PushSourceStream)
	env := startPush(t, plain)
	rcv := newWebhook(t)
	c := env.acme
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	params := `{"message":` + c.msg10("parts 12 500ms") + `,"configuration":{"taskPushNotificationConfig":{"url":"` + rcv.url() + `","token":"consumer-token"}}}`
	s := c.open(t, ctx, request{
		method: http.MethodPost, path: env.Gateway + "/agents/plain/", header: v10(), rpc: true,
		body: rpcBody(a2a.MethodStream, a2a.V10, c.nextID("live"), params),
	})
	var seen []sseEvent
	for parts := 0; parts < 3; {
		e := s.mustRead(t)
		seen = append(seen, e)
		if e.ev.Kind == a2a.EventArtifactUpdate {
			parts++
		}
	}
	task := seen[0].ev.TaskID
	wantEventIDs(t, seen)
	// Every event the client saw is notified under its SSE id.
	eventually(t, "the streamed events notified", func() bool {
		got := map[string]bool{}
		for _, h := range rcv.acked() {
			got[h.id()] = true
		}
		for _, e := range seen {
			if !got[e.id] {
				return false
			}
		}
		return true
	})
	if n := subscribes(agent, task); n != 0 {
		t.Fatalf("the gateway subscribed %d times to a task a client streams", n)
	}
	left := time.Now()
	s.close()
	wantAllParts(t, a2a.V10, rcv, 12)
	var first time.Time
	for _, r := range agent.Requests() {
		if r.Op.Method == a2a.MethodSubscribe && r.Op.TaskID == task {
			first = r.At
			break
		}
	}
	if first.IsZero() || first.Before(left) {
		t.Fatalf("first subscription at %v; want one after the client left at %v", first, left)
	}
}
