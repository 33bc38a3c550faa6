package authz

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/golang-jwt/jwt/v5"
)

type keyFamily uint8

const (
	familyHMAC keyFamily = iota + 1
	familyRSA
	familyEC
	familyEdDSA
)

// algSpec is what a JWS algorithm demands of its key. Checking the family
// before verification is what stops algorithm-confusion attacks such as an
// HS256 token "signed" with an RSA public key.
type algSpec struct {
	family    keyFamily
	curve     string // ECDSA curve name, e.g. "P-256"
	minSecret int    // HMAC: RFC 7518 §3.2 wants a key at least the hash size
}

func algorithmSpec(alg string) (algSpec, bool) {
	switch alg {
	case "HS256":
		return algSpec{family: familyHMAC, minSecret: 32}, true
	case "HS384":
		return algSpec{family: familyHMAC, minSecret: 48}, true
	case "HS512":
		return algSpec{family: familyHMAC, minSecret: 64}, true
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return algSpec{family: familyRSA}, true
	case "ES256":
		return algSpec{family: familyEC, curve: "P-256"}, true
	case "ES384":
		return algSpec{family: familyEC, curve: "P-384"}, true
	case "ES512":
		return algSpec{family: familyEC, curve: "P-521"}, true
	case "EdDSA":
		return algSpec{family: familyEdDSA}, true
	default:
		return algSpec{}, false
	}
}

// supportedAlgorithms lists every value accepted in IssuerOptions.Algorithms.
func supportedAlgorithms() []string {
	return []string{
		"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
		"ES256", "ES384", "ES512", "EdDSA",
		"HS256", "HS384", "HS512",
	}
}

// verifyKey is one trusted public key.
type verifyKey struct {
	kid string
	alg string // the JWK "alg" when the source pinned one
	key crypto.PublicKey
}

// usableFor reports whether the key may verify a token signed with alg.
func (k *verifyKey) usableFor(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	spec, ok := algorithmSpec(alg)
	if !ok {
		return false
	}
	switch pub := k.key.(type) {
	case *rsa.PublicKey:
		return spec.family == familyRSA
	case *ecdsa.PublicKey:
		return spec.family == familyEC && pub.Curve.Params().Name == spec.curve
	case ed25519.PublicKey:
		return spec.family == familyEdDSA
	default:
		return false
	}
}

// describeKey names a key's type for messages, without any key material.
func describeKey(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return "EC " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	default:
		return fmt.Sprintf("%T", pub)
	}
}

// checkPublicKey accepts the key types and strengths the gateway verifies with.
func checkPublicKey(pub any) (crypto.PublicKey, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < jose.MinRSABits {
			return nil, fmt.Errorf("RSA key of %d bits is too short (minimum %d)", k.N.BitLen(), jose.MinRSABits)
		}
		return k, nil
	case *ecdsa.PublicKey:
		switch k.Curve.Params().Name {
		case "P-256", "P-384", "P-521":
			return k, nil
		}
		return nil, fmt.Errorf("unsupported EC curve %s", k.Curve.Params().Name)
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return nil, errors.New("malformed Ed25519 key")
		}
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported key type %T", pub)
	}
}

// keySet is an immutable collection of trusted keys; a refresh replaces the
// whole set, so readers never lock.
type keySet struct {
	byKid map[string][]*verifyKey
	all   []*verifyKey
}

func newKeySet(keys []*verifyKey) *keySet {
	s := &keySet{byKid: make(map[string][]*verifyKey, len(keys)), all: keys}
	for _, k := range keys {
		s.byKid[k.kid] = append(s.byKid[k.kid], k)
	}
	return s
}

// candidates appends the keys that may verify a token with this kid and alg.
// The kid is only ever a map key. A token without a kid may be verified by
// any compatible key; keys published without a kid match any token.
func (s *keySet) candidates(dst []jwt.VerificationKey, kid, alg string) []jwt.VerificationKey {
	if s == nil {
		return dst
	}
	list := s.all
	if kid != "" {
		list = s.byKid[kid]
		if anon := s.byKid[""]; len(anon) > 0 {
			list = append(list[:len(list):len(list)], anon...)
		}
	}
	for _, k := range list {
		if k.usableFor(alg) {
			dst = append(dst, k.key)
		}
	}
	return dst
}

