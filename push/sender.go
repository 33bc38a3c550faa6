package push

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/a2a-gateway/a2a-gateway/internal/h1"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/version"
)

// The payload of a notification (store.Delivery.Payload) as HTTPSender
// reads it: a magic line, one line of JSON with the request's metadata,
// then the body bytes as they are sent. The body is not re-encoded, so
// large bodies cost no escaping, and a sender that only needs the URL
// reads the first two lines.
const payloadMagic = "a2agw-push/1\n"

// maxResponseDrain bounds how much of a receiver's answer is read, so the
// connection can be reused without letting a receiver stream forever.
const maxResponseDrain = 64 << 10

// Request is what one notification sends. Token, credentials and the
// secret are stored in the queue with the notification, as the push
// config holds them; the dead-letter API never shows them.
type Request struct {
	// URL is the webhook URL, checked against the URLPolicy at
	// registration and again at every delivery.
	URL string
	// ContentType of Body; the protocol version of the push config
	// decides it.
	ContentType string
	Body        []byte
	// Token is the push config's token (X-A2A-Notification-Token).
	Token string
	// AuthScheme and AuthCredentials are the push config's authentication.
	AuthScheme, AuthCredentials string
	// WebhookSecret, when set, adds Standard Webhooks signatures.
	WebhookSecret []byte
	// TraceParent and TraceState are the W3C trace context of the request
	// that produced the event, kept with the queued notification so that
	// each delivery attempt, whenever and on whichever replica it runs, is
	// a span of that trace; empty when the event came from no traced
	// request.
	TraceParent, TraceState string
}

type payloadHeader struct {
	URL             string `json:"url"`
	ContentType     string `json:"contentType"`
	Token           string `json:"token,omitempty"`
	AuthScheme      string `json:"authScheme,omitempty"`
	AuthCredentials string `json:"authCredentials,omitempty"`
	WebhookSecret   []byte `json:"webhookSecret,omitempty"`
	TraceParent     string `json:"traceparent,omitempty"`
	TraceState      string `json:"tracestate,omitempty"`
}

// EncodePayload renders r as a store.Delivery payload for HTTPSender.
func EncodePayload(r Request) ([]byte, error) {
	if err := checkWebhookURL(r.URL); err != nil {
		return nil, err
	}
	if _, _, err := mime.ParseMediaType(r.ContentType); err != nil || !headerSafe(r.ContentType) {
		return nil, fmt.Errorf("push: payload: content type %.64q is not a media type", r.ContentType)
	}
	h, err := json.Marshal(payloadHeader{
		URL: r.URL, ContentType: r.ContentType, Token: r.Token,
		AuthScheme: r.AuthScheme, AuthCredentials: r.AuthCredentials, WebhookSecret: r.WebhookSecret,
		TraceParent: r.TraceParent, TraceState: r.TraceState,
	})
	if err != nil {
		return nil, fmt.Errorf("push: payload: %w", err)
	}
	size := len(payloadMagic) + len(h) + 1 + len(r.Body)
	if size > store.MaxDeliveryPayloadBytes {
		return nil, fmt.Errorf("push: payload: %d bytes, over the limit of %d", size, store.MaxDeliveryPayloadBytes)
	}
	out := make([]byte, 0, size)
	out = append(out, payloadMagic...)
	out = append(out, h...)
	out = append(out, '\n')
	return append(out, r.Body...), nil
}

// DecodePayload reads a payload EncodePayload wrote. Body aliases p.
func DecodePayload(p []byte) (Request, error) {
	rest, ok := bytes.CutPrefix(p, []byte(payloadMagic))
	if !ok {
		return Request{}, errors.New("push: payload: not a push payload of a known version")
	}
	line, body, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return Request{}, errors.New("push: payload: truncated")
	}
	h, err := decodeHeader(line)
	if err != nil {
		return Request{}, fmt.Errorf("push: payload: %w", err)
	}
	if err := checkWebhookURL(h.URL); err != nil {
		return Request{}, err
	}
	return Request{
		URL: h.URL, ContentType: h.ContentType, Body: body, Token: h.Token,
		AuthScheme: h.AuthScheme, AuthCredentials: h.AuthCredentials, WebhookSecret: h.WebhookSecret,
		TraceParent: h.TraceParent, TraceState: h.TraceState,
	}, nil
}

// decodeHeader reads a payload's header line as EncodePayload writes it:
// one object of payloadHeader's members, each at most once and a string.
// Anything else is refused rather than guessed at: encoding/json would
// take a member's name in any case, keep the last of two, and read null
// as empty, none of which EncodePayload writes. Without reflection it also
// costs the delivery path less, which reads the header twice per attempt
// (ReceiverKey and Send).
func decodeHeader(line []byte) (payloadHeader, error) {
	var h payloadHeader
	v, err := jose.ParseJSON(line)
	if err != nil {
		return h, err
	}
	o, ok := v.(*jose.Object)
	if !ok {
		return h, errors.New("the header is not a JSON object")
	}
	for _, m := range o.Members {
		s, ok := m.Value.(string)
		if !ok {
			return h, fmt.Errorf("header member %.64q is not a string", m.Key)
		}
		switch m.Key {
		case "url":
			h.URL = s
		case "contentType":
			h.ContentType = s
		case "token":
			h.Token = s
		case "authScheme":
			h.AuthScheme = s
		case "authCredentials":
			h.AuthCredentials = s
		case "webhookSecret":
			if h.WebhookSecret, err = base64.StdEncoding.DecodeString(s); err != nil {
				return h, errors.New("the header's webhook secret is not base64")
			}
		case "traceparent":
			h.TraceParent = s
		case "tracestate":
			h.TraceState = s
		default:
			return h, fmt.Errorf("unknown header member %.64q", m.Key)
		}
	}
	return h, nil
}

