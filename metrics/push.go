package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Push holds the metrics of the push-notification relay: its deliveries
// (it is the relay's push.DeliveryMetrics), its registrations, and the
// upstream subscriptions that feed it.
type Push struct {
	queued       prometheus.Counter
	delivered    prometheus.Counter
	retried      *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	depth        prometheus.Gauge
	oldestAge    prometheus.Gauge
	latency      prometheus.Histogram

	// ConfigRefusals counts push configs refused at registration, by agent
	// and reason (url_policy, challenge, invalid, too_many).
	ConfigRefusals *prometheus.CounterVec
	// Subscriptions is the number of upstream task subscriptions this
	// replica holds, by agent.
	Subscriptions *prometheus.GaugeVec
	// Resubscribes counts upstream subscriptions opened again after a
	// stream ended or failed, by agent.
	Resubscribes *prometheus.CounterVec
	// PollingFallbacks counts subscriptions that fell back to polling
	// GetTask, by agent.
	PollingFallbacks *prometheus.CounterVec
	// LeaseTakeovers counts subscriptions this replica took over from a
	// holder whose lease ran out, by agent.
	LeaseTakeovers *prometheus.CounterVec
}

// deliveryLatencyBuckets span a healthy receiver's milliseconds to the end
// of the default retry schedule (about a day).
var deliveryLatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 36000, 86400}

// NewPush creates and registers the push metrics, with every series of
// the given agents and reasons at zero, so rates and alerts see them from
// the start. The gateway registers them whether or not the relay is on.
func NewPush(reg prometheus.Registerer, agents, retryReasons, deadReasons []string) *Push {
	p := &Push{
		queued: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_notifications_queued_total",
			Help: "Notifications written to the delivery queue (duplicates of queued ones not counted).",
		}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_notifications_delivered_total",
			Help: "Notifications a receiver acknowledged with a 2xx.",
		}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_notifications_retried_total",
			Help: "Failed delivery attempts followed by a retry, by reason (timeout, network, status_429, status_5xx, status_other, circuit_open).",
		}, []string{"reason"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_notifications_dead_lettered_total",
			Help: "Notifications moved to the dead letters, by reason (retries_exhausted, gone, undeliverable).",
		}, []string{"reason"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "push_queue_depth",
			Help: "Notifications queued for delivery across every replica (each replica reports the same value: aggregate with max).",
		}),
		oldestAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "push_queue_oldest_age_seconds",
			Help: "Age of the oldest queued notification, from its event (cluster-wide; aggregate with max).",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "push_delivery_latency_seconds",
			Help:    "Time from a task event to the 2xx that acknowledged its notification, retries included.",
			Buckets: deliveryLatencyBuckets,
		}),
		ConfigRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_config_refusals_total",
			Help: "Push configs refused at registration, by agent and reason (url_policy, challenge, invalid, too_many).",
		}, []string{"agent", "reason"}),
		Subscriptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "push_upstream_subscriptions",
			Help: "Upstream task subscriptions held by this replica, by agent.",
		}, []string{"agent"}),
		Resubscribes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_upstream_resubscribes_total",
			Help: "Upstream subscriptions opened again after the stream ended or failed, by agent.",
		}, []string{"agent"}),
		PollingFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_upstream_polling_fallbacks_total",
			Help: "Upstream subscriptions that fell back to polling GetTask, by agent.",
		}, []string{"agent"}),
		LeaseTakeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "push_upstream_lease_takeovers_total",
			Help: "Upstream subscriptions taken over from a replica whose lease ran out, by agent.",
		}, []string{"agent"}),
	}
	reg.MustRegister(p.queued, p.delivered, p.retried, p.deadLettered, p.depth, p.oldestAge, p.latency,
		p.ConfigRefusals, p.Subscriptions, p.Resubscribes, p.PollingFallbacks, p.LeaseTakeovers)
	for _, r := range retryReasons {
		p.retried.WithLabelValues(r)
	}
	for _, r := range deadReasons {
		p.deadLettered.WithLabelValues(r)
	}
	for _, a := range agents {
		for _, r := range ConfigRefusalReasons {
			p.ConfigRefusals.WithLabelValues(a, r)
		}
		p.Subscriptions.WithLabelValues(a)
		p.Resubscribes.WithLabelValues(a)
		p.PollingFallbacks.WithLabelValues(a)
		p.LeaseTakeovers.WithLabelValues(a)
	}
	return p
}

// ConfigRefusalReasons are the reasons of ConfigRefusals.
var ConfigRefusalReasons = []string{"url_policy", "challenge", "invalid", "too_many"}

// Queued counts a notification written to the queue.
func (p *Push) Queued() { p.queued.Inc() }

// Delivered counts an acknowledged notification, latency after its event.
func (p *Push) Delivered(latency time.Duration) {
	p.delivered.Inc()
	p.latency.Observe(latency.Seconds())
}

// Retried counts a failed attempt that will be retried.
func (p *Push) Retried(reason string) { p.retried.WithLabelValues(reason).Inc() }

// DeadLettered counts a notification moved to the dead letters.
func (p *Push) DeadLettered(reason string) { p.deadLettered.WithLabelValues(reason).Inc() }

// Backlog sets the queue gauges.
func (p *Push) Backlog(depth int, oldestAge time.Duration) {
	p.depth.Set(float64(depth))
	p.oldestAge.Set(oldestAge.Seconds())
}
