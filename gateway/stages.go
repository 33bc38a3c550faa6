package gateway

import (
	"errors"
	"net/http"

	"github.com/a2a-gateway/a2a-gateway/a2a"
	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/proxy"
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
					s.Log.Info("authentication failed", "reason", ae.Reason, "issuer", ae.Issuer, "missing", ae.Missing)
				}
				return a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", authn.Challenge(err))
			}
			s.Principal = p
			s.Log = s.Log.With("tenant", p.Tenant, "subject", p.Subject)
			return next(w, r, s)
		}
	}
}
