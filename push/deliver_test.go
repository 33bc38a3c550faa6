package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// deliverTimeout only keeps a broken deliverer from hanging a test; no test
// asserts how long anything took, only lower bounds the protocol demands.
const deliverTimeout = 60 * time.Second

const (
	testToken  = "push-config-token-s3cret"
	testCreds  = "basic-credentials-s3cret"
	testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// testStores runs f against the memory store and a real redis-server.
func testStores(t *testing.T, f func(t *testing.T, st store.DeliveryStore)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		s := store.NewMemory(store.Options{})
		t.Cleanup(func() { _ = s.Close() })
		f(t, s.Delivery())
	})
	t.Run("redis", func(t *testing.T) {
		client := redistest.Start(t).Client(t)
		f(t, store.NewRedis(client, store.Options{KeyPrefix: "push-test"}).Delivery())
	})
}

// received is one request a test receiver saw.
type received struct {
	endpoint, id string
	at           time.Time
	status       int
}

// testReceiver is a webhook receiver on loopback. It verifies every
// request's Standard Webhooks signature and headers, and answers as
// respond says for the attempt-th request of a notification (from 1).
type testReceiver struct {
	t       *testing.T
	srv     *httptest.Server
	secret  []byte
	respond func(endpoint, id string, attempt int) (int, http.Header)

	mu       sync.Mutex
	log      []received
	attempts map[string]int
	bad      []string
}

func newTestReceiver(t *testing.T, respond func(endpoint, id string, attempt int) (int, http.Header)) *testReceiver {
	t.Helper()
	secret, err := ParseWebhookSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	r := &testReceiver{t: t, secret: secret, respond: respond, attempts: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *testReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get(HeaderWebhookID)
	var problems []string
	if err := VerifyStandardWebhook(r.secret, req.Header, body, time.Now(), 0); err != nil {
		problems = append(problems, err.Error())
	}
	if got := req.Header.Get(HeaderNotificationToken); got != testToken {
		problems = append(problems, "token header "+got)
	}
	if req.Header.Get(HeaderNotificationJWT) == "" || req.Header.Get("Authorization") != "Basic "+testCreds {
		problems = append(problems, "authorization headers")
	}
	if got := req.Header.Get("Content-Type"); got != "application/a2a+json" {
		problems = append(problems, "content type "+got)
	}
	var b struct{ ID string }
	if err := json.Unmarshal(body, &b); err != nil || b.ID != id {
		problems = append(problems, fmt.Sprintf("body %q does not carry id %q", body, id))
	}
	endpoint := strings.TrimPrefix(req.URL.Path, "/")
	r.mu.Lock()
	r.attempts[endpoint+"|"+id]++
	n := r.attempts[endpoint+"|"+id]
	status, h := http.StatusOK, http.Header(nil)
	if r.respond != nil {
		status, h = r.respond(endpoint, id, n)
	}
	r.log = append(r.log, received{endpoint: endpoint, id: id, at: time.Now(), status: status})
	r.bad = append(r.bad, problems...)
	r.mu.Unlock()
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
}

func (r *testReceiver) snapshot() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// delivered returns, per endpoint, the ids answered 2xx, in order.
func (r *testReceiver) delivered() map[string][]string {
	out := map[string][]string{}
	for _, x := range r.snapshot() {
		if x.status >= 200 && x.status <= 299 {
			out[x.endpoint] = append(out[x.endpoint], x.id)
		}
	}
	return out
}

func (r *testReceiver) checkRequests(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.bad {
		t.Errorf("receiver saw a bad request: %s", p)
	}
}

// notification builds the delivery of id to the receiver's path endpoint.
func (r *testReceiver) notification(t *testing.T, endpoint, id string) store.Delivery {
	t.Helper()
	secret, _ := ParseWebhookSecret(testSecret)
	p, err := EncodePayload(Request{
		URL: r.srv.URL + "/" + endpoint + "?sig=query-s3cret", ContentType: "application/a2a+json",
		Body:  []byte(fmt.Sprintf(`{"id":%q}`, id)),
		Token: testToken, AuthScheme: "Basic", AuthCredentials: testCreds, WebhookSecret: secret,
	})
	if err != nil {
		t.Fatal(err)
	}
	return store.Delivery{ID: id, Endpoint: endpoint, TaskID: "task-" + endpoint, Payload: p}
}

func testSender(t *testing.T) *HTTPSender {
	t.Helper()
	s, _ := testSenderWith(t, Allowlist{"127.0.0.1:*"})
	return s
}

// testSenderWith returns a sender whose URL policy allows allow, and its
// signer.
func testSenderWith(t *testing.T, allow Allowlist) (*HTTPSender, *Signer) {
	t.Helper()
	policy, err := NewURLPolicy(allow, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{writeKey(t, t.TempDir(), "push", ed25519Key(t))}})
	return NewHTTPSender(policy, signer, 2*time.Second), signer
}

// recordingMetrics counts the events of DeliveryMetrics.
type recordingMetrics struct {
	mu                sync.Mutex
	queued, delivered int
	retried, dead     map[string]int
	backlogs          int
}

func newRecordingMetrics() *recordingMetrics {
	return &recordingMetrics{retried: map[string]int{}, dead: map[string]int{}}
}

func (m *recordingMetrics) Queued() { m.mu.Lock(); m.queued++; m.mu.Unlock() }
func (m *recordingMetrics) Delivered(l time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l < 0 {
		panic("negative latency")
	}
	m.delivered++
}
func (m *recordingMetrics) Retried(r string)      { m.mu.Lock(); m.retried[r]++; m.mu.Unlock() }
func (m *recordingMetrics) DeadLettered(r string) { m.mu.Lock(); m.dead[r]++; m.mu.Unlock() }
func (m *recordingMetrics) Backlog(int, time.Duration) {
	m.mu.Lock()
	m.backlogs++
	m.mu.Unlock()
}

func (m *recordingMetrics) get(f func(*recordingMetrics) int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m)
}

