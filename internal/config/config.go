// Package config loads and validates the gateway's YAML configuration.
// Loading and validation are separate steps so tests and the demo can
// build a Config in code and validate it the same way.
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"go.yaml.in/yaml/v3"
)

// Config is the whole gateway configuration.
type Config struct {
	// Listen is the address of the public listener that serves the agents.
	Listen string `yaml:"listen"`
	// AdminListen is the address of the admin listener: /metrics, /healthz,
	// /readyz. Keep it off the public network.
	AdminListen string `yaml:"admin_listen"`
	// Pprof serves Go's profiles under /debug/pprof/ on the admin
	// listener, never on the public one. Default false: profiles reveal
	// memory contents and cost CPU while taken.
	Pprof bool `yaml:"pprof"`
	// PublicURL is the gateway's external base URL, written into rewritten
	// agent cards. Defaults to http://<listen>.
	PublicURL string `yaml:"public_url"`
	// Log selects the log level and format, and the access log.
	Log LogOptions `yaml:"log"`
	// Tracing configures the spans' attributes.
	Tracing TracingOptions `yaml:"tracing"`
	// TrustedProxies are the CIDRs (or single addresses) of the proxies and
	// load balancers in front of the gateway. Only from a peer in one of
	// them are X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto,
	// X-Real-IP and Forwarded believed and passed on, extended by the peer;
	// from any other peer they are replaced by what the gateway sees.
	// Default: none.
	TrustedProxies []string `yaml:"trusted_proxies"`
	// Limits bound what one request or stream may use.
	Limits Limits `yaml:"limits"`
	// Shutdown bounds graceful termination.
	Shutdown ShutdownOptions `yaml:"shutdown"`
	// Store holds shared state: Redis, or the embedded store when no Redis
	// address is given.
	Store StoreOptions `yaml:"store"`
	// Auth configures how callers authenticate: JWT issuers and API keys.
	Auth AuthOptions `yaml:"auth"`
	// Dedupe makes each (tenant, messageId) reach an agent at most once.
	Dedupe DedupeOptions `yaml:"dedupe"`
	// Budgets are the per-tenant request and stream budgets.
	Budgets BudgetOptions `yaml:"budgets"`
	// Lifecycle follows each task's states: metrics, orphans, retention of
	// the records, the operations API and webhook.
	Lifecycle LifecycleOptions `yaml:"lifecycle"`
	// CardSigning re-signs rewritten agent cards with the gateway's key;
	// without it the agents' signatures, which the rewrite invalidates, are
	// dropped.
	CardSigning CardSigningOptions `yaml:"card_signing"`
	// Push is the push-notification relay.
	Push PushOptions `yaml:"push"`
	// AuthFlows turns agents' auth-required states into challenges.
	AuthFlows AuthFlowOptions `yaml:"auth_flows"`
	// ListTasks configures the gateway's paging of ListTasks.
	ListTasks ListTasksOptions `yaml:"list_tasks"`
	// Console is the operations console on the admin listener.
	Console ConsoleOptions `yaml:"console"`
	// lines is where each field stands in the file the configuration was
	// read from, for messages about it (Locate).
	lines *lineIndex
	// Agents are the upstream A2A agents, each mounted at /agents/{name}/.
	Agents []Agent `yaml:"agents"`
}

// CardSigningOptions is the gateway's card-signing key.
type CardSigningOptions struct {
	// KeyFile is a PEM private key: EC P-256/P-384/P-521 (ES256/384/512),
	// Ed25519 (EdDSA) or RSA of 2048 bits or more (RS256).
	KeyFile string `yaml:"key_file"`
	// KeyID is the kid written into every signature. Required with KeyFile.
	KeyID string `yaml:"key_id"`
	// JWKSURL, when set, is written into signatures as jku: the https URL
	// where clients find the public key. The gateway serves it at
	// /.well-known/jwks.json on the public listener.
	JWKSURL string `yaml:"jwks_url"`
}

// LogOptions configures structured logging.
type LogOptions struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is json or text. Default json.
	Format string `yaml:"format"`
	// Access is the access log.
	Access AccessLogOptions `yaml:"access"`
}

