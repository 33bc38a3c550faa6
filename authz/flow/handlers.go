package flow

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// The endpoints live under PathPrefix on the public listener.
const (
	PathPrefix     = "/auth/"
	challengesPath = "/auth/challenges/"
)

// Bounds on what callers send the endpoints.
const (
	maxHandOffBytes    = 16 << 10
	maxCredentialBytes = 8 << 10
	maxChallengeIDLen  = 64
)

// routes are the endpoints. A ServeMux is fine here: these paths are the
// gateway's own, not forwarded to an agent.
func (f *Flow) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+challengesPath+"{id}", f.getChallenge)
	mux.HandleFunc("POST "+challengesPath+"{id}/credential", f.postCredential)
	mux.HandleFunc("POST "+challengesPath+"{id}/oauth", f.startOAuth)
	mux.HandleFunc("GET "+config.AuthCallbackPath, f.callback)
	mux.HandleFunc(PathPrefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, a2a.ErrMethodNotFound.WithMessage("no auth endpoint at "+r.Method+" "+clip(r.URL.Path)))
	})
	return mux
}

// ServeHTTP serves the endpoints below PathPrefix:
//
//	GET  /auth/challenges/{id}             the challenge (authenticated)
//	POST /auth/challenges/{id}/credential  hand a credential over (authenticated)
//	POST /auth/challenges/{id}/oauth       start the OAuth flow (authenticated)
//	GET  /auth/callback?state=&code=       the provider's redirect
//
// A challenge that does not exist and another caller's get the same 404.
func (f *Flow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(f.agents) == 0 {
		writeError(w, a2a.ErrMethodNotFound.WithMessage("no agent has an auth flow configured"))
		return
	}
	f.endpoints.ServeHTTP(w, r)
}

// authenticate is the proxy's authentication, with its 401.
func (f *Flow) authenticate(w http.ResponseWriter, r *http.Request) (*request.Principal, bool) {
	p, err := f.authn.Authenticate(r)
	if err != nil {
		var ae *authz.AuthError
		if errors.As(err, &ae) {
			f.log.Info("auth flow: authentication failed", "reason", ae.Reason, "issuer", ae.Issuer)
		}
		writeError(w, a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", f.authn.Challenge(err)))
		return nil, false
	}
	return p, true
}

// owned finds the challenge named in the path if it belongs to p, and
// answers 404 otherwise, for an unknown challenge and another caller's
// alike, after the same work.
func (f *Flow) owned(w http.ResponseWriter, r *http.Request, p *request.Principal) (store.Challenge, bool) {
	id := r.PathValue("id")
	var c store.Challenge
	found := false
	if id != "" && len(id) <= maxChallengeIDLen {
		var err error
		if c, found, err = f.st.Get(r.Context(), id); err != nil {
			f.log.Error("auth flow: challenge not read", "err", err)
			writeError(w, a2a.ErrUnavailable.WithMessage("the challenge cannot be read now; retry").WithRetryAfter(time.Second))
			return store.Challenge{}, false
		}
	}
	if !found || c.Tenant != p.Tenant || c.Subject != p.Subject || f.agents[c.Agent] == nil {
		agent := "unknown"
		if found && f.agents[c.Agent] != nil {
			agent = c.Agent
		}
		f.m.Refused.WithLabelValues(agent, metrics.AuthRefusedNotFound).Inc()
		writeError(w, errChallengeNotFound)
		return store.Challenge{}, false
	}
	return c, true
}

func (f *Flow) getChallenge(w http.ResponseWriter, r *http.Request) {
	p, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	c, ok := f.owned(w, r, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, f.view(c, f.now()))
}

// handOff is the body of a direct hand-off.
type handOff struct {
	// Credential is the token or key the agent needs.
	Credential string `json:"credential"`
	// Scheme prefixes it in an Authorization header or metadata value;
	// default "Bearer", "" for none.
	Scheme *string `json:"scheme"`
	// ExpiresIn, in seconds, ends the credential's life before the
	// challenge's; 0 or absent: with the challenge.
	ExpiresIn int64 `json:"expiresIn"`
}

func (f *Flow) postCredential(w http.ResponseWriter, r *http.Request) {
	p, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	c, ok := f.owned(w, r, p)
	if !ok {
		return
	}
	var in handOff
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxHandOffBytes))
	dec.DisallowUnknownFields()
	scheme := "Bearer"
	err := dec.Decode(&in)
	if err == nil && in.Scheme != nil {
		scheme = *in.Scheme
	}
	// The reason never quotes the body: it holds the credential.
	switch {
	case err != nil:
		err = errors.New(`the body must be {"credential": "...", "scheme": "Bearer", "expiresIn": 3600}`)
	case in.Credential == "" || len(in.Credential) > maxCredentialBytes || !headerSafe(in.Credential):
		err = errors.New("credential must be 1 to 8192 printable ASCII characters")
	case len(scheme) > maxSchemeBytes || (scheme != "" && !validHeaderToken(scheme)):
		err = errors.New("scheme must be an HTTP authentication scheme name such as Bearer, or empty")
	case in.ExpiresIn < 0:
		err = errors.New("expiresIn must not be negative")
	}
	if err != nil {
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedInvalid).Inc()
		writeError(w, a2a.ErrInvalidParams.WithMessage(err.Error()))
		return
	}
	now := f.now()
	ttl := c.Expires.Sub(now)
	if in.ExpiresIn > 0 {
		ttl = min(ttl, time.Duration(in.ExpiresIn)*time.Second)
	}
	f.complete(r.Context(), w, c, store.MethodDirect, credential{Scheme: scheme, Token: in.Credential}, ttl, now, func(done store.Challenge) {
		writeJSON(w, http.StatusOK, f.view(done, now))
	})
}

