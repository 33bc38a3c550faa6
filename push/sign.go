package push

import (
	"bytes"
	"crypto"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// Header names a notification carries. HeaderNotificationToken is the one A2A
// itself names (v0.3 §9.5, v1.0 §6.6); the webhook-* ones are Standard
// Webhooks'; HeaderNotificationJWT is the gateway's own (see Signer.Sign).
const (
	HeaderNotificationToken = a2a.NotificationTokenHeader
	HeaderNotificationJWT   = "X-A2A-Notification-JWT"
	HeaderWebhookID         = "webhook-id"
	HeaderWebhookTimestamp  = "webhook-timestamp"
	HeaderWebhookSignature  = "webhook-signature"
)

// Claims the notification JWT carries beyond iss, aud, iat, exp and jti.
const (
	ClaimTaskID     = "taskId"
	ClaimBodySHA256 = "request_body_sha256" // lower-case hex SHA-256 of the exact body bytes
)

const (
	// DefaultSignatureTTL is exp - iat when SignerOptions.TTL is zero: long
	// enough for clock skew and a slow receiver, short enough that a captured
	// notification is soon useless.
	DefaultSignatureTTL = 5 * time.Minute
	maxSignatureTTL     = time.Hour

	// DefaultWebhookTolerance is how far webhook-timestamp may be from the
	// verifier's clock, as Standard Webhooks' reference libraries use.
	DefaultWebhookTolerance = 5 * time.Minute

	webhookSecretPrefix = "whsec_"
	// Standard Webhooks: "Random. At least 24 bytes (192 bits, 512 maximum)".
	minWebhookSecret = 24
	maxWebhookSecret = 64

	maxIDBytes     = 256
	maxKidBytes    = 256
	maxIssuerBytes = 1024
)

// ErrBadSignature is wrapped by every VerifyStandardWebhook refusal.
var ErrBadSignature = errors.New("standard webhook signature not valid")

// SignerOptions configure the gateway's notification signing keys.
type SignerOptions struct {
	// Issuer is the JWT iss, normally the gateway's public URL.
	Issuer string
	// KeyFiles are PEM private keys (PKCS#8 or SEC 1; Ed25519 or ECDSA
	// P-256/P-384/P-521). The first signs; every one is published in the
	// JWKS. To rotate, publish the new key as a later entry for at least a
	// receiver's JWKS cache lifetime, then move it first, and remove the old
	// one once no notification signed with it can still be in flight
	// (longer than the TTL and the delivery retry window).
	KeyFiles []string
	// KeyIDs are the JWKS kid of each key file, in order. Empty means each
	// file's base name without extension (keys/push-2026.pem is "push-2026").
	KeyIDs []string
	// TTL is exp - iat; zero means DefaultSignatureTTL, at most one hour.
	TTL time.Duration
}

// Validate checks the options without reading the key files; field is their
// path in the configuration.
func (o *SignerOptions) Validate(field string) error {
	var errs []error
	add := func(sub, format string, args ...any) {
		errs = append(errs, fmt.Errorf(field+"."+sub+": "+format, args...))
	}
	if o.Issuer == "" || len(o.Issuer) > maxIssuerBytes || !printable(o.Issuer) {
		add("issuer", "must be 1-%d printable characters", maxIssuerBytes)
	}
	if len(o.KeyFiles) == 0 {
		add("key_files", "at least one signing key is required")
	}
	if len(o.KeyIDs) > 0 && len(o.KeyIDs) != len(o.KeyFiles) {
		add("key_ids", "give one key id per key file (%d ids for %d files) or none", len(o.KeyIDs), len(o.KeyFiles))
	}
	seen := map[string]int{}
	for i, kid := range o.kids() {
		switch j, dup := seen[kid]; {
		case kid == "" || len(kid) > maxKidBytes || !printable(kid):
			add(fmt.Sprintf("key_ids[%d]", i), "must be 1-%d printable characters", maxKidBytes)
		case dup:
			add(fmt.Sprintf("key_ids[%d]", i), "%q is also the key id of key %d", kid, j)
		default:
			seen[kid] = i
		}
	}
	if o.TTL < 0 || o.TTL > maxSignatureTTL || (o.TTL > 0 && o.TTL < time.Second) {
		add("ttl", "must be between 1s and %s", maxSignatureTTL)
	}
	return errors.Join(errs...)
}

func (o *SignerOptions) kids() []string {
	if len(o.KeyIDs) > 0 {
		return o.KeyIDs
	}
	kids := make([]string, len(o.KeyFiles))
	for i, path := range o.KeyFiles {
		base := filepath.Base(path)
		kids[i] = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return kids
}

// Signer signs outgoing notifications. It is immutable and safe for
// concurrent use; a key rotation builds a new Signer.
type Signer struct {
	issuer string
	ttl    time.Duration
	key    crypto.Signer
	kid    string
	method jwt.SigningMethod
	jwks   []byte
	// header is the JWS header segment every notification JWT shares.
	header string
}

// NewSigner loads the key files and renders the JWKS.
func NewSigner(o SignerOptions) (*Signer, error) {
	if err := o.Validate("signing"); err != nil {
		return nil, err
	}
	kids := o.kids()
	keys := make([]crypto.Signer, len(o.KeyFiles))
	published := make([]json.RawMessage, len(o.KeyFiles))
	for i, path := range o.KeyFiles {
		key, err := jose.LoadPrivateKeyPEM(path)
		if err != nil {
			return nil, fmt.Errorf("signing.key_files[%d]: %w", i, err)
		}
		for j := range i {
			if samePublicKey(keys[j], key) {
				return nil, fmt.Errorf("signing.key_files[%d]: the same key as key_files[%d]", i, j)
			}
		}
		keys[i] = key
		if published[i], err = jose.PublicJWK(key, kids[i]); err != nil {
			return nil, fmt.Errorf("signing.key_files[%d]: %w", i, err)
		}
	}
	alg, err := jose.SigningAlgorithm(keys[0])
	if err != nil {
		return nil, fmt.Errorf("signing.key_files[0]: %w", err)
	}
	method := jwt.GetSigningMethod(alg)
	if method == nil {
		return nil, fmt.Errorf("signing.key_files[0]: no JWS implementation for %s", alg)
	}
	jwks, err := json.Marshal(struct {
		Keys []json.RawMessage `json:"keys"`
	}{published})
	if err != nil {
		return nil, fmt.Errorf("signing: encode JWKS: %w", err)
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = DefaultSignatureTTL
	}
	header, err := json.Marshal(map[string]string{"alg": method.Alg(), "kid": kids[0], "typ": "JWT"})
	if err != nil {
		return nil, fmt.Errorf("signing: encode the JWT header: %w", err)
	}
	return &Signer{
		issuer: o.Issuer, ttl: ttl, key: keys[0], kid: kids[0], method: method, jwks: jwks,
		header: base64.RawURLEncoding.EncodeToString(header),
	}, nil
}

// notificationClaims are a notification JWT's claims, the last two named
// ClaimTaskID and ClaimBodySHA256. A struct, and the header encoded once,
// keep the per-attempt work to the claims and the signature itself.
type notificationClaims struct {
	Iss        string `json:"iss"`
	Aud        string `json:"aud"`
	Iat        int64  `json:"iat"`
	Exp        int64  `json:"exp"`
	Jti        string `json:"jti"`
	TaskID     string `json:"taskId"`
	BodySHA256 string `json:"request_body_sha256"`
}

func samePublicKey(a, b crypto.Signer) bool {
	pub, ok := a.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(b.Public())
}

// JWKS returns the public half of every configured key as a JWK Set, for
// the gateway to publish. The caller may keep or modify the slice.
func (s *Signer) JWKS() []byte { return bytes.Clone(s.jwks) }

// JWKSHandler serves JWKS() with validators so receivers can cache it; a
// receiver should still refetch when a token names a kid it has not seen.
func (s *Signer) JWKSHandler() http.Handler {
	sum := sha256.Sum256(s.jwks)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/jwk-set+json")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(s.jwks))
	})
}

