package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// inlineSend is a streaming send carrying a push config inline, in one
// version and binding, with the body the agent must receive instead: the
// same bytes without the config.
type inlineSend struct {
	name      string
	v         a2a.Version
	rest      bool
	body      string
	forwarded string
}

func inlineSends(c *caller, text, url string) []inlineSend {
	cfg10 := `"taskPushNotificationConfig":{"url":"` + url + `","token":"tok-1"}`
	cfg03 := `"pushNotificationConfig" : {"url":"` + url + `","token":"tok-1"}`
	var out []inlineSend
	add := func(name string, v a2a.Version, rest bool, before, config, after string) {
		out = append(out, inlineSend{name: name, v: v, rest: rest, body: before + config + after, forwarded: before + after})
	}
	// The config first, last and alone in configuration: each cut keeps
	// every other byte.
	env := func(method a2a.Method, v a2a.Version) string {
		return `{` + future + `, "jsonrpc":"2.0","id":"` + c.nextID("s") + `","method":"` + a2a.RPCMethodName(method, v) + `","params":`
	}
	add("1.0 JSON-RPC", a2a.V10, false,
		env(a2a.MethodStream, a2a.V10)+`{"message":`+c.msg10(text)+`,"configuration":{`, cfg10+`, `, `"acceptedOutputModes":["text/plain"]}}}`)
	add("1.0 HTTP+JSON", a2a.V10, true,
		`{"message":`+c.msg10(text)+`,"configuration":{"acceptedOutputModes":["text/plain"]`, `,`+cfg10, `},`+future+`}`)
	add("0.3 JSON-RPC", a2a.V03, false,
		env(a2a.MethodStream, a2a.V03)+`{"message":`+c.msg03(text)+`,"configuration":{ `, cfg03, ` }}}`)
	add("0.3 HTTP+JSON", a2a.V03, true,
		`{"message":`+c.msg03(text)+`,"configuration":{"blocking":false`, ` ,`+cfg03, `}}`)
	return out
}

// open starts the send's stream.
func (s inlineSend) open(t *testing.T, c *caller) *stream {
	t.Helper()
	rq := request{method: http.MethodPost, path: "/", body: []byte(s.body), rpc: !s.rest}
	if s.v == a2a.V10 {
		rq.header = v10()
	}
	if s.rest {
		rq.path = "/message:stream"
		if s.v == a2a.V03 {
			rq.path = "/v1/message:stream"
		}
	}
	return c.open(t, context.Background(), rq)
}

// A streaming send with a config inline: the agent never sees the config,
// the receiver gets every event in order and then the terminal one, as
// 1.0 StreamResponses or 0.3 full Tasks.
func TestPushStreamingSendWithInlineConfig(t *testing.T) {
	env := startPush(t)
	for _, send := range inlineSends(env.acme, "stream 3", "URL") {
		t.Run(send.name, func(t *testing.T) {
			rcv := newWebhook(t)
			send.body = strings.ReplaceAll(send.body, "URL", rcv.url())
			send.forwarded = strings.ReplaceAll(send.forwarded, "URL", rcv.url())
			env.Agent.ResetRequests()
			events := streamResults(t, send.open(t, env.acme))
			if len(events) != 6 {
				t.Fatalf("the client got %d events, want task, working, 3 chunks, completed", len(events))
			}
			var sends []string
			for _, r := range env.Agent.Requests() {
				if r.Op.Method == a2a.MethodStream {
					sends = append(sends, string(r.Body))
				}
			}
			if len(sends) != 1 || sends[0] != send.forwarded {
				t.Fatalf("the agent received\n%s\nwant\n%s", sends, send.forwarded)
			}
			got := waitNotified(t, rcv, events, send.v)
			for i, n := range got {
				if n.id() != push.EventID(events[i]) || n.header.Get(a2a.NotificationTokenHeader) != "tok-1" {
					t.Fatalf("notification %d: id %q token %q; want %q tok-1", i, n.id(), n.header.Get(a2a.NotificationTokenHeader), push.EventID(events[i]))
				}
				if ct := n.header.Get("Content-Type"); ct != a2a.ContentType(send.v) {
					t.Fatalf("notification %d: Content-Type %q", i, ct)
				}
			}
			if send.v == a2a.V10 {
				for i, n := range got {
					if !bytes.Equal(n.body, events[i]) {
						t.Fatalf("notification %d:\n got %s\nwant %s", i, n.body, events[i])
					}
				}
				return
			}
			// 0.3: every notification is the whole task as it was after
			// the event; the chunks accumulate in one artifact.
			states := []string{"submitted", "working", "working", "working", "working", "completed"}
			for i, n := range got {
				task := decodeTask03(t, n.body)
				if task.Kind != "task" || task.Status.State != states[i] {
					t.Fatalf("notification %d: kind %q state %q; want task %s: %s", i, task.Kind, task.Status.State, states[i], n.body)
				}
			}
			all := rcv.acked()
			last := decodeTask03(t, all[len(all)-1].body)
			if len(last.Artifacts) != 1 || len(last.Artifacts[0].Parts) != 3 || last.Artifacts[0].Parts[2].Text != "chunk 3 of 3" || last.Artifacts[0].Parts[0].Kind != "text" {
				t.Fatalf("final task: %s", got[len(got)-1].body)
			}
		})
	}
}

