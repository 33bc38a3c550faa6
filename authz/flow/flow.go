// Package authflow turns an agent's auth-required state into a uniform,
// safe flow for every agent behind the gateway.
//
// When an answer or stream event shows a task entering auth-required, the
// gateway opens a challenge bound to the agent, the task, its context and
// the tenant and subject that own it (Observe), and adds it to what the
// caller sees under the metadata key "a2a-gateway/auth-challenge"
// (Rewrite). The caller completes the challenge on the gateway's /auth/
// endpoints, as the same tenant and subject: through an OAuth 2.0
// authorization-code flow with PKCE configured per agent, or by handing a
// credential over directly (ServeHTTP). The credential is kept sealed with
// AES-256-GCM until the next message to the task, which carries it to the
// agent once, in the way the agent's configuration says (Resume). A
// challenge that expires first is counted and announced (Run), and a
// message resuming its task is refused with ErrChallengeExpired while a
// fresh challenge is opened; the task itself stays auth-required in the
// agent's hands.
package flow

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"golang.org/x/oauth2"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// Authenticator authenticates callers of the challenge endpoints exactly
// as the proxy does; *authz.Authenticator is one.
type Authenticator interface {
	Authenticate(r *http.Request) (*request.Principal, error)
	// Challenge is the WWW-Authenticate value for a failed authentication.
	Challenge(err error) string
}

// Notifier tells a task's push consumers about an event the gateway
// originates (a challenge that expired); *push.Relay is one.
type Notifier interface {
	Publish(ctx context.Context, ev push.Event) (push.Published, error)
}