// Notification is what Sign needs to know about one delivery attempt.
type Notification struct {
	// ID is stable across retries of the same notification (for example
	// "<taskId>:<seq>"), so receivers can deduplicate: it is the JWT jti and
	// the webhook-id. 1-256 visible ASCII characters without '.', which
	// Standard Webhooks uses as its field separator.
	ID       string
	TaskID   string
	Audience string // the JWT aud: the webhook URL
	Body     []byte // the exact bytes that will be sent
	// Token is the push config's token, sent as X-A2A-Notification-Token.
	Token string
	// AuthScheme and AuthCredentials are the push config's authentication,
	// sent as "Authorization: <scheme> <credentials>".
	AuthScheme, AuthCredentials string
	// WebhookSecret, when set, adds Standard Webhooks signatures (raw bytes;
	// ParseWebhookSecret reads the "whsec_" form).
	WebhookSecret []byte
	// At is the time of this attempt (iat, webhook-timestamp); zero means now.
	At time.Time
}

// Sign returns the headers authenticating one notification attempt.
//
// Where the JWT goes: A2A v1.0 §4.3.3 puts the push config's authentication
// in Authorization, and its webhook guidance has receivers take the sender's
// JWT from "Authorization: Bearer". So when the config carries credentials of
// its own they keep Authorization and the JWT travels in
// X-A2A-Notification-JWT; when it carries none (no authentication, or only
// the scheme "Bearer", the spec's way of asking for the sender's token) the
// JWT is the Bearer token. Content-Type is left to the caller, which knows
// the protocol version of the body.
func (s *Signer) Sign(n Notification) (http.Header, error) {
	if err := n.validate(); err != nil {
		return nil, err
	}
	at := n.At
	if at.IsZero() {
		at = time.Now()
	}
	sum := sha256.Sum256(n.Body)
	claims, err := json.Marshal(notificationClaims{
		Iss: s.issuer, Aud: n.Audience, Iat: at.Unix(), Exp: at.Add(s.ttl).Unix(), Jti: n.ID,
		TaskID: n.TaskID, BodySHA256: hex.EncodeToString(sum[:]),
	})
	if err != nil {
		return nil, fmt.Errorf("sign notification %s: %w", n.ID, err)
	}
	input := s.header + "." + base64.RawURLEncoding.EncodeToString(claims)
	sig, err := s.method.Sign(input, s.key)
	if err != nil {
		return nil, fmt.Errorf("sign notification %s: %w", n.ID, err)
	}
	signed := input + "." + base64.RawURLEncoding.EncodeToString(sig)
	h := make(http.Header)
	if n.AuthCredentials != "" {
		h.Set("Authorization", n.AuthScheme+" "+n.AuthCredentials)
		h.Set(HeaderNotificationJWT, signed)
	} else {
		h.Set("Authorization", "Bearer "+signed)
	}
	if n.Token != "" {
		h.Set(HeaderNotificationToken, n.Token)
	}
	if len(n.WebhookSecret) > 0 {
		ts := strconv.FormatInt(at.Unix(), 10)
		h.Set(HeaderWebhookID, n.ID)
		h.Set(HeaderWebhookTimestamp, ts)
		h.Set(HeaderWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(webhookMAC(n.WebhookSecret, n.ID, ts, n.Body)))
	}
	return h, nil
}

