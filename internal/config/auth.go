package config

import (
	"fmt"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// DefaultMaxTokenBytes is the longest bearer token an issuer accepts
// unless its max_token_bytes says otherwise.
const DefaultMaxTokenBytes = 8192

// AuthOptions is the `auth:` section: how callers authenticate. Package
// authz validates it (authz.Validate) and reads the key material.
type AuthOptions struct {
	// Issuers are the identity providers whose bearer JWTs are accepted.
	// A token is matched to an issuer by its exact "iss" claim.
	Issuers []IssuerOptions `yaml:"issuers"`
	// APIKeys are static keys accepted in "X-API-Key" or
	// "Authorization: ApiKey <key>".
	APIKeys []APIKeyOptions `yaml:"api_keys"`
	// Realm is the realm named in WWW-Authenticate challenges; default
	// "a2a-gateway".
	Realm string `yaml:"realm"`
}

// IssuerOptions configures one trusted token issuer.
type IssuerOptions struct {
	// Name identifies the issuer in logs and becomes Principal.Issuer; unique,
	// and "apikey" is reserved.
	Name string `yaml:"name"`
	// Issuer is the exact "iss" value this issuer's tokens carry; unique.
	Issuer string `yaml:"issuer"`
	// Audiences lists accepted "aud" values; a token must name at least one.
	// Required.
	Audiences []string `yaml:"audiences"`
	// Algorithms pins the accepted signing algorithms (RS256, RS384, RS512,
	// PS256, PS384, PS512, ES256, ES384, ES512, EdDSA, HS256, HS384, HS512).
	// Required; "none" is never accepted.
	Algorithms []string `yaml:"algorithms"`
	// JWKSURL is fetched for the issuer's public keys; https, or http to a
	// loopback host only.
	JWKSURL string `yaml:"jwks_url"`
	// JWKSRefresh is how often the JWKS is fetched again; default 15m.
	JWKSRefresh duration.Duration `yaml:"jwks_refresh"`
	// JWKSMinRefreshInterval is the least time between fetches caused by
	// tokens naming an unknown kid; default 30s.
	JWKSMinRefreshInterval duration.Duration `yaml:"jwks_min_refresh_interval"`
	// JWKSTimeout bounds one JWKS fetch, and so how long a request naming an
	// unknown kid may wait for it; default 10s.
	JWKSTimeout duration.Duration `yaml:"jwks_timeout"`
	// KeyFiles are static public keys: PEM (PKIX public key, PKCS#1 RSA public
	// key or certificate) or JSON (a JWK or a JWKS). PEM keys, and JWKs without
	// a "kid", take the file's base name without extension as key id.
	KeyFiles []string `yaml:"key_files"`
	// HMACSecretEnv names the environment variable holding the shared secret
	// for HS256/HS384/HS512 (at least 32/48/64 bytes). Secrets never go in the
	// configuration file.
	HMACSecretEnv string `yaml:"hmac_secret_env"`
	// Leeway is the clock skew tolerated on exp, nbf and iat; default 30s.
	Leeway duration.Duration `yaml:"leeway"`
	// TenantClaim names the claim holding the tenant; default "tenant".
	// Tokens without it are refused.
	TenantClaim string `yaml:"tenant_claim"`
	// SubjectClaim names the claim holding the subject; default "sub".
	// Tokens without it are refused.
	SubjectClaim string `yaml:"subject_claim"`
	// ScopeClaim names the claim holding scopes, either a space-separated
	// string or an array of strings; default "scope".
	ScopeClaim string `yaml:"scope_claim"`
	// MaxTokenBytes refuses longer tokens before any parsing; default 8192.
	MaxTokenBytes int `yaml:"max_token_bytes"`
}

// APIKeyOptions configures one static API key. The key itself is never part
// of the YAML file: give either KeyEnv or KeySHA256.
type APIKeyOptions struct {
	// Name identifies the key in logs and becomes the principal's subject.
	Name string `yaml:"name"`
	// Tenant is the tenant every request made with this key acts for.
	Tenant string `yaml:"tenant"`
	// Scopes are granted to every request made with this key.
	Scopes []string `yaml:"scopes"`
	// KeyEnv names the environment variable holding the key, read once at
	// start-up; the key must be at least 16 bytes.
	KeyEnv string `yaml:"key_env"`
	// KeySHA256 is the hex-encoded SHA-256 digest of the key, an alternative
	// to KeyEnv that keeps the raw key off the gateway host.
	KeySHA256 string `yaml:"key_sha256"`
}

// Ownership scopes: who may act on a task once it exists.
const (
	// OwnerTenant lets any subject of the owning tenant act on its tasks.
	OwnerTenant = "tenant"
	// OwnerSubject restricts each task to the subject that created it.
	OwnerSubject = "subject"
)

// Policy is an agent's `policy:` section: who may use the agent and which
// scopes each operation needs.
type Policy struct {
	// Tenants that may use the agent. Empty means every authenticated tenant.
	Tenants []string `yaml:"tenants"`
	// Scopes maps an operation (send, stream, get, list, cancel, subscribe,
	// push_config_set, push_config_get, push_config_list,
	// push_config_delete, extended_card) to the scopes it requires, all of
	// them. The key "*" applies to operations not listed. Empty: no scope
	// is required beyond authentication.
	Scopes map[string][]string `yaml:"scopes"`
	// Ownership is "tenant" (default: any subject of the owning tenant may
	// act on a task) or "subject" (only the subject that created it).
	Ownership string `yaml:"ownership"`
	// ClientContextIDs allows a caller to start a conversation under a
	// context id of its own choosing, which the gateway then reserves for
	// the caller (default true). Set false for agents that issue predictable
	// context ids, so no caller can reserve one before the agent issues it.
	ClientContextIDs *bool `yaml:"client_context_ids"`
}

// Validate checks the policy's ownership; field is its path in the
// configuration. The operations it names scopes for are checked by
// authz.ValidatePolicy.
func (p *Policy) Validate(field string) error {
	switch p.Ownership {
	case "", OwnerTenant, OwnerSubject:
		return nil
	}
	return fmt.Errorf("%s.ownership: want %q or %q, got %q", field, OwnerTenant, OwnerSubject, p.Ownership)
}
