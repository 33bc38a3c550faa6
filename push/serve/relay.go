// Package serve runs the push-notification relay inside the gateway: it
// answers push-config operations from the store, takes configs given with a
// send, feeds what the proxy observes to the relay, resumes dropped streams
// from the event log, and follows tasks at their agents (the push sources).
package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/adminapi"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// JWKSPath is where the public listener publishes the keys that sign
// notifications, next to the card-signing JWKS.
const JWKSPath = "/.well-known/a2a-push-jwks.json"

// Bounds on the relay's own store and DNS work on a request.
const (
	pushCheckTimeout = 5 * time.Second
	// A webhook that passed its challenge is not challenged again for
	// verifiedEndpointTTL on this replica.
	verifiedEndpointTTL  = time.Hour
	maxVerifiedEndpoints = 10_000
	pushPublishTimeout   = 5 * time.Second
)

// Relay is the push-notification relay as the gateway runs it: the
// signer, the URL policies, the delivery workers and the relay, plus the
// stage that answers push-config operations and the observers that feed
// the relay.
type Relay struct {
	policies *push.Policies
	signer   *push.Signer
	deliver  *push.Deliverer
	relay    *push.Relay
	configs  store.PushConfigs
	cfg      *config.PushOptions
	// verified remembers webhooks that passed their challenge.
	verified *push.VerifiedEndpoints
	// sink publishes what the proxy observes: the subscriber's Publish
	// (set by StartSources), which publishes a failed event again.
	sink func(context.Context, push.Event) error
	m    *metrics.Push
	log  *slog.Logger
	// opsToken is the SHA-256 of the ops token that guards the dead-letter
	// API; nil refuses every call.
	opsToken []byte
	stop     context.CancelFunc
	done     chan struct{}
}

