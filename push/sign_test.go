package push

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/golang-jwt/jwt/v5"
)

const testIssuer = "https://gateway.example.com"

func writeKey(t *testing.T, dir, name string, key crypto.Signer) string {
	t.Helper()
	path := filepath.Join(dir, name+".pem")
	if err := jose.WritePrivateKeyPEM(path, key); err != nil {
		t.Fatalf("write key: %v", err)
	}
	return path
}

func ed25519Key(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ecKey(t *testing.T, c elliptic.Curve) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSigner(t *testing.T, o SignerOptions) *Signer {
	t.Helper()
	s, err := NewSigner(o)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	return s
}

// publishedKey is one JWK read back from the JWKS, decoded here rather than
// through authz so the test checks the published document itself.
type publishedKey struct {
	alg string
	pub crypto.PublicKey
}

func parseTestJWKS(t *testing.T, doc []byte) map[string]publishedKey {
	t.Helper()
	var set struct {
		Keys []struct {
			Kty, Crv, X, Y, Kid, Alg, Use string
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatalf("JWKS is not JSON: %v\n%s", err, doc)
	}
	b64 := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("JWK member %q is not base64url: %v", s, err)
		}
		return b
	}
	keys := map[string]publishedKey{}
	for _, k := range set.Keys {
		if k.Use != "sig" || k.Kid == "" {
			t.Fatalf("JWK %+v: want use sig and a kid", k)
		}
		if _, dup := keys[k.Kid]; dup {
			t.Fatalf("kid %q published twice", k.Kid)
		}
		var pub crypto.PublicKey
		switch {
		case k.Kty == "OKP" && k.Crv == "Ed25519":
			pub = ed25519.PublicKey(b64(k.X))
		case k.Kty == "EC":
			curves := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
			point := append([]byte{4}, append(b64(k.X), b64(k.Y)...)...)
			p, err := ecdsa.ParseUncompressedPublicKey(curves[k.Crv], point)
			if err != nil {
				t.Fatalf("JWK %s: %v", k.Kid, err)
			}
			pub = p
		default:
			t.Fatalf("unexpected JWK type %s/%s", k.Kty, k.Crv)
		}
		keys[k.Kid] = publishedKey{alg: k.Alg, pub: pub}
	}
	return keys
}

// verifyJWT checks a notification JWT the way a receiver holding the JWKS does.
func verifyJWT(t *testing.T, jwks []byte, raw, audience string, now time.Time) (jwt.MapClaims, error) {
	t.Helper()
	keys := parseTestJWKS(t, jwks)
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("kid %q is not in the JWKS", kid)
		}
		if k.alg != tok.Method.Alg() {
			return nil, fmt.Errorf("kid %q is published for %s, token uses %s", kid, k.alg, tok.Method.Alg())
		}
		return k.pub, nil
	},
		jwt.WithValidMethods([]string{"EdDSA", "ES256", "ES384", "ES512"}),
		jwt.WithIssuer(testIssuer),
		jwt.WithAudience(audience),
		jwt.WithIssuedAt(),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	return claims, err
}

func bearer(t *testing.T, h http.Header) string {
	t.Helper()
	raw, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok {
		t.Fatalf("Authorization %q is not a Bearer token", h.Get("Authorization"))
	}
	return raw
}

func testNotification() Notification {
	return Notification{
		ID:       "task-42:7",
		TaskID:   "task-42",
		Audience: "https://client.example.com/webhook",
		Body:     []byte(`{"statusUpdate":{"taskId":"task-42","status":{"state":"TASK_STATE_COMPLETED"}}}`),
		At:       time.Unix(1_760_000_000, 0),
	}
}

