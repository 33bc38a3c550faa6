package authz

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/golang-jwt/jwt/v5"
	"go.yaml.in/yaml/v3"
)

const (
	testAudience = "a2a-gateway"
	testHMACEnv  = "AUTHZ_TEST_HMAC_SECRET"
	testHMAC     = "0123456789abcdef0123456789abcdef-hmac"
)

// fakeClock lets tests move past JWKSMinRefreshInterval without sleeping.
type fakeClock struct {
	base time.Time
	off  atomic.Int64
}

func newFakeClock() *fakeClock { return &fakeClock{base: time.Now()} }

func (c *fakeClock) now() time.Time          { return c.base.Add(time.Duration(c.off.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.off.Add(int64(d)) }

func newTestAuth(t testing.TB, o Options, clock *fakeClock, log *slog.Logger) *Authenticator {
	t.Helper()
	if clock == nil {
		clock = newFakeClock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := newAuthenticator(ctx, o, nil, log, clock.now)
	if err != nil {
		t.Fatalf("newAuthenticator: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

func mustRSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa key: %v", err)
	}
	return k
}

func mustECKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatalf("ec key: %v", err)
	}
	return k
}

func mustEdKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("ed25519 key: %v", err)
	}
	return k
}

// claimsFor returns claims an issuer with default settings accepts.
func claimsFor(iss string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss":    iss,
		"aud":    testAudience,
		"sub":    "alice",
		"tenant": "acme",
		"scope":  "tasks:read tasks:write",
		"iat":    now.Unix(),
		"exp":    now.Add(time.Hour).Unix(),
	}
}

