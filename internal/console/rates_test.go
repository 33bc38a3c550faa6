package console

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/metrics"
)

func TestRatesFromTheGatewaysOwnCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	r := newRates(reg, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.sample(t0)
	if got := r.current(t0); got != nil {
		t.Fatalf("rates over no time: %+v", got)
	}
	m.Requests.WithLabelValues("demo", "SendMessage", "ok").Add(90)
	m.Requests.WithLabelValues("demo", "SendMessage", "TASK_NOT_FOUND").Add(10)
	got := r.current(t0.Add(10 * time.Second))
	if len(got) != 1 || got[0].Agent != "demo" || got[0].Requests != 10 || got[0].Errors != 1 || got[0].Over != 10*time.Second {
		t.Fatalf("rates = %+v, want demo at 10/s with 1 error/s over 10s", got)
	}
	// Samples older than the window go, but one stays at its start.
	for i := 2; i <= 12; i++ {
		r.sample(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	if got := r.current(t0.Add(120 * time.Second)); got[0].Over != time.Minute || got[0].Requests != 0 {
		t.Fatalf("after a quiet minute: %+v", got)
	}
}

func TestOverviewShowsEscalationsAndWatchdogActions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	m.Lifecycle.WatchdogAction("demo", "escalate", "working")
	m.Lifecycle.WatchdogAction("demo", "escalate", "working")
	f := newFixture(t, memStore(t), func(o *Options) { o.Metrics = reg })
	c := f.client()
	c.signIn(t, testOpsToken)
	_, page := c.get(Prefix)
	if !strings.Contains(page, "<td>demo</td><td>escalate</td><td>working</td><td>2</td>") {
		t.Fatalf("the overview does not show the watchdog's escalations:\n%s", page)
	}
}
