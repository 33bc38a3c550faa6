package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// metricName finds the gateway's metric names in a query.
var metricName = regexp.MustCompile(`a2agw_[a-z0-9_]+`)

// descName reads the fully-qualified name out of a descriptor's String
// form, the only place client_golang shows it.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registry records what the metrics package registers: every metric the
// gateway can export, whether or not a series exists yet.
type registry struct {
	names      map[string]bool
	histograms map[string]bool
}

func (r *registry) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	_, histogram := c.(*prometheus.HistogramVec)
	if _, ok := c.(prometheus.Histogram); ok {
		histogram = true
	}
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			return fmt.Errorf("no name in descriptor %s", d)
		}
		r.names[m[1]] = true
		if histogram {
			r.histograms[m[1]] = true
		}
	}
	return nil
}

func (r *registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *registry) Unregister(prometheus.Collector) bool { return false }

// registeredMetrics runs every constructor of the metrics package, the one
// place the gateway's metrics are defined.
func registeredMetrics() *registry {
	r := &registry{names: map[string]bool{}, histograms: map[string]bool{}}
	metrics.New(r)
	metrics.NewAuthFlow(r)
	metrics.NewPush(r, nil, nil, nil)
	return r
}

// has reports whether name is a registered metric or a series of a
// registered histogram.
func (r *registry) has(name string) bool {
	if r.names[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && r.histograms[base] {
			return true
		}
	}
	return false
}

// checkMetricNames wants every a2agw_* name the queries use to be a metric
// the gateway registers, so a renamed metric cannot leave a panel empty or
// an alert silent.
func checkMetricNames(where string, exprs []string, reg *registry) error {
	var unknown []string
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			if !reg.has(n) && !slices.Contains(unknown, n) {
				unknown = append(unknown, n)
			}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: queries name metrics the gateway does not register: %s", where, strings.Join(unknown, ", "))
	}
	if len(exprs) == 0 {
		return errors.New(where + ": no queries")
	}
	return nil
}