// fastOptions are options for tests: tiny schedules, quick polls.
func fastOptions(schedule ...time.Duration) DeliveryOptions {
	return DeliveryOptions{
		Schedule: schedule, NoJitter: true, Timeout: 2 * time.Second, LeaseTTL: 5 * time.Second,
		PollInterval: 10 * time.Millisecond, GaugeInterval: 50 * time.Millisecond, Holder: "test-replica",
	}
}

// runDeliverer runs d until the test ends.
func runDeliverer(t *testing.T, d *Deliverer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(deliverTimeout):
			t.Error("Run did not return after its context ended")
		}
	})
}

func enqueue(t *testing.T, d *Deliverer, n store.Delivery) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	if err := d.Enqueue(ctx, n); err != nil {
		t.Fatalf("Enqueue(%q, %q): %v", n.Endpoint, n.ID, err)
	}
}

// waitUntil polls cond until it holds, failing after deliverTimeout.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(deliverTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %s for %s", deliverTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func TestDeliverRetriesKeepOrder(t *testing.T) {
	testStores(t, func(t *testing.T, st store.DeliveryStore) {
		// On "flaky", n00 fails three times and n02 once; "steady" never fails.
		failures := map[string]int{"n00": 3, "n02": 1}
		rcv := newTestReceiver(t, func(endpoint, id string, attempt int) (int, http.Header) {
			if endpoint == "flaky" && attempt <= failures[id] {
				return []int{http.StatusServiceUnavailable, http.StatusInternalServerError, http.StatusBadGateway}[attempt-1], nil
			}
			return http.StatusOK, nil
		})
		m := newRecordingMetrics()
		d := NewDeliverer(st, testSender(t), fastOptions(10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond), m, nil)
		want := ids("n", 10)
		for _, id := range want {
			enqueue(t, d, rcv.notification(t, "flaky", id))
			enqueue(t, d, rcv.notification(t, "steady", id))
		}
		// Duplicates are dropped before any attempt.
		enqueue(t, d, rcv.notification(t, "flaky", "n05"))
		runDeliverer(t, d)
		waitUntil(t, "every notification to be delivered", func() bool {
			got := rcv.delivered()
			return len(got["flaky"]) >= len(want) && len(got["steady"]) >= len(want)
		})
		rcv.checkRequests(t)
		got := rcv.delivered()
		for _, ep := range []string{"flaky", "steady"} {
			if !slices.Equal(got[ep], want) {
				t.Errorf("%s: delivered %q, want each once in order %q", ep, got[ep], want)
			}
		}
		// Order across retries: no notification was attempted before every
		// earlier one of its endpoint had been delivered.
		done := map[string]bool{}
		attempts := map[string]int{}
		for _, x := range rcv.snapshot() {
			if x.endpoint != "flaky" {
				continue
			}
			attempts[x.id]++
			for _, earlier := range want[:slices.Index(want, x.id)] {
				if !done[earlier] {
					t.Errorf("%s was attempted before %s was delivered", x.id, earlier)
				}
			}
			if x.status == http.StatusOK {
				done[x.id] = true
			}
		}
		for _, id := range want {
			if wantN := failures[id] + 1; attempts[id] != wantN {
				t.Errorf("%s: %d attempts, want %d", id, attempts[id], wantN)
			}
		}
		waitUntil(t, "the metrics", func() bool { return m.get(func(m *recordingMetrics) int { return m.delivered }) == 20 })
		if q, r5, rOther := m.get(func(m *recordingMetrics) int { return m.queued }),
			m.get(func(m *recordingMetrics) int { return m.retried[RetryStatus5xx] }),
			m.get(func(m *recordingMetrics) int { return len(m.dead) }); q != 20 || r5 != 4 || rOther != 0 {
			t.Errorf("metrics: queued %d, retried 5xx %d, dead-letter reasons %d; want 20, 4, 0", q, r5, rOther)
		}
		if n, _, err := st.Depth(context.Background(), "flaky"); err != nil || n != 0 {
			t.Errorf("Depth after delivery = %d, %v", n, err)
		}
	})
}

func TestDeliverHonoursRetryAfter(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			rcv := newTestReceiver(t, func(_, id string, attempt int) (int, http.Header) {
				if id == "n00" && attempt == 1 {
					return status, http.Header{"Retry-After": {"1"}}
				}
				return http.StatusOK, nil
			})
			st := store.NewMemory(store.Options{})
			t.Cleanup(func() { _ = st.Close() })
			m := newRecordingMetrics()
			d := NewDeliverer(st.Delivery(), testSender(t), fastOptions(time.Millisecond), m, nil)
			enqueue(t, d, rcv.notification(t, "ep", "n00"))
			enqueue(t, d, rcv.notification(t, "ep", "n01"))
			runDeliverer(t, d)
			waitUntil(t, "both notifications", func() bool { return len(rcv.delivered()["ep"]) == 2 })
			rcv.checkRequests(t)
			log := rcv.snapshot()
			if len(log) != 3 || log[0].id != "n00" || log[1].id != "n00" || log[2].id != "n01" {
				t.Fatalf("requests = %+v, want n00 twice, then n01", log)
			}
			// The schedule says 1ms; the receiver asked for a second.
			if gap := log[1].at.Sub(log[0].at); gap < time.Second {
				t.Errorf("retry came %s after the %d, before its Retry-After of 1s", gap, status)
			}
			reason := map[int]string{429: RetryStatus429, 503: RetryStatus5xx}[status]
			if n := m.get(func(m *recordingMetrics) int { return m.retried[reason] }); n != 1 {
				t.Errorf("retried[%s] = %d, want 1", reason, n)
			}
		})
	}
}