func TestSignJWTVerifiesWithJWKS(t *testing.T) {
	tests := []struct {
		name string
		key  crypto.Signer
		alg  string
	}{
		{"Ed25519", ed25519Key(t), "EdDSA"},
		{"P-256", ecKey(t, elliptic.P256()), "ES256"},
		{"P-384", ecKey(t, elliptic.P384()), "ES384"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeKey(t, t.TempDir(), "push-key", tc.key)
			s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}, TTL: 2 * time.Minute})
			n := testNotification()
			h, err := s.Sign(n)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			raw := bearer(t, h)
			claims, err := verifyJWT(t, s.JWKS(), raw, n.Audience, n.At.Add(time.Minute))
			if err != nil {
				t.Fatalf("JWT does not verify: %v", err)
			}
			tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
			if err != nil {
				t.Fatal(err)
			}
			if tok.Header["kid"] != "push-key" || tok.Method.Alg() != tc.alg {
				t.Errorf("header kid %v alg %s, want push-key %s", tok.Header["kid"], tok.Method.Alg(), tc.alg)
			}
			sum := sha256.Sum256(n.Body)
			want := map[string]any{
				"iss":                 testIssuer,
				"aud":                 n.Audience,
				"jti":                 n.ID,
				"taskId":              n.TaskID,
				"request_body_sha256": hex.EncodeToString(sum[:]),
				"iat":                 float64(n.At.Unix()),
				"exp":                 float64(n.At.Add(2 * time.Minute).Unix()),
			}
			for k, v := range want {
				if claims[k] != v {
					t.Errorf("claim %s = %v (%T), want %v", k, claims[k], claims[k], v)
				}
			}
			if len(claims) != len(want) {
				t.Errorf("claims %v, want exactly %v", claims, want)
			}

			tampered := append([]byte(nil), n.Body...)
			tampered[len(tampered)-3] = 'X'
			got := sha256.Sum256(tampered)
			if claims[ClaimBodySHA256] == hex.EncodeToString(got[:]) {
				t.Error("the body hash matches a tampered body")
			}
			if _, err := verifyJWT(t, s.JWKS(), raw, n.Audience, n.At.Add(3*time.Minute)); !errors.Is(err, jwt.ErrTokenExpired) {
				t.Errorf("after the TTL: %v, want expired", err)
			}
			if _, err := verifyJWT(t, s.JWKS(), raw, "https://other.example.com/hook", n.At); err == nil {
				t.Error("verified for another audience")
			}
			forged := raw[:len(raw)-4] + flip(raw[len(raw)-4:])
			if _, err := verifyJWT(t, s.JWKS(), forged, n.Audience, n.At); err == nil {
				t.Error("a token with an altered signature verified")
			}
		})
	}
}

func flip(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

func TestSignHeaderPlacement(t *testing.T) {
	path := writeKey(t, t.TempDir(), "k1", ed25519Key(t))
	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	tests := []struct {
		name          string
		edit          func(*Notification)
		authorization string // "jwt": a Bearer JWT
		jwtHeader     bool
		token         string
	}{
		{"no authentication", func(*Notification) {}, "jwt", false, ""},
		{"Bearer without credentials", func(n *Notification) { n.AuthScheme = "Bearer" }, "jwt", false, ""},
		{"bearer in lower case", func(n *Notification) { n.AuthScheme = "bearer" }, "jwt", false, ""},
		{"config credentials", func(n *Notification) { n.AuthScheme, n.AuthCredentials = "Basic", "dXNlcjpwYXNz" }, "Basic dXNlcjpwYXNz", true, ""},
		{"config bearer token", func(n *Notification) { n.AuthScheme, n.AuthCredentials = "Bearer", "client-token" }, "Bearer client-token", true, ""},
		{"notification token", func(n *Notification) { n.Token = "secure-client-token-for-task-aaa" }, "jwt", false, "secure-client-token-for-task-aaa"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := testNotification()
			tc.edit(&n)
			h, err := s.Sign(n)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			var raw string
			if tc.authorization == "jwt" {
				raw = bearer(t, h)
			} else if got := h.Get("Authorization"); got != tc.authorization {
				t.Errorf("Authorization %q, want %q", got, tc.authorization)
			}
			if got := h.Get(HeaderNotificationJWT); (got != "") != tc.jwtHeader {
				t.Errorf("%s = %q, want present: %v", HeaderNotificationJWT, got, tc.jwtHeader)
			} else if tc.jwtHeader {
				raw = got
			}
			if _, err := verifyJWT(t, s.JWKS(), raw, n.Audience, n.At); err != nil {
				t.Errorf("JWT does not verify: %v", err)
			}
			if got := h.Get(HeaderNotificationToken); got != tc.token {
				t.Errorf("%s = %q, want %q", HeaderNotificationToken, got, tc.token)
			}
			if h.Get(HeaderWebhookSignature) != "" || h.Get(HeaderWebhookID) != "" {
				t.Error("Standard Webhooks headers without a secret")
			}
			if h.Get("Content-Type") != "" {
				t.Error("Sign set Content-Type")
			}
		})
	}
}

