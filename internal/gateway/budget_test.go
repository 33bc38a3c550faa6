package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/proxy/budget"
)

func azBudgets(l budget.Limits) func(*config.Config) {
	return func(c *config.Config) { c.Budgets.Default = l }
}

// retryAfterSeconds reads the retry hint of a RESOURCE_EXHAUSTED answer:
// the Retry-After header, and in JSON-RPC also the error data of the
// caller's version.
func retryAfterSeconds(t *testing.T, d azDialect, r azReply) int {
	t.Helper()
	header, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || header < 1 {
		t.Errorf("%s: Retry-After %q, want whole seconds >= 1", d.name, r.header.Get("Retry-After"))
	}
	if d.rest() {
		return header
	}
	re := r.rpcError()
	if re == nil {
		t.Fatalf("%s: no JSON-RPC error in %s", d.name, r)
	}
	var inData string
	if d.version == a2a.V10 {
		var infos []struct {
			Reason   string            `json:"reason"`
			Metadata map[string]string `json:"metadata"`
		}
		if err := json.Unmarshal(re.Data, &infos); err != nil || len(infos) == 0 || infos[0].Reason != a2a.ErrRateLimited.Reason {
			t.Fatalf("%s: error data %s, want an ErrorInfo list with reason %s", d.name, re.Data, a2a.ErrRateLimited.Reason)
		}
		inData = infos[0].Metadata["retryAfterSeconds"]
	} else {
		var data struct {
			RetryAfterSeconds int `json:"retryAfterSeconds"`
		}
		if err := json.Unmarshal(re.Data, &data); err != nil {
			t.Fatalf("%s: error data %s: %v", d.name, re.Data, err)
		}
		inData = strconv.Itoa(data.RetryAfterSeconds)
	}
	if inData != strconv.Itoa(header) {
		t.Errorf("%s: retry hint in the error data %q differs from Retry-After %d", d.name, inData, header)
	}
	return header
}

func TestBudgetRateLimit(t *testing.T) {
	w := newAzWorld(t, authz.Policy{}, azBudgets(budget.Limits{Rate: 1, Burst: 2}))
	for _, d := range azDialects {
		t.Run(d.name, func(t *testing.T) {
			// Each dialect gets its own tenant, so its bucket starts full.
			caller := w.client("tenant-"+d.name, "alice")
			other := w.client("other-"+d.name, "bob")
			get := func() azCall { return w.taskCall(t, d, a2a.MethodGetTask, azUnknown("task")) }
			for i := range 2 {
				if r := caller.do(t, get()); !r.is(d.binding, a2a.ErrTaskNotFound) {
					t.Fatalf("request %d within the burst: want TaskNotFound, got %s", i+1, r)
				}
			}
			// The third request comes well within a second of the first on
			// any machine; should the bucket have refilled regardless, the
			// next ones are refused instead. No timing is asserted.
			var refused azReply
			for n := 3; n <= 10; n++ {
				if r := caller.unreached(t, get()); r.is(d.binding, a2a.ErrRateLimited) {
					refused = r
					break
				}
			}
			if refused.status == 0 {
				t.Fatal("no request was refused once the burst of 2 was spent")
			}
			if d.rest() && refused.status != http.StatusTooManyRequests {
				t.Errorf("REST status %d, want 429", refused.status)
			}
			if s := retryAfterSeconds(t, d, refused); s > 2 {
				t.Errorf("retry after %ds; at 1 request per second one token is at most 1s away", s)
			}
			// Another tenant's budget is its own.
			other.create(t, d, "complete unaffected")
		})
	}
	if got := w.metric(t, "a2agw_budget_refusals_total", "agent", "demo", "budget", "rate"); got < float64(len(azDialects)) {
		t.Errorf("budget_refusals_total{budget=rate} = %v, want at least %d", got, len(azDialects))
	}
}

// openStream starts a stream and returns it once its first event arrived,
// with the function that abandons it.
func (c *azClient) openStream(t *testing.T, call azCall) (*http.Response, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), azTimeout)
	resp := c.send(t, ctx, call)
	abandon := func() { resp.Body.Close(); cancel() }
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != a2a.SSEContentType {
		b, _ := io.ReadAll(resp.Body)
		abandon()
		t.Fatalf("%s: %s: want a stream, got HTTP %d %s", c, call, resp.StatusCode, b)
	}
	if _, err := a2a.NewSSEReader(resp.Body, 1<<20).Next(); err != nil {
		abandon()
		t.Fatalf("%s: first event: %v", call, err)
	}
	return resp, abandon
}

