package card

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// DefaultTTL is how long a card stays fresh when no card_ttl is given.
const DefaultTTL = 300 * time.Second

// maxErrorBackoff caps how long a stale card is served before the next
// refresh attempt, so a failing agent is not asked on every request.
const maxErrorBackoff = 30 * time.Second

// Cache fetches, rewrites and caches a card per (key, protocol version) and
// serves it with ETag, Cache-Control and Vary: A2A-Version; If-None-Match
// gets 304. Keys come from configuration (agent and card variant), so the
// number of entries is bounded by it. The RewriteOptions for a key must not
// change while it is cached; call Forget after a configuration change.
type Cache struct {
	client *http.Client
	ttl    time.Duration
	log    *slog.Logger
	// maxBytes bounds an upstream card; fetchTimeout bounds a fetch whose
	// request has no earlier deadline; now decides freshness, and tests
	// change it.
	maxBytes     int64
	fetchTimeout time.Duration
	now          func() time.Time

	mu      sync.Mutex
	entries map[cacheKey]*entry
	flights map[cacheKey]*flight
}

// cacheKey includes the negotiated version because compatibility servers
// answer each version with a different card.
type cacheKey struct {
	key     string
	version a2a.Version
}

// entry is immutable once stored.
type entry struct {
	body    []byte
	etag    string
	expires time.Time
}

// flight is one upstream fetch that concurrent misses for a key wait on.
type flight struct {
	done    chan struct{}
	waiters int // requests that joined after the first, for the log; guarded by Cache.mu
	ent     *entry
	err     error
}

// NewCache returns a cache that fetches with client (nil: a default client)
// cards of at most maxBytes, each fetch within fetchTimeout (the
// configuration's limits.max_card_bytes and limits.card_fetch_timeout), and
// keeps them fresh for ttl (0: DefaultTTL).
func NewCache(client *http.Client, ttl time.Duration, maxBytes int64, fetchTimeout time.Duration, log *slog.Logger) *Cache {
	if client == nil {
		client = &http.Client{}
	}
	client = sameOriginRedirects(client)
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cache{
		client:       client,
		ttl:          ttl,
		log:          log,
		maxBytes:     maxBytes,
		fetchTimeout: fetchTimeout,
		now:          time.Now,
		entries:      map[cacheKey]*entry{},
		flights:      map[cacheKey]*flight{},
	}
}

// ServeCard answers a card request from the cache, fetching upstreamCardURLs
// in order (a 404 falls through to the next) on a miss or when the entry has
// expired, and rewriting the card with o. When a refresh fails the last good
// card is served; with none, the caller gets a protocol error (502, or 504 on
// timeout) and the failure is logged.
func (c *Cache) ServeCard(w http.ResponseWriter, r *http.Request, key string, upstreamCardURLs []string, o RewriteOptions) {
	w.Header().Add("Vary", a2a.VersionHeader)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		a2a.WriteRESTError(w, a2a.RESTVersion(r), a2a.ErrUnsupportedOperation.
			WithMessage("agent cards are read with GET").
			WithHeader("Allow", "GET, HEAD"))
		return
	}
	v, explicit, verr := a2a.NegotiateVersion(r)
	if verr != nil {
		a2a.WriteRESTError(w, a2a.V10, verr)
		return
	}
	forward := ""
	switch {
	case o.Bridge != nil:
		// A bridged card is rewritten from the agent's own, whatever
		// version its caller reads.
		forward = o.Bridge.Agent.Version.String()
	case explicit:
		forward = v.String()
	}
	e, err := c.lookup(r.Context(), cacheKey{key, v}, upstreamCardURLs, forward, o)
	if err != nil {
		a2a.WriteRESTError(w, a2a.RESTVersion(r), protocolError(err))
		return
	}
	c.write(w, r, e)
}

// Forget drops every cached variant of key, and keeps fetches already under
// way from storing what they bring back.
func (c *Cache) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.key == key {
			delete(c.entries, k)
		}
	}
	for k := range c.flights {
		if k.key == key {
			delete(c.flights, k)
		}
	}
}

