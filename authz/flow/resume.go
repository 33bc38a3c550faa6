package flow

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// credential is what a challenge's completion stores, sealed.
type credential struct {
	Scheme string `json:"scheme,omitempty"`
	Token  string `json:"token"`
}

// headerValue is the credential as an Authorization header value.
func (c credential) headerValue() string {
	if c.Scheme == "" {
		return c.Token
	}
	return c.Scheme + " " + c.Token
}

// Resume is the stage that hands a task's credential to its agent. A
// message (send or stream) to a task of a participating agent whose
// current challenge belongs to the caller's tenant and subject:
//
//   - completed and unexpired: the challenge is marked used, atomically,
//     and the message goes on carrying the credential (delivery per agent);
//   - expired: refused with ErrChallengeExpired, naming a fresh challenge
//     opened in its place; the old credential is deleted unused;
//   - anything else (open, used, another caller's, none): goes on
//     unchanged, and the agent decides.
//
// For agents with delivery "header" the configured header is removed from
// every caller's request, so only the gateway can set it.
func (f *Flow) Resume(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		af := f.agents[s.Agent.Name]
		if af == nil {
			return next(w, r, s)
		}
		if af.cfg.Delivery == config.DeliverHeader {
			r.Header.Del(af.cfg.Header)
		}
		op := s.Op
		if op.Method != a2a.MethodSend && op.Method != a2a.MethodStream {
			return next(w, r, s)
		}
		if err := f.dropCallerCredential(s, af); err != nil {
			return err
		}
		if op.TaskID == "" || s.Principal == nil {
			return next(w, r, s)
		}
		ctx := r.Context()
		c, found, err := f.st.Current(ctx, af.name, op.TaskID)
		if err != nil {
			// Nothing is handed over; the agent sees the message as sent.
			s.Log().Warn("auth flow: challenge not read; message forwarded without a credential", "task_id", op.TaskID, "err", err)
			return next(w, r, s)
		}
		if !found || c.Tenant != s.Principal.Tenant || c.Subject != s.Principal.Subject {
			return next(w, r, s)
		}
		now := f.now()
		if expired(c, now) {
			return f.refuseExpired(ctx, s, c, now)
		}
		if c.Status != store.ChallengeCompleted {
			return next(w, r, s)
		}
		return f.handOver(w, r, s, next, af, c, now)
	}
}

// handOver uses the task's completed challenge c and forwards the message
// with its credential.
func (f *Flow) handOver(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler, af *agentFlow, c store.Challenge, now time.Time) error {
	ctx := r.Context()
	if moved, err := f.taskMovedOn(ctx, c); err != nil || moved {
		if err != nil {
			s.Log().Warn("auth flow: task state not read; message forwarded without a credential", "task_id", c.TaskID, "err", err)
		}
		return next(w, r, s)
	}
	used, sealed, err := f.st.Use(ctx, c.Agent, c.TaskID, c.ID, now)
	switch {
	case errors.Is(err, store.ErrChallengeExpired):
		return f.refuseExpired(ctx, s, c, now)
	case errors.Is(err, store.ErrChallengeState), errors.Is(err, store.ErrChallengeNotFound):
		// Another message took it first: this one carries nothing.
		return next(w, r, s)
	case err != nil:
		// The credential is still there: let the caller retry rather than
		// forward a message the agent would refuse.
		s.Log().Error("auth flow: challenge could not be used", "task_id", c.TaskID, "err", err)
		return a2a.ErrUnavailable.WithMessage("the task's credential cannot be read now; retry").WithRetryAfter(time.Second)
	}
	plain, err := f.seal.open(sealed, additionalData(purposeCredential, c.Agent, c.TaskID, c.ID))
	var cred credential
	if err == nil {
		err = json.Unmarshal(plain, &cred)
	}
	if err != nil {
		// A key removed from the configuration, or a record tampered with.
		s.Log().Error("auth flow: stored credential cannot be opened; message forwarded without it", "task_id", c.TaskID, "challenge_id", c.ID)
		return next(w, r, s)
	}
	r, err = f.deliver(r, s, af, cred)
	if err != nil {
		s.Log().Warn("auth flow: credential not added to the message; forwarded without it", "task_id", c.TaskID, "err", err)
		return next(w, r, s)
	}
	f.m.ResumeSeconds.WithLabelValues(af.name).Observe(used.UsedAt.Sub(used.Created).Seconds())
	s.Log().Info("auth flow: credential handed to the agent", "task_id", c.TaskID, "challenge_id", c.ID, "delivery", af.cfg.Delivery)
	return f.forwardResumed(w, r, s, next)
}

// dropCallerCredential removes the gateway's credential metadata key from
// a caller's message to an agent that takes credentials there: only the
// gateway may put one in.
func (f *Flow) dropCallerCredential(s *proxy.Scope, af *agentFlow) error {
	if af.cfg.Delivery != config.DeliverMetadata {
		return nil
	}
	if s.Op.Binding == a2a.BindingGRPC {
		body, err := grpcMessageMetadata(s, CredentialMetadataKey, nil)
		if err != nil {
			return errGRPCMetadata
		}
		s.Body = body
		return nil
	}
	s.Body = withoutMessageMetadata(s.Body, s.Op.Binding == a2a.BindingJSONRPC, CredentialMetadataKey)
	return nil
}

