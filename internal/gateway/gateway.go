// Package gateway assembles the whole a2a-gateway from its configuration:
// the store, authentication, the request pipeline, the proxy, the admin
// endpoints, and the two listeners. It is the one place where the stages
// are put in order; read New from top to bottom to follow a request.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/authz/flow"
	"github.com/a2a-gateway/a2a-gateway/dedupe"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/internal/version"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/proxy/budget"
	"github.com/a2a-gateway/a2a-gateway/proxy/card"
	cardserve "github.com/a2a-gateway/a2a-gateway/proxy/card/serve"
	"github.com/a2a-gateway/a2a-gateway/proxy/list"
	"github.com/a2a-gateway/a2a-gateway/push"
	pushserve "github.com/a2a-gateway/a2a-gateway/push/serve"
)

// Gateway is a running configuration: its handlers and what they hold.
type Gateway struct {
	cfg     *config.Config
	log     *slog.Logger
	store   store.Store
	proxy   *proxy.Gateway
	tracker *lifecycle.Tracker
	// push and sources are nil when push.enabled is off.
	push     *pushserve.Relay
	sources  *pushserve.Sources
	auth     *flow.Flow
	registry *prometheus.Registry
	public   http.Handler
	admin    http.Handler
	closers  []func()
	// draining is closed when shutdown begins; the gRPC listeners' health
	// then reports NOT_SERVING.
	draining chan struct{}
}

// New builds every component. It does not listen; see Run, or mount
// Public and Admin on servers of your own (tests do).
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Gateway, error) {
	if err := Check(cfg, config.ProcessEnv); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, log: log, registry: prometheus.NewRegistry(), draining: make(chan struct{})}
	if err := g.build(ctx); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// build is New past the checks; New releases what it acquired when it
