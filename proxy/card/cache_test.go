package card

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// upstream is a real agent on loopback whose answers a test can change.
type upstream struct {
	srv      *httptest.Server
	hits     atomic.Int64
	mu       sync.Mutex
	handler  http.HandlerFunc
	versions []string // A2A-Version of each request, "" when absent
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{handler: h}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		u.mu.Lock()
		u.versions = append(u.versions, r.Header.Get(a2a.VersionHeader))
		h := u.handler
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) set(h http.HandlerFunc) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.handler = h
}

func (u *upstream) cardURLs() []string {
	return []string{u.srv.URL + "/.well-known/agent-card.json", u.srv.URL + "/.well-known/agent.json"}
}

func serveBytes(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

func failWith(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Error(w, "agent down", status) }
}

// fakeClock is advanced by tests instead of sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type gateway struct {
	cache *Cache
	srv   *httptest.Server
	clock *fakeClock
	logs  *syncBuffer
}

// newGateway serves one agent's card through a Cache on a loopback server;
// limits change the cache's limits (nil ones are skipped).
func newGateway(t *testing.T, up *upstream, limits ...func(*Cache)) *gateway {
	t.Helper()
	g := &gateway{clock: &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(g.logs, nil))
	g.cache = NewCache(up.srv.Client(), 0, testMaxCardBytes, testFetchTimeout, log)
	g.cache.now = g.clock.Now
	for _, set := range limits {
		if set != nil {
			set(g.cache)
		}
	}
	o := RewriteOptions{UpstreamBase: mustURL(t, up.srv.URL+"/a2a"), PublicBase: testPublic, Security: GatewaySecurity(true, "")}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.cache.ServeCard(w, r, "geo/public", up.cardURLs(), o)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (g *gateway) do(t *testing.T, method string, header map[string]string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, g.srv.URL+"/agents/geo/.well-known/agent-card.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return response{resp.StatusCode, resp.Header, body}
}

func cardFor(t *testing.T, name string) []byte {
	t.Helper()
	return []byte(strings.ReplaceAll(string(fixture(t, name)), "http://georoute.internal:8080", "http://agent.invalid"))
}

func TestServeCardValidators(t *testing.T) {
	up := newUpstream(t, serveBytes(cardFor(t, "v03.json")))
	g := newGateway(t, up)

	first := g.do(t, http.MethodGet, nil)
	if first.status != http.StatusOK {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	etag := first.header.Get("ETag")
	for k, want := range map[string]string{
		"Content-Type":  "application/json",
		"Cache-Control": "max-age=300",
		"Vary":          a2a.VersionHeader,
	} {
		if got := first.header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag = %q, want a strong entity tag", etag)
	}
	if !strings.Contains(string(first.body), testPublic) || !json.Valid(first.body) {
		t.Fatalf("body is not the rewritten card: %s", first.body)
	}

	tests := []struct {
		name        string
		method      string
		ifNoneMatch string
		wantStatus  int
		wantBody    bool
	}{
		{"same tag", http.MethodGet, etag, http.StatusNotModified, false},
		{"weak form of the tag", http.MethodGet, "W/" + etag, http.StatusNotModified, false},
		{"tag in a list", http.MethodGet, `"other", ` + etag, http.StatusNotModified, false},
		{"any tag", http.MethodGet, "*", http.StatusNotModified, false},
		{"other tag", http.MethodGet, `"other"`, http.StatusOK, true},
		{"no validator", http.MethodGet, "", http.StatusOK, true},
		{"head", http.MethodHead, "", http.StatusOK, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.ifNoneMatch != "" {
				h["If-None-Match"] = tc.ifNoneMatch
			}
			r := g.do(t, tc.method, h)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d", r.status, tc.wantStatus)
			}
			if r.header.Get("ETag") != etag || r.header.Get("Vary") != a2a.VersionHeader || r.header.Get("Cache-Control") == "" {
				t.Errorf("validators missing: %v", r.header)
			}
			if tc.wantBody != (len(r.body) > 0) {
				t.Errorf("body present = %v, want %v", len(r.body) > 0, tc.wantBody)
			}
			if tc.wantBody && !bytes.Equal(r.body, first.body) {
				t.Errorf("body differs from the first response")
			}
		})
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("upstream fetched %d times, want 1", n)
	}
}

