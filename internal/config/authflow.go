package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Credential deliveries: how a credential obtained through an auth
// challenge reaches the agent with the resumed message.
const (
	// DeliverAuthorization sends it as the Authorization header of the
	// resumed request ("<scheme> <token>").
	DeliverAuthorization = "authorization"
	// DeliverHeader sends the token alone in the configured header.
	DeliverHeader = "header"
	// DeliverMetadata puts "<scheme> <token>" in the resumed message's
	// metadata under "a2a-gateway/credential".
	DeliverMetadata = "metadata"
)

// AuthCallbackPath is where the gateway receives OAuth redirects on the
// public listener.
const AuthCallbackPath = "/auth/callback"

// AuthFlowKeyBytes is the size of a credential encryption key (AES-256).
const AuthFlowKeyBytes = 32

// AuthFlowOptions is the `auth_flows:` section: how the gateway turns an
// agent's auth-required state into a challenge a client completes (with an
// OAuth flow or by handing over a credential), keeps the credential
// encrypted and hands it to the agent on resume. Agents opt in with their
// own `auth_flow:` section.
type AuthFlowOptions struct {
	// ChallengeTTL is how long a challenge waits to be completed and used
	// by a resumed message. Default 10m.
	ChallengeTTL duration.Duration `yaml:"challenge_ttl"`
	// Retention is how long a challenge's record is kept after it expired,
	// so answers about the task can still say it expired. Default 1h.
	Retention duration.Duration `yaml:"retention"`
	// SweepInterval is how often one replica looks for challenges that
	// expired, counts them and tells the tasks' push consumers. Default 30s.
	SweepInterval duration.Duration `yaml:"sweep_interval"`
	// Keys encrypt credentials at rest (AES-256-GCM). Exactly one is
	// active and seals new credentials; the others still open what they
	// sealed, so keys rotate without losing pending credentials. Required
	// when an agent has an auth_flow.
	Keys []AuthFlowKey `yaml:"keys"`
}

// AuthFlowKey is one credential encryption key.
type AuthFlowKey struct {
	// ID names the key in every ciphertext it seals: letters, digits, '-'
	// and '_', at most 32.
	ID string `yaml:"id"`
	// KeyEnv names the environment variable holding the key: 32 bytes as
	// base64 (standard or URL alphabet, padded or not) or as 64 hex digits.
	KeyEnv string `yaml:"key_env"`
	// Active marks the key that seals new credentials. With a single key
	// it may be left out.
	Active bool `yaml:"active"`
}

// AgentAuthFlow is one agent's `auth_flow:` section. Without it the
// agent's auth-required answers pass through untouched.
type AgentAuthFlow struct {
	// Delivery is how the credential reaches the agent: "authorization"
	// (default), "header" or "metadata".
	Delivery string `yaml:"delivery"`
	// Header is the request header for delivery "header".
	Header string `yaml:"header"`
	// OAuth lets a person complete the agent's challenges with an OAuth 2.0
	// authorization-code flow with PKCE. A direct hand-off of a credential
	// is always possible.
	OAuth *OAuthClient `yaml:"oauth"`
}

// OAuthClient is the gateway's registration with one authorization server.
type OAuthClient struct {
	// AuthorizationURL and TokenURL are the provider's endpoints (https,
	// or http on loopback).
	AuthorizationURL string `yaml:"authorization_url"`
	TokenURL         string `yaml:"token_url"`
	// ClientID is the gateway's client id at the provider.
	ClientID string `yaml:"client_id"`
	// ClientSecretEnv names the environment variable holding the client
	// secret; none for a public client.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// Scopes are requested from the provider; default: the scopes the agent
	// names in its auth-required message.
	Scopes []string `yaml:"scopes"`
	// RedirectURL is where the provider sends the person back. Default
	// public_url + /auth/callback; set it when the gateway is reached under
	// another name. Its path must end in /auth/callback.
	RedirectURL string `yaml:"redirect_url"`
}

// ApplyDefaults fills unset fields of the section and of every agent's
// auth_flow.
func (o *AuthFlowOptions) ApplyDefaults(publicURL string, agents []Agent) {
	o.ChallengeTTL = duration.Duration(o.ChallengeTTL.Or(10 * time.Minute))
	o.Retention = duration.Duration(o.Retention.Or(time.Hour))
	o.SweepInterval = duration.Duration(o.SweepInterval.Or(30 * time.Second))
	if len(o.Keys) == 1 {
		o.Keys[0].Active = true
	}
	for i := range agents {
		f := agents[i].AuthFlow
		if f == nil {
			continue
		}
		if f.Delivery == "" {
			f.Delivery = DeliverAuthorization
		}
		if f.OAuth != nil && f.OAuth.RedirectURL == "" {
			f.OAuth.RedirectURL = strings.TrimSuffix(publicURL, "/") + AuthCallbackPath
		}
	}
}

var authFlowKeyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Validate checks the section and every agent's auth_flow; errors name the
// field.
func (o *AuthFlowOptions) Validate(agents []Agent, env Env) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if o.ChallengeTTL < duration.Duration(time.Second) {
		add("auth_flows.challenge_ttl", "must be at least 1s")
	}
	if o.Retention <= 0 {
		add("auth_flows.retention", "must be positive")
	}
	if o.SweepInterval < duration.Duration(MinSweepInterval) {
		add("auth_flows.sweep_interval", "must be at least %s", MinSweepInterval)
	}
	active, seen := 0, map[string]bool{}
	for i, k := range o.Keys {
		f := fmt.Sprintf("auth_flows.keys[%d]", i)
		if !authFlowKeyID.MatchString(k.ID) {
			add(f+".id", "want 1-32 letters, digits, '-' or '_', got %q", k.ID)
		}
		if seen[k.ID] {
			add(f+".id", "%q is used by another key", k.ID)
		}
		seen[k.ID] = true
		if k.KeyEnv == "" {
			add(f+".key_env", "required")
		} else if env != nil {
			if _, err := k.load(env); err != nil {
				add(f+".key_env", "%v", err)
			}
		}
		if k.Active {
			active++
		}
	}
	if len(o.Keys) > 0 && active != 1 {
		add("auth_flows.keys", "exactly one key must be active, %d are", active)
	}
	enabled := false
	for i, a := range agents {
		if a.AuthFlow == nil {
			continue
		}
		enabled = true
		if err := a.AuthFlow.validate(fmt.Sprintf("agents[%d].auth_flow", i), env); err != nil {
			errs = append(errs, err)
		}
	}
	if enabled && len(o.Keys) == 0 {
		add("auth_flows.keys", "required when an agent has an auth_flow: credentials are stored encrypted")
	}
	return errors.Join(errs...)
}

// Load reads and decodes the key from its environment variable.
func (k AuthFlowKey) Load() ([]byte, error) { return k.load(ProcessEnv) }

func (k AuthFlowKey) load(env Env) ([]byte, error) {
	if k.KeyEnv == "" {
		return nil, errors.New("required")
	}
	return loadKey(env, k.KeyEnv, AuthFlowKeyBytes)
}

// loadKey reads a key of n bytes, as base64 (standard or URL alphabet,
// padded or not) or hex, from the environment variable name.
func loadKey(env Env, name string, n int) ([]byte, error) {
	raw, _ := env(name)
	v := strings.TrimSpace(raw)
	if v == "" {
		return nil, fmt.Errorf("environment variable %s is unset or empty", name)
	}
	if b, err := hex.DecodeString(v); err == nil && len(b) == n {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == n {
			return b, nil
		}
	}
	// The value itself never goes into the message.
	return nil, fmt.Errorf("environment variable %s does not hold %d bytes as base64 or hex", name, n)
}

func (f *AgentAuthFlow) validate(field string, env Env) error {
	var errs []error
	add := func(sub, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", field, sub, fmt.Sprintf(format, args...)))
	}
	switch f.Delivery {
	case DeliverAuthorization, DeliverMetadata:
		if f.Header != "" {
			add("header", "only with delivery %q", DeliverHeader)
		}
	case DeliverHeader:
		if !validHeaderName(f.Header) {
			add("header", "want a header name, got %q", f.Header)
		} else if h := http.CanonicalHeaderKey(f.Header); h == "Authorization" || h == "Cookie" || h == "X-Api-Key" {
			add("header", "%s carries the caller's credentials; use delivery %q for Authorization", h, DeliverAuthorization)
		}
	default:
		add("delivery", "want %q, %q or %q, got %q", DeliverAuthorization, DeliverHeader, DeliverMetadata, f.Delivery)
	}
	if o := f.OAuth; o != nil {
		for _, u := range []struct{ sub, v string }{{"oauth.authorization_url", o.AuthorizationURL}, {"oauth.token_url", o.TokenURL}} {
			if u.v == "" {
				add(u.sub, "required")
			} else if !secureURL(u.v) {
				add(u.sub, "want an absolute https URL (http only on loopback), got %q", u.v)
			}
		}
		if o.ClientID == "" {
			add("oauth.client_id", "required")
		}
		if msg := env.checkVar(o.ClientSecretEnv); msg != "" {
			add("oauth.client_secret_env", "%s", msg)
		}
		for i, s := range o.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				add(fmt.Sprintf("oauth.scopes[%d]", i), "want one scope without spaces, got %q", s)
			}
		}
		if u, err := url.Parse(o.RedirectURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			!strings.HasSuffix(u.Path, AuthCallbackPath) || u.RawQuery != "" || u.Fragment != "" {
			add("oauth.redirect_url", "want an absolute http(s) URL whose path ends in %s, got %q", AuthCallbackPath, o.RedirectURL)
		}
	}
	return errors.Join(errs...)
}

// secureURL accepts https URLs, and http ones on loopback (test and local
// providers).
func secureURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	if u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