// complete seals cred and completes c with it, answering errors; ok runs
// on success. A caller leaving midway does not interrupt the store.
func (f *Flow) complete(ctx context.Context, w http.ResponseWriter, c store.Challenge, method string, cred credential, ttl time.Duration, now time.Time, ok func(store.Challenge)) {
	plain, err := json.Marshal(cred)
	if err != nil {
		writeError(w, a2a.ErrInternal)
		return
	}
	sealed := f.seal.seal(plain, additionalData(purposeCredential, c.Agent, c.TaskID, c.ID))
	// A credential that lapsed already is refused by the store as expired.
	done, err := f.st.Complete(context.WithoutCancel(ctx), c.ID, method, sealed, max(ttl, time.Millisecond), now)
	if err != nil {
		f.refuseCompletion(w, c, err)
		return
	}
	f.m.Completed.WithLabelValues(c.Agent, method).Inc()
	f.log.Info("auth challenge completed", "agent", c.Agent, "task_id", c.TaskID, "challenge_id", c.ID, "method", method)
	ok(done)
}

// refuseCompletion answers a store error of a completion.
func (f *Flow) refuseCompletion(w http.ResponseWriter, c store.Challenge, err error) {
	if c.Agent == "" {
		c.Agent = "unknown"
	}
	switch {
	case errors.Is(err, store.ErrChallengeNotFound):
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedNotFound).Inc()
		writeError(w, errChallengeNotFound)
	case errors.Is(err, store.ErrChallengeExpired):
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedExpired).Inc()
		writeError(w, ErrChallengeExpired.WithMessage("the auth challenge expired; send a message to the task to get a new one"))
	case errors.Is(err, store.ErrChallengeState):
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedReplay).Inc()
		writeError(w, errChallengeNotOpen)
	default:
		f.log.Error("auth flow: challenge not completed", "agent", c.Agent, "challenge_id", c.ID, "err", err)
		writeError(w, a2a.ErrUnavailable.WithMessage("the challenge cannot be completed now; retry").WithRetryAfter(time.Second))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, a2a.ErrInternal)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers in the shape of A2A 1.0 HTTP+JSON errors.
func writeError(w http.ResponseWriter, e *a2a.Error) { a2a.WriteRESTError(w, a2a.V10, e) }

// headerSafe reports whether s can be sent in an HTTP header value:
// printable ASCII and spaces.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validHeaderToken reports whether s is an RFC 9110 token.
func validHeaderToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
