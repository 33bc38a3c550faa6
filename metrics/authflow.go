package metrics

import "github.com/prometheus/client_golang/prometheus"

// AuthFlow holds the metrics of auth-required challenges. Labels are the
// agent and a bounded word; never a task, challenge or tenant.
type AuthFlow struct {
	// Opened counts challenges opened for tasks that entered auth-required.
	Opened *prometheus.CounterVec
	// Completed counts challenges completed, by method (oauth, direct).
	Completed *prometheus.CounterVec
	// Expired counts challenges whose time ran out before they were used.
	Expired *prometheus.CounterVec
	// Refused counts refused completions and resumes, by reason.
	Refused *prometheus.CounterVec
	// Resumes counts what a task did after the gateway handed its agent a
	// credential, by outcome: the state it showed next.
	Resumes *prometheus.CounterVec
	// Closed counts challenges closed unused because the task left
	// auth-required without a credential from the gateway, by the state
	// it moved to.
	Closed *prometheus.CounterVec
	// ResumeSeconds is the time from a challenge's opening to the resumed
	// message that carried its credential.
	ResumeSeconds *prometheus.HistogramVec
}

// Reasons of AuthFlow.Refused.
const (
	// AuthRefusedExpired: a resume or completion after the challenge expired.
	AuthRefusedExpired = "expired"
	// AuthRefusedReplay: a second completion, or a completion of a used or
	// closed challenge.
	AuthRefusedReplay = "replay"
	// AuthRefusedNotFound: an unknown challenge, or another caller's.
	AuthRefusedNotFound = "not_found"
	// AuthRefusedState: an OAuth callback with an unknown, used or
	// tampered state.
	AuthRefusedState = "state"
	// AuthRefusedExchange: the provider refused the authorization code.
	AuthRefusedExchange = "exchange"
	// AuthRefusedInvalid: a malformed completion request.
	AuthRefusedInvalid = "invalid"
)

// NewAuthFlow creates and registers the auth-flow metrics.
func NewAuthFlow(reg prometheus.Registerer) *AuthFlow {
	m := &AuthFlow{
		Opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "auth_challenges_opened_total",
			Help: "Auth challenges opened for tasks that entered auth-required, by agent.",
		}, []string{"agent"}),
		Completed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "auth_challenges_completed_total",
			Help: "Auth challenges completed, by agent and method (oauth, direct).",
		}, []string{"agent", "method"}),
		Expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "auth_challenges_expired_total",
			Help: "Auth challenges that expired before their credential was used, by agent.",
		}, []string{"agent"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "auth_challenges_refused_total",
			Help: "Refused challenge completions and resumes, by agent and reason (expired, replay, not_found, state, exchange, invalid).",
		}, []string{"agent", "reason"}),
		Resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "auth_resumes_total",
			Help: "Tasks resumed with a credential from a challenge, by agent and outcome (the state the task showed next).",
		}, []string{"agent", "outcome"}),
		Closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "auth_challenges_closed_total",
			Help: "Challenges closed unused because the task left auth-required on its own, by agent and the state it moved to.",
		}, []string{"agent", "state"}),
		ResumeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "auth_challenge_resume_seconds",
			Help:    "Time from a challenge's opening to the resumed message that carried its credential, by agent.",
			Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"agent"}),
	}
	reg.MustRegister(m.Opened, m.Completed, m.Expired, m.Refused, m.Resumes, m.Closed, m.ResumeSeconds)
	return m
}
