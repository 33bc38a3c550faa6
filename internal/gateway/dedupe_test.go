package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/dedupe"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

// dedupeBackends runs a test against the embedded store, a standalone
// redis-server and a 3-master Redis Cluster.
func dedupeBackends(t *testing.T, run func(t *testing.T, store gwtest.Option)) {
	t.Run("memory", func(t *testing.T) { run(t, func(*config.Config) {}) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		run(t, func(c *config.Config) { c.Store.Redis.Addrs = []string{srv.Addr()} })
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("cluster tests skipped with -short")
		}
		cl := redistest.StartCluster(t, 3, 0)
		run(t, func(c *config.Config) { c.Store.Redis.Addrs = cl.Addrs(); c.Store.Redis.ClusterMode = true })
	})
}

func shortLease(c *config.Config) {
	c.Dedupe.Lease = duration.Duration(time.Second)
	c.Dedupe.Wait = duration.Duration(20 * time.Second)
}

func sendBody(messageID, text string) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s-rpc","method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}]}}}`, messageID, messageID, text))
}

// sendsReaching counts the requests carrying messageID that reached the agent.
func sendsReaching(env *gwtest.Env, messageID string) int {
	n := 0
	for _, r := range env.Agent.Requests() {
		if r.Op.MessageID == messageID {
			n++
		}
	}
	return n
}

func taskIDOf(t *testing.T, body []byte) string {
	t.Helper()
	ev, err := a2a.ParseRPCEvent(body)
	if err != nil || ev.TaskID == "" {
		t.Fatalf("no task in %s (%v)", body, err)
	}
	return ev.TaskID
}

func TestDedupeConcurrentIdenticalSends(t *testing.T) {
	dedupeBackends(t, func(t *testing.T, store gwtest.Option) {
		env := gwtest.Start(t, store, shortLease)
		tok := env.Token(t, "acme", "alice")
		body := sendBody("m-concurrent", "slow 300ms")
		const n = 100
		tasks := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", body)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d: %s", resp.StatusCode, b)
					return
				}
				ev, err := a2a.ParseRPCEvent(b)
				if err != nil {
					t.Errorf("unreadable answer %s", b)
					return
				}
				tasks[i] = ev.TaskID
			}()
		}
		wg.Wait()
		if got := sendsReaching(env, "m-concurrent"); got != 1 {
			t.Fatalf("%d sends reached the agent, want exactly 1", got)
		}
		for i, id := range tasks {
			if id == "" || id != tasks[0] {
				t.Fatalf("caller %d got task %q, caller 0 got %q", i, id, tasks[0])
			}
		}
	})
}

func TestDedupeReplayConflictAndTenants(t *testing.T) {
	dedupeBackends(t, func(t *testing.T, store gwtest.Option) {
		env := gwtest.Start(t, store, shortLease)
		acme := env.Token(t, "acme", "alice")
		globex := env.Token(t, "globex", "bob")

		first, b1 := env.Do(t, http.MethodPost, env.AgentBase+"/", acme, "1.0", sendBody("m-replay", "hello"))
		retry, b2 := env.Do(t, http.MethodPost, env.AgentBase+"/", acme, "1.0", sendBody("m-replay", "hello"))
		if first.StatusCode != 200 || !bytes.Equal(b1, b2) {
			t.Fatalf("retry not replayed byte for byte:\n%s\n%s", b1, b2)
		}
		if retry.Header.Get(dedupe.ReplayHeader) != "true" || first.Header.Get(dedupe.ReplayHeader) != "" {
			t.Fatalf("replay header: first %q, retry %q", first.Header.Get(dedupe.ReplayHeader), retry.Header.Get(dedupe.ReplayHeader))
		}
		// A retry with another JSON-RPC id gets the same answer addressed to it.
		other := bytes.Replace(sendBody("m-replay", "hello"), []byte(`"m-replay-rpc"`), []byte(`42`), 1)
		_, b3 := env.Do(t, http.MethodPost, env.AgentBase+"/", acme, "1.0", other)
		if taskIDOf(t, b3) != taskIDOf(t, b1) || !bytes.Contains(b3, []byte(`"id":42`)) {
			t.Fatalf("replay to a new request id: %s", b3)
		}

		// Same key, different request: refused, never forwarded.
		_, bc := env.Do(t, http.MethodPost, env.AgentBase+"/", acme, "1.0", sendBody("m-replay", "something else"))
		if ev, _ := a2a.ParseRPCEvent(bc); ev.Kind != a2a.EventError || ev.ErrorCode != a2a.ErrIdempotencyConflict.Code {
			t.Fatalf("conflict over JSON-RPC: %s", bc)
		}
		rest := []byte(`{"message":{"messageId":"m-replay","role":"ROLE_USER","parts":[{"text":"different"}]}}`)
		if resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/message:send", acme, "1.0", rest); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("conflict over REST: %d %s", resp.StatusCode, b)
		}
		if got := sendsReaching(env, "m-replay"); got != 1 {
			t.Fatalf("%d sends reached the agent, want 1", got)
		}

		// The same message id from another tenant is an independent task.
		_, bg := env.Do(t, http.MethodPost, env.AgentBase+"/", globex, "1.0", sendBody("m-replay", "hello"))
		if taskIDOf(t, bg) == taskIDOf(t, b1) {
			t.Fatal("two tenants share a task")
		}
		if got := sendsReaching(env, "m-replay"); got != 2 {
			t.Fatalf("%d sends reached the agent, want 2 (one per tenant)", got)
		}

		// An Idempotency-Key header keys the request instead of the message id.
		req := func(msg string) []byte {
			b := sendBody(msg, "keyed")
			return b
		}
		keyed := func(msg string) []byte {
			hreq, _ := http.NewRequest(http.MethodPost, env.AgentBase+"/", bytes.NewReader(req(msg)))
			hreq.Header.Set("Authorization", "Bearer "+acme)
			hreq.Header.Set("A2A-Version", "1.0")
			hreq.Header.Set("Content-Type", "application/json")
			hreq.Header.Set(dedupe.IdempotencyKeyHeader, "order-77")
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			return buf.Bytes()
		}
		k1 := keyed("m-key-1")
		k2 := keyed("m-key-1")
		if taskIDOf(t, k1) != taskIDOf(t, k2) || sendsReaching(env, "m-key-1") != 1 {
			t.Fatalf("Idempotency-Key did not deduplicate")
		}
	})
}

// A streaming retry while the task runs is attached to it and sees it
// finish; after it finished, a streaming retry gets the final task.
func TestDedupeStreamRetryAttaches(t *testing.T) {
	dedupeBackends(t, func(t *testing.T, store gwtest.Option) {
		env := gwtest.Start(t, store, shortLease)
		tok := env.Token(t, "acme", "alice")
		body := []byte(`{"message":{"messageId":"m-stream","role":"ROLE_USER","parts":[{"text":"stream 30"}]}}`)

		first := openStream(t, env, tok, body)
		ev := first.next(t)
		if ev.TaskID == "" {
			t.Fatalf("first event names no task: %+v", ev)
		}
		retry := openStream(t, env, tok, body)
		if retry.resp.Header.Get(dedupe.ReplayHeader) != "true" {
			t.Fatal("the streaming retry was not attached to the running task")
		}
		last := retry.drain(t)
		if last.State != a2a.StateCompleted {
			t.Fatalf("attached stream ended in %v, want completed", last.State)
		}
		first.drain(t)
		if got := sendsReaching(env, "m-stream"); got != 1 {
			t.Fatalf("%d streams reached the agent, want 1", got)
		}
		after := openStream(t, env, tok, body)
		if ev := after.drain(t); ev.TaskID != retry.taskID || ev.State != a2a.StateCompleted {
			t.Fatalf("a retry after the end got %+v", ev)
		}
	})
}

type sseStream struct {
	resp   *http.Response
	rd     *a2a.SSEReader
	taskID string
}

func openStream(t *testing.T, env *gwtest.Env, tok string, body []byte) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.AgentBase+"/message:stream", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		t.Fatalf("stream answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseStream{resp: resp, rd: a2a.NewSSEReader(resp.Body, 1<<20)}
}

func (s *sseStream) next(t *testing.T) a2a.Event {
	t.Helper()
	raw, err := s.rd.Next()
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	ev, err := a2a.ParseResult(raw.Data)
	if err != nil {
		t.Fatalf("event %s: %v", raw.Data, err)
	}
	if ev.TaskID != "" {
		s.taskID = ev.TaskID
	}
	return ev
}

// drain reads to the end and returns the last event that carried a state.
func (s *sseStream) drain(t *testing.T) a2a.Event {
	t.Helper()
	var last a2a.Event
	for {
		raw, err := s.rd.Next()
		if err != nil {
			return last
		}
		ev, err := a2a.ParseResult(raw.Data)
		if err != nil {
			t.Fatalf("event %s: %v", raw.Data, err)
		}
		if ev.TaskID != "" {
			s.taskID = ev.TaskID
		}
		if ev.State != a2a.StateUnknown {
			last = ev
		}
	}
}

// When Redis cannot answer, a send is refused by default; with
// on_store_error: forward it goes through without deduplication.
func TestDedupeStoreOutage(t *testing.T) {
	for _, mode := range []string{config.DedupeRefuse, config.DedupeForward} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			env := gwtest.Start(t, shortLease, func(c *config.Config) {
				c.Store.Redis.Addrs = []string{srv.Addr()}
				c.Dedupe.OnStoreError = mode
			})
			tok := env.Token(t, "acme", "alice")
			srv.Stop(t)
			resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/message:send", tok, "1.0",
				[]byte(`{"message":{"messageId":"m-outage","role":"ROLE_USER","parts":[{"text":"hi"}]}}`))
			// Authorization needs the store for a plain send only when it names
			// ids; this one names none, so dedupe decides.
			switch mode {
			case config.DedupeRefuse:
				if resp.StatusCode != http.StatusServiceUnavailable || sendsReaching(env, "m-outage") != 0 {
					t.Fatalf("refuse mode: %d %s, agent saw %d", resp.StatusCode, b, sendsReaching(env, "m-outage"))
				}
			case config.DedupeForward:
				// Dedupe lets the send go on, but authorization stays fail-closed:
				// an answer that cannot be recorded as the caller's must not be
				// produced, so the send is still refused before the agent.
				if resp.StatusCode != http.StatusServiceUnavailable || sendsReaching(env, "m-outage") != 0 ||
					!strings.Contains(string(b), "store is temporarily unavailable") {
					t.Fatalf("forward mode: %d %s, agent saw %d", resp.StatusCode, b, sendsReaching(env, "m-outage"))
				}
			}
			if got := metricValue(t, env, "a2agw_dedupe_total", "store_error_"+map[string]string{config.DedupeRefuse: "refused", config.DedupeForward: "forwarded"}[mode]); got != 1 {
				t.Fatalf("dedupe store-error outcome counted %v times, want 1", got)
			}
		})
	}
}

// metricValue reads the value of the sample of name whose outcome label is
// outcome from the admin /metrics.
func metricValue(t *testing.T, env *gwtest.Env, name, outcome string) float64 {
	t.Helper()
	_, body := env.Do(t, http.MethodGet, env.Admin+"/metrics", "", "", nil)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, `outcome="`+outcome+`"`) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
				return v
			}
		}
	}
	return 0
}

// A send refused after dedupe but before the agent (here: to a task known
// to be finished) gives its claim back: the retry gets the same refusal at
// once instead of waiting for the lease.
func TestDedupeReleasesRefusedSends(t *testing.T) {
	env := gwtest.Start(t, func(c *config.Config) {
		c.Dedupe.Lease = duration.Duration(time.Minute)
		c.Dedupe.Wait = duration.Duration(time.Minute)
	})
	tok := env.Token(t, "acme", "alice")
	_, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", sendBody("m-done", "complete"))
	task := taskIDOf(t, b)
	if err := env.GW.Lifecycle().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	followUp := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-after","taskId":"` + task + `","role":"ROLE_USER","parts":[{"text":"more"}]}}}`)
	// A claim left behind would make the retry wait out dedupe.wait and
	// then answer IN_PROGRESS instead of the refusal.
	for i := range 2 {
		_, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", followUp)
		ev, _ := a2a.ParseRPCEvent(b)
		if ev.Kind != a2a.EventError || ev.ErrorCode != a2a.ErrUnsupportedOperation.Code {
			t.Fatalf("attempt %d: %s", i, b)
		}
	}
	if got := sendsReaching(env, "m-after"); got != 0 {
		t.Fatalf("%d refused sends reached the agent", got)
	}
}