func TestDeliverGoneDisablesEndpoint(t *testing.T) {
	testStores(t, func(t *testing.T, st store.DeliveryStore) {
		rcv := newTestReceiver(t, func(endpoint, _ string, _ int) (int, http.Header) {
			if endpoint == "gone" {
				return http.StatusGone, nil
			}
			return http.StatusOK, nil
		})
		m := newRecordingMetrics()
		disabled := make(chan string, 4)
		o := fastOptions(10 * time.Millisecond)
		o.OnDisabled = func(ep string) { disabled <- ep }
		d := NewDeliverer(st, testSender(t), o, m, nil)
		for _, id := range ids("n", 3) {
			enqueue(t, d, rcv.notification(t, "gone", id))
		}
		enqueue(t, d, rcv.notification(t, "other", "n00"))
		runDeliverer(t, d)
		select {
		case ep := <-disabled:
			if ep != "gone" {
				t.Fatalf("OnDisabled(%q), want gone", ep)
			}
		case <-time.After(deliverTimeout):
			t.Fatal("OnDisabled was not called")
		}
		waitUntil(t, "the other endpoint", func() bool { return len(rcv.delivered()["other"]) == 1 })
		var goneRequests int
		for _, x := range rcv.snapshot() {
			if x.endpoint == "gone" {
				goneRequests++
			}
		}
		if goneRequests != 1 {
			t.Errorf("the gone receiver got %d requests, want 1", goneRequests)
		}
		if n := m.get(func(m *recordingMetrics) int { return m.dead[DeadGone] }); n != 3 {
			t.Errorf("dead-lettered as gone: %d, want 3", n)
		}
		dls, _, err := st.DeadLetters(context.Background(), "", 10)
		if err != nil || len(dls) != 3 {
			t.Fatalf("dead letters = %d, %v; want 3", len(dls), err)
		}
		for _, dl := range dls {
			if !strings.Contains(dl.Reason, "410") {
				t.Errorf("dead letter %s reason %q", dl.ID, dl.Reason)
			}
		}
		err = d.Enqueue(context.Background(), rcv.notification(t, "gone", "n09"))
		if !errors.Is(err, store.ErrEndpointDisabled) {
			t.Fatalf("Enqueue to a disabled endpoint: %v, want ErrEndpointDisabled", err)
		}
	})
}

// adminCall makes one request to the admin API and decodes its JSON answer.
func adminCall(t *testing.T, srv *httptest.Server, method, path string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, secret := range []string{testToken, testCreds, "query-s3cret", strings.TrimPrefix(testSecret, "whsec_")} {
		if strings.Contains(string(body), secret) {
			t.Errorf("%s %s leaked a secret: %s", method, path, body)
		}
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, body, err)
		}
	}
	return resp.StatusCode
}

func TestDeliverDeadLetterAndRedeliverViaAdmin(t *testing.T) {
	testStores(t, func(t *testing.T, st store.DeliveryStore) {
		var mu sync.Mutex
		healthy := false
		rcv := newTestReceiver(t, func(_, _ string, _ int) (int, http.Header) {
			mu.Lock()
			defer mu.Unlock()
			if healthy {
				return http.StatusNoContent, nil
			}
			return http.StatusInternalServerError, nil
		})
		m := newRecordingMetrics()
		d := NewDeliverer(st, testSender(t), fastOptions(5*time.Millisecond, 5*time.Millisecond), m, nil)
		admin := httptest.NewServer(d.AdminHandler())
		t.Cleanup(admin.Close)
		// The endpoint key has slashes and colons, as callers scope it.
		const ep = "acme/agent:t1/cfg"
		enqueue(t, d, rcv.notification(t, ep, "t1:1"))
		runDeliverer(t, d)
		waitUntil(t, "the dead letter", func() bool { return m.get(func(m *recordingMetrics) int { return m.dead[DeadRetriesExhausted] }) == 1 })

		var list struct {
			DeadLetters []deadLetterView
			NextCursor  string
		}
		if code := adminCall(t, admin, http.MethodGet, "/dead-letters?limit=10", &list); code != http.StatusOK || len(list.DeadLetters) != 1 {
			t.Fatalf("list = %d, %+v", code, list)
		}
		if v := list.DeadLetters[0]; v.Endpoint != ep || v.ID != "t1:1" || v.AttemptCount != 3 || v.LastStatus != 500 ||
			!strings.Contains(v.Reason, "no 2xx after 3 attempts") || v.Attempts != nil {
			t.Errorf("list entry = %+v", v)
		}
		path := "/dead-letters/" + url.PathEscape(ep) + "/" + url.PathEscape("t1:1")
		var detail deadLetterView
		if code := adminCall(t, admin, http.MethodGet, path, &detail); code != http.StatusOK {
			t.Fatalf("detail = %d", code)
		}
		if len(detail.Attempts) != 3 || detail.Attempts[0].RetryAt == nil || detail.Attempts[2].RetryAt != nil || detail.Attempts[1].Status != 500 {
			t.Errorf("attempts = %+v", detail.Attempts)
		}
		if r := detail.Request; r == nil || r.Receiver != rcv.srv.URL || r.ContentType != "application/a2a+json" || r.BodyBytes != len(`{"id":"t1:1"}`) {
			t.Errorf("request = %+v", r)
		}

		mu.Lock()
		healthy = true
		mu.Unlock()
		var accepted map[string]string
		if code := adminCall(t, admin, http.MethodPost, path+"/redeliver", &accepted); code != http.StatusAccepted || accepted["status"] != "queued" {
			t.Fatalf("redeliver = %d, %v", code, accepted)
		}
		waitUntil(t, "the redelivered notification", func() bool { return len(rcv.delivered()[ep]) == 1 })
		rcv.checkRequests(t)
		for _, c := range []struct {
			method, path string
			want         int
		}{
			{http.MethodGet, path, http.StatusNotFound},
			{http.MethodPost, path + "/redeliver", http.StatusNotFound},
			{http.MethodGet, "/dead-letters?limit=0", http.StatusBadRequest},
			{http.MethodGet, "/dead-letters?limit=x", http.StatusBadRequest},
			{http.MethodGet, "/dead-letters?cursor=not-a-cursor", http.StatusBadRequest},
			{http.MethodDelete, path, http.StatusMethodNotAllowed},
		} {
			var e map[string]string
			var out any = &e
			if c.want == http.StatusMethodNotAllowed {
				out = nil // net/http's own plain-text answer
			}
			if code := adminCall(t, admin, c.method, c.path, out); code != c.want || (out != nil && e["error"] == "") {
				t.Errorf("%s %s = %d %v, want %d with an error", c.method, c.path, code, e, c.want)
			}
		}
	})
}

