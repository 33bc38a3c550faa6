package authz

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// jsonWebKeySet keeps its members raw so one odd key does not discard the
// rest of an identity provider's set.
type jsonWebKeySet struct {
	Keys []json.RawMessage `json:"keys"`
}

// parseJWKS returns the usable signing keys of a JWKS document and, for the
// log, why the others were skipped. Symmetric ("oct") keys are never taken
// from a key set: an HMAC secret published next to public keys is public.
func parseJWKS(data []byte) ([]*verifyKey, []error, error) {
	var set jsonWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, nil, fmt.Errorf("malformed JWKS: %w", err)
	}
	if set.Keys == nil {
		return nil, nil, errors.New(`malformed JWKS: no "keys" member`)
	}
	var keys []*verifyKey
	var skipped []error
	for i, raw := range set.Keys {
		k, err := parseJWK(raw)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("keys[%d]: %w", i, err))
			continue
		}
		keys = append(keys, k)
	}
	return keys, skipped, nil
}

// parseJWKFile reads a static file holding either one JWK or a JWKS. Keys
// without a kid take defaultKid so tokens can name them.
func parseJWKFile(data []byte, defaultKid string) ([]*verifyKey, []error, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, nil, fmt.Errorf("malformed JSON key file: %w", err)
	}
	var keys []*verifyKey
	var skipped []error
	if _, isSet := probe["keys"]; isSet {
		var err error
		if keys, skipped, err = parseJWKS(data); err != nil {
			return nil, nil, err
		}
	} else {
		k, err := parseJWK(data)
		if err != nil {
			return nil, nil, err
		}
		keys = []*verifyKey{k}
	}
	for _, k := range keys {
		if k.kid == "" {
			k.kid = defaultKid
		}
	}
	return keys, skipped, nil
}

func parseJWK(raw []byte) (*verifyKey, error) {
	var j jose.JWK
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("malformed JWK: %w", err)
	}
	if j.Use != "" && j.Use != "sig" {
		return nil, fmt.Errorf("kid %q: use %q is not a signing key", j.Kid, j.Use)
	}
	if len(j.KeyOps) > 0 && !slices.Contains(j.KeyOps, "verify") {
		return nil, fmt.Errorf("kid %q: key_ops do not include verify", j.Kid)
	}
	var pub crypto.PublicKey
	var err error
	switch j.Kty {
	case "RSA":
		pub, err = rsaFromJWK(&j)
	case "EC":
		pub, err = ecFromJWK(&j)
	case "OKP":
		pub, err = okpFromJWK(&j)
	default:
		return nil, fmt.Errorf("kid %q: unsupported kty %q", j.Kid, j.Kty)
	}
	if err != nil {
		return nil, fmt.Errorf("kid %q: %w", j.Kid, err)
	}
	checked, err := checkPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("kid %q: %w", j.Kid, err)
	}
	k := &verifyKey{kid: j.Kid, alg: j.Alg, key: checked}
	if j.Alg != "" && !k.usableFor(j.Alg) {
		return nil, fmt.Errorf("kid %q: alg %q conflicts with a %s key", j.Kid, j.Alg, describeKey(checked))
	}
	return k, nil
}

// decodeB64URL tolerates the trailing padding some producers emit even
// though RFC 7515 forbids it; the value itself must be valid base64url.
func decodeB64URL(member, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("member %q is not base64url: %w", member, err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("member %q is empty", member)
	}
	return b, nil
}

func rsaFromJWK(j *jose.JWK) (*rsa.PublicKey, error) {
	n, err := decodeB64URL("n", j.N)
	if err != nil {
		return nil, err
	}
	e, err := decodeB64URL("e", j.E)
	if err != nil {
		return nil, err
	}
	if len(e) > 4 {
		return nil, errors.New("RSA exponent is too large")
	}
	var exp int
	for _, b := range e {
		exp = exp<<8 | int(b)
	}
	if exp < 3 || exp%2 == 0 {
		return nil, fmt.Errorf("RSA exponent %d is invalid", exp)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}, nil
}

func curveByName(crv string) (elliptic.Curve, bool) {
	switch crv {
	case "P-256":
		return elliptic.P256(), true
	case "P-384":
		return elliptic.P384(), true
	case "P-521":
		return elliptic.P521(), true
	default:
		return nil, false
	}
}

