package card

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/golang-jwt/jwt/v5"
)

type testKey struct {
	name   string
	signer crypto.Signer
	method jwt.SigningMethod // an independent JWS implementation to cross-check with
}

func testKeys(t *testing.T) []testKey {
	t.Helper()
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p521, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return []testKey{
		{"ES256", p256, jwt.SigningMethodES256},
		{"ES384", p384, jwt.SigningMethodES384},
		{"ES512", p521, jwt.SigningMethodES512},
		{"EdDSA", ed, jwt.SigningMethodEdDSA},
		{"RS256", rk, jwt.SigningMethodRS256},
	}
}

func signedFixture(t *testing.T, s *Signer) []byte {
	t.Helper()
	o := testOptions(t, "http://georoute.internal:8080/a2a")
	o.Signer = s
	out, err := Rewrite(fixture(t, "v03.json"), o)
	if err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	return out
}

func TestSignerRoundTrip(t *testing.T) {
	for _, k := range testKeys(t) {
		t.Run(k.name, func(t *testing.T) {
			s, err := NewSigner(k.signer, "gw-2026", "https://gw.example.com/.well-known/jwks.json")
			if err != nil {
				t.Fatalf("NewSigner: %v", err)
			}
			card := signedFixture(t, s)
			keys := map[string]crypto.PublicKey{"gw-2026": s.Public()}
			if err := Verify(card, keys); err != nil {
				t.Fatalf("Verify: %v", err)
			}

			var parsed struct {
				Signatures []struct{ Protected, Signature string }
			}
			if err := json.Unmarshal(card, &parsed); err != nil || len(parsed.Signatures) != 1 {
				t.Fatalf("want exactly one signature: %v %s", err, card)
			}
			sig := parsed.Signatures[0]
			hdr, err := base64.RawURLEncoding.DecodeString(sig.Protected)
			if err != nil {
				t.Fatal(err)
			}
			wantHdr := `{"alg":"` + k.name + `","typ":"JOSE","kid":"gw-2026","jku":"https://gw.example.com/.well-known/jwks.json"}`
			if string(hdr) != wantHdr {
				t.Errorf("protected header = %s, want %s", hdr, wantHdr)
			}

			// The signing input is standard JWS: another implementation must
			// accept the signature over the canonical payload.
			payload, err := SigningPayload(card)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := base64.RawURLEncoding.DecodeString(sig.Signature)
			if err != nil {
				t.Fatal(err)
			}
			input := sig.Protected + "." + base64.RawURLEncoding.EncodeToString(payload)
			if err := k.method.Verify(input, raw, s.Public()); err != nil {
				t.Errorf("independent JWS verification failed: %v", err)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(key, "gw-1", "")
	if err != nil {
		t.Fatal(err)
	}
	card := signedFixture(t, s)
	good := map[string]crypto.PublicKey{"gw-1": &key.PublicKey}

	replace := func(old, new string) []byte {
		t.Helper()
		if !strings.Contains(string(card), old) {
			t.Fatalf("card lacks %q", old)
		}
		return []byte(strings.Replace(string(card), old, new, 1))
	}
	var parsed struct {
		Signatures []struct{ Protected, Signature string }
	}
	if err := json.Unmarshal(card, &parsed); err != nil {
		t.Fatal(err)
	}
	sig := parsed.Signatures[0]
	forged := func(hdr string) []byte {
		return replace(sig.Protected, base64.RawURLEncoding.EncodeToString([]byte(hdr)))
	}

	tests := []struct {
		name string
		card []byte
		keys map[string]crypto.PublicKey
		want error
	}{
		{"tampered description", replace("Routes <avoid>", "Routes <prefer>"), good, ErrSignatureInvalid},
		{"tampered url", replace(testPublic+"/v1", "https://evil.example/v1"), good, ErrSignatureInvalid},
		{"member added", replace(`"name":`, `"x-injected":"yes","name":`), good, ErrSignatureInvalid},
		{"signature bytes changed", replace(sig.Signature, base64.RawURLEncoding.EncodeToString(make([]byte, 64))), good, ErrSignatureInvalid},
		{"wrong key", card, map[string]crypto.PublicKey{"gw-1": &other.PublicKey}, ErrSignatureInvalid},
		{"unknown kid", card, map[string]crypto.PublicKey{"gw-2": &key.PublicKey}, ErrSignatureInvalid},
		{"algorithm confusion", card, map[string]crypto.PublicKey{"gw-1": edKey.Public()}, ErrSignatureInvalid},
		{"alg none", forged(`{"alg":"none","kid":"gw-1"}`), good, ErrSignatureInvalid},
		{"alg HS256", forged(`{"alg":"HS256","kid":"gw-1"}`), good, ErrSignatureInvalid},
		{"critical extension", forged(`{"alg":"ES256","kid":"gw-1","crit":["b64"],"b64":false}`), good, ErrSignatureInvalid},
		{"protected not base64url", replace(sig.Protected, "!!!"), good, ErrSignatureInvalid},
		{"no signatures", replace(`"signatures":[`, `"x":[`), good, ErrNoSignature},
		{"empty signatures", []byte(`{"url":"http://a","signatures":[]}`), good, ErrNoSignature},
		{"signatures not a list", []byte(`{"url":"http://a","signatures":{}}`), good, ErrMalformedCard},
		{"duplicate member", []byte(`{"url":"http://a","url":"http://b","signatures":[{"protected":"e30","signature":""}]}`), good, ErrMalformedCard},
		{"not JSON", []byte(`{`), good, ErrMalformedCard},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.card, tc.keys); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// A card signed elsewhere over plain RFC 8785 (default values kept) still
// verifies, as does one whose kid is only in the unprotected header, and a
// second valid signature is enough when the first cannot be checked.
func TestVerifyAcceptsOtherSigners(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"name":"Example Agent","description":"","capabilities":{"streaming":false,"extensions":[]},"skills":[],"url":"http://a/rpc"}`
	literal, err := jose.Canonicalize([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	sign := func(hdr string) (string, string) {
		protected := base64.RawURLEncoding.EncodeToString([]byte(hdr))
		raw, err := jwt.SigningMethodES256.Sign(protected+"."+base64.RawURLEncoding.EncodeToString(literal), key)
		if err != nil {
			t.Fatal(err)
		}
		return protected, base64.RawURLEncoding.EncodeToString(raw)
	}
	p1, s1 := sign(`{"alg":"ES256","typ":"JOSE","kid":"upstream-1"}`)
	p2, s2 := sign(`{"alg":"ES256"}`)
	tests := []struct {
		name, sigs string
	}{
		{"kid in protected header", `[{"protected":"` + p1 + `","signature":"` + s1 + `"}]`},
		{"kid in unprotected header", `[{"protected":"` + p2 + `","signature":"` + s2 + `","header":{"kid":"upstream-1"}}]`},
		{"second signature valid", `[{"protected":"` + p1 + `","signature":"` + s2 + `"},{"protected":"` + p1 + `","signature":"` + s1 + `"}]`},
	}
	keys := map[string]crypto.PublicKey{"upstream-1": &key.PublicKey}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			card := strings.TrimSuffix(body, "}") + `,"signatures":` + tc.sigs + `}`
			if err := Verify([]byte(card), keys); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

func TestSigningPayload(t *testing.T) {
	tests := []struct {
		name, card, want string
	}{
		{
			name: "signatures excluded, members sorted",
			card: `{"signatures":[{"protected":"x","signature":"y"}],"name":"A","capabilities":{"streaming":false,"pushNotifications":true}}`,
			want: `{"capabilities":{"pushNotifications":true,"streaming":false},"name":"A"}`,
		},
		{
			name: "default values omitted, explicit false and zero kept",
			card: `{"name":"Example Agent","description":"","capabilities":{"streaming":false,"pushNotifications":false,"extensions":[]},"skills":[],"provider":{"url":""},"iconUrl":null,"x":[0,"",{}]}`,
			want: `{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent","x":[0]}`,
		},
		{
			name: "numbers in ECMAScript form",
			card: `{"a":1.50,"b":2e3,"c":-0.0}`,
			want: `{"a":1.5,"b":2000,"c":0}`,
		},
		{name: "empty card", card: `{"signatures":[]}`, want: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SigningPayload([]byte(tc.card))
			if err != nil || string(got) != tc.want {
				t.Fatalf("SigningPayload = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestNewSignerRefuses(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		key      crypto.Signer
		kid, jku string
	}{
		{"nil key", nil, "k", ""},
		{"empty kid", ec, " ", ""},
		{"http jku", ec, "k", "http://gw.example.com/jwks.json"},
		{"relative jku", ec, "k", "/jwks.json"},
		{"short RSA key", weak, "k", ""},
		{"unsupported curve", p224, "k", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSigner(tc.key, tc.kid, tc.jku); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("NewSigner err = %v, want ErrInvalidOptions", err)
			}
		})
	}
}