func TestServeCardPerVersion(t *testing.T) {
	v03, v10 := cardFor(t, "v03.json"), cardFor(t, "v10.json")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		// A compatibility server: the card depends on the requested version.
		if r.Header.Get(a2a.VersionHeader) == "1.0" {
			serveBytes(v10)(w, r)
			return
		}
		serveBytes(v03)(w, r)
	})
	g := newGateway(t, up)

	plain := g.do(t, http.MethodGet, nil)
	modern := g.do(t, http.MethodGet, map[string]string{a2a.VersionHeader: "1.0.1"})
	again := g.do(t, http.MethodGet, map[string]string{a2a.VersionHeader: "1.0"})
	for _, r := range []response{plain, modern, again} {
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	if _, ok := decode(t, plain.body)[fieldURL]; !ok {
		t.Errorf("header-less request did not get the 0.3 card")
	}
	if _, ok := decode(t, modern.body)[fieldSupportedInterfaces]; !ok {
		t.Errorf("1.0 request did not get the 1.0 card")
	}
	if plain.header.Get("ETag") == modern.header.Get("ETag") || !bytes.Equal(modern.body, again.body) {
		t.Errorf("variants are not cached separately")
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.versions) != 2 || up.versions[0] != "" || up.versions[1] != "1.0" {
		t.Errorf("upstream saw A2A-Version %q, want [\"\" \"1.0\"]", up.versions)
	}

	bad := g.do(t, http.MethodGet, map[string]string{a2a.VersionHeader: "2.0"})
	if bad.status != http.StatusBadRequest || !strings.Contains(string(bad.body), "VERSION_NOT_SUPPORTED") {
		t.Errorf("unsupported version: %d %s", bad.status, bad.body)
	}
}

func TestServeCardCoalescesConcurrentMisses(t *testing.T) {
	const clients = 8
	release := make(chan struct{})
	card := cardFor(t, "v10.json")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		serveBytes(card)(w, r)
	})
	g := newGateway(t, up)

	results := make(chan response, clients)
	for range clients {
		go func() { results <- g.do(t, http.MethodGet, nil) }()
	}
	// Release the agent only once every request waits on the one fetch.
	waitFor(t, func() bool {
		g.cache.mu.Lock()
		defer g.cache.mu.Unlock()
		f := g.cache.flights[cacheKey{"geo/public", a2a.V03}]
		return f != nil && f.waiters == clients-1
	})
	close(release)
	var first []byte
	for range clients {
		r := <-results
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if first == nil {
			first = r.body
		} else if !bytes.Equal(first, r.body) {
			t.Errorf("clients got different cards")
		}
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("upstream fetched %d times for %d concurrent misses, want 1", n, clients)
	}
}

// waitFor polls cond; the deadline only guards against a hang.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestServeCardStaleWhileError(t *testing.T) {
	tests := []struct {
		name    string
		failure http.HandlerFunc
	}{
		{"agent answers 500", failWith(http.StatusInternalServerError)},
		{"agent serves a broken card", serveBytes([]byte(`{"url":`))},
		{"agent cuts the card short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "4096")
			_, _ = io.WriteString(w, `{"url":"http://agent.invalid/a2a",`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, serveBytes(cardFor(t, "v03.json")))
			g := newGateway(t, up)
			good := g.do(t, http.MethodGet, nil)
			if good.status != http.StatusOK {
				t.Fatalf("status %d", good.status)
			}

			up.set(tc.failure)
			g.clock.Advance(DefaultTTL + time.Second)
			stale := g.do(t, http.MethodGet, nil)
			if stale.status != http.StatusOK || !bytes.Equal(stale.body, good.body) || stale.header.Get("ETag") != good.header.Get("ETag") {
				t.Fatalf("stale card not served: %d %s", stale.status, stale.body)
			}
			if n := up.hits.Load(); n != 2 {
				t.Fatalf("upstream hits = %d, want 2 (one refresh attempt)", n)
			}
			if !strings.Contains(g.logs.String(), "serving the last good card") {
				t.Errorf("refresh failure not logged: %s", g.logs.String())
			}

			// Within the back-off the failing agent is left alone.
			g.do(t, http.MethodGet, nil)
			if n := up.hits.Load(); n != 2 {
				t.Errorf("upstream hits = %d during back-off, want 2", n)
			}

			// After it, a recovered agent's card replaces the stale one.
			up.set(serveBytes(cardFor(t, "hybrid.json")))
			g.clock.Advance(maxErrorBackoff + time.Second)
			fresh := g.do(t, http.MethodGet, nil)
			if fresh.status != http.StatusOK || bytes.Equal(fresh.body, good.body) {
				t.Errorf("recovered card not served: %d", fresh.status)
			}
		})
	}
}

func maxCardBytes(n int64) func(*Cache) { return func(c *Cache) { c.maxBytes = n } }

// The limits as the configuration's defaults set them.
const (
	testMaxCardBytes = 1 << 20
	testFetchTimeout = 10 * time.Second
)

