package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/proxy/budget"
)

// authenticate turns the caller's credential into a Principal, or refuses
// with 401 and a WWW-Authenticate challenge. The reason goes to the log,
// never to the caller.
func authenticate(authn *authz.Authenticator) proxy.Stage {
	return func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			p, err := authn.Authenticate(r)
			if err != nil {
				var ae *authz.AuthError
				if errors.As(err, &ae) {
					s.Log().Info("authentication failed", "reason", ae.Reason, "issuer", ae.Issuer, "missing", ae.Missing)
				}
				return a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", authn.Challenge(err))
			}
			s.Principal = p
			s.AddLogAttrs("tenant", p.Tenant, "subject", p.Subject)
			return next(w, r, s)
		}
	}
}

// limitRate spends one request of the caller's tenant budget, for streams
// one of its stream slots for as long as the stream is open, and refuses a
// send that would start a task beyond the tenant's cap on open tasks.
func limitRate(b *budget.Budgets, active store.ActiveTasks, m *metrics.Metrics) proxy.Stage {
	return func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			tenant := s.Principal.Tenant
			if ok, wait := b.Allow(tenant); !ok {
				m.BudgetRefusals.WithLabelValues(s.Agent.Name, "rate").Inc()
				return a2a.ErrRateLimited.WithMessage("the tenant's request budget is exhausted").WithRetryAfter(wait)
			}
			if max := b.MaxActiveTasks(tenant); max > 0 && (s.Op.Method == a2a.MethodSend || s.Op.Method == a2a.MethodStream) && s.Op.TaskID == "" {
				n, err := active.Count(r.Context(), tenant, b.ActiveTaskWindow())
				if err != nil {
					s.Log().Error("active tasks could not be counted; send refused", "err", err)
					return a2a.ErrUnavailable.WithMessage("the tenant's task budget cannot be checked; retry later").WithRetryAfter(time.Second)
				}
				if n >= max {
					m.BudgetRefusals.WithLabelValues(s.Agent.Name, "active_tasks").Inc()
					return a2a.ErrRateLimited.WithMessage("the tenant has its maximum number of open tasks").WithRetryAfter(30 * time.Second)
				}
			}
			if s.Op.Method.Streaming() {
				release, ok := b.AcquireStream(tenant)
				if !ok {
					m.BudgetRefusals.WithLabelValues(s.Agent.Name, "streams").Inc()
					return a2a.ErrRateLimited.WithMessage("the tenant holds its maximum number of open streams").WithRetryAfter(5 * time.Second)
				}
				s.OnEnd(func(error) { release() })
			}
			return next(w, r, s)
		}
	}
}

// authorize checks the agent's policy and the ownership of every task and
// context the request names, before anything reaches the agent. For the
// requests the lifecycle guard checks, the task's record is read in the
// same round trip.
func authorize(z *authz.Authorizer) proxy.Stage {
	return func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			authorize := z.Authorize
			if lifecycle.GuardReads(s.Op) {
				authorize = z.AuthorizeReading
			}
			grant, err := authorize(r.Context(), s.Principal, s.Agent.Name, s.Agent.RecordKey, s.Op)
			if err != nil {
				return err
			}
			s.Grant = grant
			return next(w, r, s)
		}
	}
}

// recordOwnership is the observer that makes every task and context an
// answer reveals the caller's, and withholds answers that reveal someone
// else's.
var recordOwnership = proxy.ObserverFunc(func(ctx context.Context, s *proxy.Scope, ev a2a.Event, _ []byte) error {
	if s.Grant == nil {
		return nil
	}
	return s.Grant.Record(ctx, ev)
})

// routeTenant serves agents with tenant_routing: the agent is told the
// caller's tenant as the 1.0 routing tenant, and a caller naming another
// tenant is refused. Without it the tenant field is the agent's own
// routing detail and passes through; ownership still guards every task.
func routeTenant(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		if !s.Agent.Config().TenantRouting {
			return next(w, r, s)
		}
		if s.Op.Tenant != "" && s.Op.Tenant != s.Principal.Tenant {
			s.Log().Warn("request names another tenant", "named_tenant", s.Op.Tenant)
			return a2a.ErrPermissionDenied.WithMessage("the request names a tenant other than the caller's")
		}
		if s.Op.Version == a2a.V10 {
			if err := s.SetTenant(s.Principal.Tenant); err != nil {
				return a2a.ErrInvalidRequest.WithMessage("the request could not be routed to the caller's tenant")
			}
		} else if b := s.Agent.Bridge; b != nil && b.Agent.Version == a2a.V10 {
			// A 0.3 request has no tenant to carry, but the 1.0 request the
			// bridge spells for the agent takes its tenant from the
			// operation.
			s.Op.Tenant = s.Principal.Tenant
		}
		return next(w, r, s)
	}
}

// requireStore refuses, before the agent is asked, requests whose answer
// depends on the store when the store cannot answer: a send's answer must
// be recorded, a list's filtered. Requests that name ids were already
// checked by authorization; sends the dedupe stage claimed were checked
// there; for the rest, recent round trips vouch for the store, or it is
// pinged (see storeHealth).
func requireStore(ping func(context.Context) error, covered func(*http.Request, *a2a.Operation) bool) proxy.Stage {
	return func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			m := s.Op.Method
			if (m == a2a.MethodSend || m == a2a.MethodStream || m == a2a.MethodListTasks) && !s.Op.HasTaskRefs() && !covered(r, s.Op) {
				if err := ping(r.Context()); err != nil {
					s.Log().Error("store unavailable; request refused before reaching the agent", "err", err)
					return a2a.ErrUnavailable.WithMessage("the gateway's store is temporarily unavailable; retry later").WithRetryAfter(time.Second)
				}
			}
			return next(w, r, s)
		}
	}
}

// countOpenTasks keeps each tenant's count of open tasks: a task counts
// from its first non-terminal state until a terminal one. Each request
// writes only when one of its tasks changes between the two.
// Without a cap configured it counts nothing.
func countOpenTasks(active store.ActiveTasks, enabled bool) proxy.Stage {
	return func(next proxy.Handler) proxy.Handler {
		if !enabled {
			return next
		}
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			counted := map[string]bool{}
			s.AddObserver(proxy.ObserverFunc(func(ctx context.Context, s *proxy.Scope, ev a2a.Event, _ []byte) error {
				if ev.TaskID == "" || ev.State == a2a.StateUnknown {
					return nil
				}
				open := !ev.State.Terminal()
				if was, ok := counted[ev.TaskID]; ok && was == open {
					return nil
				}
				// Keyed like ownership: one task through two mounts counts once.
				if err := active.Track(ctx, s.Principal.Tenant, s.Agent.RecordKey, ev.TaskID, open); err != nil {
					// The count is a budget, not a guard: losing one mark
					// must not withhold the caller's answer.
					s.Log().Warn("open task not counted", "task_id", ev.TaskID, "err", err)
					return nil
				}
				counted[ev.TaskID] = open
				return nil
			}))
			return next(w, r, s)
		}
	}
}