func (n *Notification) validate() error {
	switch {
	case !validID(n.ID):
		return fmt.Errorf("notification id must be 1-%d visible ASCII characters without '.'", maxIDBytes)
	case n.TaskID == "":
		return errors.New("notification task id is required")
	case n.Audience == "":
		return errors.New("notification audience (the webhook URL) is required")
	case !headerSafe(n.Token):
		return errors.New("push config token holds characters not allowed in an HTTP header")
	case n.AuthCredentials != "" && n.AuthScheme == "":
		return errors.New("push config credentials have no authentication scheme")
	case n.AuthCredentials != "" && !validScheme(n.AuthScheme):
		return fmt.Errorf("push config authentication scheme %q is not an HTTP authentication scheme", n.AuthScheme)
	case n.AuthCredentials == "" && n.AuthScheme != "" && !strings.EqualFold(n.AuthScheme, "Bearer"):
		return fmt.Errorf("push config authentication scheme %q has no credentials", n.AuthScheme)
	case !headerSafe(n.AuthCredentials):
		return errors.New("push config credentials hold characters not allowed in an HTTP header")
	case len(n.WebhookSecret) > 0 && (len(n.WebhookSecret) < minWebhookSecret || len(n.WebhookSecret) > maxWebhookSecret):
		return fmt.Errorf("webhook secret must be %d-%d bytes, got %d", minWebhookSecret, maxWebhookSecret, len(n.WebhookSecret))
	}
	return nil
}

func webhookMAC(secret []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ParseWebhookSecret reads a Standard Webhooks secret: base64, with or
// without the "whsec_" prefix. Errors never echo the secret.
func ParseWebhookSecret(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, webhookSecretPrefix))
	if err != nil {
		return nil, errors.New("webhook secret is not base64 (optionally prefixed with whsec_)")
	}
	if len(b) < minWebhookSecret || len(b) > maxWebhookSecret {
		return nil, fmt.Errorf("webhook secret must decode to %d-%d bytes, got %d", minWebhookSecret, maxWebhookSecret, len(b))
	}
	return b, nil
}

// VerifyStandardWebhook checks the webhook-id, webhook-timestamp and
// webhook-signature headers of a received notification against secret, as a
// Standard Webhooks receiver does: the timestamp must be within tolerance of
// now (zero or less means DefaultWebhookTolerance) and one of the
// space-separated "v1,<base64>" signatures must match. Deduplicating on
// webhook-id is left to the receiver.
func VerifyStandardWebhook(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret", ErrBadSignature)
	}
	id, ts, sigs := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature)
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: missing %s, %s or %s", ErrBadSignature, HeaderWebhookID, HeaderWebhookTimestamp, HeaderWebhookSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not an integer", ErrBadSignature, HeaderWebhookTimestamp)
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	limit := int64(tolerance / time.Second)
	if d := now.Unix() - sec; d > limit || d < -limit {
		return fmt.Errorf("%w: timestamp is %ds away from now, beyond the %s tolerance", ErrBadSignature, d, tolerance)
	}
	want := webhookMAC(secret, id, ts, body)
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && subtle.ConstantTimeCompare(got, want) == 1 {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches", ErrBadSignature)
}

func validID(id string) bool {
	if id == "" || len(id) > maxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '.' {
			return false
		}
	}
	return true
}

// validScheme accepts an RFC 9110 token.
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// headerSafe refuses what would split or corrupt a header: control
// characters (tab excepted) and DEL.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}