// Limits are the explicit bounds on request and response sizes and streams.
type Limits struct {
	// MaxBodyBytes bounds a request body. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxResponseBytes bounds a non-streaming upstream response, which the
	// gateway reads whole to record what it reveals. Default 10 MiB.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// MaxEventBytes bounds one server-sent event from an agent. Default 1 MiB.
	MaxEventBytes int `yaml:"max_event_bytes"`
	// MaxStreams caps concurrently open streams across all agents. Default 10000.
	MaxStreams int `yaml:"max_streams"`
	// BodyTimeout bounds reading a request body, so a slow sender cannot
	// hold a connection open indefinitely; a body not received in time gets
	// REQUEST_TIMEOUT (HTTP 408) and the connection is closed. Default 30s.
	BodyTimeout duration.Duration `yaml:"body_timeout"`
	// HeaderTimeout bounds reading a request's header on the public
	// listener; a connection that has not sent one in time is closed.
	// Default 10s.
	HeaderTimeout duration.Duration `yaml:"header_timeout"`
	// IdleTimeout closes a keep-alive connection that sends no new request
	// for this long. Default 120s.
	IdleTimeout duration.Duration `yaml:"idle_timeout"`
	// MaxConnections caps the public listener's open connections; when they
	// are all open, new ones wait in the kernel's backlog until one closes.
	// Every open stream holds one. Default 20000.
	MaxConnections int `yaml:"max_connections"`
	// MaxHeaderBytes bounds a request's header (request line included); a
	// larger one gets HEADERS_TOO_LARGE (431), or 401 when the credential is
	// what makes it too large. Default 64 KiB.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxCardBytes bounds an agent card the gateway fetches, to rewrite it
	// or to read the agent's capabilities. Default 1 MiB.
	MaxCardBytes int64 `yaml:"max_card_bytes"`
	// CardFetchTimeout bounds one fetch of an agent card. Default 10s.
	CardFetchTimeout duration.Duration `yaml:"card_fetch_timeout"`
	// GRPC bounds the agents' gRPC listeners.
	GRPC GRPCLimits `yaml:"grpc"`
}

// ShutdownOptions bounds graceful termination.
type ShutdownOptions struct {
	// Timeout is how long in-flight requests may take to finish after a
	// termination signal. Default 30s.
	Timeout duration.Duration `yaml:"timeout"`
	// StreamGrace is how long open streams keep flowing after the signal
	// before the gateway ends them cleanly (clients resubscribe elsewhere).
	// Default 10s; at most Timeout.
	StreamGrace duration.Duration `yaml:"stream_grace"`
}

// Agent is one upstream A2A agent.
type Agent struct {
	// Name is the mount name: the agent is served at /agents/{name}/.
	// Letters, digits, '-' and '_' only.
	Name string `yaml:"name"`
	// URL is the agent's base URL, e.g. http://10.0.0.5:9001.
	URL string `yaml:"url"`
	// Namespace names the task records the mount shares with other mounts
	// of the same namespace, for URLs that reach one agent but are spelt
	// differently. Without it, mounts of the same normalised URL share
	// records (see Upstream and RecordKeys). Letters, digits, '-' and '_'.
	Namespace string `yaml:"namespace"`
	// JSONRPCPath is where the agent serves JSON-RPC, relative to URL. Default "/".
	JSONRPCPath string `yaml:"jsonrpc_path"`
	// RESTPath is the base of the agent's HTTP+JSON binding, relative to URL. Default "/".
	RESTPath string `yaml:"rest_path"`
	// CardPath is where the agent serves its card, relative to URL.
	// Default "/.well-known/agent-card.json" (with a fallback to agent.json).
	CardPath string `yaml:"card_path"`
	// CardTTL is how long a rewritten card is cached. Default 5m.
	CardTTL duration.Duration `yaml:"card_ttl"`
	// Timeouts bound each upstream exchange.
	Timeouts AgentTimeouts `yaml:"timeouts"`
	// UpstreamAuthEnv names an environment variable whose value is sent as
	// the Authorization header to the agent. Callers' own credentials are
	// never forwarded to an agent.
	UpstreamAuthEnv string `yaml:"upstream_auth_env"`
	// TenantRouting sends the caller's tenant to an A2A 1.0 agent as the
	// request's routing tenant (REST path prefix, JSON-RPC params.tenant),
	// for agents that serve several tenants. A caller naming another tenant
	// is refused.
	TenantRouting bool `yaml:"tenant_routing"`
	// Policy says which tenants may use the agent, which scopes each
	// operation needs, and whether tasks belong to a tenant or a subject.
	Policy Policy `yaml:"policy"`
	// Watchdog bounds the time the agent's tasks may spend working or
	// waiting on the client, and says what to do about a task over budget.
	Watchdog WatchdogOptions `yaml:"watchdog"`
	// Push holds the agent's push-notification settings.
	Push AgentPush `yaml:"push"`
	// AuthFlow opts the agent into auth challenges.
	AuthFlow *AgentAuthFlow `yaml:"auth_flow"`
	// GRPC serves the agent over the gRPC binding too, on a listener of
	// its own.
	GRPC *AgentGRPC `yaml:"grpc"`
	// Bridge lets callers of other versions and bindings reach the agent.
	// Without it a caller must speak one the agent speaks.
	Bridge *AgentBridge `yaml:"bridge"`
}

