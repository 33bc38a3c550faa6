package webhook

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The notification JWT, as the gateway documents it: signed with a key
// of its JWKS, claims iss, aud (the webhook URL), iat, exp, jti (the
// notification id), taskId and request_body_sha256 (hex SHA-256 of the
// exact body). It travels as "Authorization: Bearer" unless the push
// config brings credentials of its own, then in X-A2A-Notification-JWT.
// The receiver checks it with the standard library only, as a consumer
// that shares no code with the gateway would.
const (
	headerJWT      = "X-A2A-Notification-JWT"
	maxJWKSBytes   = 1 << 20
	jwksTimeout    = 10 * time.Second
	maxClockSkew   = time.Minute
	algEdDSA       = "EdDSA"
	claimTaskID    = "taskId"
	claimBodySHA   = "request_body_sha256"
	bearerPrefix   = "Bearer "
	maxTokenLength = 8 << 10
)

// verifier checks notification JWTs against the keys the gateway
// publishes; it fetches them when it meets a kid it does not know.
type verifier struct {
	jwksURL, issuer string
	http            *http.Client

	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

func newVerifier(jwksURL, issuer string) *verifier {
	return &verifier{jwksURL: jwksURL, issuer: issuer, http: &http.Client{Timeout: jwksTimeout}, keys: map[string]ed25519.PublicKey{}}
}

// notificationJWT takes the JWT from where the gateway puts it.
func notificationJWT(h http.Header) (string, error) {
	if raw := h.Get(headerJWT); raw != "" {
		return raw, nil
	}
	raw, ok := strings.CutPrefix(h.Get("Authorization"), bearerPrefix)
	if !ok || raw == "" {
		return "", errors.New("no notification JWT: neither a Bearer token nor " + headerJWT)
	}
	return raw, nil
}

// jwtClaims are the claims the receiver checks.
type jwtClaims struct {
	Issuer   string          `json:"iss"`
	Audience json.RawMessage `json:"aud"`
	IssuedAt json.Number     `json:"iat"`
	Expires  json.Number     `json:"exp"`
	ID       string          `json:"jti"`
	TaskID   string          `json:"taskId"`
	BodySHA  string          `json:"request_body_sha256"`
}

// verify checks raw for a notification of taskID with body, sent to
// audience (the webhook URL), and returns its jti.
func (v *verifier) verify(ctx context.Context, raw string, body []byte, audience, taskID string, now time.Time) (string, error) {
	if len(raw) > maxTokenLength {
		return "", errors.New("the JWT is too long")
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", errors.New("the JWT does not have three parts")
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return "", fmt.Errorf("JWT header: %w", err)
	}
	if header.Alg != algEdDSA {
		return "", fmt.Errorf("JWT alg %q: the suite's gateway signs with %s", header.Alg, algEdDSA)
	}
	key, err := v.key(ctx, header.Kid)
	if err != nil {
		return "", err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", fmt.Errorf("JWT signature: %w", err)
	}
	if !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), sig) {
		return "", fmt.Errorf("the JWT signature does not verify with key %q of %s", header.Kid, v.jwksURL)
	}
	var c jwtClaims
	if err := decodeSegment(parts[1], &c); err != nil {
		return "", fmt.Errorf("JWT claims: %w", err)
	}
	return c.ID, c.check(v.issuer, audience, taskID, body, now)
}

func (c *jwtClaims) check(issuer, audience, taskID string, body []byte, now time.Time) error {
	iat, errI := c.IssuedAt.Int64()
	exp, errE := c.Expires.Int64()
	sum := sha256.Sum256(body)
	switch {
	case c.Issuer != issuer:
		return fmt.Errorf("JWT iss %q, want %q", c.Issuer, issuer)
	case !hasAudience(c.Audience, audience):
		return fmt.Errorf("JWT aud %s, want %q", c.Audience, audience)
	case errI != nil || errE != nil:
		return errors.New("JWT iat or exp is not a number of seconds")
	case time.Unix(iat, 0).After(now.Add(maxClockSkew)):
		return fmt.Errorf("JWT issued in the future (iat %d)", iat)
	case !time.Unix(exp, 0).After(now.Add(-maxClockSkew)):
		return fmt.Errorf("JWT expired (exp %d)", exp)
	case c.ID == "":
		return errors.New("JWT has no jti")
	case c.TaskID != taskID:
		return fmt.Errorf("JWT %s %q, the body's task is %q", claimTaskID, c.TaskID, taskID)
	case c.BodySHA != hex.EncodeToString(sum[:]):
		return fmt.Errorf("JWT %s does not match the body", claimBodySHA)
	}
	return nil
}

// hasAudience accepts aud as one string or a list of strings.
func hasAudience(aud json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == want
	}
	var many []string
	if json.Unmarshal(aud, &many) == nil {
		for _, a := range many {
			if a == want {
				return true
			}
		}
	}
	return false
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// key returns the Ed25519 key named kid, fetching the JWKS when it is not
// known yet (a key rotated in since the last fetch).
func (v *verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys = keys
	k, ok := keys[kid]
	if !ok {
		return nil, fmt.Errorf("kid %q is not in %s", kid, v.jwksURL)
	}
	return k, nil
}

// fetch reads the Ed25519 keys of the JWKS; keys of other types are left
// out, since the suite's gateway signs with Ed25519.
func (v *verifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.jwksURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the JWKS: %s answered HTTP %d", v.jwksURL, resp.StatusCode)
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("read the JWKS: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("the JWKS key %q is not an Ed25519 public key", k.Kid)
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}