func TestDeliverDeadReceiverDoesNotDelayHealthy(t *testing.T) {
	testStores(t, func(t *testing.T, st store.DeliveryStore) {
		dead := newTestReceiver(t, func(_, _ string, _ int) (int, http.Header) {
			time.Sleep(50 * time.Millisecond) // slow as well as failing
			return http.StatusServiceUnavailable, nil
		})
		healthy := newTestReceiver(t, nil)
		// A long schedule: the dead receiver's notifications are still
		// retrying when the test ends.
		schedule := slices.Repeat([]time.Duration{time.Second}, 30)
		o := fastOptions(schedule...)
		o.NoJitter = false
		o.Workers = 4
		o.PerReceiverConcurrency = 2
		o.BreakerFailures, o.BreakerCooldown = 3, 500*time.Millisecond
		m := newRecordingMetrics()
		d := NewDeliverer(st, testSender(t), o, m, nil)
		// The dead receiver's notifications are enqueued first, so they are
		// the most overdue whenever workers look for work.
		for i := range 20 {
			for _, id := range ids("d", 3) {
				enqueue(t, d, dead.notification(t, fmt.Sprint("dead-", i), id))
			}
		}
		for i := range 20 {
			for _, id := range ids("h", 5) {
				enqueue(t, d, healthy.notification(t, fmt.Sprint("healthy-", i), id))
			}
		}
		runDeliverer(t, d)
		waitUntil(t, "the healthy receiver's notifications", func() bool {
			n := 0
			for _, got := range healthy.delivered() {
				n += len(got)
			}
			return n == 100
		})
		for ep, got := range healthy.delivered() {
			if !slices.Equal(got, ids("h", 5)) {
				t.Errorf("%s: delivered %q", ep, got)
			}
		}
		// The dead receiver's notifications are all still queued, retrying.
		pending := 0
		for i := range 20 {
			n, _, err := st.Depth(context.Background(), fmt.Sprint("dead-", i))
			if err != nil {
				t.Fatal(err)
			}
			pending += n
		}
		if pending != 60 {
			t.Errorf("%d of the dead receiver's 60 notifications are queued, want all still retrying", pending)
		}
		if dls, _, err := st.DeadLetters(context.Background(), "", 10); err != nil || len(dls) != 0 {
			t.Errorf("dead letters = %d, %v; want none yet", len(dls), err)
		}
		if len(dead.snapshot()) == 0 {
			t.Error("the dead receiver was never tried")
		}
		healthy.checkRequests(t)
		dead.checkRequests(t)
	})
}