// fails, with Close.
func (g *Gateway) build(ctx context.Context) error {
	cfg, log := g.cfg, g.log
	g.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	var mopts []metrics.Option
	if cfg.Lifecycle.TenantLabel {
		mopts = append(mopts, metrics.WithTenantLabel(cfg.Lifecycle.MaxTenantLabels))
	}
	m := metrics.New(g.registry, mopts...)

	st, err := store.Open(ctx, cfg.Store, log)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	g.store = st
	g.closers = append(g.closers, func() { _ = st.Close() })
	health := &storeHealth{}
	store.Observe(st, func(op string, onRequest bool, d time.Duration, failed bool) {
		health.observe(!failed)
		path := "background"
		if onRequest {
			path = "request"
		}
		m.StoreRoundTrip.WithLabelValues(op, path).Observe(d.Seconds())
		if failed {
			m.StoreErrors.WithLabelValues(op).Inc()
		}
	})

	authn, err := authz.NewAuthenticator(ctx, cfg.Auth, &http.Client{Transport: telemetry.Transport(nil, "fetch jwks"), Timeout: 30 * time.Second, CheckRedirect: card.NoRedirects}, log)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	g.closers = append(g.closers, authn.Close)

	cards, err := cardserve.New(cfg, log)
	if err != nil {
		return err
	}
	dd := dedupe.New(st.Dedupe(), cfg.Dedupe, m, log, perSubject(cfg))
	pm := pushserve.NewMetrics(g.registry, cfg)
	if cfg.Push.Enabled {
		if g.push, err = pushserve.NewRelay(cfg, st, pm, log.With("log", "push")); err != nil {
			return err
		}
		g.closers = append(g.closers, g.push.Close)
	}
	if g.auth, err = g.newAuthFlow(authn, st, log); err != nil {
		return err
	}
	lists, err := list.New(cfg.ListTasks)
	if err != nil {
		return err
	}

	// The watchdog calls agents through the proxy, and the push sources
	// follow tasks through it: both are built below, so these calls are
	// bound late.
	tracker, err := lifecycle.New(lifecycle.Options{
		Store:   st.Lifecycle(),
		Config:  cfg.Lifecycle,
		Agents:  lifecycleAgents(cfg),
		Metrics: m.Lifecycle,
		Logger:  log.With("log", "lifecycle"),
		Caller: lifecycle.CallerFunc(func(ctx context.Context, agent string, v a2a.Version, method a2a.Method, params any) ([]byte, error) {
			return g.proxy.Call(ctx, agent, v, method, params)
		}),
		Followed:   g.followedByPush,
		OnWatchdog: g.onWatchdog,
	})
	if err != nil {
		return fmt.Errorf("lifecycle: %w", err)
	}
	g.tracker = tracker
	g.closers = append(g.closers, tracker.Close)

	// One request, one pass: each stage wraps the next, and the forwarder
	// observes every answer for the observers, in this order.
	stages := []proxy.Stage{
		traced("authenticate", authenticate(authn)),
		limitRate(budget.New(cfg.Budgets), st.ActiveTasks(), m),
		traced("authorize", authorize(authz.NewAuthorizer(st.Ownership(), policies(cfg), m, log.With("log", "audit")))),
		routeTenant,
	}
	if g.push != nil {
		stages = append(stages, g.push.Stage, g.push.ResumeStreams)
	}
	stages = append(stages,
		traced("dedupe", dd.Stage),
		requireStore(health.check(st.Ping), dd.Covers),
		tracker.Guard(),
		g.auth.Resume,
		countOpenTasks(st.ActiveTasks(), cfg.Budgets.TracksActiveTasks()),
		lists.Stage,
		cards.RewriteExtendedCard,
	)
	px, err := proxy.New(proxy.Options{
		Config: cfg,
		Stages: stages,
		Observers: []proxy.Observer{
			recordOwnership,
			tracker,
			g.auth,
		},
		Cards:   cards,
		Metrics: m,
		Logger:  log,
		// Streams carry event-log ids, for resuming (push/serve).
		StreamEventID:       pushserve.StreamEventID,
		OversizedCredential: oversizedCredential(authn),
		GRPCOnly:            cards.GRPCOnly,
		GRPCUpstream:        cards.GRPCUpstream,
	})
	if err != nil {
		return err
	}
	g.proxy = px
	g.closers = append(g.closers, px.Close)
	if g.push != nil {
		if g.sources, err = pushserve.StartSources(cfg, st, px, g.push, tracker, g.trackAuth(log), log.With("log", "push")); err != nil {
			return err
		}
		g.closers = append(g.closers, g.sources.Close)
	}
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		tracker.Run(sweepCtx)
	}()
	g.closers = append(g.closers, func() { stopSweep(); <-swept })
	g.public = telemetry.Handler(px.Guard(g.publicRoutes(cards, px)), "a2a-gateway")
	if g.admin, err = g.withConsole(g.adminMux(), authn, st); err != nil {
		return err
	}
	return nil
}

// publicRoutes serves the gateway's own endpoints on the public listener
// and hands everything else to the proxy. Not a ServeMux: it would clean
// and redirect paths the proxy must see as sent (and refuse).
func (g *Gateway) publicRoutes(cards *cardserve.Server, px *proxy.Gateway) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/jwks.json" && r.Method == http.MethodGet:
			cards.ServeJWKS(w, r)
		case r.URL.Path == pushserve.JWKSPath && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			if g.push == nil {
				a2a.WriteRESTError(w, a2a.RESTVersion(r), a2a.ErrMethodNotFound.WithMessage("this gateway does not send push notifications"))
				return
			}
			g.push.ServeJWKS(w, r)
		case strings.HasPrefix(r.URL.Path, flow.PathPrefix):
			g.auth.ServeHTTP(w, r)
		case g.sources != nil && strings.HasPrefix(r.URL.Path, push.InboundPath):
			g.sources.ServeInbound(w, r)
		default:
			px.ServeHTTP(w, r)
		}
	})
}

// followedByPush is the lifecycle tracker's Followed hook: with push on,
// the push sources follow every task with a push config at its agent.
func (g *Gateway) followedByPush(ctx context.Context, agent, taskID string) (bool, error) {
	if g.sources == nil {
		return false, nil
	}
	return g.sources.Followed(ctx, agent, taskID)
}

