package authz

import (
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/golang-jwt/jwt/v5"
)

func TestAttacksAreRejected(t *testing.T) {
	victim := mustRSAKey(t)
	victimEC := mustECKey(t, elliptic.P256())
	attacker := mustRSAKey(t)
	attackerEC := mustECKey(t, elliptic.P256())

	jwks := newJWKSServer(t, jwksDoc(t,
		jwkJSON(t, &victim.PublicKey, "rsa-1", "RS256"),
		jwkJSON(t, &victimEC.PublicKey, "ec-1", "ES256"),
	))
	var attackerHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		attackerHits.Add(1)
		_, _ = w.Write(jwksDoc(t, jwkJSON(t, &attacker.PublicKey, "rsa-1", "RS256")))
	}))
	t.Cleanup(evil.Close)

	t.Setenv(testHMACEnv, testHMAC)
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{
		{Name: "rsa-only", Issuer: "https://rsa.example", Audiences: []string{testAudience}, Algorithms: []string{"RS256"}, JWKSURL: jwks.URL},
		{Name: "mixed", Issuer: "https://mixed.example", Audiences: []string{testAudience}, Algorithms: []string{"RS256", "HS256", "ES256"},
			JWKSURL: jwks.URL, HMACSecretEnv: testHMACEnv, MaxTokenBytes: 1024},
	}}, nil, nil)

	const rsaIss, mixedIss = "https://rsa.example", "https://mixed.example"
	kid := func(k string) map[string]any { return map[string]any{"kid": k} }
	claims := func(iss string, edit func(c jwt.MapClaims)) jwt.MapClaims {
		c := claimsFor(iss)
		if edit != nil {
			edit(c)
		}
		return c
	}
	rs256 := func(edit func(c jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodRS256, victim, kid("rsa-1"), claims(rsaIss, edit))
	}
	noneHeader := func(alg string) map[string]any { return map[string]any{"alg": alg, "typ": "JWT"} }

	pubPEM := pkixPEM(t, &victim.PublicKey)
	pkcs1 := x509.MarshalPKCS1PublicKey(&victim.PublicKey)
	attackerCert := selfSignedCert(t, attackerEC)
	certBlock, _ := pem.Decode(attackerCert)
	attackerJWK := jwkJSON(t, &attacker.PublicKey, "rsa-1", "RS256")
	now := time.Now()

	tests := []struct {
		name  string
		token string
		want  failure
	}{
		{"alg none, empty signature", rawToken(t, noneHeader("none"), claimsFor(rsaIss), ""), errNoSignature},
		{"alg none with a signature", rawToken(t, noneHeader("none"), claimsFor(rsaIss), "c2ln"), errBadSignature},
		{"alg None", rawToken(t, noneHeader("None"), claimsFor(rsaIss), "c2ln"), errUnverifiable},
		{"alg NONE", rawToken(t, noneHeader("NONE"), claimsFor(rsaIss), "c2ln"), errUnverifiable},
		{"alg nOnE", rawToken(t, noneHeader("nOnE"), claimsFor(mixedIss), "c2ln"), errUnverifiable},
		{"alg none to the mixed issuer", rawToken(t, noneHeader("none"), claimsFor(mixedIss), "c2ln"), errBadSignature},
		{"HS256 keyed with the RSA public key PEM", sign(t, jwt.SigningMethodHS256, pubPEM, kid("rsa-1"), claimsFor(rsaIss)), errBadSignature},
		{"HS256 keyed with the RSA public key PEM, HS256 pinned", sign(t, jwt.SigningMethodHS256, pubPEM, kid("rsa-1"), claimsFor(mixedIss)), errBadSignature},
		{"HS256 keyed with the RSA public key DER, HS256 pinned", sign(t, jwt.SigningMethodHS256, pkcs1, nil, claimsFor(mixedIss)), errBadSignature},
		{"kid path traversal", sign(t, jwt.SigningMethodRS256, victim, kid("../../../../etc/passwd"), claimsFor(rsaIss)), errNoKey},
		{"kid relative to a known kid", sign(t, jwt.SigningMethodRS256, victim, kid("../rsa-1"), claimsFor(rsaIss)), errNoKey},
		{"kid not a string", sign(t, jwt.SigningMethodRS256, victim, map[string]any{"kid": 7}, claimsFor(rsaIss)), errBadKid},
		{"embedded jwk", sign(t, jwt.SigningMethodRS256, attacker, map[string]any{"kid": "rsa-1", "jwk": attackerJWK}, claimsFor(rsaIss)), errHeaderKey},
		{"jku to attacker", sign(t, jwt.SigningMethodRS256, attacker, map[string]any{"kid": "rsa-1", "jku": evil.URL}, claimsFor(rsaIss)), errHeaderKey},
		{"x5u to attacker", sign(t, jwt.SigningMethodRS256, attacker, map[string]any{"x5u": evil.URL + "/cert.pem"}, claimsFor(rsaIss)), errHeaderKey},
		{"x5c attacker chain", sign(t, jwt.SigningMethodES256, attackerEC,
			map[string]any{"x5c": []string{base64.StdEncoding.EncodeToString(certBlock.Bytes)}}, claimsFor(mixedIss)), errHeaderKey},
		{"critical extension", sign(t, jwt.SigningMethodRS256, victim, map[string]any{"kid": "rsa-1", "crit": []string{"exp"}}, claimsFor(rsaIss)), errCrit},
		{"attacker key, victim kid", sign(t, jwt.SigningMethodRS256, attacker, kid("rsa-1"), claimsFor(rsaIss)), errBadSignature},
		{"attacker key, no kid", sign(t, jwt.SigningMethodRS256, attacker, nil, claimsFor(rsaIss)), errBadSignature},
		{"ES256 naming the RSA kid", sign(t, jwt.SigningMethodES256, attackerEC, kid("rsa-1"), claimsFor(mixedIss)), errNoKey},
		{"ES256 to an RS256-only issuer", sign(t, jwt.SigningMethodES256, victimEC, kid("ec-1"), claimsFor(rsaIss)), errBadSignature},
		{"expired", rs256(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }), errExpired},
		{"missing exp", rs256(func(c jwt.MapClaims) { delete(c, "exp") }), errClaimMissing},
		{"exp not a number", rs256(func(c jwt.MapClaims) { c["exp"] = "tomorrow" }), errInvalidClaims},
		{"nbf beyond leeway", rs256(func(c jwt.MapClaims) { c["nbf"] = now.Add(10 * time.Minute).Unix() }), errNotYetValid},
		{"iat beyond leeway", rs256(func(c jwt.MapClaims) { c["iat"] = now.Add(10 * time.Minute).Unix() }), errIssuedInFuture},
		{"unknown iss", sign(t, jwt.SigningMethodRS256, victim, kid("rsa-1"), claimsFor("https://rsa.example/")), errUnknownIssuer},
		{"iss differs in case", sign(t, jwt.SigningMethodRS256, victim, kid("rsa-1"), claimsFor("https://RSA.example")), errUnknownIssuer},
		{"missing iss", rs256(func(c jwt.MapClaims) { delete(c, "iss") }), errNoIssuer},
		{"iss not a string", rs256(func(c jwt.MapClaims) { c["iss"] = 42 }), errMalformed},
		{"wrong aud", rs256(func(c jwt.MapClaims) { c["aud"] = []string{"someone-else"} }), errAudience},
		{"missing aud", rs256(func(c jwt.MapClaims) { delete(c, "aud") }), errClaimMissing},
		{"stripped signature", strings.Join(strings.Split(rs256(nil), ".")[:2], ".") + ".", errNoSignature},
		{"many dots", strings.Repeat(".", 5000), errMalformed},
		{"extra segments", rs256(nil) + ".e30.e30", errMalformed},
		{"oversized", rs256(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", 9000) }), errTooLarge},
		{"over the issuer's limit", sign(t, jwt.SigningMethodHS256, []byte(testHMAC), nil,
			claims(mixedIss, func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", 2000) })), errTooLarge},
		{"missing tenant", rs256(func(c jwt.MapClaims) { delete(c, "tenant") }), errTenant},
		{"empty tenant", rs256(func(c jwt.MapClaims) { c["tenant"] = "" }), errTenant},
		{"tenant not a string", rs256(func(c jwt.MapClaims) { c["tenant"] = []string{"acme"} }), errTenant},
		{"tenant with control characters", rs256(func(c jwt.MapClaims) { c["tenant"] = "acme\r\nX-Evil: 1" }), errTenant},
		{"missing subject", rs256(func(c jwt.MapClaims) { delete(c, "sub") }), errSubject},
		{"garbage base64", "!!!.###.$$$", errMalformed},
		{"header not JSON", "bm90LWpzb24." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"https://rsa.example"}`)) + ".c2ln", errMalformed},
		{"payload not an object", rawToken(t, map[string]any{"alg": "RS256"}, []string{"iss"}, "c2ln"), errMalformed},
		{"padded base64 payload", padPayload(t, rs256(nil)), errMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(bearer(tc.token))
			if p != nil {
				t.Fatalf("accepted: %+v", *p)
			}
			ae := requireAuthError(t, err)
			if ae.Reason != string(tc.want) {
				t.Fatalf("reason = %q, want %q", ae.Reason, tc.want)
			}
			if ae.Missing {
				t.Fatal("a presented token was reported as missing")
			}
			if got := a.Challenge(err); got != `Bearer realm="a2a-gateway", error="invalid_token"` {
				t.Fatalf("Challenge = %q", got)
			}
			for _, seg := range strings.Split(tc.token, ".") {
				if len(seg) > 8 && strings.Contains(err.Error(), seg) {
					t.Fatalf("error %q leaks token contents", err)
				}
			}
		})
	}
	if n := attackerHits.Load(); n != 0 {
		t.Fatalf("attacker-controlled URLs were fetched %d times", n)
	}
	// Unknown kids within the refresh interval must not cause fetches: one
	// per issuer at start-up, nothing after.
	if n := jwks.fetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", n)
	}

	t.Run("control: the victim's own token passes", func(t *testing.T) {
		if _, err := a.Authenticate(bearer(rs256(nil))); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if _, err := a.Authenticate(bearer(sign(t, jwt.SigningMethodHS256, []byte(testHMAC), nil, claimsFor(mixedIss)))); err != nil {
			t.Fatalf("Authenticate HS256: %v", err)
		}
	})
}

func TestTimeClaimsLeeway(t *testing.T) {
	victim := mustRSAKey(t)
	pemFile := writeFile(t, t.TempDir(), "rsa-1.pem", pkixPEM(t, &victim.PublicKey))
	a := newTestAuth(t, Options{Issuers: []IssuerOptions{{Name: "idp", Issuer: "https://idp.example", Audiences: []string{testAudience},
		Algorithms: []string{"RS256", "PS256"}, KeyFiles: []string{pemFile}, Leeway: duration.Duration(time.Minute)}}}, nil, nil)
	now := time.Now()
	tests := []struct {
		name string
		edit func(c jwt.MapClaims)
		want failure // empty: accepted
	}{
		{"exp just passed, within leeway", func(c jwt.MapClaims) { c["exp"] = now.Add(-20 * time.Second).Unix() }, ""},
		{"exp passed beyond leeway", func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }, errExpired},
		{"nbf slightly ahead", func(c jwt.MapClaims) { c["nbf"] = now.Add(20 * time.Second).Unix() }, ""},
		{"nbf ahead beyond leeway", func(c jwt.MapClaims) { c["nbf"] = now.Add(2 * time.Minute).Unix() }, errNotYetValid},
		{"iat slightly ahead", func(c jwt.MapClaims) { c["iat"] = now.Add(20 * time.Second).Unix() }, ""},
		{"iat ahead beyond leeway", func(c jwt.MapClaims) { c["iat"] = now.Add(2 * time.Minute).Unix() }, errIssuedInFuture},
		{"audience among several", func(c jwt.MapClaims) { c["aud"] = []string{"x", testAudience} }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := claimsFor("https://idp.example")
			tc.edit(c)
			for _, m := range []jwt.SigningMethod{jwt.SigningMethodRS256, jwt.SigningMethodPS256} {
				_, err := a.Authenticate(bearer(sign(t, m, victim, map[string]any{"kid": "rsa-1"}, c)))
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("%s: Authenticate: %v", m.Alg(), err)
				case tc.want != "":
					if ae := requireAuthError(t, err); ae.Reason != string(tc.want) {
						t.Fatalf("%s: reason = %q, want %q", m.Alg(), ae.Reason, tc.want)
					}
				}
			}
		})
	}
}

// padPayload re-encodes the payload with base64 padding, which JWS forbids.
func padPayload(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decode payload: %v", err)
	}
	parts[1] = base64.URLEncoding.EncodeToString(append(raw, ' '))
	if !strings.HasSuffix(parts[1], "=") {
		parts[1] = base64.URLEncoding.EncodeToString(append(raw, ' ', ' '))
	}
	return strings.Join(parts, ".")
}