// taskMovedOn reports whether the task's lifecycle record shows it left
// auth-required after the challenge was opened: the challenge is stale,
// and it is closed. A record that lags (applied off the request path) or
// is missing does not count.
func (f *Flow) taskMovedOn(ctx context.Context, c store.Challenge) (bool, error) {
	rec, found, err := f.lc.Get(ctx, c.Agent, c.TaskID)
	if err != nil || !found {
		return false, err
	}
	st := a2a.ParseState(rec.State)
	if st == a2a.StateAuthRequired || st == a2a.StateUnknown || !rec.StateSince.After(c.Created) {
		return false, nil
	}
	return true, f.closeChallenge(ctx, Event{Agent: c.Agent, TaskID: c.TaskID, State: st, Kind: a2a.EventTask})
}

// deliver adds the credential to the request as the agent expects it.
func (f *Flow) deliver(r *http.Request, s *proxy.Scope, af *agentFlow, cred credential) (*http.Request, error) {
	switch af.cfg.Delivery {
	case config.DeliverHeader:
		return r.WithContext(proxy.WithUpstreamHeader(r.Context(), af.cfg.Header, cred.Token)), nil
	case config.DeliverMetadata:
		var body []byte
		var err error
		if s.Op.Binding == a2a.BindingGRPC {
			body, err = grpcMessageMetadata(s, CredentialMetadataKey, cred.headerValue())
		} else {
			body, err = withMessageMetadata(s.Body, s.Op.Binding == a2a.BindingJSONRPC, CredentialMetadataKey, cred.headerValue())
		}
		if err != nil {
			return r, err
		}
		s.Body = body
		return r, nil
	default:
		return r.WithContext(proxy.WithUpstreamHeader(r.Context(), "Authorization", cred.headerValue())), nil
	}
}

// forwardResumed forwards the resumed message and counts its outcome once:
// the first state its answer shows for the task, or "error" when the
// exchange failed before any.
func (f *Flow) forwardResumed(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler) error {
	var once sync.Once
	count := func(outcome string) {
		once.Do(func() { f.m.Resumes.WithLabelValues(s.Agent.Name, outcome).Inc() })
	}
	taskID := s.Op.TaskID
	s.AddObserver(proxy.ObserverFunc(func(_ context.Context, _ *proxy.Scope, ev a2a.Event, _ []byte) error {
		switch {
		case ev.Kind == a2a.EventError:
			count("error")
		case ev.TaskID == taskID && ev.State != a2a.StateUnknown:
			count(ev.State.String())
		}
		return nil
	}))
	s.OnEnd(func(err error) {
		if err != nil {
			count("error")
		}
	})
	return next(w, r, s)
}

// refuseExpired refuses a message resuming a task whose challenge expired:
// the challenge is marked expired (its credential deleted, never sent) and
// a fresh one takes its place, which the error names.
func (f *Flow) refuseExpired(ctx context.Context, s *proxy.Scope, c store.Challenge, now time.Time) error {
	ctx = context.WithoutCancel(ctx)
	f.expire(ctx, c, now)
	f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedExpired).Inc()
	fresh := f.newChallenge(c.Agent, c.TaskID, c.ContextID, c.Tenant, c.Subject, c.Version,
		requirement{Scheme: c.Scheme, Scopes: c.Scopes, AuthorizationURL: c.AuthorizationURL}, now)
	cur, err := f.open(ctx, fresh, c.ID)
	if err != nil {
		s.Log().Error("auth flow: no fresh challenge opened after an expired one", "task_id", c.TaskID, "err", err)
		return ErrChallengeExpired.WithMessage("the task's auth challenge expired; send a message to the task again to get a new one")
	}
	u := f.challengeURL(cur.ID)
	s.Log().Info("auth flow: resume refused, the challenge expired", "task_id", c.TaskID, "challenge_id", c.ID, "new_challenge_id", cur.ID)
	return ErrChallengeExpired.
		WithMessage("the task's auth challenge expired and its credential was discarded; complete the new challenge at "+u+" and send the message again").
		WithHeader(ChallengeHeader, u)
}

// ChallengeHeader names the fresh challenge on an ErrChallengeExpired answer.
const ChallengeHeader = "A2A-Gateway-Auth-Challenge"

// expire marks c expired, counting it once across replicas.
func (f *Flow) expire(ctx context.Context, c store.Challenge, now time.Time) bool {
	_, changed, err := f.st.Expire(ctx, c.Agent, c.TaskID, c.ID, now)
	if err != nil {
		if !errors.Is(err, store.ErrChallengeNotFound) {
			f.log.Warn("auth flow: challenge not marked expired", "agent", c.Agent, "task_id", c.TaskID, "challenge_id", c.ID, "err", err)
		}
		return false
	}
	if changed {
		f.m.Expired.WithLabelValues(c.Agent).Inc()
		f.log.Info("auth challenge expired", "agent", c.Agent, "task_id", c.TaskID, "challenge_id", c.ID)
	}
	return changed
}
