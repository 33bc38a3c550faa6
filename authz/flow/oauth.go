package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// maxStateLen bounds the state a callback may carry; the gateway's are 43.
const maxStateLen = 256

// exchangeTimeout bounds a code exchange with the provider.
const exchangeTimeout = 15 * time.Second

// stateDigest is what the store keeps of an OAuth state: reading the store
// does not give a usable state.
func stateDigest(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// providerConfig is the agent's OAuth client for challenge c: the
// configured scopes, or else the ones the agent asked for.
func (af *agentFlow) providerConfig(c store.Challenge) *oauth2.Config {
	conf := *af.oauth
	if len(conf.Scopes) == 0 {
		conf.Scopes = c.Scopes
	}
	return &conf
}

// oauthStart is the answer to POST /auth/challenges/{id}/oauth.
type oauthStart struct {
	// AuthorizationURL is where the person grants access: the provider's
	// authorization endpoint with the state and the PKCE challenge.
	AuthorizationURL string `json:"authorizationUrl"`
	ExpiresAt        string `json:"expiresAt"`
}

// startOAuth binds a fresh state and PKCE verifier to the challenge and
// returns the provider URL to send the person to. Starting again replaces
// the earlier state.
func (f *Flow) startOAuth(w http.ResponseWriter, r *http.Request) {
	p, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	c, ok := f.owned(w, r, p)
	if !ok {
		return
	}
	af := f.agents[c.Agent]
	if af.oauth == nil {
		writeError(w, errNoOAuth)
		return
	}
	state := randomToken(32)
	verifier := oauth2.GenerateVerifier()
	sealed := f.seal.seal([]byte(verifier), additionalData(purposeVerifier, c.Agent, c.TaskID, c.ID))
	now := f.now()
	if _, err := f.st.BeginOAuth(context.WithoutCancel(r.Context()), c.ID, stateDigest(state), sealed, now); err != nil {
		f.refuseCompletion(w, c, err)
		return
	}
	f.log.Info("auth flow: OAuth authorization started", "agent", c.Agent, "task_id", c.TaskID, "challenge_id", c.ID)
	writeJSON(w, http.StatusOK, oauthStart{
		AuthorizationURL: af.providerConfig(c).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)),
		ExpiresAt:        c.Expires.UTC().Format(time.RFC3339),
	})
}

// callback receives the provider's redirect. It is not authenticated: the
// state, random, single use and bound to one challenge, stands for the
// caller who started the flow. The state is consumed before anything
// else, so a replayed or refused callback can never be completed later.
func (f *Flow) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" || len(state) > maxStateLen {
		f.m.Refused.WithLabelValues("unknown", metrics.AuthRefusedState).Inc()
		writeError(w, errBadState)
		return
	}
	ctx := context.WithoutCancel(r.Context())
	now := f.now()
	c, sealedVerifier, err := f.st.TakeOAuth(ctx, stateDigest(state), now)
	if err != nil {
		if errors.Is(err, store.ErrChallengeNotFound) {
			f.m.Refused.WithLabelValues("unknown", metrics.AuthRefusedState).Inc()
			f.log.Info("auth flow: OAuth callback refused: unknown or used state")
			writeError(w, errBadState)
			return
		}
		f.refuseCompletion(w, c, err)
		return
	}
	af := f.agents[c.Agent]
	if af == nil || af.oauth == nil {
		f.m.Refused.WithLabelValues("unknown", metrics.AuthRefusedState).Inc()
		writeError(w, errBadState)
		return
	}
	if e := q.Get("error"); e != "" {
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedExchange).Inc()
		f.log.Info("auth flow: the provider did not grant access", "agent", c.Agent, "challenge_id", c.ID, "error", clip(printableOnly(e)))
		writeError(w, a2a.ErrInvalidParams.WithMessage("access was not granted; start the authorization again"))
		return
	}
	code := q.Get("code")
	verifier, err := f.seal.open(sealedVerifier, additionalData(purposeVerifier, c.Agent, c.TaskID, c.ID))
	if code == "" || err != nil {
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedState).Inc()
		writeError(w, errBadState)
		return
	}
	xctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, f.client), exchangeTimeout)
	defer cancel()
	tok, err := af.providerConfig(c).Exchange(xctx, code, oauth2.VerifierOption(string(verifier)))
	if err != nil || tok.AccessToken == "" {
		f.m.Refused.WithLabelValues(c.Agent, metrics.AuthRefusedExchange).Inc()
		f.logExchangeError(c, err)
		writeError(w, errExchange)
		return
	}
	ttl := c.Expires.Sub(now)
	if !tok.Expiry.IsZero() {
		ttl = min(ttl, tok.Expiry.Sub(now))
	}
	f.complete(ctx, w, c, store.MethodOAuth, credential{Scheme: tok.Type(), Token: tok.AccessToken}, ttl, now, func(store.Challenge) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("Authorization complete. You can close this window: the application can now resume its task.\n"))
	})
}

// logExchangeError logs why a code exchange failed, without the provider's
// body (which may quote the code) or anything of the token.
func (f *Flow) logExchangeError(c store.Challenge, err error) {
	attrs := []any{"agent", c.Agent, "challenge_id", c.ID}
	var re *oauth2.RetrieveError
	switch {
	case err == nil:
		attrs = append(attrs, "reason", "the provider answered without an access token")
	case errors.As(err, &re):
		attrs = append(attrs, "reason", "the provider refused the code", "error_code", clip(printableOnly(re.ErrorCode)))
		if re.Response != nil {
			attrs = append(attrs, "status", re.Response.StatusCode)
		}
	case errors.Is(err, context.DeadlineExceeded):
		attrs = append(attrs, "reason", "the provider did not answer in time")
	default:
		attrs = append(attrs, "reason", "the provider could not be reached")
	}
	f.log.Warn("auth flow: OAuth code exchange failed", attrs...)
}

// printableOnly drops what a log line should not carry from a value a
// provider chose.
func printableOnly(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x20 && s[i] < 0x7f {
			out = append(out, s[i])
		}
	}
	return string(out)
}
