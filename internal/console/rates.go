package console

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// sampleEvery is how often the request counters are read.
const sampleEvery = 10 * time.Second

// requestsMetric is the counter of A2A requests, by agent and result.
const requestsMetric = "a2agw_requests_total"

// rates keeps samples of the gateway's own request counters for a window,
// so the overview shows recent rates without Prometheus.
type rates struct {
	g      prometheus.Gatherer
	window time.Duration

	mu      sync.Mutex
	samples []sample // oldest first, within window
}

type sample struct {
	at     time.Time
	totals map[string]counts // by agent
}

type counts struct{ requests, errors float64 }

// Rate is one agent's requests and errors per second over the window.
type Rate struct {
	Agent            string
	Requests, Errors float64
	Over             time.Duration
}

func newRates(g prometheus.Gatherer, window time.Duration) *rates {
	return &rates{g: g, window: window}
}

func (r *rates) run(ctx context.Context) {
	if r.g == nil {
		return
	}
	r.sample(time.Now())
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.sample(now)
		}
	}
}

// sample reads the counters once at now.
func (r *rates) sample(now time.Time) {
	mfs, err := r.g.Gather()
	if err != nil {
		return
	}
	totals := map[string]counts{}
	for _, mf := range mfs {
		if mf.GetName() != requestsMetric {
			continue
		}
		for _, m := range mf.GetMetric() {
			var agent, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "agent":
					agent = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			c := totals[agent]
			v := m.GetCounter().GetValue()
			c.requests += v
			if result != "ok" {
				c.errors += v
			}
			totals[agent] = c
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, sample{at: now, totals: totals})
	// Keep one sample at or before the window's start, to span it whole.
	for len(r.samples) > 2 && now.Sub(r.samples[1].at) >= r.window {
		r.samples = r.samples[1:]
	}
}

// current is every agent's rates between the oldest and newest samples.
func (r *rates) current() []Rate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) < 2 {
		return nil
	}
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	span := last.at.Sub(first.at)
	if span <= 0 {
		return nil
	}
	out := make([]Rate, 0, len(last.totals))
	for agent, c := range last.totals {
		old := first.totals[agent]
		out = append(out, Rate{
			Agent:    agent,
			Requests: max(c.requests-old.requests, 0) / span.Seconds(),
			Errors:   max(c.errors-old.errors, 0) / span.Seconds(),
			Over:     span,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}
