package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

// Two gateways on one Redis: the cluster-wide orphan gauge is exported by
// exactly one of them, so summing across replicas counts each orphan once.
func TestOrphanGaugeExportedOnceAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and two gateways")
	}
	srv := redistest.Start(t)
	shared := func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Lifecycle.OrphanAfter = duration.Duration(time.Second)
		c.Lifecycle.SweepInterval = duration.Duration(200 * time.Millisecond)
	}
	a := gwtest.Start(t, shared)
	b := gwtest.Start(t, shared)
	tok := a.Token(t, "acme", "alice")
	resp, body := a.Do(t, http.MethodPost, a.AgentBase+"/message:send", tok, "1.0",
		[]byte(`{"message":{"messageId":"orphan-1","role":"ROLE_USER","parts":[{"text":"never"}]},"configuration":{"returnImmediately":true}}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("send: %d %s", resp.StatusCode, body)
	}
	orphans := func(env *gwtest.Env) (float64, bool) {
		fam := scrape(t, env.Admin)["a2agw_task_orphans"]
		if fam == nil {
			return 0, false
		}
		var sum float64
		for _, m := range fam.GetMetric() {
			sum += m.GetGauge().GetValue()
		}
		return sum, true
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		na, ea := orphans(a)
		nb, eb := orphans(b)
		if ea != eb && na+nb == 1 {
			return // one replica exports the gauge, and it counts the orphan once
		}
		if ea && eb {
			t.Fatalf("both replicas export the orphan gauge (%v, %v)", na, nb)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan never showed up: replica a exports %v (%v), b exports %v (%v)", ea, na, eb, nb)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
