// Package metrics defines every Prometheus metric the gateway exports, in
// one place, so dashboards, alert rules and the catalogue in docs/metrics.md can be
// checked against a single list. Labels are bounded: agent, operation,
// state, reason, outcome; never a task id.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric name.
const Namespace = "a2agw"

// Metrics holds the gateway's collectors. The registerer is injected so
// tests can read a fresh registry.
type Metrics struct {
	Requests        *prometheus.CounterVec
	RequestDuration *prometheus.HistogramVec
	UpstreamErrors  *prometheus.CounterVec
	OpenStreams     *prometheus.GaugeVec
	AuthzDenials    *prometheus.CounterVec
	BudgetRefusals  *prometheus.CounterVec
	Dedupe          *prometheus.CounterVec
	StoreRoundTrip  *prometheus.HistogramVec
	StoreErrors     *prometheus.CounterVec
	Lifecycle       *Lifecycle
	claimRefusals   *prometheus.CounterVec
}

// New creates and registers the collectors.
func New(reg prometheus.Registerer, opts ...Option) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "requests_total",
			Help: "A2A requests handled, by agent, operation and result (ok, an A2A error reason, or upstream_<class>).",
		}, []string{"agent", "operation", "result"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "request_duration_seconds",
			Help:    "Time to the end of the response (for streams: to the end of the stream), by agent and operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
		}, []string{"agent", "operation"}),
		UpstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "upstream_errors_total",
			Help: "Exchanges with an agent that failed, by agent and reason (timeout, unreachable, invalid_response).",
		}, []string{"agent", "reason"}),
		OpenStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "open_streams",
			Help: "Streams currently relayed to callers, by agent.",
		}, []string{"agent"}),
		AuthzDenials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "authz_denials_total",
			Help: "Operations refused by authorization, by agent, operation and reason (tenant_not_allowed, missing_scope, not_owner, foreign_in_answer, foreign_reference_in_answer, other_task_in_answer, store_unavailable).",
		}, []string{"agent", "operation", "reason"}),
		BudgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "budget_refusals_total",
			Help: "Requests refused by a per-tenant budget, by agent and budget (rate, streams, active_tasks).",
		}, []string{"agent", "budget"}),
		Dedupe: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "dedupe_total",
			Help: "Sends seen by deduplication, by agent and outcome (first_seen, replayed, attached, in_flight_wait, in_progress, conflict, expired_takeover, store_error_refused, store_error_forwarded).",
		}, []string{"agent", "outcome"}),
	}
	m.StoreRoundTrip = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "store_round_trip_seconds",
		Help:    "Round trips to Redis, by command (or pipeline) and path (request: a caller waited for it; background: queued bookkeeping).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, []string{"op", "path"})
	m.StoreErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "store_errors_total",
		Help: "Round trips to Redis that failed, by command (or pipeline).",
	}, []string{"op"})
	reg.MustRegister(m.Requests, m.RequestDuration, m.UpstreamErrors, m.OpenStreams, m.AuthzDenials, m.BudgetRefusals, m.Dedupe, m.StoreRoundTrip, m.StoreErrors)
	m.Lifecycle = newLifecycle(reg, opts)
	m.claimRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "claim_refusals_total",
		Help: "Client-chosen ids (legacy task ids, context ids) refused because another tenant or subject holds them, by agent and kind (task, context); also by tenant when the tenant label is on.",
	}, m.Lifecycle.tenants.names("agent", "kind"))
	reg.MustRegister(m.claimRefusals)
	return m
}

// ClaimRefused counts a client-chosen id of kind (task, context) refused to
// tenant on agent because someone else chose it first.
func (m *Metrics) ClaimRefused(agent, kind, tenant string) {
	m.claimRefusals.WithLabelValues(m.Lifecycle.tenants.labels(tenant, agent, kind)...).Inc()
}