// Options assemble a Flow.
type Options struct {
	// Challenges keeps the challenges and sealed credentials. Required.
	Challenges store.Challenges
	// Lifecycle is read for a task's state and owner, and its Lease
	// elects the replica that sweeps expired challenges. Required.
	Lifecycle store.Lifecycle
	// Config is the auth_flows section, defaults applied.
	Config config.AuthFlowOptions
	// Agents are the configured agents; those with an auth_flow take part.
	Agents []config.Agent
	// PublicURL is the gateway's external base URL, for challenge links.
	PublicURL string
	// Authenticator authenticates the challenge endpoints. Required when an
	// agent takes part.
	Authenticator Authenticator
	// Metrics receives the auth-flow metrics. Required.
	Metrics *metrics.AuthFlow
	// Notifier announces expired challenges to push consumers; nil: none.
	Notifier Notifier
	// HTTPClient exchanges OAuth codes; default a client with a timeout
	// that follows no redirects.
	HTTPClient *http.Client
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Flow is the auth-required flow. Build it with New; it is safe for
// concurrent use.
type Flow struct {
	st        store.Challenges
	lc        store.Lifecycle
	o         config.AuthFlowOptions
	agents    map[string]*agentFlow
	names     []string
	public    string
	authn     Authenticator
	m         *metrics.AuthFlow
	notifier  Notifier
	client    *http.Client
	log       *slog.Logger
	now       func() time.Time
	seal      *sealer
	holder    string
	endpoints http.Handler
}

// agentFlow is one participating agent.
type agentFlow struct {
	name string
	cfg  *config.AgentAuthFlow
	// oauth is the provider registration, nil without one. Its Scopes are
	// the configured ones; empty means the challenge's.
	oauth *oauth2.Config
}

// New builds a flow. Without a participating agent it is inert: its
// stage, observer and sweep do nothing and its endpoints answer 404.
func New(o Options) (*Flow, error) {
	if o.Challenges == nil || o.Lifecycle == nil || o.Metrics == nil {
		return nil, errors.New("authflow: the challenge store, the lifecycle store and metrics are required")
	}
	f := &Flow{
		st: o.Challenges, lc: o.Lifecycle, o: o.Config, agents: map[string]*agentFlow{}, public: o.PublicURL,
		authn: o.Authenticator, m: o.Metrics, notifier: o.Notifier, client: o.HTTPClient, log: o.Logger, now: o.Now,
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.client == nil {
		f.client = &http.Client{Transport: telemetry.Transport(nil, "oauth token"), Timeout: exchangeTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	for i := range o.Agents {
		a := &o.Agents[i]
		if a.AuthFlow == nil {
			continue
		}
		af := &agentFlow{name: a.Name, cfg: a.AuthFlow}
		if oc := a.AuthFlow.OAuth; oc != nil {
			af.oauth = &oauth2.Config{
				ClientID:     oc.ClientID,
				Endpoint:     oauth2.Endpoint{AuthURL: oc.AuthorizationURL, TokenURL: oc.TokenURL},
				RedirectURL:  oc.RedirectURL,
				Scopes:       oc.Scopes,
				ClientSecret: secretFromEnv(oc.ClientSecretEnv),
			}
		}
		f.agents[a.Name] = af
		f.names = append(f.names, a.Name)
	}
	if len(f.agents) > 0 {
		if f.authn == nil {
			return nil, errors.New("authflow: an authenticator is required")
		}
		if o.Config.ChallengeTTL <= 0 || o.Config.Retention <= 0 || o.Config.SweepInterval <= 0 {
			return nil, errors.New("authflow: options without defaults; call ApplyDefaults and Validate first")
		}
		s, err := newSealer(o.Config.Keys)
		if err != nil {
			return nil, err
		}
		f.seal = s
	}
	f.holder = "authflow-" + randomToken(12)
	f.endpoints = f.routes()
	return f, nil
}

func secretFromEnv(name string) string {
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}

// randomToken is n random bytes, base64url without padding.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newChallengeID is 256 random bits.
func newChallengeID() string { return randomToken(32) }

// challengeURL is where a challenge is read and completed.
func (f *Flow) challengeURL(id string) string { return f.public + challengesPath + id }

// challengeView is what callers see of a challenge, in answers (under
// ChallengeMetadataKey), notifications and the endpoints.
type challengeView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// CompleteURL is the challenge's resource: GET it to read it, POST a
	// credential to CompleteURL + "/credential" or start OAuth at
	// CompleteURL + "/oauth".
	CompleteURL string `json:"completeUrl"`
	// Methods are the ways to complete it: "direct", and "oauth" when the
	// agent has an OAuth client configured.
	Methods []string `json:"methods"`
	// AuthorizeURL is the authorization URL the agent named, if any.
	AuthorizeURL string   `json:"authorizeUrl,omitempty"`
	ExpiresAt    string   `json:"expiresAt"`
	Scheme       string   `json:"scheme,omitempty"`
	Scopes       []string `json:"scopes"`
}

// view presents c with its effective status at now: a pending challenge
// past its expiry reads "expired" before the sweep marks it.
func (f *Flow) view(c store.Challenge, now time.Time) challengeView {
	status := c.Status
	if expired(c, now) {
		status = store.ChallengeExpired
	}
	methods := []string{store.MethodDirect}
	if af := f.agents[c.Agent]; af != nil && af.oauth != nil {
		methods = append(methods, store.MethodOAuth)
	}
	scopes := c.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return challengeView{
		ID: c.ID, Status: status, CompleteURL: f.challengeURL(c.ID), Methods: methods,
		AuthorizeURL: c.AuthorizationURL, ExpiresAt: c.Expires.UTC().Format(time.RFC3339),
		Scheme: c.Scheme, Scopes: scopes,
	}
}

// expired reports whether c is expired at now: marked so, or still pending
// past its expiry (before the sweep marks it).
func expired(c store.Challenge, now time.Time) bool {
	return c.Status == store.ChallengeExpired || ((c.Status == store.ChallengeOpen || c.Status == store.ChallengeCompleted) && !now.Before(c.Expires))
}

// newChallenge is a fresh challenge for a task, opened at now.
func (f *Flow) newChallenge(agent, taskID, contextID, tenant, subject, version string, req requirement, now time.Time) store.Challenge {
	return store.Challenge{
		ID: newChallengeID(), Agent: agent, TaskID: taskID, ContextID: contextID,
		Tenant: tenant, Subject: subject, Version: version,
		Scheme: req.Scheme, Scopes: req.Scopes, AuthorizationURL: req.AuthorizationURL,
		Created: now, Expires: now.Add(f.o.ChallengeTTL.D()),
	}
}

// open opens c (or finds the task's pending challenge), replacing the
// challenge replace, and counts a new one.
func (f *Flow) open(ctx context.Context, c store.Challenge, replace string) (store.Challenge, error) {
	cur, created, err := f.st.Open(ctx, c, replace, f.o.Retention.D())
	if err != nil {
		return store.Challenge{}, fmt.Errorf("open auth challenge: %w", err)
	}
	if created {
		f.m.Opened.WithLabelValues(c.Agent).Inc()
		f.log.Info("auth challenge opened", "agent", c.Agent, "task_id", c.TaskID, "challenge_id", c.ID,
			"tenant", c.Tenant, "expires", c.Expires.UTC().Format(time.RFC3339))
	}
	return cur, nil
}
