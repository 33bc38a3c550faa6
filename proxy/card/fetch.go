package card

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

var (
	// ErrCardTooLarge reports an upstream card larger than the size limit
	// (limits.max_card_bytes).
	ErrCardTooLarge = errors.New("agent card exceeds the size limit")
	// ErrCrossOriginRedirect reports an upstream redirecting the card fetch
	// to another origin. Following it would let a third-party agent point the
	// gateway at internal services and have their JSON re-served publicly.
	ErrCrossOriginRedirect = errors.New("agent card redirect to another origin refused")
	// ErrUpstreamStatus reports an upstream answer other than 200 (or a 404
	// with another location left to try).
	ErrUpstreamStatus = errors.New("unexpected upstream status")
)

// fetchCard GETs the first of urls that exists: a 404 moves on to the next
// (agent-card.json first, the legacy agent.json after it); anything else but
// 200 is a failure. version, when not empty, is forwarded as A2A-Version,
// because compatibility servers answer with a different card per version.
func (c *Cache) fetchCard(ctx context.Context, urls []string, version string) ([]byte, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no upstream card URL configured", ErrInvalidOptions)
	}
	for i, u := range urls {
		body, status, err := c.get(ctx, u, version)
		if err != nil {
			return nil, err
		}
		switch {
		case status == http.StatusOK:
			return body, nil
		case status == http.StatusNotFound && i < len(urls)-1:
			continue
		default:
			return nil, fmt.Errorf("%w: %d from %s", ErrUpstreamStatus, status, redact(u))
		}
	}
	return nil, fmt.Errorf("%w: no upstream card URL answered", ErrUpstreamStatus)
}

func (c *Cache) get(ctx context.Context, rawURL, version string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: card URL %s: %w", ErrInvalidOptions, redact(rawURL), err)
	}
	req.Header.Set("Accept", "application/json")
	if version != "" {
		req.Header.Set(a2a.VersionHeader, version)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		// url.Error repeats the full URL, query string included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("fetch agent card from %s: %w", redact(rawURL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Drain a little so the connection can be reused; the body is not needed.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, resp.StatusCode, nil
	}
	if resp.ContentLength > c.maxBytes {
		return nil, 0, fmt.Errorf("%w: %d bytes announced, limit %d", ErrCardTooLarge, resp.ContentLength, c.maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read agent card from %s: %w", redact(rawURL), err)
	}
	if int64(len(body)) > c.maxBytes {
		return nil, 0, fmt.Errorf("%w: limit %d bytes", ErrCardTooLarge, c.maxBytes)
	}
	return body, http.StatusOK, nil
}

// maxRedirects bounds same-origin redirects (agent.json to agent-card.json
// and the like).
const maxRedirects = 5

// sameOriginRedirects wraps the client's redirect policy so that card
// fetches never leave the origin they were sent to.
func sameOriginRedirects(client *http.Client) *http.Client {
	cl := *client
	next := client.CheckRedirect
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrUpstreamStatus, maxRedirects)
		}
		from := via[0].URL
		if !strings.EqualFold(req.URL.Scheme, from.Scheme) || !strings.EqualFold(req.URL.Host, from.Host) {
			return fmt.Errorf("%w: %s to %s", ErrCrossOriginRedirect, redact(from.String()), redact(req.URL.String()))
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cl
}

// redact keeps credentials and query strings out of errors and logs.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// NoRedirects is a CheckRedirect that follows no redirect: a client that
// calls a configured agent stays on it, since a redirect could point the
// gateway at an internal address.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