// task03 is the part of a 0.3 Task the tests read.
type task03 struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string `json:"artifactId"`
		Parts      []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

func decodeTask03(t *testing.T, b []byte) task03 {
	t.Helper()
	var task task03
	if err := json.Unmarshal(b, &task); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return task
}

// A JSON send with a config inline registers it for the task the answer
// names, before the caller sees the answer, and notifies the answer.
func TestPushJSONSendWithInlineConfig(t *testing.T) {
	env := startPush(t)
	rcv := newWebhook(t)
	params := `{"message":` + env.acme.msg10("complete hi") + `,"configuration":{"taskPushNotificationConfig":{"id":"cfg-7","url":"` + rcv.url() + `"}}}`
	resp, b := env.acme.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSend, a2a.V10, "s1", params)})
	result, _, err := a2a.UnwrapRPC(b)
	if resp.StatusCode != http.StatusOK || err != nil || result == nil {
		t.Fatalf("send: HTTP %d: %s", resp.StatusCode, b)
	}
	task := taskIDOf(t, b)
	_, got, code := env.acme.call(t, pushDialects()[0], pushDialects()[0].get(task, "cfg-7"), "rq")
	if code != 0 || !bytes.Contains(got, []byte(rcv.url())) {
		t.Fatalf("the inline config is not registered: %s", got)
	}
	n := waitNotified(t, rcv, [][]byte{result}, a2a.V10)[0]
	if !bytes.Equal(n.body, result) {
		t.Fatalf("notification %s, want the answer %s", n.body, result)
	}
	for _, r := range env.Agent.Requests() {
		if bytes.Contains(r.Body, []byte("taskPushNotificationConfig")) {
			t.Fatalf("the agent saw the config: %s", r.Body)
		}
	}
}