// sign signs claims with method and key, adding extra header members.
func sign(t testing.TB, method jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

// rawToken assembles a token from arbitrary header and payload JSON.
func rawToken(t testing.TB, header, payload any, sig string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(header) + "." + enc(payload) + "." + sig
}

func bearer(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func requireAuthError(t *testing.T, err error) *AuthError {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not *AuthError", err, err)
	}
	return ae
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return p
}

func pkixPEM(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func jwkJSON(t testing.TB, pub crypto.PublicKey, kid, alg string) jose.JWK {
	t.Helper()
	j, err := jose.MarshalJWK(pub, kid, alg)
	if err != nil {
		t.Fatalf("marshal jwk: %v", err)
	}
	return j
}

func jwksDoc(t testing.TB, keys ...jose.JWK) []byte {
	t.Helper()
	b, err := jose.EncodeJWKS(keys...)
	if err != nil {
		t.Fatalf("encode jwks: %v", err)
	}
	return b
}

// jwksServer serves a mutable JWKS document and counts fetches.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int64

	mu        sync.Mutex
	doc       []byte
	status    int
	etag      string
	hold      chan struct{} // when set, the next fetch signals entered and waits for hold to close
	enteredCh chan struct{}
}

func newJWKSServer(t testing.TB, doc []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{doc: doc, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(w http.ResponseWriter, r *http.Request) {
	s.fetches.Add(1)
	s.mu.Lock()
	hold, entered := s.hold, s.enteredCh
	s.hold, s.enteredCh = nil, nil
	doc, status, etag := s.doc, s.status, s.etag
	s.mu.Unlock()
	if hold != nil {
		close(entered)
		<-hold
		s.mu.Lock()
		doc, status, etag = s.doc, s.status, s.etag
		s.mu.Unlock()
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if status != http.StatusOK {
		http.Error(w, "unavailable", status)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_, _ = w.Write(doc)
}

func (s *jwksServer) set(doc []byte, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doc, s.status = doc, status
}

// holdNext makes the next fetch block until the returned release is called.
func (s *jwksServer) holdNext(t *testing.T) (entered <-chan struct{}, release func()) {
	t.Helper()
	hold, ent := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.hold, s.enteredCh = hold, ent
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return ent, release
}

func TestAuthenticateKeySources(t *testing.T) {
	dir := t.TempDir()
	rsaKey := mustRSAKey(t)
	ecKey := mustECKey(t, elliptic.P256())
	edKey := mustEdKey(t)
	certKey := mustECKey(t, elliptic.P384())

	jwks := newJWKSServer(t, jwksDoc(t, jwkJSON(t, &rsaKey.PublicKey, "rsa-1", "RS256")))
	pemFile := writeFile(t, dir, "ec-static.pem", pkixPEM(t, &ecKey.PublicKey))
	jwkFile := writeFile(t, dir, "ed.json", mustJSON(t, jwkJSON(t, edKey.Public(), "", "EdDSA")))
	certFile := writeFile(t, dir, "idp-cert.crt", selfSignedCert(t, certKey))
	t.Setenv(testHMACEnv, testHMAC)
	const apiKey = "k3y-for-the-ci-bot-0123456789"
	t.Setenv("AUTHZ_TEST_API_KEY", apiKey)
	digestOnly := "digest-only-key-0123456789"
	sum := sha256.Sum256([]byte(digestOnly))

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := newTestAuth(t, Options{
		Issuers: []IssuerOptions{
			{Name: "jwks", Issuer: "https://jwks.example", Audiences: []string{testAudience}, Algorithms: []string{"RS256"}, JWKSURL: jwks.URL},
			{Name: "pem", Issuer: "https://pem.example", Audiences: []string{"other", testAudience}, Algorithms: []string{"ES256"}, KeyFiles: []string{pemFile}},
			{Name: "jwk", Issuer: "https://jwk.example", Audiences: []string{testAudience}, Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwkFile}},
			{Name: "cert", Issuer: "https://cert.example", Audiences: []string{testAudience}, Algorithms: []string{"ES384"}, KeyFiles: []string{certFile}},
			{Name: "hmac", Issuer: "https://hmac.example", Audiences: []string{testAudience}, Algorithms: []string{"HS256"}, HMACSecretEnv: testHMACEnv,
				TenantClaim: "org_id", ScopeClaim: "scp"},
		},
		APIKeys: []APIKeyOptions{
			{Name: "ci-bot", Tenant: "acme", Scopes: []string{"tasks:read"}, KeyEnv: "AUTHZ_TEST_API_KEY"},
			{Name: "digest-bot", Tenant: "globex", KeySHA256: hex.EncodeToString(sum[:])},
		},
	}, nil, log)

	hmacClaims := claimsFor("https://hmac.example")
	delete(hmacClaims, "tenant")
	delete(hmacClaims, "scope")
	hmacClaims["org_id"] = "initech"
	hmacClaims["scp"] = []any{"push:write"}

	apiKeyReq := func(header, value string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set(header, value)
		return r
	}
	tests := []struct {
		name string
		req  *http.Request
		want request.Principal
	}{
		{"jwks url", bearer(sign(t, jwt.SigningMethodRS256, rsaKey, map[string]any{"kid": "rsa-1"}, claimsFor("https://jwks.example"))),
			request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "tasks:write"}, Issuer: "jwks"}},
		{"static pem, kid from file name", bearer(sign(t, jwt.SigningMethodES256, ecKey, map[string]any{"kid": "ec-static"}, claimsFor("https://pem.example"))),
			request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "tasks:write"}, Issuer: "pem"}},
		{"static pem, no kid", bearer(sign(t, jwt.SigningMethodES256, ecKey, nil, claimsFor("https://pem.example"))),
			request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "tasks:write"}, Issuer: "pem"}},
		{"static jwk", bearer(sign(t, jwt.SigningMethodEdDSA, edKey, map[string]any{"kid": "ed"}, claimsFor("https://jwk.example"))),
			request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "tasks:write"}, Issuer: "jwk"}},
		{"static certificate", bearer(sign(t, jwt.SigningMethodES384, certKey, nil, claimsFor("https://cert.example"))),
			request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "tasks:write"}, Issuer: "cert"}},
		{"hmac secret from env, custom claims", bearer(sign(t, jwt.SigningMethodHS256, []byte(testHMAC), nil, hmacClaims)),
			request.Principal{Tenant: "initech", Subject: "alice", Scopes: []string{"push:write"}, Issuer: "hmac"}},
		{"api key header", apiKeyReq("X-API-Key", apiKey),
			request.Principal{Tenant: "acme", Subject: "ci-bot", Scopes: []string{"tasks:read"}, Issuer: APIKeyIssuer}},
		{"api key authorization scheme", apiKeyReq("Authorization", "apikey "+apiKey),
			request.Principal{Tenant: "acme", Subject: "ci-bot", Scopes: []string{"tasks:read"}, Issuer: APIKeyIssuer}},
		{"api key by digest", apiKeyReq("X-API-Key", digestOnly),
			request.Principal{Tenant: "globex", Subject: "digest-bot", Issuer: APIKeyIssuer}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(tc.req)
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if p.Tenant != tc.want.Tenant || p.Subject != tc.want.Subject || p.Issuer != tc.want.Issuer || !slices.Equal(p.Scopes, tc.want.Scopes) {
				t.Fatalf("principal = %+v, want %+v", *p, tc.want)
			}
		})
	}
	for _, secret := range []string{testHMAC, apiKey, digestOnly} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("log output contains a secret: %s", logs.String())
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func selfSignedCert(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("certificate: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestCredentialHandling(t *testing.T) {
	t.Setenv("AUTHZ_TEST_API_KEY", "k3y-for-the-ci-bot-0123456789")
	edKey := mustEdKey(t)
	jwkFile := writeFile(t, t.TempDir(), "dev.json", mustJSON(t, jwkJSON(t, edKey.Public(), "", "EdDSA")))
	a := newTestAuth(t, Options{
		Realm:   "corp",
		Issuers: []IssuerOptions{{Name: "dev", Issuer: "https://dev.example", Audiences: []string{testAudience}, Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwkFile}}},
		APIKeys: []APIKeyOptions{{Name: "ci-bot", Tenant: "acme", KeyEnv: "AUTHZ_TEST_API_KEY"}},
	}, nil, nil)
	token := sign(t, jwt.SigningMethodEdDSA, edKey, nil, claimsFor("https://dev.example"))

	tests := []struct {
		name          string
		headers       map[string][]string
		wantReason    failure
		wantMissing   bool
		wantChallenge string
	}{
		{"nothing", nil, errNoCredential, true, `Bearer realm="corp"`},
		{"basic auth", map[string][]string{"Authorization": {"Basic YWxpY2U6cHc="}}, errUnsupported, true, `Bearer realm="corp"`},
		{"empty bearer", map[string][]string{"Authorization": {"Bearer "}}, errEmpty, false, `Bearer realm="corp", error="invalid_token"`},
		{"empty api key", map[string][]string{"X-Api-Key": {"  "}}, errEmpty, false, `Bearer realm="corp", error="invalid_token"`},
		{"two authorization headers", map[string][]string{"Authorization": {"Bearer " + token, "Bearer " + token}}, errAmbiguous, false, `Bearer realm="corp", error="invalid_token"`},
		{"bearer and api key", map[string][]string{"Authorization": {"Bearer " + token}, "X-Api-Key": {"k3y-for-the-ci-bot-0123456789"}}, errAmbiguous, false, `Bearer realm="corp", error="invalid_token"`},
		{"wrong api key", map[string][]string{"X-Api-Key": {"k3y-for-the-ci-bot-012345678X"}}, errUnknownAPIKey, false, `Bearer realm="corp", error="invalid_token"`},
		{"oversized api key", map[string][]string{"X-Api-Key": {strings.Repeat("k", maxAPIKeyBytes+1)}}, errUnknownAPIKey, false, `Bearer realm="corp", error="invalid_token"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for k, vs := range tc.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			p, err := a.Authenticate(r)
			if p != nil {
				t.Fatalf("got principal %+v, want rejection", *p)
			}
			ae := requireAuthError(t, err)
			if ae.Reason != string(tc.wantReason) || ae.Missing != tc.wantMissing {
				t.Fatalf("AuthError = %+v, want reason %q missing %v", *ae, tc.wantReason, tc.wantMissing)
			}
			if got := a.Challenge(err); got != tc.wantChallenge {
				t.Fatalf("Challenge = %q, want %q", got, tc.wantChallenge)
			}
		})
	}

	t.Run("bearer scheme is case-insensitive", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "bEaReR   "+token)
		if _, err := a.Authenticate(r); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	})
	t.Run("challenge for a foreign error", func(t *testing.T) {
		if got := a.Challenge(errors.New("x")); got != `Bearer realm="corp"` {
			t.Fatalf("Challenge = %q", got)
		}
	})
}

// TestCredentialTooLarge tells a credential the authenticator would refuse
// for its size alone from one it would read, on both sides of each limit.
func TestCredentialTooLarge(t *testing.T) {
	edKey := mustEdKey(t)
	jwkFile := writeFile(t, t.TempDir(), "dev.json", mustJSON(t, jwkJSON(t, edKey.Public(), "", "EdDSA")))
	const tokenLimit = 2048
	a := newTestAuth(t, Options{
		Issuers: []IssuerOptions{{Name: "dev", Issuer: "https://dev.example", Audiences: []string{testAudience}, Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwkFile}, MaxTokenBytes: tokenLimit}},
	}, nil, nil)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   bool
	}{
		{"none", http.Header{}, false},
		{"bearer at the limit", http.Header{"Authorization": {"Bearer " + strings.Repeat("t", tokenLimit)}}, false},
		{"bearer over the limit", http.Header{"Authorization": {"Bearer " + strings.Repeat("t", tokenLimit+1)}}, true},
		{"api key scheme over the limit", http.Header{"Authorization": {"ApiKey " + strings.Repeat("k", maxAPIKeyBytes+1)}}, true},
		{"api key at the limit", http.Header{"X-Api-Key": {strings.Repeat("k", maxAPIKeyBytes)}}, false},
		{"api key over the limit", http.Header{"X-Api-Key": {strings.Repeat("k", maxAPIKeyBytes+1)}}, true},
		// Refused for being two, whatever their size.
		{"two credentials", http.Header{"X-Api-Key": {strings.Repeat("k", maxAPIKeyBytes+1)}, "Authorization": {"Bearer t"}}, false},
	} {
		if got := a.CredentialTooLarge(tc.header); got != tc.want {
			t.Errorf("%s: CredentialTooLarge = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCredentialKindsDisabled(t *testing.T) {
	t.Setenv("AUTHZ_TEST_API_KEY", "k3y-for-the-ci-bot-0123456789")
	keysOnly := newTestAuth(t, Options{APIKeys: []APIKeyOptions{{Name: "ci-bot", Tenant: "acme", KeyEnv: "AUTHZ_TEST_API_KEY"}}}, nil, nil)
	_, err := keysOnly.Authenticate(bearer("a.b.c"))
	if ae := requireAuthError(t, err); ae.Reason != string(errBearerDisabled) {
		t.Fatalf("reason = %q", ae.Reason)
	}
	if got := keysOnly.Challenge(err); got != `Bearer realm="a2a-gateway", error="invalid_token"` {
		t.Fatalf("Challenge = %q", got)
	}

	edKey := mustEdKey(t)
	jwkFile := writeFile(t, t.TempDir(), "dev.json", mustJSON(t, jwkJSON(t, edKey.Public(), "", "EdDSA")))
	tokensOnly := newTestAuth(t, Options{Issuers: []IssuerOptions{{Name: "dev", Issuer: "https://dev.example", Audiences: []string{testAudience}, Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwkFile}}}}, nil, nil)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-API-Key", "k3y-for-the-ci-bot-0123456789")
	_, err = tokensOnly.Authenticate(r)
	if ae := requireAuthError(t, err); ae.Reason != string(errAPIKeyDisabled) {
		t.Fatalf("reason = %q", ae.Reason)
	}
}

func TestScopeClaimShapes(t *testing.T) {
	edKey := mustEdKey(t)
	jwkFile := writeFile(t, t.TempDir(), "dev.json", mustJSON(t, jwkJSON(t, edKey.Public(), "", "EdDSA")))
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{{Name: "dev", Issuer: "https://dev.example", Audiences: []string{testAudience},
		Algorithms: []string{"EdDSA"}, KeyFiles: []string{jwkFile}, ScopeClaim: "scopes"}}}, nil, nil)
	tests := []struct {
		name    string
		value   any
		want    []string
		wantErr bool
	}{
		{"absent", nil, nil, false},
		{"space separated", "a  b c", []string{"a", "b", "c"}, false},
		{"array", []any{"a", "b"}, []string{"a", "b"}, false},
		{"empty array", []any{}, []string{}, false},
		{"array with number", []any{"a", 1}, nil, true},
		{"array with spaced entry", []any{"a b"}, nil, true},
		{"number", 42, nil, true},
		{"object", map[string]any{"a": true}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := claimsFor("https://dev.example")
			delete(c, "scope")
			if tc.value != nil {
				c["scopes"] = tc.value
			}
			p, err := a.Authenticate(bearer(sign(t, jwt.SigningMethodEdDSA, edKey, nil, c)))
			if tc.wantErr {
				if ae := requireAuthError(t, err); ae.Reason != string(errScopes) {
					t.Fatalf("reason = %q", ae.Reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if !slices.Equal(p.Scopes, tc.want) {
				t.Fatalf("scopes = %q, want %q", p.Scopes, tc.want)
			}
			for _, s := range tc.want {
				if !p.HasScope(s) {
					t.Fatalf("HasScope(%q) = false", s)
				}
			}
			if p.HasScope("admin") {
				t.Fatal("HasScope(admin) = true")
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	good := func() IssuerOptions {
		return IssuerOptions{Name: "idp", Issuer: "https://idp.example", Audiences: []string{testAudience},
			Algorithms: []string{"RS256"}, JWKSURL: "https://idp.example/jwks.json"}
	}
	key := func() APIKeyOptions { return APIKeyOptions{Name: "bot", Tenant: "acme", KeyEnv: "BOT_KEY"} }
	with := func(f func(o *IssuerOptions)) Options {
		o := good()
		f(&o)
		return Options{Issuers: []IssuerOptions{o}}
	}
	withKey := func(f func(k *APIKeyOptions)) Options {
		k := key()
		f(&k)
		return Options{APIKeys: []APIKeyOptions{k}}
	}
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error; empty means valid
	}{
		{"valid issuer", Options{Issuers: []IssuerOptions{good()}}, nil},
		{"valid api key", Options{APIKeys: []APIKeyOptions{key()}}, nil},
		{"valid mixed algorithms", with(func(o *IssuerOptions) { o.Algorithms = []string{"RS256", "HS256"}; o.HMACSecretEnv = "S" }), nil},
		{"http jwks to loopback", with(func(o *IssuerOptions) { o.JWKSURL = "http://127.0.0.1:8080/jwks" }), nil},
		{"empty", Options{}, []string{"auth: configure at least one issuer or api key"}},
		{"alg none", with(func(o *IssuerOptions) { o.Algorithms = []string{"RS256", "none"} }), []string{`auth.issuers[0].algorithms: "none" is never allowed`}},
		{"alg NoNe", with(func(o *IssuerOptions) { o.Algorithms = []string{"NoNe"} }), []string{`auth.issuers[0].algorithms: "none" is never allowed`}},
		{"unknown alg", with(func(o *IssuerOptions) { o.Algorithms = []string{"rs256"} }), []string{`auth.issuers[0].algorithms: unsupported algorithm "rs256"`}},
		{"no algorithms", with(func(o *IssuerOptions) { o.Algorithms = nil }), []string{"auth.issuers[0].algorithms: at least one algorithm is required"}},
		{"no audiences", with(func(o *IssuerOptions) { o.Audiences = nil }), []string{"auth.issuers[0].audiences: at least one audience is required"}},
		{"empty audience", with(func(o *IssuerOptions) { o.Audiences = []string{"a", ""} }), []string{"auth.issuers[0].audiences[1]: must not be empty"}},
		{"no name", with(func(o *IssuerOptions) { o.Name = "" }), []string{"auth.issuers[0].name: required"}},
		{"reserved name", with(func(o *IssuerOptions) { o.Name = "apikey" }), []string{`auth.issuers[0].name: "apikey" is reserved`}},
		{"no issuer", with(func(o *IssuerOptions) { o.Issuer = "" }), []string{"auth.issuers[0].issuer: required"}},
		{"no key source", with(func(o *IssuerOptions) { o.JWKSURL = "" }), []string{"auth.issuers[0].jwks_url: jwks_url or key_files is required for RS256"}},
		{"key source without asymmetric alg", with(func(o *IssuerOptions) { o.Algorithms = []string{"HS256"}; o.HMACSecretEnv = "S" }),
			[]string{"auth.issuers[0].algorithms: jwks_url and key_files need an asymmetric algorithm"}},
		{"hs256 without secret", with(func(o *IssuerOptions) { o.Algorithms = []string{"RS256", "HS256"} }), []string{"auth.issuers[0].hmac_secret_env: required"}},
		{"secret without hs alg", with(func(o *IssuerOptions) { o.HMACSecretEnv = "S" }), []string{"auth.issuers[0].hmac_secret_env: set, but"}},
		{"bad secret env name", with(func(o *IssuerOptions) { o.Algorithms = []string{"RS256", "HS256"}; o.HMACSecretEnv = "A-B" }),
			[]string{`auth.issuers[0].hmac_secret_env: "A-B" is not an environment variable name`}},
		{"plain http jwks", with(func(o *IssuerOptions) { o.JWKSURL = "http://idp.example/jwks" }), []string{"auth.issuers[0].jwks_url: must use https"}},
		{"relative jwks", with(func(o *IssuerOptions) { o.JWKSURL = "/jwks" }), []string{"auth.issuers[0].jwks_url: must be an absolute URL"}},
		{"ftp jwks", with(func(o *IssuerOptions) { o.JWKSURL = "ftp://idp.example/jwks" }), []string{`auth.issuers[0].jwks_url: unsupported scheme "ftp"`}},
		{"empty key file", with(func(o *IssuerOptions) { o.KeyFiles = []string{" "} }), []string{"auth.issuers[0].key_files[0]: must not be empty"}},
		{"negative leeway", with(func(o *IssuerOptions) { o.Leeway = duration.Duration(-time.Second) }), []string{"auth.issuers[0].leeway: must not be negative"}},
		{"negative refresh", with(func(o *IssuerOptions) { o.JWKSRefresh = -1 }), []string{"auth.issuers[0].jwks_refresh: must not be negative"}},
		{"negative min refresh", with(func(o *IssuerOptions) { o.JWKSMinRefreshInterval = -1 }), []string{"auth.issuers[0].jwks_min_refresh_interval: must not be negative"}},
		{"negative timeout", with(func(o *IssuerOptions) { o.JWKSTimeout = -1 }), []string{"auth.issuers[0].jwks_timeout: must not be negative"}},
		{"negative max token bytes", with(func(o *IssuerOptions) { o.MaxTokenBytes = -1 }), []string{"auth.issuers[0].max_token_bytes: must not be negative"}},
		{"spaced tenant claim", with(func(o *IssuerOptions) { o.TenantClaim = " org" }), []string{"auth.issuers[0].tenant_claim: must not have surrounding spaces"}},
		{"quote in realm", Options{Realm: `a"b`, Issuers: []IssuerOptions{good()}}, []string{"auth.realm: must not contain quotes"}},
		{"duplicate issuer name and iss", Options{Issuers: []IssuerOptions{good(), good()}},
			[]string{`auth.issuers[1].name: "idp" is also the name of auth.issuers[0]`, `auth.issuers[1].issuer: "https://idp.example" is also the issuer of auth.issuers[0]`}},
		{"api key without source", withKey(func(k *APIKeyOptions) { k.KeyEnv = "" }), []string{"auth.api_keys[0].key_env: one of key_env or key_sha256 is required"}},
		{"api key with both sources", withKey(func(k *APIKeyOptions) { k.KeySHA256 = strings.Repeat("a", 64) }), []string{"auth.api_keys[0].key_sha256: give either"}},
		{"api key bad digest", withKey(func(k *APIKeyOptions) { k.KeyEnv = ""; k.KeySHA256 = "abc" }), []string{"auth.api_keys[0].key_sha256: must be 64 hex digits"}},
		{"api key bad env name", withKey(func(k *APIKeyOptions) { k.KeyEnv = "1KEY" }), []string{`auth.api_keys[0].key_env: "1KEY" is not an environment variable name`}},
		{"api key without tenant", withKey(func(k *APIKeyOptions) { k.Tenant = "" }), []string{"auth.api_keys[0].tenant: required"}},
		{"api key tenant with control char", withKey(func(k *APIKeyOptions) { k.Tenant = "a\nb" }), []string{"auth.api_keys[0].tenant: required"}},
		{"api key reserved name", withKey(func(k *APIKeyOptions) { k.Name = "apikey" }), []string{`auth.api_keys[0].name: "apikey" is reserved`}},
		{"api key spaced scope", withKey(func(k *APIKeyOptions) { k.Scopes = []string{"ok", "a b"} }), []string{`auth.api_keys[0].scopes[1]: scope "a b"`}},
		{"duplicate api key names", Options{APIKeys: []APIKeyOptions{key(), key()}}, []string{`auth.api_keys[1].name: "bot" is also the name of auth.api_keys[0]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(&tc.opts)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted a bad configuration")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestNewAuthenticatorStartupErrors(t *testing.T) {
	dir := t.TempDir()
	rsaKey := mustRSAKey(t)
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := writeFile(t, dir, "rsa.pem", pkixPEM(t, &rsaKey.PublicKey))
	weakPEM := writeFile(t, dir, "weak.pem", pkixPEM(t, &weak.PublicKey))
	privPEM := writeFile(t, dir, "priv.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}))
	garbage := writeFile(t, dir, "garbage.pem", []byte("not a key"))
	encJWK := writeFile(t, dir, "enc.json", []byte(`{"keys":[{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"}]}`))
	const shortSecret = "too-short-secret"
	t.Setenv("AUTHZ_SHORT_SECRET", shortSecret)
	t.Setenv("AUTHZ_SHORT_KEY", "short")
	t.Setenv("AUTHZ_KEY_A", "same-key-0123456789abcdef")
	t.Setenv("AUTHZ_KEY_B", "same-key-0123456789abcdef")

	issuer := func(f func(o *IssuerOptions)) Options {
		o := IssuerOptions{Name: "idp", Issuer: "https://idp.example", Audiences: []string{testAudience}, Algorithms: []string{"RS256"}, KeyFiles: []string{rsaPEM}}
		f(&o)
		return Options{Issuers: []IssuerOptions{o}}
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"invalid options", Options{}, "auth: configure at least one"},
		{"missing key file", issuer(func(o *IssuerOptions) { o.KeyFiles = []string{filepath.Join(dir, "absent.pem")} }), "auth.issuers[0].key_files[0]:"},
		{"private key file", issuer(func(o *IssuerOptions) { o.KeyFiles = []string{rsaPEM, privPEM} }), "auth.issuers[0].key_files[1]:"},
		{"garbage key file", issuer(func(o *IssuerOptions) { o.KeyFiles = []string{garbage} }), "no PEM public key"},
		{"weak rsa key", issuer(func(o *IssuerOptions) { o.KeyFiles = []string{weakPEM} }), "too short"},
		{"only encryption keys", issuer(func(o *IssuerOptions) { o.KeyFiles = []string{encJWK} }), "no usable signing key"},
		{"key fits no pinned algorithm", issuer(func(o *IssuerOptions) { o.Algorithms = []string{"ES256"} }), "fits none of the pinned algorithms"},
		{"hmac env missing", issuer(func(o *IssuerOptions) {
			o.Algorithms = []string{"RS256", "HS256"}
			o.HMACSecretEnv = "AUTHZ_ABSENT_SECRET"
		}),
			`auth.issuers[0].hmac_secret_env: environment variable "AUTHZ_ABSENT_SECRET" is not set`},
		{"hmac secret too short", issuer(func(o *IssuerOptions) {
			o.Algorithms = []string{"RS256", "HS256"}
			o.HMACSecretEnv = "AUTHZ_SHORT_SECRET"
		}),
			"auth.issuers[0].hmac_secret_env: environment variable \"AUTHZ_SHORT_SECRET\" holds 16 bytes; HS256 needs at least 32"},
		{"api key env missing", Options{APIKeys: []APIKeyOptions{{Name: "bot", Tenant: "acme", KeyEnv: "AUTHZ_ABSENT_KEY"}}},
			`auth.api_keys[0].key_env: environment variable "AUTHZ_ABSENT_KEY" is not set or empty`},
		{"api key too short", Options{APIKeys: []APIKeyOptions{{Name: "bot", Tenant: "acme", KeyEnv: "AUTHZ_SHORT_KEY"}}}, "auth.api_keys[0].key_env:"},
		{"duplicate api keys", Options{APIKeys: []APIKeyOptions{{Name: "a", Tenant: "acme", KeyEnv: "AUTHZ_KEY_A"}, {Name: "b", Tenant: "acme", KeyEnv: "AUTHZ_KEY_B"}}},
			"auth.api_keys[1]: same key as auth.api_keys[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAuthenticator(context.Background(), tc.opts, nil, nil)
			if err == nil {
				a.Close()
				t.Fatal("NewAuthenticator accepted a bad configuration")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			for _, secret := range []string{shortSecret, "same-key-0123456789abcdef"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error reveals a secret: %q", err)
				}
			}
		})
	}
}

func TestOptionsYAMLFieldNames(t *testing.T) {
	doc := `
realm: corp
issuers:
  - name: idp
    issuer: https://idp.example
    audiences: [a2a-gateway]
    algorithms: [RS256, EdDSA]
    jwks_url: https://idp.example/jwks.json
    jwks_refresh: 5m
    jwks_min_refresh_interval: 10s
    jwks_timeout: 3s
    key_files: [/etc/keys/idp.pem]
    leeway: 1m
    tenant_claim: org_id
    subject_claim: uid
    scope_claim: scp
    max_token_bytes: 4096
api_keys:
  - name: bot
    tenant: acme
    scopes: [tasks:read]
    key_env: BOT_KEY
`
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	var o Options
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("decode: %v", err)
	}
	is := o.Issuers[0]
	if o.Realm != "corp" || is.JWKSRefresh != duration.Duration(5*time.Minute) || is.JWKSMinRefreshInterval != duration.Duration(10*time.Second) ||
		is.JWKSTimeout != duration.Duration(3*time.Second) || is.Leeway != duration.Duration(time.Minute) || is.TenantClaim != "org_id" ||
		is.SubjectClaim != "uid" || is.ScopeClaim != "scp" || is.MaxTokenBytes != 4096 || o.APIKeys[0].KeyEnv != "BOT_KEY" {
		t.Fatalf("decoded %+v", o)
	}
	if err := Validate(&o); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	dir := b.TempDir()
	rsaKey := mustRSAKey(b)
	ecKey := mustECKey(b, elliptic.P256())
	edKey := mustEdKey(b)
	srv := newJWKSServer(b, jwksDoc(b, jwkJSON(b, &rsaKey.PublicKey, "rsa-1", "RS256"), jwkJSON(b, &ecKey.PublicKey, "ec-1", "ES256")))
	edFile := writeFile(b, dir, "ed.json", mustJSON(b, jwkJSON(b, edKey.Public(), "ed-1", "EdDSA")))
	b.Setenv(testHMACEnv, testHMAC)
	b.Setenv("AUTHZ_BENCH_KEY", "bench-key-0123456789abcdef")
	a := newTestAuth(b, Options{
		Issuers: []IssuerOptions{
			{Name: "jwks", Issuer: "https://jwks.example", Audiences: []string{testAudience}, Algorithms: []string{"RS256", "ES256"}, JWKSURL: srv.URL},
			{Name: "ed", Issuer: "https://ed.example", Audiences: []string{testAudience}, Algorithms: []string{"EdDSA"}, KeyFiles: []string{edFile}},
			{Name: "hmac", Issuer: "https://hmac.example", Audiences: []string{testAudience}, Algorithms: []string{"HS256"}, HMACSecretEnv: testHMACEnv},
		},
		APIKeys: []APIKeyOptions{{Name: "bench", Tenant: "acme", KeyEnv: "AUTHZ_BENCH_KEY"}},
	}, nil, nil)

	apiKeyReq := httptest.NewRequest(http.MethodGet, "/", nil)
	apiKeyReq.Header.Set("X-API-Key", "bench-key-0123456789abcdef")
	cases := []struct {
		name string
		req  *http.Request
	}{
		{"RS256-jwks", bearer(sign(b, jwt.SigningMethodRS256, rsaKey, map[string]any{"kid": "rsa-1"}, claimsFor("https://jwks.example")))},
		{"ES256-jwks", bearer(sign(b, jwt.SigningMethodES256, ecKey, map[string]any{"kid": "ec-1"}, claimsFor("https://jwks.example")))},
		{"EdDSA-static", bearer(sign(b, jwt.SigningMethodEdDSA, edKey, map[string]any{"kid": "ed-1"}, claimsFor("https://ed.example")))},
		{"HS256", bearer(sign(b, jwt.SigningMethodHS256, []byte(testHMAC), nil, claimsFor("https://hmac.example")))},
		{"api-key", apiKeyReq},
		{"rejected-unknown-issuer", bearer(sign(b, jwt.SigningMethodHS256, []byte(testHMAC), nil, claimsFor("https://nobody.example")))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = a.Authenticate(c.req)
			}
		})
	}
}