func TestSignRefusesBadNotifications(t *testing.T) {
	path := writeKey(t, t.TempDir(), "k1", ed25519Key(t))
	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	tests := []struct {
		name   string
		edit   func(*Notification)
		reason string
	}{
		{"empty id", func(n *Notification) { n.ID = "" }, "notification id"},
		{"id with a dot", func(n *Notification) { n.ID = "task.42:7" }, "without '.'"},
		{"id with a space", func(n *Notification) { n.ID = "task 42" }, "notification id"},
		{"id with a newline", func(n *Notification) { n.ID = "t\n1" }, "notification id"},
		{"id too long", func(n *Notification) { n.ID = strings.Repeat("a", 257) }, "notification id"},
		{"no task id", func(n *Notification) { n.TaskID = "" }, "task id"},
		{"no audience", func(n *Notification) { n.Audience = "" }, "audience"},
		{"token with CRLF", func(n *Notification) { n.Token = "tok\r\nX-Evil: 1" }, "token"},
		{"credentials with LF", func(n *Notification) { n.AuthScheme, n.AuthCredentials = "Basic", "a\nb" }, "credentials"},
		{"credentials without scheme", func(n *Notification) { n.AuthCredentials = "abc" }, "no authentication scheme"},
		{"scheme with a space", func(n *Notification) { n.AuthScheme, n.AuthCredentials = "My Scheme", "abc" }, "not an HTTP authentication scheme"},
		{"non-Bearer scheme without credentials", func(n *Notification) { n.AuthScheme = "Basic" }, "has no credentials"},
		{"short webhook secret", func(n *Notification) { n.WebhookSecret = make([]byte, 16) }, "24-64 bytes"},
		{"long webhook secret", func(n *Notification) { n.WebhookSecret = make([]byte, 65) }, "24-64 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := testNotification()
			tc.edit(&n)
			h, err := s.Sign(n)
			if err == nil {
				t.Fatalf("signed: %v", h)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not mention %q", err, tc.reason)
			}
		})
	}
}

func TestSignDefaultsAtToNow(t *testing.T) {
	path := writeKey(t, t.TempDir(), "k1", ed25519Key(t))
	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	n := testNotification()
	n.At = time.Time{}
	before := time.Now().Unix()
	h, err := s.Sign(n)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	claims, err := verifyJWT(t, s.JWKS(), bearer(t, h), n.Audience, time.Now())
	if err != nil {
		t.Fatalf("JWT does not verify: %v", err)
	}
	iat, _ := claims["iat"].(float64)
	if int64(iat) < before || int64(iat) > after {
		t.Errorf("iat %v outside [%d, %d]", iat, before, after)
	}
	if exp, _ := claims["exp"].(float64); int64(exp-iat) != int64(DefaultSignatureTTL/time.Second) {
		t.Errorf("exp - iat = %v, want the default TTL", exp-iat)
	}
}

