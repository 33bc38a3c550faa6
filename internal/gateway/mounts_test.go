package gateway_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/dedupe"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// A task is one task through every mount of its agent: a tenant cannot
// take over another tenant's legacy task, nor join its context, by naming
// the ids through a second mount. Each attempt gets the answer an unknown
// id gets, never reaches the agent, is counted, and leaves the task as it
// was.
func TestSecondMountCannotTakeOverTasks(t *testing.T) {
	for _, st := range azStores() {
		for _, layout := range azLayouts() {
			other := layout.mounts[len(layout.mounts)-1]
			t.Run(st.name+"/"+layout.name, func(t *testing.T) {
				w := newAzWorld(t, authz.Policy{}, append(st.opt(t), layout.opt)...)
				alice := w.client("tenant-a", "alice")
				bob := w.client("tenant-b", "bob").via(other)

				const invoice = "invoice-11707"
				ev := alice.mustOK(t, azLegacy, w.sendCall(t, azLegacy, false, false, azMsg{text: "input", taskID: invoice})).event(t, azLegacy.binding)
				if ev.TaskID != invoice || ev.State != a2a.StateInputRequired {
					t.Fatalf("legacy task: %+v", ev)
				}
				bob.indistinguishable(t, azLegacy,
					w.sendCall(t, azLegacy, false, false, azMsg{text: "complete by bob", taskID: invoice}),
					w.pushCall(t, azLegacy, a2a.MethodPushConfigGet, azUnknown("task"), ""))
				got := alice.mustOK(t, azRPC03, w.taskCall(t, azRPC03, a2a.MethodGetTask, invoice))
				if ev := got.event(t, azRPC03.binding); ev.State != a2a.StateInputRequired || bytes.Contains(got.body, []byte("by bob")) {
					t.Errorf("the legacy task changed: %s", got)
				}

				for _, d := range azDialects {
					tk := alice.create(t, d, "input")
					bob.indistinguishable(t, d,
						w.sendCall(t, d, false, true, azMsg{text: "complete by bob", contextID: tk.ctx}),
						w.sendCall(t, d, false, true, azMsg{text: "answer", taskID: azUnknown("task")}))
				}
				for _, kind := range []struct {
					name string
					want float64
				}{{"task", 1}, {"context", float64(len(azDialects))}} {
					if n := w.metric(t, "a2agw_claim_refusals_total", "agent", other, "kind", kind.name); n != kind.want {
						t.Errorf("claim refusals of kind %s on %s: %v, want %v", kind.name, other, n, kind.want)
					}
				}
			})
		}
	}
}

// Claim-first: whoever sends a client-chosen id first holds it; a later
// send with it by another tenant is refused and counted, with the tenant
// when the tenant label is on.
func TestClaimRefusalsMetric(t *testing.T) {
	for _, labelled := range []bool{false, true} {
		t.Run(map[bool]string{false: "no-tenant-label", true: "tenant-label"}[labelled], func(t *testing.T) {
			w := newAzWorld(t, authz.Policy{}, func(c *config.Config) { c.Lifecycle.TenantLabel = labelled })
			bob, alice := w.client("tenant-b", "bob"), w.client("tenant-a", "alice")
			order, session := w.id("order"), w.id("session")
			bob.mustOK(t, azLegacy, w.sendCall(t, azLegacy, false, false, azMsg{text: "input", taskID: order, contextID: session}))
			for _, m := range []azMsg{
				{text: "input", taskID: order},
				{text: "input", taskID: w.id("order"), contextID: session},
			} {
				if r := alice.unreached(t, w.sendCall(t, azLegacy, false, false, m)); !r.is(azLegacy.binding, a2a.ErrTaskNotFound) {
					t.Errorf("send with an id another tenant chose first: %s", r)
				}
			}
			for _, kind := range []string{"task", "context"} {
				labels := []string{"agent", "demo", "kind", kind}
				if labelled {
					labels = append(labels, "tenant", "tenant-a")
				}
				if n := w.metric(t, "a2agw_claim_refusals_total", labels...); n != 1 {
					t.Errorf("claim refusals %v: %v, want 1", labels, n)
				}
			}
			// The first sender's own follow-up is no refusal.
			bob.mustOK(t, azLegacy, w.sendCall(t, azLegacy, false, false, azMsg{text: "complete", taskID: order, contextID: session}))
			if n := w.metric(t, "a2agw_claim_refusals_total", "agent", "demo", "kind", "task", "tenant", "tenant-b"); n != 0 {
				t.Errorf("the owner's follow-up was counted as a refusal")
			}
		})
	}
}

// A retry through another mount of the same agent is the same send:
// replayed, not sent to the agent twice. A mount of another agent keeps
// its own records.
func TestDedupeAcrossMounts(t *testing.T) {
	for _, layout := range azLayouts() {
		other := layout.mounts[len(layout.mounts)-1]
		t.Run(layout.name, func(t *testing.T) {
			dedupeBackends(t, func(t *testing.T, store gwtest.Option) {
				elsewhere := demoagent.New(demoagent.Options{StepDelay: 20 * time.Millisecond})
				srv := httptest.NewServer(elsewhere)
				t.Cleanup(func() { elsewhere.Close(); srv.Close() })
				withElsewhere := func(c *config.Config) {
					c.Agents = append(c.Agents, config.Agent{Name: "elsewhere", URL: srv.URL})
				}
				env := gwtest.Start(t, store, shortLease, layout.opt, withElsewhere)
				tok := env.Token(t, "acme", "alice")
				msg := "m-mounts-" + layout.name
				first, b1 := env.Do(t, http.MethodPost, env.AgentBase+"/", tok, "1.0", sendBody(msg, "hello"))
				retry, b2 := env.Do(t, http.MethodPost, env.Gateway+"/agents/"+other+"/", tok, "1.0", sendBody(msg, "hello"))
				if first.StatusCode != http.StatusOK || !bytes.Equal(b1, b2) || retry.Header.Get(dedupe.ReplayHeader) != "true" {
					t.Fatalf("retry through %s not replayed:\n%s\n%s", other, b1, b2)
				}
				if got := sendsReaching(env, msg); got != 1 {
					t.Fatalf("%d sends reached the agent, want 1", got)
				}
				third, b3 := env.Do(t, http.MethodPost, env.Gateway+"/agents/elsewhere/", tok, "1.0", sendBody(msg, "hello"))
				if third.StatusCode != http.StatusOK || third.Header.Get(dedupe.ReplayHeader) != "" || len(elsewhere.Requests()) != 1 {
					t.Fatalf("send to another agent: replayed %q, %d requests reached it: %s",
						third.Header.Get(dedupe.ReplayHeader), len(elsewhere.Requests()), b3)
				}
			})
		})
	}
}