func TestServeCardFailures(t *testing.T) {
	big := `{"url":"http://agent.invalid/a2a","description":"` + strings.Repeat("x", 4096) + `"}`
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		limit      func(*Cache)
		wantStatus int
		wantLog    string
	}{
		{"agent answers 503", failWith(http.StatusServiceUnavailable), nil, http.StatusBadGateway, "unexpected upstream status"},
		{"no card anywhere", failWith(http.StatusNotFound), nil, http.StatusBadGateway, "404"},
		{"malformed card", serveBytes([]byte(`["not","a","card"]`)), nil, http.StatusBadGateway, ErrMalformedCard.Error()},
		{"only grpc", serveBytes([]byte(`{"supportedInterfaces":[{"url":"grpc://a:1","protocolBinding":"GRPC"}]}`)), nil, http.StatusBadGateway, ErrNoProxiableInterface.Error()},
		{"oversize card with length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			_, _ = io.WriteString(w, big)
		}, maxCardBytes(1024), http.StatusBadGateway, "announced"},
		{"oversize card chunked", func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i < 8; i++ {
				_, _ = io.WriteString(w, big[i*len(big)/8:(i+1)*len(big)/8])
				http.NewResponseController(w).Flush()
			}
		}, maxCardBytes(1024), http.StatusBadGateway, ErrCardTooLarge.Error()},
		{"agent too slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			func(c *Cache) { c.fetchTimeout = 50 * time.Millisecond }, http.StatusGatewayTimeout, "deadline exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, tc.handler)
			g := newGateway(t, up, tc.limit)
			r := g.do(t, http.MethodGet, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantStatus, r.body)
			}
			var body struct {
				Error struct {
					Code    int    `json:"code"`
					Status  string `json:"status"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil || body.Error.Code != tc.wantStatus || body.Error.Message == "" {
				t.Errorf("not a protocol error body: %s", r.body)
			}
			if strings.Contains(string(r.body), up.srv.URL) {
				t.Errorf("error body leaks the upstream address: %s", r.body)
			}
			if r.header.Get("Vary") != a2a.VersionHeader {
				t.Errorf("Vary missing on error")
			}
			logs := g.logs.String()
			if !strings.Contains(logs, "agent card fetch failed") || !strings.Contains(logs, tc.wantLog) {
				t.Errorf("log lacks %q: %s", tc.wantLog, logs)
			}
		})
	}
}

func TestServeCardFallsBackToLegacyPath(t *testing.T) {
	card := cardFor(t, "v03.json")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent.json" {
			serveBytes(card)(w, r)
			return
		}
		http.NotFound(w, r)
	})
	g := newGateway(t, up)
	if r := g.do(t, http.MethodGet, nil); r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if n := up.hits.Load(); n != 2 {
		t.Errorf("upstream hits = %d, want 2 (agent-card.json, then agent.json)", n)
	}
}

func TestServeCardRefusesOtherMethods(t *testing.T) {
	up := newUpstream(t, serveBytes(cardFor(t, "v03.json")))
	g := newGateway(t, up)
	r := g.do(t, http.MethodPost, nil)
	if r.status != http.StatusBadRequest || r.header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: status %d, Allow %q", r.status, r.header.Get("Allow"))
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("upstream fetched for a refused method")
	}
}

func TestCacheForget(t *testing.T) {
	up := newUpstream(t, serveBytes(cardFor(t, "v03.json")))
	g := newGateway(t, up)
	g.do(t, http.MethodGet, nil)
	g.cache.Forget("geo/public")
	g.do(t, http.MethodGet, nil)
	if n := up.hits.Load(); n != 2 {
		t.Errorf("upstream hits = %d after Forget, want 2", n)
	}
}

func TestServeCardRedirects(t *testing.T) {
	card := cardFor(t, "v03.json")
	internal := newUpstream(t, serveBytes([]byte(`{"url":"http://agent.invalid/a2a","x-internal-secret":"s3cr3t"}`)))
	tests := []struct {
		name       string
		target     func(up *upstream) string
		wantStatus int
	}{
		{"same origin followed", func(up *upstream) string { return up.srv.URL + "/cards/current.json" }, http.StatusOK},
		{"other origin refused", func(*upstream) string { return internal.srv.URL + "/internal/config.json" }, http.StatusBadGateway},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var up *upstream
			up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/cards/current.json" {
					serveBytes(card)(w, r)
					return
				}
				http.Redirect(w, r, tc.target(up), http.StatusFound)
			})
			g := newGateway(t, up)
			r := g.do(t, http.MethodGet, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantStatus, r.body)
			}
			if strings.Contains(string(r.body), "s3cr3t") {
				t.Fatalf("internal document re-served")
			}
		})
	}
	if n := internal.hits.Load(); n != 0 {
		t.Errorf("the other origin was fetched %d times", n)
	}
}

func TestCacheForgetDuringFetch(t *testing.T) {
	release := make(chan struct{})
	card := cardFor(t, "v03.json")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		serveBytes(card)(w, r)
	})
	g := newGateway(t, up)
	done := make(chan response, 1)
	go func() { done <- g.do(t, http.MethodGet, nil) }()
	waitFor(t, func() bool { return up.hits.Load() == 1 })
	g.cache.Forget("geo/public")
	close(release)
	if r := <-done; r.status != http.StatusOK {
		t.Fatalf("waiting request: status %d", r.status)
	}
	if r := g.do(t, http.MethodGet, nil); r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	if n := up.hits.Load(); n != 2 {
		t.Errorf("upstream hits = %d, want 2: a fetch started before Forget must not fill the cache", n)
	}
}
