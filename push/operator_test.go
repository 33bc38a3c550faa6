package push

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Every attempt lands in its task's delivery log with the receiver's
// answer; breakers, redelivery and discard are there for operators.
func TestOperatorViewOfDeliveries(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return store.NewMemory(store.Options{}) },
		"redis": func(t *testing.T) store.Store {
			return store.NewRedis(redistest.Start(t).Client(t), store.Options{KeyPrefix: "push-operator"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			t.Cleanup(func() { _ = st.Close() })
			attempts, _ := store.OperatorConcerns(st)
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
			o := fastOptions(5*time.Millisecond, 5*time.Millisecond)
			o.Log = attempts
			// No breaker: each failure is a request, and the log counts them.
			o.BreakerFailures = -1
			d := NewDeliverer(st.Delivery(), testSender(t), o, m, nil)
			const ep = "acme/demo/t1/cfg"
			for _, id := range []string{"n1", "n2"} {
				enqueue(t, d, rcv.notification(t, ep, id))
			}
			runDeliverer(t, d)
			waitUntil(t, "two dead letters", func() bool { return m.get(func(m *recordingMetrics) int { return m.dead[DeadRetriesExhausted] }) == 2 })
			ctx := context.Background()
			task := "task-" + ep
			log, err := attempts.List(ctx, "demo", task)
			if err != nil || len(log) != 6 {
				t.Fatalf("delivery log: %d entries, %v; want 6 (3 per notification)", len(log), err)
			}
			if a := log[0]; a.Endpoint != ep || a.ID != "n1" || a.Status != 500 || a.RetryAt.IsZero() || a.Err == "" {
				t.Errorf("first attempt logged as %+v", a)
			}
			if rs := d.Receivers(); len(rs) != 1 || rs[0].Receiver != rcv.srv.URL || rs[0].Failures == 0 {
				t.Errorf("receivers: %+v", rs)
			}

			mu.Lock()
			healthy = true
			mu.Unlock()
			if err := d.Redeliver(ctx, ep, "n1"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the redelivered notification", func() bool { return len(rcv.delivered()[ep]) == 1 })
			waitUntil(t, "the 2xx in the delivery log", func() bool {
				log, _ := attempts.List(ctx, "demo", task)
				return len(log) == 7 && log[6].Status == http.StatusNoContent && log[6].ID == "n1"
			})
			if found, err := d.Discard(ctx, ep, "n2"); err != nil || !found {
				t.Fatalf("Discard(n2) = %v, %v", found, err)
			}
			if _, ok, _ := st.Delivery().GetDeadLetter(ctx, ep, "n2"); ok {
				t.Fatal("a discarded dead letter is still there")
			}
			if found, err := d.Discard(ctx, ep, "n2"); err != nil || found {
				t.Fatalf("Discard(n2) again = %v, %v", found, err)
			}
		})
	}
}

func TestEndpointParts(t *testing.T) {
	for ep, want := range map[string][2]string{
		"acme/demo/t1/cfg":     {"demo", "acme"},
		"*/demo/t1/cfg":        {"demo", ""},
		"a%2Fb/my-agent/~hash": {"", "a/b"},
		"a%2Fb/my-agent/t/c":   {"my-agent", "a/b"},
		"not-an-endpoint":      {"", "not-an-endpoint"},
	} {
		if agent, tenant := EndpointAgent(ep), EndpointTenant(ep); agent != want[0] || tenant != want[1] {
			t.Errorf("%q: agent %q, tenant %q; want %q, %q", ep, agent, tenant, want[0], want[1])
		}
	}
}