// AgentTimeouts bound the exchanges with one agent.
type AgentTimeouts struct {
	// Connect bounds the TCP and TLS handshake. Default 5s.
	Connect duration.Duration `yaml:"connect"`
	// Request bounds a whole non-streaming exchange. Default 60s.
	Request duration.Duration `yaml:"request"`
	// StreamIdle ends a stream on which the agent sent nothing (not even a
	// keep-alive) for this long. 0 (default) means never.
	StreamIdle duration.Duration `yaml:"stream_idle"`
}

// Load reads, decodes, applies defaults to and validates the file at path,
// with the variables of the process's environment.
func Load(path string) (*Config, error) { return LoadEnv(path, ProcessEnv) }

// LoadEnv is Load with the environment the *_env fields are checked
// against; a nil env checks none of them (check --skip-env). A file that
// decodes but has problems is returned with them, for a caller that looks
// further (check); every other caller stops at the error.
func LoadEnv(path string, env Env) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := ParseEnv(raw, env)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes YAML strictly (unknown fields are errors), applies defaults
// and validates against the process's environment.
func Parse(raw []byte) (*Config, error) { return ParseEnv(raw, ProcessEnv) }

// ParseEnv is Parse with the given environment. It reports every problem
// at once, as Problems: decoding goes on past a field of the wrong type, and
// the file is still validated. Each problem reads "line N: field.path:
// reason". With Problems the partly decoded file is returned too.
func ParseEnv(raw []byte, env Env) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, cleanYAMLError(err)
	}
	cfg := Config{lines: indexLines(&doc)}
	lines := cfg.lines
	var decodeErrs []problem
	if len(doc.Content) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return nil, cleanYAMLError(err)
			}
			for _, msg := range te.Errors {
				decodeErrs = append(decodeErrs, lines.decodeError(msg))
			}
		}
	}
	cfg.ApplyDefaults()
	verr := cfg.ValidateEnv(env)
	if err := lines.join(decodeErrs, verr); err != nil {
		return &cfg, err
	}
	return &cfg, nil
}

// cleanYAMLError drops the library's "yaml: " preamble of a syntax error so
// the message reads "line 7: did not find expected key".
func cleanYAMLError(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}