func ecFromJWK(j *jose.JWK) (*ecdsa.PublicKey, error) {
	curve, ok := curveByName(j.Crv)
	if !ok {
		return nil, fmt.Errorf("unsupported EC curve %q", j.Crv)
	}
	x, err := decodeB64URL("x", j.X)
	if err != nil {
		return nil, err
	}
	y, err := decodeB64URL("y", j.Y)
	if err != nil {
		return nil, err
	}
	size := (curve.Params().BitSize + 7) / 8
	if len(x) != size || len(y) != size {
		return nil, fmt.Errorf("EC coordinates must be %d bytes for %s", size, j.Crv)
	}
	point := make([]byte, 0, 1+2*size)
	point = append(point, 4)
	point = append(point, x...)
	point = append(point, y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
	if err != nil {
		return nil, fmt.Errorf("invalid EC point: %w", err)
	}
	return pub, nil
}

func okpFromJWK(j *jose.JWK) (ed25519.PublicKey, error) {
	if j.Crv != "Ed25519" {
		return nil, fmt.Errorf("unsupported OKP curve %q", j.Crv)
	}
	x, err := decodeB64URL("x", j.X)
	if err != nil {
		return nil, err
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("Ed25519 key must be %d bytes", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(x), nil
}

// maxJWKSBytes bounds a fetched key set; real ones are a few kilobytes.
const maxJWKSBytes = 1 << 20

// refreshCall is one JWKS fetch that any number of callers may wait for.
type refreshCall struct {
	done chan struct{}
	err  error // written before done is closed
}

// remoteKeySet caches a JWKS URL's keys. Reads are lock-free; at most one
// fetch runs at a time, and fetches other than the periodic ones are spaced
// at least minInterval apart, so tokens naming unknown kids can neither
// hammer the identity provider nor stall requests whose keys are cached.
type remoteKeySet struct {
	url         string
	logURL      string // url without credentials, for log lines
	client      *http.Client
	timeout     time.Duration
	every       time.Duration
	minInterval time.Duration
	log         *slog.Logger
	now         func() time.Time

	keys atomic.Pointer[keySet]
	// waiting counts requests blocked on a refresh for an unknown kid.
	waiting atomic.Int64

	ctx context.Context // cancelled by Authenticator.Close
	wg  sync.WaitGroup

	mu        sync.Mutex
	inflight  *refreshCall
	lastStart time.Time
	stopped   bool
	etag      string // only touched by the single running fetch
}

func (k *remoteKeySet) current() *keySet { return k.keys.Load() }

// begin returns the running fetch or starts one. Unless force is set, a
// fetch that started less than minInterval ago (successful or not) means no
// new one: the caller fails fast.
//
// The fetch is traced under the span in ctx (a request waiting for an
// unknown key) but never cancelled by it: other requests share the fetch.
func (k *remoteKeySet) begin(ctx context.Context, force bool) (*refreshCall, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inflight != nil {
		return k.inflight, true
	}
	if k.stopped {
		return nil, false
	}
	now := k.now()
	if !force && !k.lastStart.IsZero() && now.Sub(k.lastStart) < k.minInterval {
		return nil, false
	}
	call := &refreshCall{done: make(chan struct{})}
	k.inflight, k.lastStart = call, now
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		err := k.fetch(trace.ContextWithSpanContext(k.ctx, trace.SpanContextFromContext(ctx)))
		k.mu.Lock()
		k.inflight = nil
		k.mu.Unlock()
		call.err = err
		close(call.done)
	}()
	return call, true
}

// wait blocks until the fetch ends (each fetch is bounded by the timeout),
// ctx ends or the set is closed.
func (k *remoteKeySet) wait(ctx context.Context, call *refreshCall) error {
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return ctx.Err()
	case <-k.ctx.Done():
		return k.ctx.Err()
	}
}

// refreshForUnknownKey reports whether a refresh completed, so a key lookup
// is worth repeating.
func (k *remoteKeySet) refreshForUnknownKey(ctx context.Context) bool {
	call, ok := k.begin(ctx, false)
	if !ok {
		return false
	}
	k.waiting.Add(1)
	defer k.waiting.Add(-1)
	return k.wait(ctx, call) == nil
}

// start performs the first fetch, waiting at most as long as ctx allows,
// then refreshes in the background until Close. A failed first fetch is
// logged rather than fatal: the identity provider may come up after the
// gateway, and until it does tokens of this issuer are simply refused.
func (k *remoteKeySet) start(ctx context.Context) {
	call, ok := k.begin(ctx, true)
	delay := k.every
	if ok {
		if err := k.wait(ctx, call); err != nil {
			k.log.Error("initial JWKS fetch failed; retrying in the background",
				"jwks_url", k.logURL, "error", err)
			delay = k.minInterval
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.wg.Add(1)
	go k.loop(delay)
}

func (k *remoteKeySet) loop(delay time.Duration) {
	defer k.wg.Done()
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-t.C:
		}
		next := k.every
		if call, ok := k.begin(k.ctx, true); ok {
			if err := k.wait(k.ctx, call); err != nil {
				next = k.minInterval
			}
		}
		t.Reset(next)
	}
}

// stop waits for the loop and any fetch; the caller has cancelled k.ctx.
func (k *remoteKeySet) stop() {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.wg.Wait()
}

func (k *remoteKeySet) fetch(ctx context.Context) error {
	err := k.fetchOnce(ctx)
	if err != nil {
		k.log.Warn("JWKS refresh failed", "jwks_url", k.logURL, "error", err)
	}
	return err
}

func (k *remoteKeySet) fetchOnce(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return fmt.Errorf("build JWKS request: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	if k.etag != "" && k.current() != nil {
		req.Header.Set("If-None-Match", k.etag)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		// url.Error repeats the URL, query string included; the log names
		// the URL separately without it.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return fmt.Errorf("fetch JWKS: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		if k.current() != nil {
			return nil
		}
		return errors.New("fetch JWKS: 304 Not Modified without a cached key set")
	default:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxJWKSBytes))
		return fmt.Errorf("fetch JWKS: unexpected status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("read JWKS: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("JWKS is larger than %d bytes", maxJWKSBytes)
	}
	keys, skipped, err := parseJWKS(body)
	if err != nil {
		return err
	}
	for _, reason := range skipped {
		k.log.Debug("JWKS key skipped", "jwks_url", k.logURL, "reason", reason)
	}
	if len(keys) == 0 {
		k.log.Warn("JWKS holds no usable signing key", "jwks_url", k.logURL, "skipped", len(skipped))
	}
	k.keys.Store(newKeySet(keys))
	k.etag = resp.Header.Get("ETag")
	k.log.Debug("JWKS refreshed", "jwks_url", k.logURL, "keys", len(keys), "skipped", len(skipped))
	return nil
}