// A send that reached the agent keeps its claim even when its answer
// cannot be recorded (the gateway withholds an answer it cannot record as
// the caller's): the agent did the work, so a retry must wait for the
// claim, not reach the agent again. Redis's ACL refuses the ownership
// records (the only key family starting with "o") while allowing the rest.
func TestDedupeKeepsClaimOfASentSend(t *testing.T) {
	srv := redistest.Start(t)
	env := gwtest.Start(t, func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Store.KeyPrefix = "gw"
		c.Dedupe.Lease = duration.Duration(time.Minute)
		c.Dedupe.Wait = duration.Duration(time.Second)
	})
	tok := env.Token(t, "acme", "alice")
	rdb := srv.Client(t)
	ctx := context.Background()
	if err := rdb.Do(ctx, "ACL", "SETUSER", "default", "resetkeys", "~gw:[^o]*").Err(); err != nil {
		t.Fatal(err)
	}
	resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", sendBody("m-sent", "complete"))
	if ev, _ := a2a.ParseRPCEvent(b); resp.StatusCode == http.StatusOK && ev.Kind != a2a.EventError {
		t.Fatalf("an answer that could not be recorded was released: %d %s", resp.StatusCode, b)
	}
	if got := sendsReaching(env, "m-sent"); got != 1 {
		t.Fatalf("the send reached the agent %d times, want 1", got)
	}
	if err := rdb.Do(ctx, "ACL", "SETUSER", "default", "allkeys").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, b := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", sendBody("m-sent", "complete"))
		if ev, _ := a2a.ParseRPCEvent(b); ev.Kind != a2a.EventError {
			t.Fatalf("retry %d was answered with a task while the first try's claim is held: %s", i, b)
		}
	}
	if got := sendsReaching(env, "m-sent"); got != 1 {
		t.Fatalf("retries reached the agent: %d sends, want 1", got)
	}
}

