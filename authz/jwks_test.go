package authz

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/golang-jwt/jwt/v5"
)

const jwksIss = "https://idp.example"

func jwksOptions(url string) IssuerOptions {
	return IssuerOptions{Name: "idp", Issuer: jwksIss, Audiences: []string{testAudience}, Algorithms: []string{"RS256", "ES256"},
		JWKSURL: url, JWKSTimeout: duration.Duration(30 * time.Second)}
}

// authenticateAll runs tokens concurrently and returns each result's error.
func authenticateAll(a *Authenticator, tokens []string) []error {
	errs := make([]error, len(tokens))
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Go(func() {
			_, errs[i] = a.Authenticate(bearer(tok))
		})
	}
	wg.Wait()
	return errs
}

func TestJWKSBurstAndRotation(t *testing.T) {
	k1, k2 := mustRSAKey(t), mustECKey(t, elliptic.P256())
	srv := newJWKSServer(t, jwksDoc(t, jwkJSON(t, &k1.PublicKey, "k1", "RS256")))
	clock := newFakeClock()
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{jwksOptions(srv.URL)}}, clock, nil)
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("start-up fetches = %d, want 1", n)
	}

	burst := make([]string, 100)
	for i := range burst {
		c := claimsFor(jwksIss)
		c["sub"] = fmt.Sprintf("user-%d", i)
		burst[i] = sign(t, jwt.SigningMethodRS256, k1, map[string]any{"kid": "k1"}, c)
	}
	for i, err := range authenticateAll(a, burst) {
		if err != nil {
			t.Fatalf("burst token %d: %v", i, err)
		}
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("fetches after a burst of known-kid tokens = %d, want 1", n)
	}

	// The identity provider rotates in k2.
	srv.set(jwksDoc(t, jwkJSON(t, &k1.PublicKey, "k1", "RS256"), jwkJSON(t, &k2.PublicKey, "k2", "ES256")), http.StatusOK)
	rotated := sign(t, jwt.SigningMethodES256, k2, map[string]any{"kid": "k2"}, claimsFor(jwksIss))

	_, err := a.Authenticate(bearer(rotated))
	if ae := requireAuthError(t, err); ae.Reason != string(errNoKey) {
		t.Fatalf("within the refresh interval: reason = %q, want %q", ae.Reason, errNoKey)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("an unknown kid within the refresh interval fetched (fetches = %d)", n)
	}

	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)
	if _, err := a.Authenticate(bearer(rotated)); err != nil {
		t.Fatalf("rotated key after the interval: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("fetches after rotation = %d, want 2", n)
	}
	for i, err := range authenticateAll(a, []string{rotated, burst[0], rotated}) {
		if err != nil {
			t.Fatalf("token %d after rotation: %v", i, err)
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("fetches after using the rotated key = %d, want 2", n)
	}

	// k1 is retired: once a refresh (here one caused by an unknown kid) no
	// longer finds it in the set, its tokens fail.
	srv.set(jwksDoc(t, jwkJSON(t, &k2.PublicKey, "k2", "ES256")), http.StatusOK)
	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)
	if _, err := a.Authenticate(bearer(sign(t, jwt.SigningMethodES256, k2, map[string]any{"kid": "k3"}, claimsFor(jwksIss)))); err == nil {
		t.Fatal("unknown kid k3 accepted")
	}
	_, err = a.Authenticate(bearer(burst[1]))
	if ae := requireAuthError(t, err); ae.Reason != string(errNoKey) {
		t.Fatalf("retired key: reason = %q, want %q", ae.Reason, errNoKey)
	}
}