// TestDeliverSurvivesRedisOutage stops Redis while notifications are being
// enqueued and delivered, and restarts it from its append-only file: every
// notification whose Enqueue succeeded is delivered in the end.
func TestDeliverSurvivesRedisOutage(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := redistest.Start(t, redistest.WithAOF(), redistest.WithArgs("--appendfsync", "always"))
	s, err := store.Open(context.Background(), store.Options{KeyPrefix: "outage", Redis: store.RedisOptions{
		Addrs:       []string{srv.Addr()},
		DialTimeout: duration.Duration(timeout), ReadTimeout: duration.Duration(timeout), WriteTimeout: duration.Duration(timeout),
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	rcv := newTestReceiver(t, func(_, _ string, _ int) (int, http.Header) {
		time.Sleep(5 * time.Millisecond)
		return http.StatusOK, nil
	})
	o := fastOptions(50*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond)
	o.Timeout, o.LeaseTTL = time.Second, 2*time.Second
	d := NewDeliverer(s.Delivery(), testSender(t), o, nil, nil)
	runDeliverer(t, d)

	var acked []store.Delivery
	// Outside the outage a refused enqueue is tried again, as a caller
	// would: on a loaded machine one Redis call can still miss its 300 ms.
	enqueueSome := func(from, to int, retry bool) {
		for i := from; i < to; i++ {
			n := rcv.notification(t, fmt.Sprint("ep-", i%5), fmt.Sprintf("n%03d", i))
			for attempt := 0; ; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
				err := d.Enqueue(ctx, n)
				cancel()
				if err == nil {
					acked = append(acked, n)
					break
				}
				if !errors.Is(err, store.ErrUnavailable) {
					t.Fatalf("Enqueue: %v", err)
				}
				if !retry || attempt == 20 {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	enqueueSome(0, 60, true)
	waitUntil(t, "some deliveries before the outage", func() bool { return len(rcv.snapshot()) >= 20 })
	srv.Stop(t)
	enqueueSome(60, 80, false) // refused: not acknowledged, so not owed
	srv.Restart(t)
	waitUntil(t, "the store to answer again", func() bool { return s.Ping(context.Background()) == nil })
	enqueueSome(80, 140, true)

	waitUntil(t, "every acknowledged notification", func() bool {
		got := map[string]bool{}
		for _, x := range rcv.snapshot() {
			got[x.endpoint+"/"+x.id] = true
		}
		for _, n := range acked {
			if !got[n.Endpoint+"/"+n.ID] {
				return false
			}
		}
		return true
	})
	rcv.checkRequests(t)
	if len(acked) < 120 {
		t.Errorf("only %d of 140 enqueues succeeded; the 120 outside the outage should have", len(acked))
	}
	// Order per endpoint held through the outage: first deliveries come in
	// enqueue order (a redelivery after a lost ack may repeat an id).
	first := map[string][]string{}
	seen := map[string]bool{}
	for _, x := range rcv.snapshot() {
		if !seen[x.endpoint+x.id] {
			seen[x.endpoint+x.id] = true
			first[x.endpoint] = append(first[x.endpoint], x.id)
		}
	}
	for ep, got := range first {
		if !slices.IsSorted(got) {
			t.Errorf("%s: first deliveries out of order: %q", ep, got)
		}
	}
}

// fakeSender answers from a script and counts calls; its receiver key is
// fixed, so every endpoint shares one receiver.
type fakeSender struct {
	mu     sync.Mutex
	calls  int
	answer func(call int) (int, time.Duration, error)
}

func (f *fakeSender) Send(context.Context, store.Delivery) (int, time.Duration, error) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	return f.answer(call)
}

func (f *fakeSender) ReceiverKey(store.Delivery) (string, error) { return "https://receiver:443", nil }

func (f *fakeSender) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// firstAttempt waits for the first attempt of ep's head and returns it.
func firstAttempt(t *testing.T, st store.DeliveryStore, ep, id string) store.Attempt {
	t.Helper()
	var atts []store.Attempt
	waitUntil(t, "an attempt of "+ep, func() bool {
		var head store.Delivery
		var err error
		head, atts, _, err = readHead(context.Background(), st, ep)
		if err != nil {
			t.Fatal(err)
		}
		return head.ID == id && len(atts) > 0
	})
	return atts[0]
}

func TestDeliverAttemptOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		hint       time.Duration
		err        error
		wantDelay  time.Duration // RetryAt - At, or - (At + Latency) when fromAnswer
		fromAnswer bool
		wantErr    string
		reason     string
	}{
		{name: "Retry-After on 500 is ignored", status: 500, hint: time.Hour, wantDelay: time.Millisecond, wantErr: "500", reason: RetryStatus5xx},
		{name: "Retry-After on 503 is honoured", status: 503, hint: 20 * time.Minute, wantDelay: 20 * time.Minute, fromAnswer: true, wantErr: "503", reason: RetryStatus5xx},
		{name: "Retry-After is capped", status: 429, hint: 40 * time.Hour, wantDelay: time.Hour, fromAnswer: true, wantErr: "429", reason: RetryStatus429},
		{name: "4xx is retried", status: 404, wantDelay: time.Millisecond, wantErr: "404 Not Found", reason: RetryStatusOther},
		{name: "network error", err: errors.New("connection refused"), wantDelay: time.Millisecond, wantErr: "connection refused", reason: RetryNetwork},
		{name: "timeout", err: context.DeadlineExceeded, wantDelay: time.Millisecond, wantErr: "deadline", reason: RetryTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := store.NewMemory(store.Options{})
			t.Cleanup(func() { _ = st.Close() })
			q := st.Delivery()
			// The retry waits until the first attempt has been read: once it
			// succeeds, the delivery and its attempt log are gone.
			read := make(chan struct{})
			var readOnce sync.Once
			seen := func() { readOnce.Do(func() { close(read) }) }
			f := &fakeSender{answer: func(call int) (int, time.Duration, error) {
				if call > 1 {
					<-read
					return 200, 0, nil
				}
				return tt.status, tt.hint, tt.err
			}}
			m := newRecordingMetrics()
			d := NewDeliverer(q, f, fastOptions(time.Millisecond), m, nil)
			enqueue(t, d, store.Delivery{ID: "n1", Endpoint: "ep", TaskID: "t"})
			runDeliverer(t, d)
			t.Cleanup(seen) // before the deliverer stops, should the test fail first
			a := firstAttempt(t, q, "ep", "n1")
			seen()
			// A Retry-After counts from the answer, At + Latency; the
			// schedule from the attempt's start. Both are recorded data,
			// compared within a millisecond of clock rounding.
			want := a.At.Add(tt.wantDelay)
			if tt.fromAnswer {
				want = want.Add(a.Latency)
			}
			if diff := a.RetryAt.Sub(want); diff < -time.Millisecond || diff > time.Millisecond {
				t.Errorf("retry at At + %s, want At + %s (latency %s)", a.RetryAt.Sub(a.At), want.Sub(a.At), a.Latency)
			}
			if !strings.Contains(a.Err, tt.wantErr) || a.Status != tt.status {
				t.Errorf("attempt = %+v, want status %d and an error with %q", a, tt.status, tt.wantErr)
			}
			waitUntil(t, "the retried metric", func() bool { return m.get(func(m *recordingMetrics) int { return m.retried[tt.reason] }) == 1 })
		})
	}
}

func TestDeliverUndeliverableIsDeadLetteredAtOnce(t *testing.T) {
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	q := st.Delivery()
	m := newRecordingMetrics()
	// The real sender, given a payload it cannot read.
	d := NewDeliverer(q, testSender(t), fastOptions(time.Millisecond, time.Millisecond), m, nil)
	enqueue(t, d, store.Delivery{ID: "bad", Endpoint: "ep", TaskID: "t", Payload: []byte("not a payload")})
	enqueue(t, d, store.Delivery{ID: "n2", Endpoint: "ep", TaskID: "t", Payload: []byte("nor this")})
	runDeliverer(t, d)
	waitUntil(t, "two dead letters", func() bool { return m.get(func(m *recordingMetrics) int { return m.dead[DeadUndeliverable] }) == 2 })
	dl, ok, err := q.GetDeadLetter(context.Background(), "ep", "bad")
	if err != nil || !ok || len(dl.Attempts) != 1 || !strings.HasPrefix(dl.Reason, "undeliverable") {
		t.Fatalf("dead letter = %+v, %v, %v", dl, ok, err)
	}
	if n := m.get(func(m *recordingMetrics) int { return len(m.retried) }); n != 0 {
		t.Errorf("an undeliverable notification was retried")
	}
}

func TestDeliverBreakerSparesDeadReceiver(t *testing.T) {
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	q := st.Delivery()
	f := &fakeSender{answer: func(int) (int, time.Duration, error) { return 0, 0, errors.New("connection refused") }}
	o := fastOptions(time.Hour)
	o.BreakerFailures, o.BreakerCooldown = 2, time.Hour
	o.PerReceiverConcurrency = 1
	m := newRecordingMetrics()
	d := NewDeliverer(q, f, o, m, nil)
	for i := range 6 {
		enqueue(t, d, store.Delivery{ID: "n1", Endpoint: fmt.Sprint("ep-", i), TaskID: "t"})
	}
	runDeliverer(t, d)
	waitUntil(t, "an attempt on every endpoint", func() bool {
		return m.get(func(m *recordingMetrics) int { return m.retried[RetryNetwork] + m.retried[RetryCircuitOpen] }) == 6
	})
	if n := f.count(); n != 2 {
		t.Errorf("the dead receiver was called %d times, want 2 before the breaker opened", n)
	}
	if n := m.get(func(m *recordingMetrics) int { return m.retried[RetryCircuitOpen] }); n != 4 {
		t.Errorf("%d attempts held back by the breaker, want 4", n)
	}
	open := 0
	for i := range 6 {
		a := firstAttempt(t, q, fmt.Sprint("ep-", i), "n1")
		if strings.Contains(a.Err, "circuit breaker") {
			open++
			// Not before the breaker closes, an hour on.
			if a.RetryAt.Sub(a.At) < 59*time.Minute {
				t.Errorf("held-back attempt due %s later, before the breaker closes", a.RetryAt.Sub(a.At))
			}
		}
	}
	if open != 4 {
		t.Errorf("%d attempt logs say the breaker was open, want 4", open)
	}
}

func TestDeliverEnqueueRefusesBadIDs(t *testing.T) {
	st := store.NewMemory(store.Options{})
	t.Cleanup(func() { _ = st.Close() })
	d := NewDeliverer(st.Delivery(), &fakeSender{}, DeliveryOptions{}, nil, nil)
	for _, id := range []string{"", "a.b", "with space", strings.Repeat("x", 257), "é"} {
		if err := d.Enqueue(context.Background(), store.Delivery{ID: id, Endpoint: "ep", TaskID: "t"}); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Enqueue(id %.20q): %v, want ErrInvalidArgument", id, err)
		}
	}
}

func TestDeliveryOptions(t *testing.T) {
	valid := []DeliveryOptions{
		{},
		{Schedule: []time.Duration{}, Timeout: 30 * time.Second, LeaseTTL: time.Minute, PerReceiverRate: 2.5, BreakerFailures: -1},
	}
	for i, o := range valid {
		if err := o.Validate("push.delivery"); err != nil {
			t.Errorf("valid options %d: %v", i, err)
		}
	}
	invalid := []struct {
		o    DeliveryOptions
		want string
	}{
		{DeliveryOptions{Schedule: slices.Repeat([]time.Duration{time.Second}, MaxRetries+1)}, "push.delivery.schedule"},
		{DeliveryOptions{Schedule: []time.Duration{-time.Second}}, "push.delivery.schedule[0]"},
		{DeliveryOptions{Timeout: time.Hour}, "push.delivery.timeout"},
		{DeliveryOptions{Timeout: 20 * time.Second, LeaseTTL: 30 * time.Second}, "push.delivery.lease_ttl"},
		{DeliveryOptions{LeaseTTL: time.Second}, "push.delivery.lease_ttl"},
		{DeliveryOptions{PerReceiverRate: -1}, "push.delivery.per_receiver_rate"},
		{DeliveryOptions{Workers: -1}, "push.delivery.workers"},
		{DeliveryOptions{Jitter: MaxJitter + 0.01}, "push.delivery.jitter"},
		{DeliveryOptions{Jitter: -0.1}, "push.delivery.jitter"},
		{DeliveryOptions{Jitter: math.NaN()}, "push.delivery.jitter"},
		{DeliveryOptions{Holder: strings.Repeat("h", store.MaxNameBytes+1)}, "push.delivery.holder"},
	}
	for _, tt := range invalid {
		if err := tt.o.Validate("push.delivery"); err == nil || !strings.Contains(err.Error(), tt.want+":") {
			t.Errorf("Validate(%+v) = %v, want an error about %s", tt.o, err, tt.want)
		}
	}

	got := DeliveryOptions{}.withDefaults()
	if !slices.Equal(got.Schedule, DefaultSchedule) || got.Timeout != DefaultNotificationTimeout || got.LeaseTTL != DefaultMinLeaseTTL ||
		got.Workers != DefaultDeliveryWorkers || got.PerReceiverBurst != 1 || got.BreakerFailures != DefaultBreakerFailures || got.Holder == "" {
		t.Errorf("defaults = %+v", got)
	}
	if got := (DeliveryOptions{Timeout: 20 * time.Second}).withDefaults(); got.LeaseTTL != time.Minute {
		t.Errorf("lease ttl for a 20s timeout = %s, want 1m", got.LeaseTTL)
	}
	if got := (DeliveryOptions{Schedule: []time.Duration{-1}, Workers: -5, LeaseTTL: time.Nanosecond}).withDefaults(); !slices.Equal(got.Schedule, DefaultSchedule) ||
		got.Workers != DefaultDeliveryWorkers || got.LeaseTTL != DefaultMinLeaseTTL {
		t.Errorf("invalid options were not replaced: %+v", got)
	}
	for _, tt := range []struct {
		o    DeliveryOptions
		want float64
	}{
		{DeliveryOptions{}, DefaultJitter},
		{DeliveryOptions{Jitter: 0.3}, 0.3},
		{DeliveryOptions{Jitter: 0.9}, DefaultJitter},
		{DeliveryOptions{Jitter: 0.3, NoJitter: true}, 0},
	} {
		if got := tt.o.withDefaults().Jitter; got != tt.want {
			t.Errorf("jitter of %+v = %g, want %g", tt.o, got, tt.want)
		}
	}
	if got := (DeliveryOptions{PerReceiverRate: 2.5}).withDefaults(); got.PerReceiverBurst != 3 {
		t.Errorf("burst for 2.5/s = %d, want 3", got.PerReceiverBurst)
	}
	if got := (DeliveryOptions{Schedule: []time.Duration{}}).withDefaults(); len(got.Schedule) != 0 || got.Schedule == nil {
		t.Errorf("an empty schedule became %v", got.Schedule)
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	r := Request{
		URL: "https://hooks.example.com/a2a?x=1", ContentType: "application/a2a+json; charset=utf-8",
		Body:  []byte("{\"a\":1}\n\x00\xff"),
		Token: "tok", AuthScheme: "Basic", AuthCredentials: "c3RyaW5n", WebhookSecret: []byte("0123456789abcdef0123456789"),
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", TraceState: "vendor=1",
	}
	p, err := EncodePayload(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePayload(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != r.URL || got.ContentType != r.ContentType || string(got.Body) != string(r.Body) || got.Token != r.Token ||
		got.AuthScheme != r.AuthScheme || got.AuthCredentials != r.AuthCredentials || string(got.WebhookSecret) != string(r.WebhookSecret) ||
		got.TraceParent != r.TraceParent || got.TraceState != r.TraceState {
		t.Fatalf("round trip = %+v, want %+v", got, r)
	}
	empty, err := EncodePayload(Request{URL: "http://h/", ContentType: "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodePayload(empty); err != nil || len(got.Body) != 0 {
		t.Fatalf("empty body = %q, %v", got.Body, err)
	}

	badEncode := []Request{
		{URL: "/relative", ContentType: "application/json"},
		{URL: "ftp://h/x", ContentType: "application/json"},
		{URL: "https://", ContentType: "application/json"},
		{URL: "https://h/", ContentType: ""},
		{URL: "https://h/", ContentType: "application/json\r\nX-Evil: 1"},
		{URL: "https://h/", ContentType: "application/json", Body: make([]byte, store.MaxDeliveryPayloadBytes)},
	}
	for _, r := range badEncode {
		if _, err := EncodePayload(r); err == nil {
			t.Errorf("EncodePayload(%.40q, %.40q) succeeded", r.URL, r.ContentType)
		}
	}
	for _, p := range []string{
		"", "a2agw-push/2\n{}\n", payloadMagic + "{}", payloadMagic + "{\n", payloadMagic + `{"url":"nope"}` + "\n",
		// What encoding/json would read but EncodePayload never writes.
		payloadMagic + `{"url":"https://a/","url":"https://b/"}` + "\n",
		payloadMagic + `{"URL":"https://a/"}` + "\n",
		payloadMagic + `{"url":"https://a/","token":null}` + "\n",
		payloadMagic + `{"url":"https://a/","extra":"x"}` + "\n",
		payloadMagic + `{"url":"https://a/","token":1}` + "\n",
		payloadMagic + `{"url":"https://a/","webhookSecret":"not base64!"}` + "\n",
		payloadMagic + `["https://a/"]` + "\n",
		payloadMagic + `{"url":"https://a/"} {}` + "\n",
	} {
		if _, err := DecodePayload([]byte(p)); err == nil {
			t.Errorf("DecodePayload(%q) succeeded", p)
		}
	}
}

func TestHTTPSenderSignsAndMapsAnswers(t *testing.T) {
	type seen struct {
		header http.Header
		body   []byte
		path   string
	}
	got := make(chan seen, 1)
	answer := make(chan func(http.ResponseWriter), 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Header.Clone(), body, r.URL.RequestURI()}
		(<-answer)(w)
	}))
	t.Cleanup(srv.Close)
	sender, signer := testSenderWith(t, Allowlist{"127.0.0.1:*"})
	rcv := &testReceiver{srv: srv}
	n := rcv.notification(t, "hook", "task-1:7")
	req, _ := DecodePayload(n.Payload)
	ctx := context.Background()

	retryAt := time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat)
	tests := []struct {
		name     string
		respond  func(http.ResponseWriter)
		status   int
		hintLow  time.Duration
		hintHigh time.Duration
	}{
		{"ok", func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }, http.StatusAccepted, 0, 0},
		{"429 with an HTTP date", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", retryAt)
			w.WriteHeader(http.StatusTooManyRequests)
		}, http.StatusTooManyRequests, 100 * time.Second, 2 * time.Minute},
		{"503 with seconds", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, http.StatusServiceUnavailable, 7 * time.Second, 7 * time.Second},
		{"500 with Retry-After ignored", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusInternalServerError)
		}, http.StatusInternalServerError, 0, 0},
		{"a large answer is drained, not kept", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(make([]byte, 1<<20))
		}, http.StatusOK, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer <- tt.respond
			status, hint, err := sender.Send(ctx, n)
			if err != nil || status != tt.status || hint < tt.hintLow || hint > tt.hintHigh {
				t.Fatalf("Send = %d, %s, %v; want %d and a hint in [%s, %s]", status, hint, err, tt.status, tt.hintLow, tt.hintHigh)
			}
			s := <-got
			if s.path != "/hook?sig=query-s3cret" || string(s.body) != string(req.Body) {
				t.Errorf("request %s with body %q", s.path, s.body)
			}
			h := s.header
			if h.Get("Content-Type") != "application/a2a+json" || h.Get(HeaderNotificationToken) != testToken || h.Get("Authorization") != "Basic "+testCreds {
				t.Errorf("headers = %v", h)
			}
			claims, err := verifyJWT(t, signer.JWKS(), h.Get(HeaderNotificationJWT), req.URL, time.Now())
			if err != nil || claims["jti"] != n.ID || claims[ClaimTaskID] != n.TaskID {
				t.Errorf("JWT claims = %v, %v", claims, err)
			}
			secret, _ := ParseWebhookSecret(testSecret)
			if err := VerifyStandardWebhook(secret, h, s.body, time.Now(), 0); err != nil || h.Get(HeaderWebhookID) != n.ID {
				t.Errorf("Standard Webhooks signature: %v (webhook-id %q)", err, h.Get(HeaderWebhookID))
			}
		})
	}
}

func TestHTTPSenderErrorsHideTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	rcv := &testReceiver{srv: srv}
	n := rcv.notification(t, "path-s3cret", "n1")
	srv.Close() // nothing listens any more
	ctx := context.Background()

	allowed, _ := testSenderWith(t, Allowlist{"127.0.0.1:*"})
	_, _, err := allowed.Send(ctx, n)
	if err == nil || errors.Is(err, ErrUndeliverable) {
		t.Fatalf("Send to a closed port: %v, want a retryable error", err)
	}
	strict, _ := testSenderWith(t, nil)
	_, _, forbidden := strict.Send(ctx, n)
	if !errors.Is(forbidden, ErrUndeliverable) || !errors.Is(forbidden, ErrForbidden) {
		t.Fatalf("Send to loopback without an allowlist: %v, want undeliverable and forbidden", forbidden)
	}
	for _, e := range []error{err, forbidden} {
		if msg := e.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "127.0.0.1") {
			t.Errorf("error %q shows the URL's path or query, or not its receiver", msg)
		}
	}
	bad := store.Delivery{ID: "n1", Endpoint: "ep", TaskID: "t", Payload: []byte("junk")}
	if _, _, err := allowed.Send(ctx, bad); !errors.Is(err, ErrUndeliverable) {
		t.Errorf("Send of a bad payload: %v, want undeliverable", err)
	}
	badID := n
	badID.ID = "has.dot"
	if _, _, err := allowed.Send(ctx, badID); !errors.Is(err, ErrUndeliverable) {
		t.Errorf("Send of an id Sign refuses: %v, want undeliverable", err)
	}
}

