package authz

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Development keys and tokens back `a2a-gateway token` and the demo. The
// gateway itself only ever verifies; nothing here is used on the request path.

// GenerateDevKey returns a fresh Ed25519 signing key. Its algorithm is EdDSA
// (see SigningAlgorithm), which the dev issuer must pin.
func GenerateDevKey() (crypto.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate Ed25519 key: %w", err)
	}
	return priv, nil
}

// SigningAlgorithm names the JWS algorithm MintToken uses for key: "EdDSA"
// for Ed25519, "ES256"/"ES384"/"ES512" for ECDSA P-256/P-384/P-521.
func SigningAlgorithm(key crypto.Signer) (string, error) {
	switch k := key.(type) {
	case ed25519.PrivateKey:
		if len(k) != ed25519.PrivateKeySize {
			return "", errors.New("malformed Ed25519 private key")
		}
		return "EdDSA", nil
	case *ecdsa.PrivateKey:
		if k == nil || k.Curve == nil {
			return "", errors.New("malformed ECDSA private key")
		}
		switch k.Curve.Params().Name {
		case "P-256":
			return "ES256", nil
		case "P-384":
			return "ES384", nil
		case "P-521":
			return "ES512", nil
		}
		return "", fmt.Errorf("unsupported EC curve %s", k.Curve.Params().Name)
	default:
		return "", fmt.Errorf("unsupported signing key type %T (want Ed25519 or ECDSA)", key)
	}
}

// MintToken signs a token that an issuer configured with the default claim
// names (tenant, sub, scope) accepts: iss, aud, sub, tenant, scope, iat, nbf,
// exp and a random jti. kid may be empty.
func MintToken(key crypto.Signer, kid, issuer, audience, tenant, subject string, scopes []string, ttl time.Duration) (string, error) {
	alg, err := SigningAlgorithm(key)
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

// EncodePrivateKeyPEM renders key as a PKCS#8 "PRIVATE KEY" PEM block.
func EncodePrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	if _, err := SigningAlgorithm(key); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// WritePrivateKeyPEM writes key to a new file readable only by its owner.
// An existing file is never overwritten (the error wraps fs.ErrExist), so a
// key that tokens were minted with cannot be lost by accident.
func WritePrivateKeyPEM(path string, key crypto.Signer) error {
	data, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write private key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write private key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write private key: %w", err)
	}
	return nil
}

// ParsePrivateKeyPEM reads the first private key block: PKCS#8, or SEC 1
// ("EC PRIVATE KEY"). Only Ed25519 and ECDSA keys are accepted.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", strings.ToLower(block.Type), err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", key)
		}
		if _, err := SigningAlgorithm(signer); err != nil {
			return nil, err
		}
		return signer, nil
	}
}

// LoadPrivateKeyPEM reads a key written by WritePrivateKeyPEM (or any PKCS#8
// or SEC 1 Ed25519/ECDSA key).
func LoadPrivateKeyPEM(path string) (crypto.Signer, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("load private key: %w", err)
	}
	key, err := ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("load private key %s: %w", path, err)
	}
	return key, nil
}

// PublicJWKS renders key's public half as a JWKS with kid and alg set, for a
// key_files entry or a JWKS endpoint.
func PublicJWKS(key crypto.Signer, kid string) ([]byte, error) {
	alg, err := SigningAlgorithm(key)
	if err != nil {
		return nil, err
	}
	j, err := marshalJWK(key.Public(), kid, alg)
	if err != nil {
		return nil, err
	}
	return encodeJWKS(j)
}

// PublicKeyPEM renders key's public half as a PKIX "PUBLIC KEY" PEM block,
// for a key_files entry (its kid is then the file's base name).
func PublicKeyPEM(key crypto.Signer) ([]byte, error) {
	if _, err := SigningAlgorithm(key); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