func TestKeyRotation(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeKey(t, dir, "push-2025", ed25519Key(t))
	newPath := writeKey(t, dir, "push-2026", ecKey(t, elliptic.P256()))

	before := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{oldPath}})
	during := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{newPath, oldPath}})
	after := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{newPath}})

	n := testNotification()
	sign := func(s *Signer) string {
		t.Helper()
		h, err := s.Sign(n)
		if err != nil {
			t.Fatal(err)
		}
		return bearer(t, h)
	}
	oldToken, newToken := sign(before), sign(during)
	if kid := headerKid(t, newToken); kid != "push-2026" {
		t.Errorf("during rotation the signing kid is %q, want the first key push-2026", kid)
	}
	tests := []struct {
		name  string
		jwks  []byte
		token string
		ok    bool
	}{
		{"old token, old key set", before.JWKS(), oldToken, true},
		{"old token while both are listed", during.JWKS(), oldToken, true},
		{"new token while both are listed", during.JWKS(), newToken, true},
		{"old token after the old key is removed", after.JWKS(), oldToken, false},
		{"new token after the old key is removed", after.JWKS(), newToken, true},
		{"new token against a stale key set", before.JWKS(), newToken, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verifyJWT(t, tc.jwks, tc.token, n.Audience, n.At)
			if (err == nil) != tc.ok {
				t.Errorf("verify error %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if got := len(parseTestJWKS(t, during.JWKS())); got != 2 {
		t.Errorf("JWKS during rotation has %d keys, want 2", got)
	}
}

func headerKid(t *testing.T, raw string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := tok.Header["kid"].(string)
	return kid
}

func TestNewSignerOptions(t *testing.T) {
	dir := t.TempDir()
	k1 := writeKey(t, dir, "k1", ed25519Key(t))
	k2 := writeKey(t, dir, "k2", ecKey(t, elliptic.P256()))
	same := filepath.Join(dir, "copy.pem")
	data, err := os.ReadFile(k1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(same, data, 0o600); err != nil {
		t.Fatal(err)
	}
	notKey := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notKey, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	pubOnly := filepath.Join(dir, "pub.pem")
	pubPEM, err := jose.PublicKeyPEM(ed25519Key(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubOnly, pubPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		opts   SignerOptions
		reason string
	}{
		{"no issuer", SignerOptions{KeyFiles: []string{k1}}, "issuer"},
		{"issuer with a newline", SignerOptions{Issuer: "a\nb", KeyFiles: []string{k1}}, "issuer"},
		{"no keys", SignerOptions{Issuer: testIssuer}, "at least one signing key"},
		{"kid count", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1, k2}, KeyIDs: []string{"a"}}, "one key id per key file"},
		{"duplicate kid", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1, k2}, KeyIDs: []string{"a", "a"}}, "also the key id"},
		{"empty kid", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1}, KeyIDs: []string{""}}, "key_ids[0]"},
		{"negative TTL", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1}, TTL: -time.Second}, "ttl"},
		{"TTL too long", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1}, TTL: 2 * time.Hour}, "ttl"},
		{"sub-second TTL", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1}, TTL: time.Millisecond}, "ttl"},
		{"missing file", SignerOptions{Issuer: testIssuer, KeyFiles: []string{filepath.Join(dir, "absent.pem")}}, "key_files[0]"},
		{"not a key", SignerOptions{Issuer: testIssuer, KeyFiles: []string{notKey}}, "no PEM private key"},
		{"public key only", SignerOptions{Issuer: testIssuer, KeyFiles: []string{pubOnly}}, "no PEM private key"},
		{"same key twice", SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1, same}}, "the same key as key_files[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSigner(tc.opts)
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not mention %q", err, tc.reason)
			}
		})
	}

	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1, k2}, KeyIDs: []string{"signing", "previous"}})
	keys := parseTestJWKS(t, s.JWKS())
	if keys["signing"].alg != "EdDSA" || keys["previous"].alg != "ES256" {
		t.Errorf("JWKS kids/algs: %+v", keys)
	}
	defaults := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{k1, k2}})
	if keys := parseTestJWKS(t, defaults.JWKS()); len(keys) != 2 || keys["k1"].pub == nil || keys["k2"].pub == nil {
		t.Errorf("default kids are not the file base names: %+v", keys)
	}
	leak := s.JWKS()
	leak[0] = 'X'
	if s.JWKS()[0] == 'X' {
		t.Error("JWKS() exposes the signer's own buffer")
	}
}