// A streaming retry after its task ended gets the final task as a
// one-event stream, in every version and HTTP binding: the ended task's
// refused subscribe must never reach the caller.
func TestDedupeStreamRetryAfterEndEveryForm(t *testing.T) {
	env := gwtest.Start(t, shortLease)
	c := newCaller(t, env)
	forms := []struct {
		name string
		rq   func(id string) request
	}{
		{"jsonrpc-1.0", func(id string) request {
			params := `{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"complete"}]}}`
			return request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodStream, a2a.V10, c.nextID("rpc"), params), rpc: true}
		}},
		{"jsonrpc-0.3", func(id string) request {
			params := `{"message":{"kind":"message","messageId":"` + id + `","role":"user","parts":[{"kind":"text","text":"complete"}]}}`
			return request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodStream, a2a.V03, c.nextID("rpc"), params), rpc: true}
		}},
		{"rest-1.0", func(id string) request {
			return request{method: http.MethodPost, path: "/message:stream", header: v10(), body: []byte(`{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"complete"}]}}`)}
		}},
		{"rest-0.3", func(id string) request {
			return request{method: http.MethodPost, path: "/v1/message:stream", body: []byte(`{"message":{"messageId":"` + id + `","role":"ROLE_USER","content":[{"text":"complete"}]}}`)}
		}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			id := c.nextID("m-ended")
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			first := c.open(t, ctx, f.rq(id)).all(t)
			if len(first) == 0 || first[len(first)-1].State != a2a.StateCompleted {
				t.Fatalf("first stream: %+v", first)
			}
			retry := c.open(t, ctx, f.rq(id))
			if retry.resp.Header.Get(dedupe.ReplayHeader) != "true" {
				t.Fatal("the retry was not answered from the dedupe record")
			}
			evs := retry.all(t)
			if len(evs) != 1 || evs[0].Kind != a2a.EventTask || evs[0].State != a2a.StateCompleted || evs[0].TaskID != first[0].TaskID {
				t.Fatalf("the retry after the end got %+v, want the completed task %s", evs, first[0].TaskID)
			}
			if got := sendsReaching(env, id); got != 1 {
				t.Fatalf("%d streams reached the agent, want 1", got)
			}
		})
	}
}