func TestHTTPSenderReceiverKey(t *testing.T) {
	sender := testSender(t)
	for url, want := range map[string]string{
		"https://Hooks.Example.COM./a2a?token=x": "https://hooks.example.com:443",
		"http://hooks.example.com/a":             "http://hooks.example.com:80",
		"http://127.0.0.1:8080/x/y":              "http://127.0.0.1:8080",
		"https://[2001:db8::1]/x":                "https://[2001:db8::1]:443",
	} {
		p, err := EncodePayload(Request{URL: url, ContentType: "application/json"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := sender.ReceiverKey(store.Delivery{Payload: p})
		if err != nil || got != want {
			t.Errorf("ReceiverKey(%s) = %q, %v; want %q", url, got, err, want)
		}
	}
	if _, err := sender.ReceiverKey(store.Delivery{Payload: []byte("junk")}); !errors.Is(err, ErrUndeliverable) {
		t.Errorf("ReceiverKey of junk: %v", err)
	}
}

// Each receiver has one connection pool, used again by every delivery to
// it; a receiver unused for receiverIdle loses its pool at the next sweep,
// so receivers that come and go do not accumulate.
func TestHTTPSenderPoolPerReceiver(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	sender := testSender(t)
	send := func(url string) {
		t.Helper()
		p, err := EncodePayload(Request{URL: url, ContentType: "application/json", Body: []byte("{}")})
		if err != nil {
			t.Fatal(err)
		}
		if status, _, err := sender.Send(t.Context(), store.Delivery{ID: "n-1", TaskID: "task-1", Payload: p}); err != nil || status != http.StatusOK {
			t.Fatalf("send to %s: %d, %v", url, status, err)
		}
	}
	for i := range 3 {
		send(fmt.Sprintf("%s/hook/%d", srv.URL, i))
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three deliveries in a row, want 1", n)
	}
	srv2 := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv2.Close()
	other := srv2.URL
	send(other + "/hook")
	sender.mu.Lock()
	if len(sender.pools) != 2 {
		t.Errorf("%d pools for two receivers", len(sender.pools))
	}
	// The first receiver falls idle; the next delivery sweeps.
	for k, p := range sender.pools {
		if k != other {
			p.used = time.Now().Add(-receiverIdle - time.Second)
		}
	}
	sender.swept = time.Time{}
	sender.mu.Unlock()
	send(other + "/hook")
	sender.mu.Lock()
	defer sender.mu.Unlock()
	if len(sender.pools) != 1 {
		t.Errorf("%d pools after the sweep, want the one in use", len(sender.pools))
	}
}

// latencyMetrics keeps every event-to-2xx latency, for the benchmark.
type latencyMetrics struct {
	NopDeliveryMetrics
	mu        sync.Mutex
	latencies []time.Duration
}

func (m *latencyMetrics) Delivered(l time.Duration) {
	m.mu.Lock()
	m.latencies = append(m.latencies, l)
	m.mu.Unlock()
}

func (m *latencyMetrics) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.latencies)
}

