package gateway_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/proxy/card"
)

// With a signing key configured, rewritten cards carry the gateway's
// signature, which verifies with the key the gateway publishes.
func TestCardsAreResigned(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "card-key.pem")
	if err := jose.WritePrivateKeyPEM(path, key); err != nil {
		t.Fatal(err)
	}
	env := gwtest.Start(t, func(c *config.Config) {
		c.CardSigning = config.CardSigningOptions{KeyFile: path, KeyID: "cards-1", JWKSURL: "https://gw.example.com/.well-known/jwks.json"}
	})
	for _, p := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		resp, body := env.Do(t, http.MethodGet, env.AgentBase+p, "", "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, body)
		}
		if err := card.Verify(body, map[string]crypto.PublicKey{"cards-1": key.Public()}); err != nil {
			t.Fatalf("%s: the gateway's signature does not verify: %v", p, err)
		}
		tampered := append([]byte(nil), body...)
		var m map[string]any
		_ = json.Unmarshal(tampered, &m)
		m["name"] = "Someone Else"
		tampered, _ = json.Marshal(m)
		if card.Verify(tampered, map[string]crypto.PublicKey{"cards-1": key.Public()}) == nil {
			t.Fatalf("%s: a tampered card still verifies", p)
		}
	}
	resp, jwks := env.Do(t, http.MethodGet, env.Gateway+"/.well-known/jwks.json", "", "", nil)
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
			Kty string `json:"kty"`
		} `json:"keys"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(jwks, &set) != nil || len(set.Keys) != 1 || set.Keys[0].Kid != "cards-1" || set.Keys[0].Kty != "EC" {
		t.Fatalf("published JWKS: %d %s", resp.StatusCode, jwks)
	}
}