func (c *Cache) lookup(ctx context.Context, k cacheKey, urls []string, version string, o RewriteOptions) (*entry, error) {
	c.mu.Lock()
	if e := c.entries[k]; e != nil && c.now().Before(e.expires) {
		c.mu.Unlock()
		return e, nil
	}
	f := c.flights[k]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.flights[k] = f
		// The fetch outlives the request that started it, so that a client
		// hanging up does not fail everyone waiting on the same fetch.
		fctx, cancel := c.fetchContext(ctx)
		go func() {
			defer cancel()
			c.refresh(fctx, k, f, urls, version, o)
		}()
	} else {
		f.waiters++
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.ent, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Cache) fetchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(c.fetchTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

func (c *Cache) refresh(ctx context.Context, k cacheKey, f *flight, urls []string, version string, o RewriteOptions) {
	body, err := c.load(ctx, urls, version, o)
	now := c.now()
	stale := false
	c.mu.Lock()
	// A Forget during the fetch detaches the flight: its waiters still get
	// the result, but it is not stored, since it may reflect old options.
	current := c.flights[k] == f
	switch old := c.entries[k]; {
	case err == nil:
		f.ent = &entry{body: body, etag: etagFor(body), expires: now.Add(c.ttl)}
	case old != nil:
		f.ent = &entry{body: old.body, etag: old.etag, expires: now.Add(min(c.ttl, maxErrorBackoff))}
		stale = true
	default:
		f.err = err
	}
	if current {
		if f.ent != nil {
			c.entries[k] = f.ent
		}
		delete(c.flights, k)
	}
	coalesced := f.waiters
	c.mu.Unlock()

	// Log before releasing the waiters, so that the log line exists by the
	// time anyone sees the outcome.
	switch {
	case err == nil:
		c.log.Debug("agent card fetched",
			"card", k.key, "a2a_version", k.version.String(), "bytes", len(body), "coalesced_requests", coalesced)
	case stale:
		c.log.Warn("agent card refresh failed; serving the last good card",
			"card", k.key, "a2a_version", k.version.String(), "error", err)
	default:
		c.log.Error("agent card fetch failed",
			"card", k.key, "a2a_version", k.version.String(), "error", err)
	}
	close(f.done)
}

func (c *Cache) load(ctx context.Context, urls []string, version string, o RewriteOptions) ([]byte, error) {
	raw, err := c.fetchCard(ctx, urls, version)
	if err != nil {
		return nil, err
	}
	return Rewrite(raw, o)
}

func (c *Cache) write(w http.ResponseWriter, r *http.Request, e *entry) {
	h := w.Header()
	h.Set("ETag", e.etag)
	maxAge := max(0, int((e.expires.Sub(c.now())+time.Second-1)/time.Second))
	h.Set("Cache-Control", "max-age="+strconv.Itoa(maxAge))
	if etagMatches(strings.Join(r.Header.Values("If-None-Match"), ","), e.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.body)
	}
}

// etagFor derives a strong validator from the served bytes, so it changes
// exactly when the card does (the agent's version field may not).
func etagFor(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110 section
// 13.1.2) to a comma-separated list of entity tags.
func etagMatches(header, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || (t != "" && strings.TrimPrefix(t, "W/") == want) {
			return true
		}
	}
	return false
}

// protocolError maps a failure to what the client sees; the detail stays in
// the log.
func protocolError(err error) *a2a.Error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return a2a.ErrUpstreamTimeout
	case errors.Is(err, ErrInvalidOptions):
		return a2a.ErrInternal
	case errors.Is(err, ErrMalformedCard), errors.Is(err, ErrCardTooLarge), errors.Is(err, ErrCrossOriginRedirect),
		errors.Is(err, ErrNoProxiableInterface), errors.Is(err, jose.ErrNotCanonicalizable):
		return a2a.ErrInvalidAgentResponse
	}
	return a2a.ErrUpstreamFailed
}