// NewRelay builds the relay from the push section and starts the delivery
// workers; Close stops them.
func NewRelay(cfg *config.Config, st store.Store, m *metrics.Push, log *slog.Logger) (*Relay, error) {
	o := &cfg.Push
	signer, err := push.NewSigner(push.SignerOptionsOf(o))
	if err != nil {
		return nil, fmt.Errorf("push.%w", err)
	}
	def, err := push.NewURLPolicy(o.Allowlist, o.Resolver)
	if err != nil {
		return nil, fmt.Errorf("push.allowlist: %w", err)
	}
	tenants := map[string]*push.URLPolicy{}
	for t, allow := range o.TenantAllowlists() {
		if tenants[t], err = push.NewURLPolicy(allow, o.Resolver); err != nil {
			return nil, fmt.Errorf("push.tenants.%s.allowlist: %w", t, err)
		}
	}
	secrets, err := webhookSecrets(o, config.ProcessEnv)
	if err != nil {
		return nil, err
	}
	p := &Relay{
		policies: push.NewPolicies(def, tenants),
		signer:   signer,
		configs:  st.PushConfigs(),
		cfg:      o,
		verified: push.NewVerifiedEndpoints(verifiedEndpointTTL, maxVerifiedEndpoints),
		m:        m,
		log:      log,
		done:     make(chan struct{}),
	}
	if env := cfg.Lifecycle.OpsTokenEnv; env != "" {
		if tok := os.Getenv(env); len(tok) >= config.MinOpsTokenBytes {
			sum := sha256.Sum256([]byte(tok))
			p.opsToken = sum[:]
		}
	}
	do := push.DeliveryOptionsOf(o)
	// The worker must not block: the config is deleted on the side.
	do.OnDisabled = func(ep string) { go p.relay.EndpointDisabled(ep) }
	do.Log, _ = store.OperatorConcerns(st)
	p.deliver = push.NewDeliverer(st.Delivery(), p.policies.Sender(signer, do.Timeout), do, m, log)
	p.relay, err = push.NewRelay(push.RelayOptions{
		Configs:  st.PushConfigs(),
		Events:   st.EventLog().Bounded(store.EventLogOptionsOf(o.EventLog)),
		Queue:    p.deliver,
		Policies: p.policies,
		WebhookSecret: func(tenant string) []byte {
			return secrets[o.WebhookSecretEnvOf(tenant)]
		},
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() {
		defer close(p.done)
		p.deliver.Run(ctx)
	}()
	return p, nil
}

// NewMetrics registers the push metrics, every agent's and reason's series
// at zero.
func NewMetrics(reg prometheus.Registerer, cfg *config.Config) *metrics.Push {
	agents := make([]string, len(cfg.Agents))
	for i, a := range cfg.Agents {
		agents[i] = a.Name
	}
	return metrics.NewPush(reg, agents,
		[]string{push.RetryTimeout, push.RetryNetwork, push.RetryStatus429, push.RetryStatus5xx, push.RetryStatusOther, push.RetryCircuitOpen},
		[]string{push.DeadRetriesExhausted, push.DeadGone, push.DeadUndeliverable})
}

// webhookSecrets reads every Standard Webhooks secret the section names,
// by environment variable, and reports every bad one.
func webhookSecrets(o *config.PushOptions, env config.Env) (map[string][]byte, error) {
	out := map[string][]byte{}
	var errs []error
	envs := []string{o.WebhookSecretEnv}
	for _, t := range o.Tenants {
		envs = append(envs, t.WebhookSecretEnv)
	}
	for _, name := range envs {
		if name == "" || out[name] != nil {
			continue
		}
		v, _ := env(name)
		secret, err := push.ParseWebhookSecret(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("push: the Standard Webhooks secret in %s: %w", name, err))
			continue
		}
		out[name] = secret
	}
	return out, errors.Join(errs...)
}

// Close stops the delivery workers; they hand their endpoints back.
func (p *Relay) Close() {
	p.stop()
	<-p.done
}

// Relay is the relay itself, for the auth flow's notices and tests.
func (p *Relay) Relay() *push.Relay { return p.relay }

// Deliverer is the delivery workers' queue, which the operations console
// reads and redelivers through.
func (p *Relay) Deliverer() *push.Deliverer { return p.deliver }

// ServeJWKS publishes the notification signing keys.
func (p *Relay) ServeJWKS(w http.ResponseWriter, r *http.Request) {
	p.signer.JWKSHandler().ServeHTTP(w, r)
}

// AdminHandler is the dead-letter API under /admin/push/, behind the ops
// token.
func (p *Relay) AdminHandler() http.Handler {
	api := http.StripPrefix("/admin/push", p.deliver.AdminHandler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		ok := p.opsToken != nil && len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer ")
		if ok {
			sum := sha256.Sum256([]byte(h[len("Bearer "):]))
			ok = subtle.ConstantTimeCompare(sum[:], p.opsToken) == 1
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="a2a-gateway-ops"`)
			adminapi.WriteError(w, http.StatusUnauthorized, "a valid ops bearer token is required")
			return
		}
		api.ServeHTTP(w, r)
	})
}

// Stage sits right after authorization (which checked that the caller owns
// the task a push-config operation names). Unless the agent is configured
// to receive configs itself, it answers push-config operations from the
// store, takes a config given inline with a send out of the forwarded body
// and registers it once the answer names the task, and feeds every event of
// a stream to the relay.
func (p *Relay) Stage(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		op := s.Op
		own := !s.Agent.Config().Push.ForwardConfigs
		switch {
		case own && op.Method.PushConfig():
			return p.serveConfig(w, r, s)
		case own && op.PushConfig != nil && (op.Method == a2a.MethodSend || op.Method == a2a.MethodStream):
			if err := p.takeInline(r.Context(), s); err != nil {
				return err
			}
		case op.Method.Streaming():
			s.AddObserver(proxy.ObserverFunc(func(ctx context.Context, s *proxy.Scope, ev a2a.Event, payload []byte) error {
				p.publish(ctx, s, ev, payload)
				return nil
			}))
		}
		return next(w, r, s)
	}
}

// errConfigNotFound answers an unknown config id of a task the caller owns.
var errConfigNotFound = a2a.ErrTaskNotFound.WithMessage("push notification config not found")

// errLegacyPush refuses push through the gateway in the pre-0.2 dialect,
// whose notifications the relay does not render.
var errLegacyPush = a2a.ErrPushNotSupported.WithMessage("push notifications through this gateway need A2A 0.3 or 1.0")

// serveConfig answers a push-config operation from the store.
func (p *Relay) serveConfig(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
	op := s.Op
	if op.Version == a2a.VLegacy {
		return errLegacyPush
	}
	ctx := r.Context()
	agent := s.Agent.Name
	// A gRPC answer is the protobuf of the HTTP+JSON one.
	shape := op.Binding
	if shape == a2a.BindingGRPC {
		shape = a2a.BindingREST
	}
	var result any
	switch op.Method {
	case a2a.MethodPushConfigSet:
		c, err := p.checkConfig(ctx, s, op.PushConfig, op.PushConfigID)
		if err != nil {
			return err
		}
		c.TaskID = op.TaskID
		if c.ID == "" {
			c.ID = defaultConfigID(op.Version, op.TaskID)
		}
		if err := p.put(ctx, s, c); err != nil {
			return err
		}
		result = a2a.PushConfigResult(op.Version, shape, op.TaskID, wireConfig(c))
	case a2a.MethodPushConfigGet:
		c, found, err := p.find(ctx, agent, op.TaskID, op.PushConfigID)
		if err != nil {
			return p.storeError(s, "read", err)
		}
		if !found {
			return errConfigNotFound
		}
		result = a2a.PushConfigResult(op.Version, shape, op.TaskID, wireConfig(c))
	case a2a.MethodPushConfigList:
		cs, err := p.configs.List(ctx, agent, op.TaskID)
		if err != nil {
			return p.storeError(s, "list", err)
		}
		list := make([]a2a.PushConfig, len(cs))
		for i, c := range cs {
			list[i] = wireConfig(c)
		}
		result = a2a.PushConfigList(op.Version, shape, op.TaskID, list)
	case a2a.MethodPushConfigDelete:
		ok, err := p.configs.Delete(ctx, agent, op.TaskID, op.PushConfigID)
		if err != nil {
			return p.storeError(s, "delete", err)
		}
		if !ok {
			return errConfigNotFound
		}
		s.Log().Info("push config deleted", "task_id", op.TaskID, "config", op.PushConfigID)
		if op.Binding == a2a.BindingGRPC {
			return proxy.WriteGRPCAnswer(w, s, []byte("{}"))
		}
		if op.Binding == a2a.BindingREST {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		result = a2a.PushConfigDeleted(op.Version)
	}
	body, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("encode the push config answer: %w", err)
	}
	if op.Binding == a2a.BindingGRPC {
		return proxy.WriteGRPCAnswer(w, s, body)
	}
	contentType := "application/json"
	if op.Binding == a2a.BindingJSONRPC {
		body = a2a.RPCResult(op.RPCID, body)
	} else {
		contentType = a2a.ContentType(op.Version)
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// find returns a config; 0.3 may name only the task, meaning its config
// whose id is the task id, or else its first.
func (p *Relay) find(ctx context.Context, agent, taskID, id string) (store.PushConfig, bool, error) {
	if id != "" {
		return p.configs.Get(ctx, agent, taskID, id)
	}
	cs, err := p.configs.List(ctx, agent, taskID)
	if err != nil || len(cs) == 0 {
		return store.PushConfig{}, false, err
	}
	for _, c := range cs {
		if c.ID == taskID {
			return c, true, nil
		}
	}
	return cs[0], true, nil
}

// defaultConfigID names a config registered without an id: in 0.3 the task
// id, as the 0.3 SDKs do (a get naming only the task then finds it); in
// 1.0 a random id.
func defaultConfigID(v a2a.Version, taskID string) string {
	if v == a2a.V03 && taskID != "" && len(taskID) <= store.MaxPushConfigIDBytes {
		return taskID
	}
	return rand.Text()
}

// put stores a config for the caller and says so in the log.
func (p *Relay) put(ctx context.Context, s *proxy.Scope, c store.PushConfig) error {
	created, err := p.configs.Put(ctx, c)
	if errors.Is(err, store.ErrTooManyPushConfigs) {
		p.m.ConfigRefusals.WithLabelValues(s.Agent.Name, "too_many").Inc()
		s.Log().Warn("push config refused: the task has the most configs allowed", "task_id", c.TaskID, "limit", store.MaxPushConfigsPerTask)
		return a2a.ErrInvalidParams.WithMessage(fmt.Sprintf("the task already has %d push notification configs; delete one first", store.MaxPushConfigsPerTask))
	}
	if err != nil {
		return p.storeError(s, "register", err)
	}
	s.Log().Info("push config registered", "task_id", c.TaskID, "config", c.ID, "receiver", receiverHost(c.URL), "created", created)
	return nil
}

// storeError answers a store failure: unavailable, details to the log.
func (p *Relay) storeError(s *proxy.Scope, what string, err error) error {
	s.Log().Error("push config could not be "+what+"d", "err", err)
	return a2a.ErrUnavailable.WithMessage("push notification configs are temporarily unavailable; retry later").WithRetryAfter(time.Second)
}

// checkConfig reads and validates a config a client sent, its webhook URL
// against the tenant's URL policy. id, when set, is the config id the
// request names outside the config.
func (p *Relay) checkConfig(ctx context.Context, s *proxy.Scope, raw []byte, id string) (store.PushConfig, error) {
	refuse := func(reason string, e *a2a.Error) error {
		p.m.ConfigRefusals.WithLabelValues(s.Agent.Name, reason).Inc()
		s.Log().Warn("push config refused", "reason", reason, "detail", e.Message)
		return e
	}
	in, e := a2a.ParsePushConfig(raw)
	if e != nil {
		return store.PushConfig{}, refuse("invalid", e)
	}
	if id != "" {
		in.ID = id
	}
	if e := a2a.CheckPushConfigText(in); e != nil {
		return store.PushConfig{}, refuse("invalid", e)
	}
	for _, f := range []struct {
		name  string
		v     string
		limit int
	}{
		{"id", in.ID, store.MaxPushConfigIDBytes}, {"url", in.URL, store.MaxPushURLBytes},
		{"token", in.Token, store.MaxPushSecretBytes}, {"authentication scheme", in.Scheme, store.MaxPushSecretBytes},
		{"authentication credentials", in.Credentials, store.MaxPushSecretBytes},
	} {
		if len(f.v) > f.limit {
			return store.PushConfig{}, refuse("invalid", a2a.ErrInvalidParams.WithMessage(fmt.Sprintf("the push notification config's %s is longer than %d bytes", f.name, f.limit)))
		}
	}
	tenant := s.Principal.Tenant
	cctx, cancel := context.WithTimeout(ctx, pushCheckTimeout)
	defer cancel()
	if err := p.policies.For(tenant).CheckURL(cctx, in.URL); err != nil {
		// A URLError names the host and the reason, never the rest of the
		// URL, which may carry credentials.
		msg := "webhook URL refused"
		var ue *push.URLError
		if errors.As(err, &ue) {
			msg = ue.Error()
		}
		return store.PushConfig{}, refuse("url_policy", a2a.ErrInvalidParams.WithMessage(msg))
	}
	if p.cfg.VerifiesEndpoints(tenant) && !p.verified.Verified(tenant, in.URL, time.Now()) {
		client := p.policies.For(tenant).Client(pushCheckTimeout)
		if err := push.ChallengeEndpoint(cctx, client, in.URL, in.Token); err != nil {
			return store.PushConfig{}, refuse("challenge", a2a.ErrInvalidParams.WithMessage(err.Error()))
		}
		p.verified.Add(tenant, in.URL, time.Now())
	}
	return store.PushConfig{
		Agent: s.Agent.Name, ID: in.ID, Tenant: tenant, Subject: s.Principal.Subject, Version: s.Op.Version,
		URL: in.URL, Token: in.Token, AuthScheme: in.Scheme, AuthCredentials: in.Credentials,
	}, nil
}

// takeInline validates a config given inline with a send, takes it out of
// the body the agent receives, and registers it when the answer names the
// task.
func (p *Relay) takeInline(ctx context.Context, s *proxy.Scope) error {
	if s.Op.Version == a2a.VLegacy {
		return errLegacyPush
	}
	c, err := p.checkConfig(ctx, s, s.Op.PushConfig, "")
	if err != nil {
		return err
	}
	var body []byte
	if s.Op.Binding == a2a.BindingGRPC {
		body, err = grpcwire.StripPushConfig(s.Op.Version, s.Op.Method, s.Body)
	} else {
		body, err = a2a.StripPushConfig(s.Body, s.Op.Binding)
	}
	if err != nil {
		return a2a.ErrInvalidRequest.WithMessage("the push notification config could not be taken out of the request")
	}
	s.Body = body
	s.Op.PushConfig = nil
	s.AddObserver(&inlineConfig{p: p, c: c})
	return nil
}

// inlineConfig registers a config given with a send for the task the
// answer names, before the caller sees the answer, then feeds the answer
// or every stream event to the relay.
type inlineConfig struct {
	p *Relay
	c store.PushConfig
}

func (o *inlineConfig) Observe(ctx context.Context, s *proxy.Scope, ev a2a.Event, payload []byte) error {
	if ev.TaskID == "" {
		return nil
	}
	if o.c.TaskID == "" {
		c := o.c
		c.TaskID = ev.TaskID
		if c.ID == "" {
			c.ID = defaultConfigID(c.Version, c.TaskID)
		}
		if err := o.p.put(ctx, s, c); err != nil {
			// The caller learns the config is not registered instead of
			// waiting for notifications that never come.
			return err
		}
		o.c = c
	}
	if ev.TaskID == o.c.TaskID {
		o.p.publish(ctx, s, ev, payload)
	}
	return nil
}

// publish hands one answer or stream event to the relay. A failure is
// logged, not shown to the caller: the caller's own answer does not depend
// on it, and the event is published again once the store is back.
func (p *Relay) publish(ctx context.Context, s *proxy.Scope, ev a2a.Event, payload []byte) {
	switch ev.Kind {
	case a2a.EventTask, a2a.EventStatusUpdate, a2a.EventArtifactUpdate:
	default:
		return
	}
	if ev.TaskID == "" {
		return
	}
	result := s.Result()
	if result == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushPublishTimeout)
	defer cancel()
	// A stream's event comes named already (its SSE id), and marks the
	// task live: the subscriber need not follow it upstream meanwhile.
	err := p.sink(ctx, push.Event{
		Agent: s.Agent.Name, TaskID: ev.TaskID, ContextID: ev.ContextID, Version: s.Op.Version,
		Kind: ev.Kind, State: ev.State, Payload: result, At: time.Now(),
		ID: s.StreamEventID(), Live: s.Op.Method.Streaming(),
	})
	if err != nil {
		s.Log().Warn("push: event not published yet", "task_id", ev.TaskID, "err", err)
	}
}

// wireConfig is a stored config as package a2a renders it.
func wireConfig(c store.PushConfig) a2a.PushConfig {
	return a2a.PushConfig{ID: c.ID, URL: c.URL, Token: c.Token, Scheme: c.AuthScheme, Credentials: c.AuthCredentials}
}

// receiverHost is the host of a webhook URL, for logs: the path and query
// may carry secrets.
func receiverHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
