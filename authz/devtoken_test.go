package authz

import (
	"crypto"
	"crypto/ed25519"
	"crypto/elliptic"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

func TestMintTokenRoundTrip(t *testing.T) {
	dev, err := jose.GenerateKey()
	if err != nil {
		t.Fatalf("GenerateKey: %v", err)
	}
	devAlg, err := jose.SigningAlgorithm(dev)
	if err != nil || devAlg != "EdDSA" {
		t.Fatalf("SigningAlgorithm(dev) = %q, %v", devAlg, err)
	}
	es := mustECKey(t, elliptic.P256())

	dir := t.TempDir()
	devJWKS, err := jose.PublicJWKS(dev, "dev-1")
	if err != nil {
		t.Fatalf("PublicJWKS: %v", err)
	}
	jwksFile := writeFile(t, dir, "dev.jwks.json", devJWKS)
	esPEM, err := jose.PublicKeyPEM(es)
	if err != nil {
		t.Fatalf("PublicKeyPEM: %v", err)
	}
	pemFile := writeFile(t, dir, "es-dev.pem", esPEM)
	esJWKS, err := jose.PublicJWKS(es, "es-1")
	if err != nil {
		t.Fatalf("PublicJWKS(es): %v", err)
	}
	srv := newJWKSServer(t, esJWKS)

	a := newTestAuth(t, Options{Issuers: []IssuerOptions{
		{Name: "dev-file", Issuer: "https://dev.local", Audiences: []string{"gw"}, Algorithms: []string{"EdDSA", "ES256"}, KeyFiles: []string{jwksFile, pemFile}},
		{Name: "dev-url", Issuer: "https://dev-url.local", Audiences: []string{"gw"}, Algorithms: []string{"ES256"}, JWKSURL: srv.URL},
	}}, nil, nil)

	tests := []struct {
		name       string
		key        crypto.Signer
		kid, iss   string
		scopes     []string
		wantIssuer string
	}{
		{"Ed25519 via JWKS file", dev, "dev-1", "https://dev.local", []string{"tasks:read", "tasks:write"}, "dev-file"},
		{"Ed25519 without kid", dev, "", "https://dev.local", nil, "dev-file"},
		{"ES256 via PEM file, kid from file name", es, "es-dev", "https://dev.local", []string{"x"}, "dev-file"},
		{"ES256 via JWKS URL", es, "es-1", "https://dev-url.local", []string{"x"}, "dev-url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := MintToken(tc.key, tc.kid, tc.iss, "gw", "acme", "dev-user", tc.scopes, time.Hour)
			if err != nil {
				t.Fatalf("MintToken: %v", err)
			}
			p, err := a.Authenticate(bearer(tok))
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.Tenant != "acme" || p.Subject != "dev-user" || p.Issuer != tc.wantIssuer || !slices.Equal(p.Scopes, tc.scopes) {
				t.Fatalf("principal = %+v", *p)
			}
		})
	}

	t.Run("token for another audience is refused", func(t *testing.T) {
		tok, err := MintToken(dev, "dev-1", "https://dev.local", "elsewhere", "acme", "dev-user", nil, time.Hour)
		if err != nil {
			t.Fatalf("MintToken: %v", err)
		}
		_, err = a.Authenticate(bearer(tok))
		if ae := requireAuthError(t, err); ae.Reason != string(errAudience) {
			t.Fatalf("reason = %q", ae.Reason)
		}
	})
}

func TestMintTokenRejectsBadInput(t *testing.T) {
	dev, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	rsaKey := mustRSAKey(t)
	tests := []struct {
		name                       string
		key                        crypto.Signer
		kid, iss, aud, tenant, sub string
		scopes                     []string
		ttl                        time.Duration
		want                       string
	}{
		{"rsa key", rsaKey, "", "i", "a", "t", "s", nil, time.Hour, "unsupported signing key type"},
		{"nil key", nil, "", "i", "a", "t", "s", nil, time.Hour, "unsupported signing key type"},
		{"truncated ed25519 key", ed25519.PrivateKey(dev.(ed25519.PrivateKey)[:10]), "", "i", "a", "t", "s", nil, time.Hour, "malformed Ed25519"},
		{"no issuer", dev, "", "", "a", "t", "s", nil, time.Hour, "issuer is required"},
		{"no audience", dev, "", "i", "", "t", "s", nil, time.Hour, "audience is required"},
		{"no tenant", dev, "", "i", "a", "", "s", nil, time.Hour, "tenant"},
		{"no subject", dev, "", "i", "a", "t", "", nil, time.Hour, "subject"},
		{"zero ttl", dev, "", "i", "a", "t", "s", nil, 0, "ttl"},
		{"scope with space", dev, "", "i", "a", "t", "s", []string{"a b"}, time.Hour, "scope"},
		{"long kid", dev, strings.Repeat("k", maxKidBytes+1), "i", "a", "t", "s", nil, time.Hour, "kid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MintToken(tc.key, tc.kid, tc.iss, tc.aud, tc.tenant, tc.sub, tc.scopes, tc.ttl)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPublicJWKSParsesBack(t *testing.T) {
	for _, key := range []crypto.Signer{mustEdKey(t), mustECKey(t, elliptic.P256()), mustECKey(t, elliptic.P521())} {
		doc, err := jose.PublicJWKS(key, "kid-1")
		if err != nil {
			t.Fatalf("PublicJWKS: %v", err)
		}
		keys, skipped, err := parseJWKS(doc)
		if err != nil || len(skipped) != 0 || len(keys) != 1 {
			t.Fatalf("parse back: keys %d, skipped %v, err %v", len(keys), skipped, err)
		}
		alg, _ := jose.SigningAlgorithm(key)
		if keys[0].kid != "kid-1" || keys[0].alg != alg || !keys[0].usableFor(alg) {
			t.Fatalf("parsed key = %+v, want kid-1/%s", keys[0], alg)
		}
		type equaler interface{ Equal(crypto.PublicKey) bool }
		if !keys[0].key.(equaler).Equal(key.Public()) {
			t.Fatal("parsed key differs")
		}
	}
}
