package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/authz/flow"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
)

// newAuthFlow builds the auth-required flow (challenges, their endpoints,
// credential hand-over on resume) and starts its expiry sweep; Close stops
// it. Expired challenges are announced through the push relay when one
// runs. Without an agent configured with an auth_flow it does nothing.
func (g *Gateway) newAuthFlow(authn *authz.Authenticator, st store.Store, log *slog.Logger) (*flow.Flow, error) {
	o := flow.Options{
		Challenges:    st.Challenges(),
		Lifecycle:     st.Lifecycle(),
		Config:        g.cfg.AuthFlows,
		Agents:        g.cfg.Agents,
		PublicURL:     g.cfg.PublicURL,
		Authenticator: authn,
		Metrics:       metrics.NewAuthFlow(g.registry),
		Logger:        log.With("log", "authflow"),
	}
	if g.push != nil {
		o.Notifier = g.push.Relay()
	}
	f, err := flow.New(o)
	if err != nil {
		return nil, fmt.Errorf("auth_flows: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx)
	}()
	g.closers = append(g.closers, func() { stop(); <-done })
	return f, nil
}
