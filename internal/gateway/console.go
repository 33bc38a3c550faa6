package gateway

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/console"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// withConsole serves the operations console under /console/ beside the
// admin handler, when console.enabled is set; admin is returned as it is
// otherwise.
func (g *Gateway) withConsole(admin http.Handler, authn *authz.Authenticator, st store.Store) (http.Handler, error) {
	o := g.cfg.Console
	if !o.Enabled {
		return admin, nil
	}
	key, err := config.ConsoleSessionKey(os.Getenv(o.SessionKeyEnv))
	if err != nil {
		return nil, fmt.Errorf("console.session_key_env: %s: %w", o.SessionKeyEnv, err)
	}
	co := console.Options{
		Config:      o,
		SessionKey:  key,
		Secure:      strings.HasPrefix(g.cfg.PublicURL, "https://"),
		Lifecycle:   st.Lifecycle(),
		Challenges:  st.Challenges(),
		PushConfigs: st.PushConfigs(),
		Events:      st.EventLog(),
		Tasks:       g.tracker,
		Metrics:     g.registry,
		Audit:       g.log.With("log", "audit"),
		Log:         g.log.With("log", "console"),
	}
	if env := g.cfg.Lifecycle.OpsTokenEnv; env != "" {
		if tok := os.Getenv(env); len(tok) >= config.MinOpsTokenBytes {
			co.OpsToken = tok
		}
	}
	if o.OpsScope != "" {
		co.Authenticate = func(ctx context.Context, bearer string) (*request.Principal, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
			if err != nil {
				return nil, err
			}
			r.Header.Set("Authorization", "Bearer "+bearer)
			return authn.Authenticate(r)
		}
	}
	if g.push != nil {
		co.DeadLetters = st.Delivery()
		co.Deliveries = g.push.Deliverer()
		co.Attempts = g.push.Deliverer().AttemptLog()
	}
	c, err := console.New(co)
	if err != nil {
		return nil, err
	}
	g.closers = append(g.closers, c.Close)
	ch := c.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(console.Prefix, "/") {
			http.Redirect(w, r, console.Prefix, http.StatusMovedPermanently)
			return
		}
		if strings.HasPrefix(r.URL.Path, console.Prefix) {
			ch.ServeHTTP(w, r)
			return
		}
		admin.ServeHTTP(w, r)
	}), nil
}