// onWatchdog is the lifecycle tracker's OnWatchdog hook: with push on, the
// consumers of a watched task hear that it was orphaned or escalated.
func (g *Gateway) onWatchdog(ctx context.Context, agent, taskID, action string, state a2a.State) {
	if g.sources != nil {
		g.sources.OnWatchdog(ctx, agent, taskID, action, state)
	}
}

// trackAuth shows the auth flow the events the push sources saw, which
// never passed through the proxy's observers: an agent that asks for a
// credential in a push or in an upstream stream opens a challenge too.
func (g *Gateway) trackAuth(log *slog.Logger) func(context.Context, push.Event) {
	return func(ctx context.Context, ev push.Event) {
		err := g.auth.Track(ctx, flow.Event{
			Agent: ev.Agent, TaskID: ev.TaskID, ContextID: ev.ContextID,
			Version: ev.Version, Kind: ev.Kind, State: ev.State, Result: ev.Payload,
		})
		if err != nil {
			log.Warn("auth flow: task event from a push source not applied", "agent", ev.Agent, "task_id", ev.TaskID, "state", ev.State.String(), "err", err)
		}
	}
}

// Relay is the push relay, for tests; nil when push.enabled is off.
func (g *Gateway) Relay() *push.Relay {
	if g.push == nil {
		return nil
	}
	return g.push.Relay()
}

