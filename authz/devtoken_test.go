package authz

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMintTokenRoundTrip(t *testing.T) {
	dev, err := GenerateDevKey()
	if err != nil {
		t.Fatalf("GenerateDevKey: %v", err)
	}
	devAlg, err := SigningAlgorithm(dev)
	if err != nil || devAlg != "EdDSA" {
		t.Fatalf("SigningAlgorithm(dev) = %q, %v", devAlg, err)
	}
	es := mustECKey(t, elliptic.P256())

	dir := t.TempDir()
	devJWKS, err := PublicJWKS(dev, "dev-1")
	if err != nil {
		t.Fatalf("PublicJWKS: %v", err)
	}
	jwksFile := writeFile(t, dir, "dev.jwks.json", devJWKS)
	esPEM, err := PublicKeyPEM(es)
	if err != nil {
		t.Fatalf("PublicKeyPEM: %v", err)
	}
	pemFile := writeFile(t, dir, "es-dev.pem", esPEM)
	esJWKS, err := PublicJWKS(es, "es-1")
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
	dev, err := GenerateDevKey()
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

func TestPrivateKeyPEMFiles(t *testing.T) {
	dir := t.TempDir()
	ed, err := GenerateDevKey()
	if err != nil {
		t.Fatal(err)
	}
	ec := mustECKey(t, elliptic.P256())
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{{"ed25519", ed}, {"ecdsa", ec}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".key")
			if err := WritePrivateKeyPEM(path, tc.key); err != nil {
				t.Fatalf("WritePrivateKeyPEM: %v", err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Fatalf("key file mode = %v, want 0600", perm)
			}
			if err := WritePrivateKeyPEM(path, tc.key); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("overwrite: error = %v, want fs.ErrExist", err)
			}
			loaded, err := LoadPrivateKeyPEM(path)
			if err != nil {
				t.Fatalf("LoadPrivateKeyPEM: %v", err)
			}
			type equaler interface{ Equal(crypto.PublicKey) bool }
			if !loaded.Public().(equaler).Equal(tc.key.Public()) {
				t.Fatal("loaded key differs from the written one")
			}
		})
	}

	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, err := x509.MarshalPKCS8PrivateKey(mustRSAKey(t))
	if err != nil {
		t.Fatal(err)
	}
	p384DER, err := x509.MarshalPKCS8PrivateKey(mustECKey(t, elliptic.P384()))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		wantAlg string
		wantErr string
	}{
		{"sec1 after parameters", append(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8}}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})...), "ES256", ""},
		{"p-384 pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p384DER}), "ES384", ""},
		{"rsa pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER}), "", "unsupported signing key type"},
		{"corrupt pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}), "", "parse private key"},
		{"public key only", pkixPEM(t, &ec.PublicKey), "", "no PEM private key"},
		{"garbage", []byte("garbage"), "", "no PEM private key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParsePrivateKeyPEM(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePrivateKeyPEM: %v", err)
			}
			if alg, err := SigningAlgorithm(key); err != nil || alg != tc.wantAlg {
				t.Fatalf("SigningAlgorithm = %q, %v; want %q", alg, err, tc.wantAlg)
			}
		})
	}

	if _, err := LoadPrivateKeyPEM(filepath.Join(dir, "absent.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: error = %v, want fs.ErrNotExist", err)
	}
	var nilEC *ecdsa.PrivateKey
	if _, err := PublicJWKS(nilEC, "x"); err == nil {
		t.Fatal("PublicJWKS accepted a nil key")
	}
	if _, err := EncodePrivateKeyPEM(nilEC); err == nil {
		t.Fatal("EncodePrivateKeyPEM accepted a nil key")
	}
}

func TestPublicJWKSParsesBack(t *testing.T) {
	for _, key := range []crypto.Signer{mustEdKey(t), mustECKey(t, elliptic.P256()), mustECKey(t, elliptic.P521())} {
		doc, err := PublicJWKS(key, "kid-1")
		if err != nil {
			t.Fatalf("PublicJWKS: %v", err)
		}
		keys, skipped, err := parseJWKS(doc)
		if err != nil || len(skipped) != 0 || len(keys) != 1 {
			t.Fatalf("parse back: keys %d, skipped %v, err %v", len(keys), skipped, err)
		}
		alg, _ := SigningAlgorithm(key)
		if keys[0].kid != "kid-1" || keys[0].alg != alg || !keys[0].usableFor(alg) {
			t.Fatalf("parsed key = %+v, want kid-1/%s", keys[0], alg)
		}
		type equaler interface{ Equal(crypto.PublicKey) bool }
		if !keys[0].key.(equaler).Equal(key.Public()) {
			t.Fatal("parsed key differs")
		}
	}
}
