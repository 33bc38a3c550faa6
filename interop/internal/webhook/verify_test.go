package webhook

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testIssuer = "http://gateway.test"

// testKeys is a gateway's signing keys as the test publishes them: a JWKS
// server whose key set can grow, as it does during a key rotation.
type testKeys struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]ed25519.PrivateKey
}

func newTestKeys(t *testing.T, kids ...string) *testKeys {
	t.Helper()
	k := &testKeys{keys: map[string]ed25519.PrivateKey{}}
	for _, kid := range kids {
		k.add(t, kid)
	}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *testKeys) add(t *testing.T, kid string) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k.mu.Lock()
	k.keys[kid] = priv
	k.mu.Unlock()
	return priv
}

func (k *testKeys) get(kid string) ed25519.PrivateKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[kid]
}

func (k *testKeys) serve(w http.ResponseWriter, _ *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	// A key of a type the receiver does not use is skipped, not an error.
	set.Keys = append(set.Keys, map[string]string{"kty": "EC", "crv": "P-256", "kid": "ec", "x": "AA", "y": "AA"})
	for kid, priv := range k.keys {
		pub := priv.Public().(ed25519.PublicKey)
		set.Keys = append(set.Keys, map[string]string{
			"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": kid, "x": base64.RawURLEncoding.EncodeToString(pub),
		})
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_ = json.NewEncoder(w).Encode(set)
}

func (k *testKeys) url() string { return k.srv.URL + "/.well-known/a2a-push-jwks.json" }

// signJWT signs claims as the gateway does: EdDSA, with the key's kid.
func signJWT(t *testing.T, key ed25519.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := seg(map[string]string{"alg": "EdDSA", "typ": "JWT", "kid": kid}) + "." + seg(claims)
	return signing + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(signing)))
}

// gatewayClaims are the claims of a notification of body to audience.
func gatewayClaims(audience, jti, taskID string, body []byte, at time.Time) map[string]any {
	sum := sha256.Sum256(body)
	return map[string]any{
		"iss": testIssuer, "aud": audience, "iat": at.Unix(), "exp": at.Add(5 * time.Minute).Unix(),
		"jti": jti, "taskId": taskID, "request_body_sha256": hex.EncodeToString(sum[:]),
	}
}

func TestReceiverSignatures(t *testing.T) {
	keys := newTestKeys(t, "k1")
	r := New()
	srv := httptest.NewServer(r)
	defer srv.Close()
	r.Trust(keys.url(), testIssuer)

	body := []byte(`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`)
	hookURL := srv.URL + "/hooks/h"
	now := time.Now()
	k1 := keys.get("k1")
	rotated := keys.add(t, "k2") // published now, after the receiver's first fetch below
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	with := func(edit func(map[string]any)) map[string]any {
		c := gatewayClaims(hookURL, "n-1", "t1", body, now)
		edit(c)
		return c
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	valid := signJWT(t, k1, "k1", gatewayClaims(hookURL, "n-1", "t1", body, now))

	tests := []struct {
		name    string
		header  http.Header
		body    []byte
		wantErr string // "" when the notification verifies
	}{
		{"signed by the gateway, JWT as the Bearer token", bearer(valid), body, ""},
		{"JWT in X-A2A-Notification-JWT when Authorization holds the config's credentials",
			http.Header{"Authorization": {"Basic dXNlcjpwYXNz"}, headerJWT: {valid}}, body, ""},
		{"a key rotated in after the last fetch", bearer(signJWT(t, rotated, "k2", gatewayClaims(hookURL, "n-1", "t1", body, now))), body, ""},
		{"a list audience naming the webhook", bearer(signJWT(t, k1, "k1", with(func(c map[string]any) { c["aud"] = []string{"x", hookURL} }))), body, ""},
		{"no JWT", http.Header{}, body, "no notification JWT"},
		{"tampered body", bearer(valid), []byte(strings.Replace(string(body), "WORKING", "COMPLETED", 1)), "does not match the body"},
		{"signed by another key under a published kid", bearer(signJWT(t, stranger, "k1", gatewayClaims(hookURL, "n-1", "t1", body, now))), body, "does not verify"},
		{"a kid the gateway does not publish", bearer(signJWT(t, stranger, "k9", gatewayClaims(hookURL, "n-1", "t1", body, now))), body, `kid "k9"`},
		{"another issuer", bearer(signJWT(t, k1, "k1", with(func(c map[string]any) { c["iss"] = "http://elsewhere" }))), body, "JWT iss"},
		{"another webhook's audience", bearer(signJWT(t, k1, "k1", with(func(c map[string]any) { c["aud"] = srv.URL + "/hooks/other" }))), body, "JWT aud"},
		{"expired", bearer(signJWT(t, k1, "k1", with(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() }))), body, "expired"},
		{"another task", bearer(signJWT(t, k1, "k1", with(func(c map[string]any) { c["taskId"] = "t2" }))), body, "taskId"},
		{"no jti", bearer(signJWT(t, k1, "k1", with(func(c map[string]any) { delete(c, "jti") }))), body, "no jti"},
		{"another algorithm", bearer("eyJhbGciOiJIUzI1NiJ9." + strings.SplitN(valid, ".", 2)[1]), body, "alg"},
		{"not a JWT", bearer("abc"), body, "three parts"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header.Clone()
			h.Set("Content-Type", "application/a2a+json")
			code := postWith(t, hookURL, h, tt.body)
			ds := r.Deliveries("h")
			if len(ds) != i+1 {
				t.Fatalf("%d deliveries recorded, want %d", len(ds), i+1)
			}
			d := ds[i]
			if tt.wantErr == "" {
				if code != http.StatusNoContent || !d.Verified || d.ID != "n-1" || d.SignatureError != "" {
					t.Fatalf("HTTP %d, delivery %+v: want 204, verified, id n-1", code, d)
				}
				return
			}
			if code != http.StatusUnauthorized || d.Verified || !strings.Contains(d.SignatureError, tt.wantErr) {
				t.Fatalf("HTTP %d, delivery %+v: want 401, not verified, an error containing %q", code, d, tt.wantErr)
			}
		})
	}
}

func TestReceiverWithoutKeys(t *testing.T) {
	srv := httptest.NewServer(New())
	defer srv.Close()
	body := []byte(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	if code := post(t, srv.URL+"/hooks/h", "", body); code != http.StatusUnauthorized {
		t.Fatalf("a notification the receiver cannot verify: HTTP %d, want 401", code)
	}
}