func TestJWKSHandler(t *testing.T) {
	path := writeKey(t, t.TempDir(), "k1", ed25519Key(t))
	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	srv := httptest.NewServer(s.JWKSHandler())
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, s.JWKS()) {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Errorf("Content-Type %q", ct)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") == "" {
		t.Fatalf("missing validators: %v", resp.Header)
	}

	tests := []struct {
		name   string
		method string
		header http.Header
		status int
	}{
		{"conditional GET", http.MethodGet, http.Header{"If-None-Match": {etag}}, http.StatusNotModified},
		{"stale ETag", http.MethodGet, http.Header{"If-None-Match": {`"old"`}}, http.StatusOK},
		{"HEAD", http.MethodHead, nil, http.StatusOK},
		{"POST", http.MethodPost, nil, http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tc.header
			if req.Header == nil {
				req.Header = http.Header{}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// specVerify is a second Standard Webhooks verifier written from the
// specification's text rather than from VerifyStandardWebhook: strip
// "whsec_", base64-decode the key, HMAC-SHA256 over "{msg_id}.{timestamp}.{payload}",
// and compare with each space-delimited "v1,<base64>" entry.
func specVerify(secret string, h http.Header, payload []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	content := fmt.Sprintf("%s.%s.%s", h.Get("webhook-id"), h.Get("webhook-timestamp"), payload)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(content))
	expected := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, candidate := range strings.Split(h.Get("webhook-signature"), " ") {
		if hmac.Equal([]byte(candidate), []byte(expected)) {
			return true
		}
	}
	return false
}

func TestStandardWebhookSignatures(t *testing.T) {
	path := writeKey(t, t.TempDir(), "k1", ed25519Key(t))
	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString(raw)

	for _, form := range []string{"whsec_" + encoded, encoded} {
		t.Run(form[:6], func(t *testing.T) {
			secret, err := ParseWebhookSecret(form)
			if err != nil {
				t.Fatalf("ParseWebhookSecret: %v", err)
			}
			if string(secret) != string(raw) {
				t.Fatal("parsed secret differs from the encoded bytes")
			}
			n := testNotification()
			n.WebhookSecret = secret
			h, err := s.Sign(n)
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			if h.Get(HeaderWebhookID) != n.ID || h.Get(HeaderWebhookTimestamp) != strconv.FormatInt(n.At.Unix(), 10) {
				t.Fatalf("webhook-id %q, webhook-timestamp %q", h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp))
			}
			if !strings.HasPrefix(h.Get(HeaderWebhookSignature), "v1,") {
				t.Fatalf("webhook-signature %q", h.Get(HeaderWebhookSignature))
			}
			if err := VerifyStandardWebhook(secret, h, n.Body, n.At, 0); err != nil {
				t.Errorf("VerifyStandardWebhook: %v", err)
			}
			if !specVerify(form, h, n.Body) {
				t.Error("the specification-text verifier refuses the signature")
			}

			tampered := func(edit func(http.Header, []byte) []byte) (http.Header, []byte) {
				c := h.Clone()
				body := edit(c, append([]byte(nil), n.Body...))
				return c, body
			}
			cases := []struct {
				name string
				edit func(http.Header, []byte) []byte
			}{
				{"body", func(_ http.Header, b []byte) []byte { return append(b, ' ') }},
				{"timestamp", func(c http.Header, b []byte) []byte {
					c.Set(HeaderWebhookTimestamp, strconv.FormatInt(n.At.Unix()+1, 10))
					return b
				}},
				{"id", func(c http.Header, b []byte) []byte { c.Set(HeaderWebhookID, "task-42:8"); return b }},
				{"signature", func(c http.Header, b []byte) []byte {
					c.Set(HeaderWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
					return b
				}},
			}
			for _, tc := range cases {
				t.Run("tampered "+tc.name, func(t *testing.T) {
					hh, body := tampered(tc.edit)
					if err := VerifyStandardWebhook(secret, hh, body, n.At, 0); !errors.Is(err, ErrBadSignature) {
						t.Errorf("VerifyStandardWebhook: %v, want ErrBadSignature", err)
					}
					if specVerify(form, hh, body) {
						t.Error("the specification-text verifier accepts it")
					}
				})
			}
		})
	}
}

// TestStandardWebhookKnownAnswer checks compatibility against the signature
// published with the Standard Webhooks reference libraries.
func TestStandardWebhookKnownAnswer(t *testing.T) {
	secret, err := ParseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderWebhookID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(HeaderWebhookTimestamp, "1614265330")
	h.Set(HeaderWebhookSignature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	body := []byte(`{"test": 2432232314}`)
	if err := VerifyStandardWebhook(secret, h, body, time.Unix(1614265330, 0), 0); err != nil {
		t.Fatalf("known-answer signature refused: %v", err)
	}

	path := writeKey(t, t.TempDir(), "k1", ed25519Key(t))
	s := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	got, err := s.Sign(Notification{ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", TaskID: "t", Audience: "https://a.example/", Body: body, WebhookSecret: secret, At: time.Unix(1614265330, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Get(HeaderWebhookSignature) != h.Get(HeaderWebhookSignature) {
		t.Errorf("signature %q, want the published %q", got.Get(HeaderWebhookSignature), h.Get(HeaderWebhookSignature))
	}
}

func TestVerifyStandardWebhookRefusals(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	at := time.Unix(1_760_000_000, 0)
	ts := strconv.FormatInt(at.Unix(), 10)
	body := []byte(`{"task":{}}`)
	good := "v1," + base64.StdEncoding.EncodeToString(webhookMAC(secret, "n1", ts, body))
	headers := func(id, ts, sig string) http.Header {
		h := http.Header{}
		for k, v := range map[string]string{HeaderWebhookID: id, HeaderWebhookTimestamp: ts, HeaderWebhookSignature: sig} {
			if v != "" {
				h.Set(k, v)
			}
		}
		return h
	}
	tests := []struct {
		name   string
		secret []byte
		h      http.Header
		now    time.Time
		tol    time.Duration
		ok     bool
	}{
		{"valid", secret, headers("n1", ts, good), at, 0, true},
		{"one of several signatures", secret, headers("n1", ts, "v1,AAAA "+good+" v1a,xyz"), at, 0, true},
		{"within tolerance", secret, headers("n1", ts, good), at.Add(4 * time.Minute), 0, true},
		{"too old", secret, headers("n1", ts, good), at.Add(6 * time.Minute), 0, false},
		{"too new", secret, headers("n1", ts, good), at.Add(-6 * time.Minute), 0, false},
		{"custom tolerance", secret, headers("n1", ts, good), at.Add(6 * time.Minute), 10 * time.Minute, true},
		{"wrong secret", []byte(strings.Repeat("x", 32)), headers("n1", ts, good), at, 0, false},
		{"no secret", nil, headers("n1", ts, good), at, 0, false},
		{"asymmetric version only", secret, headers("n1", ts, "v1a,"+strings.TrimPrefix(good, "v1,")), at, 0, false},
		{"missing id", secret, headers("", ts, good), at, 0, false},
		{"missing timestamp", secret, headers("n1", "", good), at, 0, false},
		{"missing signature", secret, headers("n1", ts, ""), at, 0, false},
		{"timestamp not a number", secret, headers("n1", "soon", good), at, 0, false},
		{"signature not base64", secret, headers("n1", ts, "v1,@@@"), at, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyStandardWebhook(tc.secret, tc.h, body, tc.now, tc.tol)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("error %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestParseWebhookSecret(t *testing.T) {
	secret24 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 24)))
	tests := []struct {
		in     string
		reason string // empty: accepted
	}{
		{"whsec_" + secret24, ""},
		{secret24, ""},
		{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 64)), ""},
		{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16)), "24-64 bytes"},
		{base64.StdEncoding.EncodeToString(make([]byte, 65)), "24-64 bytes"},
		{"whsec_not*base64!hunter2", "not base64"},
		{"", "24-64 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseWebhookSecret(tc.in)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %v, want %q", err, tc.reason)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Error("the error repeats the secret")
			}
		})
	}
}