func TestJWKSUnknownKidFlood(t *testing.T) {
	known, attacker := mustRSAKey(t), mustRSAKey(t)
	srv := newJWKSServer(t, jwksDoc(t, jwkJSON(t, &known.PublicKey, "known", "RS256")))
	clock := newFakeClock()
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{jwksOptions(srv.URL)}}, clock, nil)
	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)

	flood := make([]string, 200)
	for i := range flood {
		flood[i] = sign(t, jwt.SigningMethodRS256, attacker, map[string]any{"kid": fmt.Sprintf("random-%d-%x", i, i*7919)}, claimsFor(jwksIss))
	}
	valid := make([]string, 20)
	for i := range valid {
		valid[i] = sign(t, jwt.SigningMethodRS256, known, map[string]any{"kid": "known"}, claimsFor(jwksIss))
	}

	// The refresh the flood triggers hangs at the server until released, so
	// requests for the known kid can only succeed if they never wait for it.
	entered, release := srv.holdNext(t)
	floodDone := make(chan []error, 1)
	go func() { floodDone <- authenticateAll(a, flood) }()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the flood triggered no JWKS refresh")
	}
	validDone := make(chan []error, 1)
	go func() { validDone <- authenticateAll(a, valid) }()
	select {
	case errs := <-validDone:
		for i, err := range errs {
			if err != nil {
				t.Fatalf("known-kid request %d during the flood: %v", i, err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("known-kid requests blocked behind the unknown-kid refresh")
	}
	release()

	var errs []error
	select {
	case errs = <-floodDone:
	case <-time.After(60 * time.Second):
		t.Fatal("flood requests did not finish")
	}
	for i, err := range errs {
		if ae := requireAuthError(t, err); ae.Reason != string(errNoKey) {
			t.Fatalf("flood token %d: reason = %q, want %q", i, ae.Reason, errNoKey)
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2 (start-up and one refresh for the whole flood)", n)
	}

	// A request naming a kid that the provider has just published waits for
	// the refresh already in flight instead of failing fast.
	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)
	newKey := mustECKey(t, elliptic.P256())
	srv.set(jwksDoc(t, jwkJSON(t, &known.PublicKey, "known", "RS256"), jwkJSON(t, &newKey.PublicKey, "new", "ES256")), http.StatusOK)
	entered, release = srv.holdNext(t)
	initiator, joiner := make(chan error, 1), make(chan error, 1)
	go func() { _, err := a.Authenticate(bearer(flood[0])); initiator <- err }()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no refresh for an unknown kid")
	}
	go func() {
		_, err := a.Authenticate(bearer(sign(t, jwt.SigningMethodES256, newKey, map[string]any{"kid": "new"}, claimsFor(jwksIss))))
		joiner <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for a.remotes[0].waiting.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the request for the new kid did not join the refresh in flight")
		}
		time.Sleep(time.Millisecond)
	}
	release()
	for _, r := range []struct {
		name   string
		ch     chan error
		accept bool
	}{{"attacker token", initiator, false}, {"new-kid token", joiner, true}} {
		select {
		case err := <-r.ch:
			if (err == nil) != r.accept {
				t.Fatalf("%s: error = %v, want accepted = %v", r.name, err, r.accept)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting on the refresh", r.name)
		}
	}
	if n := srv.fetches.Load(); n != 3 {
		t.Fatalf("fetches = %d, want 3", n)
	}
}

func TestJWKSRecoversFromFailedStart(t *testing.T) {
	key := mustRSAKey(t)
	srv := newJWKSServer(t, nil)
	srv.set(nil, http.StatusServiceUnavailable)
	clock := newFakeClock()
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{jwksOptions(srv.URL)}}, clock, nil)
	tok := sign(t, jwt.SigningMethodRS256, key, map[string]any{"kid": "k"}, claimsFor(jwksIss))

	_, err := a.Authenticate(bearer(tok))
	if ae := requireAuthError(t, err); ae.Reason != string(errNoKey) {
		t.Fatalf("reason = %q, want %q", ae.Reason, errNoKey)
	}
	srv.set(jwksDoc(t, jwkJSON(t, &key.PublicKey, "k", "")), http.StatusOK)
	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)
	if _, err := a.Authenticate(bearer(tok)); err != nil {
		t.Fatalf("after the provider recovered: %v", err)
	}

	// A later outage keeps the cached keys.
	srv.set(nil, http.StatusInternalServerError)
	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)
	other := sign(t, jwt.SigningMethodRS256, key, map[string]any{"kid": "unknown"}, claimsFor(jwksIss))
	if _, err := a.Authenticate(bearer(other)); err == nil {
		t.Fatal("unknown kid accepted during an outage")
	}
	if _, err := a.Authenticate(bearer(tok)); err != nil {
		t.Fatalf("cached key lost during an outage: %v", err)
	}
	if n := srv.fetches.Load(); n != 3 {
		t.Fatalf("fetches = %d, want 3", n)
	}
}

func TestJWKSNotModified(t *testing.T) {
	key := mustRSAKey(t)
	srv := newJWKSServer(t, jwksDoc(t, jwkJSON(t, &key.PublicKey, "k", "RS256")))
	srv.mu.Lock()
	srv.etag = `"v1"`
	srv.mu.Unlock()
	clock := newFakeClock()
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{jwksOptions(srv.URL)}}, clock, nil)

	clock.advance(DefaultJWKSMinRefreshInterval + time.Second)
	unknown := sign(t, jwt.SigningMethodRS256, key, map[string]any{"kid": "other"}, claimsFor(jwksIss))
	if _, err := a.Authenticate(bearer(unknown)); err == nil {
		t.Fatal("unknown kid accepted")
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Fatalf("fetches = %d, want 2", n)
	}
	if _, err := a.Authenticate(bearer(sign(t, jwt.SigningMethodRS256, key, map[string]any{"kid": "k"}, claimsFor(jwksIss)))); err != nil {
		t.Fatalf("key lost after 304 Not Modified: %v", err)
	}
}

