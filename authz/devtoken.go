package authz

import (
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/golang-jwt/jwt/v5"
)

// Development tokens back `a2a-gateway token` and the demo, signed with a
// key of jose.GenerateKey. The gateway itself only ever verifies; nothing
// here is used on the request path.

// MintToken signs a token that an issuer configured with the default claim
// names (tenant, sub, scope) accepts: iss, aud, sub, tenant, scope, iat, nbf,
// exp and a random jti. kid may be empty.
func MintToken(key crypto.Signer, kid, issuer, audience, tenant, subject string, scopes []string, ttl time.Duration) (string, error) {
	alg, err := jose.SigningAlgorithm(key)
	if err != nil {
		return "", err
	}
	switch {
	case issuer == "":
		return "", errors.New("mint token: issuer is required")
	case audience == "":
		return "", errors.New("mint token: audience is required")
	case !validIdentity(tenant):
		return "", errors.New("mint token: tenant must be 1-256 printable bytes")
	case !validIdentity(subject):
		return "", errors.New("mint token: subject must be 1-256 printable bytes")
	case ttl <= 0:
		return "", errors.New("mint token: ttl must be positive")
	case len(kid) > maxKidBytes:
		return "", fmt.Errorf("mint token: kid longer than %d bytes", maxKidBytes)
	}
	if errs := validateScopes("scopes", scopes); len(errs) > 0 {
		return "", fmt.Errorf("mint token: %w", errors.Join(errs...))
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	now := time.Now()
	claims := jwt.MapClaims{
		"iss":              issuer,
		"aud":              audience,
		"sub":              subject,
		DefaultTenantClaim: tenant,
		"iat":              now.Unix(),
		"nbf":              now.Unix(),
		"exp":              now.Add(ttl).Unix(),
		"jti":              base64.RawURLEncoding.EncodeToString(jti),
		DefaultScopeClaim:  strings.Join(scopes, " "),
	}
	if len(scopes) == 0 {
		delete(claims, DefaultScopeClaim)
	}
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	signed, err := tok.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("mint token: sign: %w", err)
	}
	return signed, nil
}