// buildInfo is a2agw_build_info: always 1, its labels say which build
// runs, so a dashboard can tell replicas of different releases apart.
func buildInfo() prometheus.Collector {
	b := version.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "a2agw_build_info",
		Help:        "The running build: version, VCS revision and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// oversizedCredential refuses a credential too large to be accepted as an
// invalid one, with the authenticator's challenge.
func oversizedCredential(authn *authz.Authenticator) func(http.Header) *a2a.Error {
	refusal := a2a.ErrUnauthenticated.WithHeader("WWW-Authenticate", authn.Challenge(&authz.AuthError{Reason: "credential too large"}))
	return func(h http.Header) *a2a.Error {
		if authn.CredentialTooLarge(h) {
			return refusal
		}
		return nil
	}
}

// policies collects the agents' authorization policies by agent name.
func policies(cfg *config.Config) map[string]authz.Policy {
	out := make(map[string]authz.Policy, len(cfg.Agents))
	for _, a := range cfg.Agents {
		out[a.Name] = a.Policy
	}
	return out
}

// perSubject tells whether an agent's tasks belong to subjects.
func perSubject(cfg *config.Config) func(agent string) bool {
	subj := map[string]bool{}
	for _, a := range cfg.Agents {
		subj[a.Name] = a.Policy.Ownership == config.OwnerSubject
	}
	return func(agent string) bool { return subj[agent] }
}

// lifecycleAgents is what the lifecycle tracker needs of each agent.
func lifecycleAgents(cfg *config.Config) []lifecycle.Agent {
	out := make([]lifecycle.Agent, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		out = append(out, lifecycle.Agent{Name: a.Name, Watchdog: a.Watchdog, TenantRouting: a.TenantRouting})
	}
	return out
}

// Public is the handler of the public listener.
func (g *Gateway) Public() http.Handler { return g.public }

// Admin is the handler of the admin listener.
func (g *Gateway) Admin() http.Handler { return g.admin }

// Proxy is the reverse proxy, for components that call agents themselves.
func (g *Gateway) Proxy() *proxy.Gateway { return g.proxy }

// Lifecycle is the task lifecycle tracker, for the push relay (Accept,
// Record) and tests (Flush, Sweep).
func (g *Gateway) Lifecycle() *lifecycle.Tracker { return g.tracker }

func (g *Gateway) adminMux() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.registry, promhttp.HandlerOpts{Registry: g.registry}))
	mux.Handle("/ops/", g.tracker.OpsHandler())
	if g.push != nil {
		mux.Handle("/admin/push/", g.push.AdminHandler())
	}
	if g.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain")
		if err := g.store.Ping(ctx); err != nil {
			g.log.Warn("not ready: the store does not answer", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("store unavailable\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}

// Close releases everything New acquired, in reverse order.
func (g *Gateway) Close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}

// Run listens on the configured addresses until ctx is cancelled, then
// shuts down gracefully: new connections stop at once, open streams keep
// flowing for the stream grace period and are then ended cleanly, and
// in-flight requests get until the shutdown timeout.
func (g *Gateway) Run(ctx context.Context) error {
	pub, err := net.Listen("tcp", g.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	adm, err := net.Listen("tcp", g.cfg.AdminListen)
	if err != nil {
		pub.Close()
		return fmt.Errorf("admin_listen: %w", err)
	}
	return g.Serve(ctx, pub, adm)
}

// Serve is Run on listeners the caller opened; the public one is held to
// limits.max_connections. The agents' gRPC listeners are opened at their
// grpc.listen addresses.
func (g *Gateway) Serve(ctx context.Context, pub, adm net.Listener) error {
	return g.ServeGRPC(ctx, pub, adm, nil)
}

// ServeGRPC is Serve with the gRPC listeners of some agents, by name,
// opened by the caller too.
func (g *Gateway) ServeGRPC(ctx context.Context, pub, adm net.Listener, grpcLn map[string]net.Listener) error {
	l := g.cfg.Limits
	grpcLn, err := g.grpcListeners(grpcLn)
	if err != nil {
		pub.Close()
		adm.Close()
		return err
	}
	// The public server reads headers up to twice the limit, so that the
	// gateway refuses an oversized one itself, in the caller's shape; the
	// admin listener needs no such answer.
	servers := []*http.Server{newServer(g.public, l, 2*l.MaxHeaderBytes, g.log), newServer(g.admin, l, l.MaxHeaderBytes, g.log)}
	listeners := []net.Listener{newLimitListener(pub, l.MaxConnections, g.log), adm}
	serve := []func(*http.Server, net.Listener) error{(*http.Server).Serve, (*http.Server).Serve}
	for _, a := range g.cfg.Agents {
		if ln, ok := grpcLn[a.Name]; ok {
			srv, err := g.grpcServer(a)
			if err != nil {
				for _, l := range append(listeners, slices.Collect(maps.Values(grpcLn))...) {
					l.Close()
				}
				return err
			}
			servers = append(servers, srv)
			listeners = append(listeners, newLimitListener(ln, l.MaxConnections, g.log))
			serve = append(serve, serveGRPC)
			g.log.Info("gRPC listening", "agent", a.Name, "address", ln.Addr().String(), "tls", a.GRPC.TLS != nil)
		}
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- serve[i](srv, listeners[i]) }()
	}
	g.log.Info("gateway listening", "public", pub.Addr().String(), "admin", adm.Addr().String(), "store", g.store.Kind())

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	close(g.draining)
	g.log.Info("shutting down", "timeout", g.cfg.Shutdown.Timeout.D().String(), "stream_grace", g.cfg.Shutdown.StreamGrace.D().String())
	shutCtx, cancel := context.WithTimeout(context.Background(), g.cfg.Shutdown.Timeout.D())
	defer cancel()
	grace := time.AfterFunc(g.cfg.Shutdown.StreamGrace.D(), g.proxy.DrainStreams)
	defer grace.Stop()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Shutdown(shutCtx); err != nil {
				g.log.Warn("shutdown did not finish in time; closing connections", "err", err)
				_ = s.Close()
			}
		}()
	}
	wg.Wait()
	// Streams handed off by their handlers are not the servers' to wait
	// for; the stream grace ends them as it ends the others.
	if err := g.proxy.WaitStreams(shutCtx); err != nil {
		g.log.Warn("shutdown did not finish in time", "err", err)
	}
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// newServer sets the listener-side limits. There is no write timeout:
// streams last as long as tasks do. Bodies are bounded in size and time by
// the proxy (limits.body_timeout).
func newServer(h http.Handler, l config.Limits, maxHeaderBytes int, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.HeaderTimeout.D(),
		IdleTimeout:       l.IdleTimeout.D(),
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