// checkWebhookURL wants an absolute http(s) URL; the URLPolicy decides
// the rest when the request is made.
func checkWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("push: payload: the webhook URL is not an absolute http(s) URL")
	}
	return nil
}

// receiverOf is the part of a webhook URL that names the receiver: scheme,
// host and port. The path and query are left out: some receivers carry
// secrets in them.
func receiverOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", errors.New("the webhook URL has no host")
	}
	host, port := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port), nil
}

// HTTPSender delivers notifications as HTTP POSTs, signed by a Signer, under
// a URLPolicy: its static checks before every request, its address checks
// at every connect (after DNS), no redirects followed, no proxy from the
// environment. Each receiver (scheme, host and port) has its own pool of
// HTTP/1.1 connections, whose exchanges run on the delivering worker's
// goroutine (internal/h1): a delivery costs no hand-offs to net/http's
// per-connection goroutines, and TLS receivers are offered HTTP/1.1 only.
// It is safe for concurrent use.
type HTTPSender struct {
	policy  *URLPolicy
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout time.Duration
	signer  *Signer
	// userAgent is read once: version.UserAgent parses the build info.
	userAgent string

	mu sync.Mutex
	// pools are the receivers' connection pools, each with when it was
	// last used; swept is when unused ones were last dropped.
	pools map[string]*receiverPool
	swept time.Time
}

type receiverPool struct {
	pool *h1.Pool
	used time.Time
}

// Limits of each receiver's pool: its idle connections are as many as a
// receiver may have requests in flight by default, and its answers' headers
// are read up to 64 KiB.
const (
	receiverIdleConns = DefaultPerReceiverConcurrency
	maxAnswerHead     = 64 << 10
)

var (
	_ Sender        = (*HTTPSender)(nil)
	_ ReceiverKeyer = (*HTTPSender)(nil)
)

// NewHTTPSender returns a sender whose requests time out after timeout
// (zero or less: DefaultNotificationTimeout).
func NewHTTPSender(policy *URLPolicy, signer *Signer, timeout time.Duration) *HTTPSender {
	if timeout <= 0 {
		timeout = DefaultNotificationTimeout
	}
	return &HTTPSender{
		policy: policy, dial: policy.dialContext(min(timeout, maxDialTimeout)), timeout: timeout,
		signer: signer, userAgent: version.UserAgent(), pools: map[string]*receiverPool{},
	}
}

// pool returns the connection pool of receiver, whose URL is u, and drops
// the pools of receivers unused for receiverIdle.
func (s *HTTPSender) pool(receiver string, u *url.URL) *h1.Pool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) > receiverSweep {
		s.swept = now
		for k, p := range s.pools {
			if now.Sub(p.used) > receiverIdle {
				delete(s.pools, k)
				p.pool.CloseIdle()
			}
		}
	}
	p := s.pools[receiver]
	if p == nil {
		p = &receiverPool{pool: h1.NewPool(u, h1.Options{
			Dial: s.dial, Handshake: min(s.timeout, maxDialTimeout), ReadBuffer: 4096,
			MaxIdle: receiverIdleConns, MaxHeadBytes: maxAnswerHead,
		})}
		s.pools[receiver] = p
	}
	p.used = now
	return p.pool
}

// ReceiverKey returns the receiver of n: its webhook's scheme, host and
// port.
func (s *HTTPSender) ReceiverKey(n store.Delivery) (string, error) {
	r, err := DecodePayload(n.Payload)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUndeliverable, err)
	}
	return receiverOf(r.URL)
}

// Send POSTs the notification, signed for this attempt. Errors never carry
// the webhook URL beyond its receiver, nor any credential.
func (s *HTTPSender) Send(ctx context.Context, n store.Delivery) (int, time.Duration, error) {
	r, err := DecodePayload(n.Payload)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrUndeliverable, err)
	}
	receiver, err := receiverOf(r.URL)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrUndeliverable, err)
	}
	h, err := s.signer.Sign(Notification{
		ID: n.ID, TaskID: n.TaskID, Audience: r.URL, Body: r.Body, Token: r.Token,
		AuthScheme: r.AuthScheme, AuthCredentials: r.AuthCredentials, WebhookSecret: r.WebhookSecret,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrUndeliverable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, span := startAttempt(ctx, n, r, receiver)
	defer span.End()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return 0, 0, endAttempt(span, 0, fmt.Errorf("%w: request to %s cannot be built", ErrUndeliverable, receiver))
	}
	if _, err := s.policy.checkStatic(req.URL); err != nil {
		return 0, 0, endAttempt(span, 0, fmt.Errorf("%w: %w", ErrUndeliverable, err))
	}
	req.Header = h
	req.Header.Set("Content-Type", r.ContentType)
	req.Header.Set("User-Agent", s.userAgent)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := s.pool(receiver, req.URL).RoundTrip(req)
	if err != nil {
		if errors.Is(err, ErrForbidden) {
			return 0, 0, endAttempt(span, 0, fmt.Errorf("%w: %w", ErrUndeliverable, err))
		}
		return 0, 0, endAttempt(span, 0, err)
	}
	defer resp.Body.Close()
	_ = endAttempt(span, resp.StatusCode, nil)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseDrain))
	var hint time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		hint, _ = retryAfter(resp.Header, time.Now())
	}
	return resp.StatusCode, hint, nil
}
