// Package authz decides who a caller is and what the caller may touch.
//
// The authentication half maps a request to a Principal from a bearer JWT
// (checked against per-issuer pinned algorithms and keys) or an API key.
package authz

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/golang-jwt/jwt/v5"
)

// APIKeyIssuer is the request.Principal.Issuer of callers authenticated by API key.
// Issuer names in the configuration may not take it, so a principal's origin
// is never ambiguous.
const APIKeyIssuer = "apikey"

// maxIdentityBytes bounds tenant and subject values. They end up in storage
// keys and metric labels, where an unbounded caller-chosen string does harm.
const maxIdentityBytes = 256

// validIdentity reports whether s may serve as a tenant or subject: present,
// bounded, valid UTF-8 and free of control characters, so it can be logged
// and used in keys without escaping surprises.
func validIdentity(s string) bool {
	if s == "" || len(s) > maxIdentityBytes || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}

// identityClaim returns claims[name] when it is a valid identity string.
func identityClaim(claims map[string]any, name string) (string, bool) {
	s, ok := claims[name].(string)
	if !ok || !validIdentity(s) {
		return "", false
	}
	return s, true
}

// scopesClaim accepts both shapes seen in the wild: an OAuth 2.0
// space-separated string ("scope", RFC 8693) and a JSON array of strings
// ("scp", "scopes"). A missing claim grants no scopes.
func scopesClaim(v any) ([]string, bool) {
	switch s := v.(type) {
	case nil:
		return nil, true
	case string:
		return strings.Fields(s), true
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			str, ok := e.(string)
			if !ok || str == "" || strings.ContainsFunc(str, unicode.IsSpace) {
				return nil, false
			}
			out = append(out, str)
		}
		return out, true
	default:
		return nil, false
	}
}

// principal maps verified claims to the caller; a token lacking a tenant or
// subject never yields one.
func (v *issuerVerifier) principal(claims jwt.MapClaims) (*request.Principal, failure) {
	tenant, ok := identityClaim(claims, v.tenantClaim)
	if !ok {
		return nil, errTenant
	}
	subject, ok := identityClaim(claims, v.subjectClaim)
	if !ok {
		return nil, errSubject
	}
	scopes, ok := scopesClaim(claims[v.scopeClaim])
	if !ok {
		return nil, errScopes
	}
	return &request.Principal{Tenant: tenant, Subject: subject, Scopes: scopes, Issuer: v.name}, ""
}