// BenchmarkDeliverRedis measures delivery through a Redis with the queue
// persisted (AOF, fsync every second) to healthy loopback receivers, 64
// endpoints at a time: deliveries per second, and the p50 and p99 latency
// from enqueue to 2xx.
func BenchmarkDeliverRedis(b *testing.B) {
	client := redistest.Start(b, redistest.WithAOF()).Client(b)
	st := store.NewRedis(client, store.Options{KeyPrefix: "bench"}).Delivery()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	policy, err := NewURLPolicy(Allowlist{"127.0.0.1:*"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "push.pem")
	key, err := jose.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	if err := jose.WritePrivateKeyPEM(path, key); err != nil {
		b.Fatal(err)
	}
	signer, err := NewSigner(SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	if err != nil {
		b.Fatal(err)
	}
	m := &latencyMetrics{}
	o := DeliveryOptions{Holder: "bench", PollInterval: 50 * time.Millisecond}
	d := NewDeliverer(st, NewHTTPSender(policy, signer, 0), o, m, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })

	payload, err := EncodePayload(Request{URL: srv.URL + "/hook", ContentType: "application/a2a+json", Body: make([]byte, 1024)})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		n := store.Delivery{ID: fmt.Sprint("n", i), Endpoint: fmt.Sprint("ep-", i%64), TaskID: "t", Payload: payload}
		if err := d.Enqueue(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	for m.count() < b.N {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	m.mu.Lock()
	slices.Sort(m.latencies)
	p50, p99 := m.latencies[len(m.latencies)/2], m.latencies[len(m.latencies)*99/100]
	m.mu.Unlock()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
}

// readHead reads the head of ep's queue and its attempt log.
func readHead(ctx context.Context, s store.DeliveryStore, ep string) (store.Delivery, []store.Attempt, bool, error) {
	next, err := s.AckHeads(ctx, ep, nil, "", 1)
	if err != nil || len(next) == 0 {
		return store.Delivery{}, nil, false, err
	}
	return next[0].Delivery, next[0].Attempts, true, nil
}