// ApplyDefaults fills every unset field with its documented default.
func (c *Config) ApplyDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8080"
	}
	if c.AdminListen == "" {
		c.AdminListen = "127.0.0.1:9090"
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Listen
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "json"
	}
	c.Log.Access.applyDefaults()
	if c.Limits.MaxBodyBytes == 0 {
		c.Limits.MaxBodyBytes = 1 << 20
	}
	if c.Limits.MaxResponseBytes == 0 {
		c.Limits.MaxResponseBytes = 10 << 20
	}
	if c.Limits.MaxEventBytes == 0 {
		c.Limits.MaxEventBytes = 1 << 20
	}
	if c.Limits.MaxStreams == 0 {
		c.Limits.MaxStreams = 10000
	}
	if c.Limits.BodyTimeout == 0 {
		c.Limits.BodyTimeout = duration.Duration(30 * time.Second)
	}
	if c.Limits.HeaderTimeout == 0 {
		c.Limits.HeaderTimeout = duration.Duration(10 * time.Second)
	}
	if c.Limits.IdleTimeout == 0 {
		c.Limits.IdleTimeout = duration.Duration(120 * time.Second)
	}
	if c.Limits.MaxConnections == 0 {
		c.Limits.MaxConnections = 20000
	}
	if c.Limits.MaxHeaderBytes == 0 {
		c.Limits.MaxHeaderBytes = 64 << 10
	}
	if c.Limits.MaxCardBytes == 0 {
		c.Limits.MaxCardBytes = 1 << 20
	}
	if c.Limits.CardFetchTimeout == 0 {
		c.Limits.CardFetchTimeout = duration.Duration(10 * time.Second)
	}
	c.applyGRPCDefaults()
	c.applyBridgeDefaults()
	if c.Shutdown.Timeout == 0 {
		c.Shutdown.Timeout = duration.Duration(30 * time.Second)
	}
	if c.Shutdown.StreamGrace == 0 {
		c.Shutdown.StreamGrace = duration.Duration(10 * time.Second)
	}
	c.Dedupe.ApplyDefaults()
	c.Lifecycle.ApplyDefaults()
	c.Push.ApplyDefaults(c.PublicURL)
	c.AuthFlows.ApplyDefaults(c.PublicURL, c.Agents)
	c.ListTasks.ApplyDefaults()
	c.Console.ApplyDefaults()
	for i := range c.Agents {
		a := &c.Agents[i]
		if a.JSONRPCPath == "" {
			a.JSONRPCPath = "/"
		}
		if a.RESTPath == "" {
			a.RESTPath = "/"
		}
		if a.CardPath == "" {
			a.CardPath = "/.well-known/agent-card.json"
		}
		if a.CardTTL == 0 {
			a.CardTTL = duration.Duration(5 * time.Minute)
		}
		if a.Timeouts.Connect == 0 {
			a.Timeouts.Connect = duration.Duration(5 * time.Second)
		}
		if a.Timeouts.Request == 0 {
			a.Timeouts.Request = duration.Duration(60 * time.Second)
		}
		a.Watchdog.ApplyDefaults()
		a.Push.PushSource.ApplyDefaults()
	}
}

var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// Validate checks every field against the process's environment.
func (c *Config) Validate() error { return c.ValidateEnv(ProcessEnv) }