// The receiver fails, asks to slow down, then recovers: every notification
// arrives once acknowledged, in order; other copies are retries of the
// same id.
func TestPushRetriesKeepOrder(t *testing.T) {
	env := startPush(t)
	rcv := newWebhook(t)
	// The first notification fails three times, is then asked to wait a
	// second, and goes through; the third fails once more.
	var mu sync.Mutex
	var order []string
	tries := map[string]int{}
	var paced [2]time.Time // when the 429 was answered, when its retry came
	rcv.setAnswer(func(_ int, body []byte) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		id := push.EventID(body)
		if tries[id] == 0 {
			order = append(order, id)
		}
		tries[id]++
		switch {
		case id == order[0] && tries[id] <= 3:
			return http.StatusInternalServerError, nil
		case id == order[0] && tries[id] == 4:
			paced[0] = time.Now()
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}
		case id == order[0] && tries[id] == 5:
			paced[1] = time.Now()
		case len(order) == 3 && id == order[2] && tries[id] == 1:
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusOK, nil
	})
	send := inlineSends(env.acme, "stream 3", rcv.url())[0]
	events := streamResults(t, send.open(t, env.acme))
	got := waitNotified(t, rcv, events, a2a.V10)
	for i, ev := range events {
		if !bytes.Equal(got[i].body, ev) {
			t.Fatalf("acknowledged notification %d:\n got %s\nwant %s", i, got[i].body, ev)
		}
	}
	// Every request was a try at the notification at the head of the
	// queue: none came before the one ahead of it was acknowledged.
	acked := map[string]bool{}
	for _, r := range rcv.all() {
		for _, id := range order {
			if id == r.id() {
				break
			}
			if !acked[id] {
				t.Fatalf("notification %s was tried before %s was acknowledged", r.id(), id)
			}
		}
		acked[r.id()] = acked[r.id()] || r.status < 300
	}
	mu.Lock()
	gap := paced[1].Sub(paced[0])
	mu.Unlock()
	if gap < 900*time.Millisecond {
		t.Fatalf("the retry after 429 with Retry-After: 1 came %s later", gap)
	}
	mfs := scrape(t, env.Admin)
	for name, want := range map[string]float64{
		`a2agw_push_notifications_retried_total{reason="status_5xx"}`: 4,
		`a2agw_push_notifications_retried_total{reason="status_429"}`: 1,
	} {
		if got := pushMetric(mfs, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// The counter moves just after the acknowledgement is recorded.
	eventually(t, "every delivery is counted", func() bool {
		return pushMetric(scrape(t, env.Admin), `a2agw_push_notifications_delivered_total`) >= float64(len(events))
	})
}

// pushMetric reads one sample, named like name{label="value",...}.
func pushMetric(mfs map[string]*dto.MetricFamily, name string) float64 {
	base, labels, _ := strings.Cut(strings.TrimSuffix(name, "}"), "{")
	mf := mfs[base]
	if mf == nil {
		return -1
	}
	for _, m := range mf.GetMetric() {
		var have []string
		for _, lp := range m.GetLabel() {
			have = append(have, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
		}
		if strings.Join(have, ",") != labels {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// A receiver that answers 410 Gone disables its endpoint: what was queued
// for it is dead-lettered, its config deleted, and nothing more is sent.
func TestPushGoneDisablesEndpoint(t *testing.T) {
	env := startPush(t)
	rcv := newWebhook(t)
	release := make(chan struct{})
	rcv.setAnswer(func(n int, _ []byte) (int, http.Header) {
		<-release
		return http.StatusGone, nil
	})
	send := inlineSends(env.acme, "stream 3", rcv.url())[0]
	events := streamResults(t, send.open(t, env.acme))
	task := taskIDOf(t, a2a.RPCResult([]byte(`"x"`), events[0]))
	close(release)

	var dead struct {
		DeadLetters []struct {
			ID, TaskID, Reason string
		} `json:"deadLetters"`
	}
	want := map[string]bool{}
	for _, ev := range events {
		want[push.EventID(ev)] = true
	}
	eventually(t, "every notification is dead-lettered", func() bool {
		if env.opsGet(t, "/admin/push/dead-letters?limit=100", &dead) != http.StatusOK {
			return false
		}
		n := 0
		for _, dl := range dead.DeadLetters {
			if want[dl.ID] {
				n++
			}
		}
		return n == len(events)
	})
	for i, dl := range dead.DeadLetters {
		if dl.TaskID != task || !strings.Contains(dl.Reason, "410") {
			t.Fatalf("dead letter %d: %+v", i, dl)
		}
	}
	d := pushDialects()[0]
	eventually(t, "the config is deleted", func() bool {
		_, b, code := env.acme.call(t, d, d.list(task), "rq")
		return code == 0 && canonicalJSON(t, b) == `{"configs":[],"nextPageToken":""}`
	})
	if n := len(rcv.all()); n != 1 {
		t.Fatalf("the receiver got %d requests after answering 410", n)
	}
	eventually(t, "the dead letters are counted", func() bool {
		return pushMetric(scrape(t, env.Admin), `a2agw_push_notifications_dead_lettered_total{reason="gone"}`) == float64(len(dead.DeadLetters))
	})
	if code := env.opsGet(t, "/admin/push/dead-letters", nil); code != http.StatusOK {
		t.Fatalf("dead letters with the ops token: HTTP %d", code)
	}
	if resp, _ := env.Do(t, http.MethodGet, env.Admin+"/admin/push/dead-letters", "", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dead letters without the ops token: HTTP %d", resp.StatusCode)
	}
}

// Notifications are signed: the JWT verifies with the JWKS the gateway
// publishes and carries the body's hash, the Standard Webhooks signature
// verifies with the shared secret, and neither accepts a changed body. A
// config with credentials of its own keeps Authorization; the JWT moves
// to its own header. The same task notifies a 0.3 consumer in 0.3 shape.
func TestPushSignaturesAndVersions(t *testing.T) {
	// A key being rotated in is published before it signs.
	next, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	nextPath := filepath.Join(t.TempDir(), "push-next.pem")
	if err := jose.WritePrivateKeyPEM(nextPath, next); err != nil {
		t.Fatal(err)
	}
	env := startPush(t, func(c *config.Config) {
		c.Push.Signing.KeyFiles = append(c.Push.Signing.KeyFiles, nextPath)
		c.Push.Signing.KeyIDs = append(c.Push.Signing.KeyIDs, "push-next")
	})
	task := env.acme.waitingTask(t)
	plain, basic, old := newWebhook(t), newWebhook(t), newWebhook(t)
	d10, d03 := pushDialects()[0], pushDialects()[2]
	for _, c := range []struct {
		d      pushDialect
		params string
	}{
		{d10, `{"taskId":"` + task + `","id":"plain","url":"` + plain.url() + `"}`},
		{d10, `{"taskId":"` + task + `","id":"basic","url":"` + basic.url() + `","token":"t0k","authentication":{"scheme":"Basic","credentials":"dXNlcjpwYXNz"}}`},
		{d03, `{"taskId":"` + task + `","pushNotificationConfig":{"id":"old","url":"` + old.url() + `"}}`},
	} {
		if _, b, code := env.acme.call(t, c.d, pushCall{method: a2a.MethodPushConfigSet, params: c.params}, "rq"); code != 0 {
			t.Fatalf("create: %s", b)
		}
	}
	sub := env.acme.open(t, context.Background(), request{method: http.MethodPost, path: "/", header: v10(), rpc: true,
		body: rpcBody(a2a.MethodSubscribe, a2a.V10, "sub", `{"id":"`+task+`"}`)})
	first, err := sub.rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if _, b := env.acme.do(t, request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodCancelTask, a2a.V10, "c", `{"id":"`+task+`"}`)}); !bytes.Contains(b, []byte("TASK_STATE_CANCELED")) {
		t.Fatalf("cancel: %s", b)
	}
	rest := streamResults(t, sub)
	firstResult, _, _ := a2a.UnwrapRPC(first.Data)
	events := append([][]byte{firstResult}, rest...)

	keys := env.jwks(t)
	if len(keys) != 2 || keys["push-next"] == nil || keys[pushKeyID] == nil {
		t.Fatalf("the JWKS publishes %d keys, want the active and the next one", len(keys))
	}
	issuer := env.Config.PublicURL
	for _, r := range []*webhook{plain, basic} {
		waitNotified(t, r, events, a2a.V10)
		for i, n := range r.acked() {
			raw, ok := strings.CutPrefix(n.header.Get("Authorization"), "Bearer ")
			if r == basic {
				if n.header.Get("Authorization") != "Basic dXNlcjpwYXNz" || n.header.Get(a2a.NotificationTokenHeader) != "t0k" {
					t.Fatalf("basic: Authorization %q token %q", n.header.Get("Authorization"), n.header.Get(a2a.NotificationTokenHeader))
				}
				raw, ok = n.header.Get(push.HeaderNotificationJWT), true
			}
			if !ok {
				t.Fatalf("notification %d carries no JWT: %v", i, n.header)
			}
			claims, err := verifyPushJWT(keys, raw, issuer, r.url())
			if err != nil {
				t.Fatalf("notification %d: the JWT does not verify with the published JWKS: %v", i, err)
			}
			if tok, _, _ := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{}); tok.Header["kid"] != pushKeyID {
				t.Fatalf("notification %d is signed with %v, want the first key", i, tok.Header["kid"])
			}
			sum := sha256.Sum256(n.body)
			if claims["jti"] != n.id() || claims["taskId"] != task || claims[push.ClaimBodySHA256] != hex.EncodeToString(sum[:]) {
				t.Fatalf("notification %d: claims %v", i, claims)
			}
			if err := push.VerifyStandardWebhook(env.secret, n.header, n.body, time.Now(), 0); err != nil {
				t.Fatalf("notification %d: Standard Webhooks: %v", i, err)
			}
			tampered := bytes.Replace(n.body, []byte(task), []byte("forged-task"), 1)
			forged := sha256.Sum256(tampered)
			if push.VerifyStandardWebhook(env.secret, n.header, tampered, time.Now(), 0) == nil || claims[push.ClaimBodySHA256] == hex.EncodeToString(forged[:]) {
				t.Fatalf("notification %d: a tampered body verifies", i)
			}
		}
	}
	got := waitNotified(t, old, events, a2a.V03)
	if first, last := decodeTask03(t, got[0].body), decodeTask03(t, got[1].body); first.Kind != "task" || first.ID != task || first.Status.State != "working" || last.Status.State != "canceled" {
		t.Fatalf("0.3 consumer got %s ... %s", got[0].body, got[len(got)-1].body)
	}
}

// Redis stops while notifications wait for a receiver: once it is back,
// every notification that was acknowledged to the relay is delivered, in
// order. The first is answered while Redis is down; when the gateway
// cannot record that, it sends it again: a duplicate with the same id.
func TestPushSurvivesRedisOutage(t *testing.T) {
	env := startPush(t)
	rcv := newWebhook(t)
	up := make(chan struct{})
	rcv.setAnswer(func(int, []byte) (int, http.Header) {
		<-up
		return http.StatusOK, nil
	})
	send := inlineSends(env.acme, "stream 5", rcv.url())[0]
	// Every event the client sees was written to the queue first.
	events := streamResults(t, send.open(t, env.acme))
	env.redis.Stop(t)
	close(up)
	eventually(t, "the first notification is answered", func() bool { return len(rcv.all()) > 0 })
	env.redis.Restart(t)
	got := waitNotified(t, rcv, events, a2a.V10)
	for i, ev := range events {
		if !bytes.Equal(got[i].body, ev) {
			t.Fatalf("notification %d after the outage:\n got %s\nwant %s", i, got[i].body, ev)
		}
	}
}
