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

// sample keeps a reading of the counters taken at now.
func (r *rates) sample(now time.Time) {
	totals, ok := r.read()
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, sample{at: now, totals: totals})
	// Keep one sample at or before the window's start, to span it whole.
	for len(r.samples) > 2 && now.Sub(r.samples[1].at) >= r.window {
		r.samples = r.samples[1:]
	}
}

// read sums the request counter by agent, and its non-ok results.
func (r *rates) read() (map[string]counts, bool) {
	if r.g == nil {
		return nil, false
	}
	mfs, err := r.g.Gather()
	if err != nil {
		return nil, false
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
	return totals, true
}

// current is every agent's rates from the oldest sample kept to a reading
// taken now.
func (r *rates) current(now time.Time) []Rate {
	last, ok := r.read()
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) == 0 {
		return nil
	}
	first := r.samples[0]
	span := now.Sub(first.at)
	if span < time.Second {
		return nil
	}
	out := make([]Rate, 0, len(last))
	for agent, c := range last {
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