func TestBudgetMaxStreams(t *testing.T) {
	w := newAzWorld(t, authz.Policy{}, azBudgets(budget.Limits{MaxStreams: 1}))
	for _, d := range []azDialect{azRPC10, azREST03} {
		t.Run(d.name, func(t *testing.T) {
			// Fresh tenants: a stream abandoned by an earlier subtest frees
			// its slot only once the gateway notices.
			alice := w.client("tenant-a-"+d.name, "alice")
			bob := w.client("tenant-b-"+d.name, "bob")
			waiting := alice.create(t, d, "wait")
			first, closeFirst := alice.openStream(t, w.taskCall(t, d, a2a.MethodSubscribe, waiting.id))
			defer closeFirst()

			for _, call := range []azCall{
				w.sendCall(t, d, true, true, azMsg{text: "complete"}),
				w.taskCall(t, d, a2a.MethodSubscribe, waiting.id),
			} {
				r := alice.unreached(t, call)
				if !r.is(d.binding, a2a.ErrRateLimited) {
					t.Fatalf("second concurrent stream: want RESOURCE_EXHAUSTED, got %s", r)
				}
				retryAfterSeconds(t, d, r)
			}
			// Non-streaming requests and other tenants' streams are not held back.
			alice.mustOK(t, d, w.taskCall(t, d, a2a.MethodGetTask, waiting.id))
			_, closeBob := bob.openStream(t, w.sendCall(t, d, true, true, azMsg{text: "wait"}))
			closeBob()

			// Canceling the task ends the first stream; once it has ended
			// the slot is free again.
			alice.mustOK(t, d, w.taskCall(t, d, a2a.MethodCancelTask, waiting.id))
			if _, err := io.Copy(io.Discard, first.Body); err != nil {
				t.Fatalf("first stream did not end cleanly: %v", err)
			}
			next, closeNext := alice.openStream(t, w.sendCall(t, d, true, true, azMsg{text: "complete"}))
			defer closeNext()
			if _, err := io.Copy(io.Discard, next.Body); err != nil {
				t.Fatalf("stream after the first ended: %v", err)
			}
		})
	}
	if got := w.metric(t, "a2agw_budget_refusals_total", "agent", "demo", "budget", "streams"); got != 4 {
		t.Errorf("budget_refusals_total{budget=streams} = %v, want 4", got)
	}
}

// A caller that walks away from a stream gives its slot back.
func TestBudgetStreamSlotFreedOnDisconnect(t *testing.T) {
	w := newAzWorld(t, authz.Policy{}, azBudgets(budget.Limits{MaxStreams: 1}))
	alice := w.client("tenant-a", "alice")
	_, abandon := alice.openStream(t, w.sendCall(t, azRPC10, true, true, azMsg{text: "never"}))
	abandon()
	// The gateway notices the disconnect on its own schedule; poll, with a
	// bound that only keeps a leaked slot from hanging the test.
	deadline := time.Now().Add(azTimeout)
	for {
		r := alice.do(t, w.sendCall(t, azRPC10, true, true, azMsg{text: "complete"}))
		if r.stream && r.ok(azRPC10.binding) {
			return
		}
		if !r.is(azRPC10.binding, a2a.ErrRateLimited) {
			t.Fatalf("want a stream or RESOURCE_EXHAUSTED, got %s", r)
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned stream's slot was never released")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A tenant at its cap on open tasks cannot start another until one ends;
// another tenant is not affected.
func TestBudgetMaxActiveTasks(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			opts := []gwtest.Option{func(c *config.Config) { c.Budgets.Default.MaxActiveTasks = 2 }}
			if backend == "redis" {
				srv := redistest.Start(t)
				opts = append(opts, func(c *config.Config) { c.Store.Redis.Addrs = []string{srv.Addr()} })
			}
			env := gwtest.Start(t, opts...)
			acme, globex := env.Token(t, "acme", "alice"), env.Token(t, "globex", "bob")
			send := func(tok, id, text string) (*http.Response, []byte) {
				return env.Do(t, http.MethodPost, env.AgentBase+"/message:send", tok, "1.0",
					[]byte(`{"message":{"messageId":"`+id+`","role":"ROLE_USER","parts":[{"text":"`+text+`"}]},"configuration":{"returnImmediately":true}}`))
			}
			var waiting []string
			for i, id := range []string{"open-1", "open-2"} {
				resp, b := send(acme, id, "wait")
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("open task %d: %d %s", i, resp.StatusCode, b)
				}
				ev, err := a2a.ParseResult(b)
				if err != nil || ev.TaskID == "" {
					t.Fatalf("no task: %s", b)
				}
				waiting = append(waiting, ev.TaskID)
			}
			if resp, b := send(acme, "open-3", "wait"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("a third open task was allowed: %d %s", resp.StatusCode, b)
			}
			if resp, b := send(globex, "open-4", "complete"); resp.StatusCode != http.StatusOK {
				t.Fatalf("another tenant was refused: %d %s", resp.StatusCode, b)
			}
			// Canceling one frees a slot.
			if resp, b := env.Do(t, http.MethodPost, env.AgentBase+"/tasks/"+waiting[0]+":cancel", acme, "1.0", []byte(`{}`)); resp.StatusCode != http.StatusOK {
				t.Fatalf("cancel: %d %s", resp.StatusCode, b)
			}
			if resp, b := send(acme, "open-5", "complete"); resp.StatusCode != http.StatusOK {
				t.Fatalf("after a task ended the tenant is still refused: %d %s", resp.StatusCode, b)
			}
		})
	}
}