func TestJWKSPeriodicRefreshAndClose(t *testing.T) {
	key := mustRSAKey(t)
	srv := newJWKSServer(t, jwksDoc(t, jwkJSON(t, &key.PublicKey, "k", "RS256")))
	o := jwksOptions(srv.URL)
	o.JWKSRefresh = duration.Duration(20 * time.Millisecond)
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{o}}, nil, nil)

	deadline := time.Now().Add(30 * time.Second)
	for srv.fetches.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("background refresh did not run (fetches = %d)", srv.fetches.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.Close()
	a.Close()
	// Cached keys outlive Close.
	if _, err := a.Authenticate(bearer(sign(t, jwt.SigningMethodRS256, key, map[string]any{"kid": "k"}, claimsFor(jwksIss)))); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

func TestParseJWKS(t *testing.T) {
	rsaKey := mustRSAKey(t)
	ecKey := mustECKey(t, elliptic.P384())
	edKey := mustEdKey(t)
	b64 := base64.RawURLEncoding.EncodeToString
	rsaJWK := jwkJSON(t, &rsaKey.PublicKey, "r", "")
	ecJWK := jwkJSON(t, &ecKey.PublicKey, "e", "ES384")
	edJWK := jwkJSON(t, edKey.Public(), "d", "EdDSA")
	tests := []struct {
		name     string
		key      any
		wantType string // "" when the key must be skipped
		wantSkip string
	}{
		{"rsa", rsaJWK, "RSA", ""},
		{"ec p-384", ecJWK, "EC", ""},
		{"ed25519", edJWK, "Ed25519", ""},
		{"padded base64", edit(edJWK, func(j *jose.JWK) { j.X += "=" }), "Ed25519", ""},
		{"encryption key", edit(rsaJWK, func(j *jose.JWK) { j.Use = "enc" }), "", `use "enc"`},
		{"key_ops without verify", edit(rsaJWK, func(j *jose.JWK) { j.KeyOps = []string{"encrypt"} }), "", "key_ops"},
		{"symmetric key", map[string]string{"kty": "oct", "k": b64([]byte("secret")), "kid": "s"}, "", `unsupported kty "oct"`},
		{"alg conflicts with kty", edit(rsaJWK, func(j *jose.JWK) { j.Alg = "ES256" }), "", "conflicts"},
		{"alg conflicts with curve", edit(ecJWK, func(j *jose.JWK) { j.Alg = "ES256" }), "", "conflicts"},
		{"alg none", edit(rsaJWK, func(j *jose.JWK) { j.Alg = "none" }), "", "conflicts"},
		{"short rsa modulus", edit(rsaJWK, func(j *jose.JWK) { j.N = b64(rsaKey.N.Bytes()[:128]) }), "", "too short"},
		{"even rsa exponent", edit(rsaJWK, func(j *jose.JWK) { j.E = b64([]byte{2}) }), "", "exponent"},
		{"huge rsa exponent", edit(rsaJWK, func(j *jose.JWK) { j.E = b64([]byte{1, 0, 0, 0, 1}) }), "", "exponent"},
		{"ec point off the curve", edit(ecJWK, func(j *jose.JWK) { j.Y = j.X }), "", "invalid EC point"},
		{"ec short coordinate", edit(ecJWK, func(j *jose.JWK) { j.X = b64([]byte{1, 2, 3}) }), "", "coordinates"},
		{"unknown curve", edit(ecJWK, func(j *jose.JWK) { j.Crv = "P-192" }), "", "unsupported EC curve"},
		{"x25519", edit(edJWK, func(j *jose.JWK) { j.Crv = "X25519"; j.Alg = "" }), "", "unsupported OKP curve"},
		{"bad base64", edit(edJWK, func(j *jose.JWK) { j.X = "***" }), "", "base64url"},
		{"not an object", []int{1}, "", "malformed JWK"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustJSON(t, map[string]any{"keys": []any{tc.key}})
			keys, skipped, err := parseJWKS(doc)
			if err != nil {
				t.Fatalf("parseJWKS: %v", err)
			}
			if tc.wantType == "" {
				if len(keys) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Error(), tc.wantSkip) {
					t.Fatalf("keys = %d, skipped = %v; want the key skipped for %q", len(keys), skipped, tc.wantSkip)
				}
				return
			}
			if len(keys) != 1 || len(skipped) != 0 {
				t.Fatalf("keys = %d, skipped = %v", len(keys), skipped)
			}
			var got string
			switch keys[0].key.(type) {
			case *rsa.PublicKey:
				got = "RSA"
			case *ecdsa.PublicKey:
				got = "EC"
			case ed25519.PublicKey:
				got = "Ed25519"
			}
			if got != tc.wantType {
				t.Fatalf("key type = %s, want %s", got, tc.wantType)
			}
		})
	}

	for _, bad := range []string{`{}`, `[]`, `{"keys": 1}`, `not json`} {
		if _, _, err := parseJWKS([]byte(bad)); err == nil {
			t.Errorf("parseJWKS(%s) accepted a malformed document", bad)
		}
	}
}

