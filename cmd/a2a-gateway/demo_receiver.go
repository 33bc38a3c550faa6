package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// demoWebhookPath is where the demo's receiver takes notifications.
const demoWebhookPath = "/webhook"

// Below demoFlakyPath the receiver answers 503 until a POST to
// demoRecoverPath, to show retries, dead letters and redelivery.
const (
	demoFlakyPath   = demoWebhookPath + "/flaky"
	demoRecoverPath = demoFlakyPath + "/recover"
)

const (
	maxNotificationBytes = 4 << 20
	maxJWKSBytes         = 1 << 20
)

// demoReceiver is the demo's webhook: it checks every notification as a
// consumer of the relay would (the JWT against the keys the gateway
// publishes, then the body against the JWT) and logs one line for each.
type demoReceiver struct {
	url     string // its URL: the JWT audience, with its path below it
	jwksURL string
	issuer  string
	client  *http.Client
	log     *slog.Logger

	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
	// recovered is set once the flaky webhook was told to recover.
	recovered atomic.Bool
}

func newDemoReceiver(url, jwksURL, issuer string, log *slog.Logger) *demoReceiver {
	return &demoReceiver{
		url: url, jwksURL: jwksURL, issuer: issuer, log: log,
		client: &http.Client{Timeout: 10 * time.Second}, keys: map[string]ed25519.PublicKey{},
	}
}

// notificationClaims are the claims of a notification JWT the receiver reads.
type notificationClaims struct {
	jwt.RegisteredClaims
	TaskID     string `json:"taskId"`
	BodySHA256 string `json:"request_body_sha256"`
}

func (rc *demoReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != demoWebhookPath && r.URL.Path != demoFlakyPath && r.URL.Path != demoRecoverPath {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case r.URL.Path == demoRecoverPath:
		rc.recovered.Store(true)
		rc.log.Info("flaky webhook recovered: it takes notifications from now on")
		w.WriteHeader(http.StatusNoContent)
		return
	case r.URL.Path == demoFlakyPath && !rc.recovered.Load():
		rc.log.Info("flaky webhook: answering 503 until told to recover")
		http.Error(w, "flaky webhook: not yet recovered", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxNotificationBytes+1))
	if err != nil || len(body) > maxNotificationBytes {
		http.Error(w, "the notification could not be read", http.StatusBadRequest)
		return
	}
	claims, err := rc.verify(r.Context(), strings.TrimSuffix(rc.url, demoWebhookPath)+r.URL.Path, r.Header, body)
	if err != nil {
		rc.log.Warn("push notification refused", "err", err)
		http.Error(w, "the notification is not signed by the gateway", http.StatusUnauthorized)
		return
	}
	ev, err := a2a.ParseResult(body)
	if err != nil || ev.TaskID != claims.TaskID {
		rc.log.Warn("push notification refused", "err", "the body is not an event of the signed task")
		http.Error(w, "the body is not an event of the signed task", http.StatusBadRequest)
		return
	}
	attrs := []any{"task", ev.TaskID, "event", ev.Kind.String()}
	if ev.Kind == a2a.EventTask || ev.Kind == a2a.EventStatusUpdate {
		attrs = append(attrs, "state", ev.State.String())
	}
	rc.log.Info("push notification: signature ok", append(attrs, "notification", claims.ID)...)
	w.WriteHeader(http.StatusNoContent)
}

// verify checks the notification JWT (where the gateway puts it), that it
// is meant for aud, the webhook's URL, and that it signs this body.
func (rc *demoReceiver) verify(ctx context.Context, aud string, h http.Header, body []byte) (*notificationClaims, error) {
	raw := h.Get(push.HeaderNotificationJWT)
	if raw == "" {
		raw, _ = strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	}
	if raw == "" {
		return nil, errors.New("no notification JWT")
	}
	var c notificationClaims
	_, err := jwt.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return rc.key(ctx, kid)
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithIssuer(rc.issuer), jwt.WithAudience(aud),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	if c.ID == "" || c.BodySHA256 != hex.EncodeToString(sum[:]) {
		return nil, errors.New("the JWT does not sign this body")
	}
	return &c, nil
}

// key returns the published key kid, fetching the JWKS again for a kid it
// has not seen (a key rotated in since the last fetch).
func (rc *demoReceiver) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if k, ok := rc.keys[kid]; ok {
		return k, nil
	}
	keys, err := rc.fetchKeys(ctx)
	if err != nil {
		return nil, err
	}
	rc.keys = keys
	k, ok := keys[kid]
	if !ok {
		return nil, fmt.Errorf("kid %q is not published at %s", kid, rc.jwksURL)
	}
	return k, nil
}

// fetchKeys reads the Ed25519 keys of the push JWKS: the demo signs with
// one (jose.GenerateKey).
func (rc *demoReceiver) fetchKeys(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.jwksURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := rc.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the push JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the push JWKS: HTTP %d", resp.StatusCode)
	}
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid string } `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&set); err != nil {
		return nil, fmt.Errorf("read the push JWKS: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("push JWKS key %q is not an Ed25519 public key", k.Kid)
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}