// loadKeyFile reads a static key file: PEM (PKIX public keys, PKCS#1 RSA
// public keys, certificates) or JSON (one JWK or a JWKS). PEM carries no key
// id, so such keys, and JWKs without a "kid", take the file's base name
// without extension (keys/idp-2025.pem has kid "idp-2025").
func loadKeyFile(path string) ([]*verifyKey, error) {
	data, err := jose.ReadKeyFile(path)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	kid := strings.TrimSuffix(base, filepath.Ext(base))
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		keys, skipped, err := parseJWKFile(data, kid)
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("no usable signing key: %w", errors.Join(skipped...))
		}
		return keys, nil
	}
	return parsePEMKeys(data, kid)
}

// parsePEMKeys refuses private keys outright: a verifier has no business
// holding signing material, and accepting it would tempt copying secrets
// onto gateway hosts.
func parsePEMKeys(data []byte, kid string) ([]*verifyKey, error) {
	var keys []*verifyKey
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		pub, err := pemPublicKey(block)
		if err != nil {
			return nil, err
		}
		checked, err := checkPublicKey(pub)
		if err != nil {
			return nil, err
		}
		keys = append(keys, &verifyKey{kid: kid, key: checked})
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key or certificate found")
	}
	return keys, nil
}

func pemPublicKey(block *pem.Block) (any, error) {
	switch block.Type {
	case "PUBLIC KEY":
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKIX public key: %w", err)
		}
		return pub, nil
	case "RSA PUBLIC KEY":
		pub, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKCS#1 public key: %w", err)
		}
		return pub, nil
	case "CERTIFICATE":
		// The certificate only carries the pinned key; its validity period and
		// chain are not consulted, just as with a bare public key.
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		return cert.PublicKey, nil
	default:
		if strings.Contains(block.Type, "PRIVATE KEY") {
			return nil, fmt.Errorf("PEM block %q holds a private key; give only the public key", block.Type)
		}
		return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
	}
}

func hmacSecret(field string, o IssuerOptions, env LookupEnv) ([]byte, error) {
	secret, ok := env(o.HMACSecretEnv)
	if !ok || secret == "" {
		return nil, fieldError(field, "environment variable %q is not set or empty", o.HMACSecretEnv)
	}
	for _, alg := range o.Algorithms {
		if spec, _ := algorithmSpec(alg); spec.family == familyHMAC && len(secret) < spec.minSecret {
			return nil, fieldError(field, "environment variable %q holds %d bytes; %s needs at least %d",
				o.HMACSecretEnv, len(secret), alg, spec.minSecret)
		}
	}
	return []byte(secret), nil
}

// keyfunc picks verification keys for one token. Keys come only from the
// configuration: a token carrying jwk, jku, x5u or x5c is refused outright
// rather than having those members ignored, because no configured issuer
// needs them and their presence marks a probe or a token meant for another
// verifier.
func (v *issuerVerifier) keyfunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		if err := checkHeader(t.Header); err != nil {
			return nil, err
		}
		alg := t.Method.Alg()
		spec, ok := algorithmSpec(alg)
		if !ok {
			return nil, errUnverifiable
		}
		if spec.family == familyHMAC {
			// One secret per issuer, so a kid selects nothing here.
			if v.secret == nil {
				return nil, errNoKey
			}
			return v.secret, nil
		}
		kid, _ := t.Header["kid"].(string)
		keys := v.lookup(kid, alg)
		if len(keys) == 0 && v.remote != nil && v.remote.refreshForUnknownKey(ctx) {
			keys = v.lookup(kid, alg)
		}
		switch len(keys) {
		case 0:
			return nil, errNoKey
		case 1:
			return keys[0], nil
		default:
			return jwt.VerificationKeySet{Keys: keys}, nil
		}
	}
}

func (v *issuerVerifier) lookup(kid, alg string) []jwt.VerificationKey {
	keys := v.static.candidates(nil, kid, alg)
	if v.remote != nil {
		keys = v.remote.current().candidates(keys, kid, alg)
	}
	return keys
}

// checkHeader refuses members that would let the token choose its own key or
// change how it must be processed.
func checkHeader(h map[string]any) error {
	for _, name := range [...]string{"jwk", "jku", "x5u", "x5c"} {
		if _, ok := h[name]; ok {
			return errHeaderKey
		}
	}
	// RFC 7515 §4.1.11: extensions not understood must be refused, and this
	// verifier understands none.
	if _, ok := h["crit"]; ok {
		return errCrit
	}
	if alg, _ := h["alg"].(string); strings.EqualFold(alg, "none") {
		return errAlgNone
	}
	if raw, ok := h["kid"]; ok {
		kid, isString := raw.(string)
		if !isString || kid == "" || len(kid) > maxKidBytes {
			return errBadKid
		}
	}
	return nil
}