func TestKeySetCandidates(t *testing.T) {
	rsaKey := mustRSAKey(t)
	ecKey := mustECKey(t, elliptic.P256())
	set := newKeySet([]*verifyKey{
		{kid: "r", alg: "RS256", key: &rsaKey.PublicKey},
		{kid: "e", key: &ecKey.PublicKey},
		{kid: "", key: &rsaKey.PublicKey},
	})
	tests := []struct {
		kid, alg string
		want     int
	}{
		{"r", "RS256", 2}, // named key plus the anonymous one
		{"r", "PS256", 1}, // the named key pins RS256
		{"e", "ES256", 1},
		{"e", "ES384", 0}, // wrong curve
		{"e", "HS256", 0},
		{"", "RS256", 2},
		{"../r", "RS256", 1}, // only the anonymous key
		{"missing", "ES256", 0},
	}
	for _, tc := range tests {
		if got := len(set.candidates(nil, tc.kid, tc.alg)); got != tc.want {
			t.Errorf("candidates(%q, %q) = %d, want %d", tc.kid, tc.alg, got, tc.want)
		}
	}
	var empty *keySet
	if got := empty.candidates(nil, "r", "RS256"); len(got) != 0 || empty.len() != 0 {
		t.Fatal("nil key set has candidates")
	}
}

func TestJWKSFetchErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"server error", http.StatusBadGateway, "", "unexpected status 502"},
		{"not json", http.StatusOK, "<html>", "malformed JWKS"},
		{"too large", http.StatusOK, `{"keys":[],"pad":"` + strings.Repeat("x", maxJWKSBytes) + `"}`, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newJWKSServer(t, []byte(tc.body))
			srv.set([]byte(tc.body), tc.status)
			a := newTestAuth(t, Options{Issuers: []IssuerOptions{jwksOptions(srv.URL)}}, nil, nil)
			r := a.remotes[0]
			call, ok := r.begin(context.Background(), true)
			if !ok {
				t.Fatal("forced refresh refused")
			}
			<-call.done
			if call.err == nil || !strings.Contains(call.err.Error(), tc.want) {
				t.Fatalf("fetch error = %v, want it to contain %q", call.err, tc.want)
			}
		})
	}
}

func TestStaticJWKFileWithSet(t *testing.T) {
	ecKey := mustECKey(t, elliptic.P256())
	rsaKey := mustRSAKey(t)
	doc := jwksDoc(t,
		jwkJSON(t, &ecKey.PublicKey, "", "ES256"),
		edit(jwkJSON(t, &rsaKey.PublicKey, "enc-1", ""), func(j *jose.JWK) { j.Use = "enc" }),
	)
	keys, skipped, err := parseJWKFile(doc, "idp-keys")
	if err != nil {
		t.Fatalf("parseJWKFile: %v", err)
	}
	if len(keys) != 1 || keys[0].kid != "idp-keys" || len(skipped) != 1 {
		t.Fatalf("keys = %d (kid %q), skipped = %v", len(keys), keys[0].kid, skipped)
	}
	if _, _, err := parseJWKFile([]byte(`{"kty":"oct","k":"c2VjcmV0"}`), "x"); err == nil {
		t.Fatal("a symmetric JWK file was accepted")
	}
}

func edit(j jose.JWK, f func(j *jose.JWK)) jose.JWK {
	f(&j)
	return j
}

// len is the number of keys held.
func (s *keySet) len() int {
	if s == nil {
		return 0
	}
	return len(s.all)
}