// ValidateEnv checks every field and reports every problem, each as
// "field.path: reason". env is what the *_env fields are checked against;
// nil skips those checks.
func (c *Config) ValidateEnv(env Env) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	for _, l := range []struct{ field, addr string }{{"listen", c.Listen}, {"admin_listen", c.AdminListen}} {
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			add(l.field, "want host:port, got %q", l.addr)
		}
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("public_url", "want an absolute http(s) URL, got %q", c.PublicURL)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "want debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Log.Format != "json" && c.Log.Format != "text" {
		add("log.format", "want json or text, got %q", c.Log.Format)
	}
	c.Log.Access.validate(add)
	if c.Limits.MaxBodyBytes < 1024 {
		add("limits.max_body_bytes", "must be at least 1024")
	}
	if c.Limits.MaxResponseBytes < 1024 {
		add("limits.max_response_bytes", "must be at least 1024")
	}
	if c.Limits.MaxEventBytes < 1024 {
		add("limits.max_event_bytes", "must be at least 1024")
	}
	if c.Limits.MaxStreams < 1 {
		add("limits.max_streams", "must be at least 1")
	}
	if c.Limits.MaxConnections < c.Limits.MaxStreams {
		add("limits.max_connections", "must be at least limits.max_streams (%d): every open stream holds a connection", c.Limits.MaxStreams)
	}
	if c.Limits.MaxHeaderBytes < 4<<10 || c.Limits.MaxHeaderBytes > 1<<20 {
		add("limits.max_header_bytes", "must be between 4096 and 1048576")
	}
	if c.Limits.MaxCardBytes < 4<<10 || c.Limits.MaxCardBytes > 16<<20 {
		add("limits.max_card_bytes", "must be between 4096 and 16777216")
	}
	if d := c.Limits.CardFetchTimeout.D(); d < 100*time.Millisecond || d > 5*time.Minute {
		add("limits.card_fetch_timeout", "must be between 100ms and 5m")
	}
	for i, is := range c.Auth.Issuers {
		// A token the header limit refuses could never reach its issuer.
		if n := cmp.Or(is.MaxTokenBytes, DefaultMaxTokenBytes); n >= c.Limits.MaxHeaderBytes {
			add(fmt.Sprintf("auth.issuers[%d].max_token_bytes", i), "%d must be below limits.max_header_bytes (%d)", n, c.Limits.MaxHeaderBytes)
		}
	}
	if c.Shutdown.StreamGrace > c.Shutdown.Timeout {
		add("shutdown.stream_grace", "must not exceed shutdown.timeout")
	}
	if err := c.Store.Validate(); err != nil {
		errs = append(errs, err)
	}
	if msg := env.checkVar(c.Store.Redis.PasswordEnv); msg != "" {
		add("store.redis.password_env", "%s", msg)
	}
	if err := c.Budgets.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Dedupe.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Lifecycle.Validate(env); err != nil {
		errs = append(errs, err)
	}
	if err := c.Push.Validate(env); err != nil {
		errs = append(errs, err)
	}
	if err := c.AuthFlows.Validate(c.Agents, env); err != nil {
		errs = append(errs, err)
	}
	if err := c.ListTasks.Validate(env); err != nil {
		errs = append(errs, err)
	}
	if err := c.Console.Validate(env); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.TrustedPrefixes(); err != nil {
		errs = append(errs, err)
	}
	if c.CardSigning.KeyFile != "" && c.CardSigning.KeyID == "" {
		add("card_signing.key_id", "required with card_signing.key_file")
	}
	if c.CardSigning.KeyFile == "" && (c.CardSigning.KeyID != "" || c.CardSigning.JWKSURL != "") {
		add("card_signing.key_file", "required with card_signing.key_id and jwks_url")
	}
	if u := c.CardSigning.JWKSURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
			add("card_signing.jwks_url", "want an absolute https URL, got %q", u)
		}
	}
	if len(c.Agents) == 0 {
		add("agents", "at least one agent is required")
	}
	seen := map[string]bool{}
	for i, a := range c.Agents {
		f := fmt.Sprintf("agents[%d]", i)
		if a.Name == "" {
			add(f+".name", "required")
		} else if !agentName.MatchString(a.Name) {
			add(f+".name", "want letters, digits, '-' or '_' (1-63 characters), got %q", a.Name)
		}
		if seen[a.Name] {
			add(f+".name", "%q is used by another agent", a.Name)
		}
		seen[a.Name] = true
		if a.URL == "" {
			add(f+".url", "required")
		} else if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			add(f+".url", "want an absolute http(s) URL without a query, got %q", a.URL)
		}
		for _, p := range []struct{ field, path string }{{"jsonrpc_path", a.JSONRPCPath}, {"rest_path", a.RESTPath}, {"card_path", a.CardPath}} {
			if !strings.HasPrefix(p.path, "/") || strings.Contains(p.path, "..") {
				add(f+"."+p.field, "want a path starting with '/', got %q", p.path)
			}
		}
		if err := a.Policy.Validate(f + ".policy"); err != nil {
			errs = append(errs, err)
		}
		if err := a.Watchdog.Validate(f + ".watchdog"); err != nil {
			errs = append(errs, err)
		}
		if err := a.Push.PushSource.Validate(f + ".push"); err != nil {
			errs = append(errs, err)
		}
		if msg := env.checkVar(a.UpstreamAuthEnv); msg != "" {
			add(f+".upstream_auth_env", "%s", msg)
		}
	}
	validateNamespaces(c.Agents, add)
	c.validateGRPC(add)
	c.validateBridges(add)
	return errors.Join(errs...)
}

// TrustedPrefixes parses trusted_proxies; a single address stands for
// itself alone.
func (c *Config) TrustedPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(c.TrustedProxies))
	for i, v := range c.TrustedProxies {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("trusted_proxies[%d]: want a CIDR or an IP address, got %q", i, v)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("trusted_proxies[%d]: %q has bits set after the prefix; did you mean %s?", i, v, p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}

// Warnings are settings that are valid but probably not what a deployment
// wants; check prints them and serve logs them.
func (c *Config) Warnings() []string {
	out := NamespaceWarnings(c.Agents)
	if c.ListTasks.PageTokenKeyEnv == "" {
		out = append(out, "list_tasks.page_token_key_env is not set: ListTasks page tokens are signed with a random key of each process, "+
			"so they fail on another replica and after a restart; set it to the same key on every replica")
	}
	return out
}
