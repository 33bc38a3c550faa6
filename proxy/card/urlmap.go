package card

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// errNotProxied marks an advertised URL the gateway cannot stand in for. The
// interface carrying it is left out of the rewritten card.
var errNotProxied = errors.New("url is not served through the gateway")

// urlMapper turns the URLs an agent advertises into gateway URLs.
type urlMapper struct {
	upstream *url.URL // scheme, host and base path of the agent; no trailing slash
	public   *url.URL // the gateway's URL for this agent; no trailing slash
}

func newURLMapper(upstream *url.URL, public string) (*urlMapper, error) {
	if upstream == nil {
		return nil, fmt.Errorf("%w: UpstreamBase is required", ErrInvalidOptions)
	}
	if !isHTTP(upstream) || upstream.Host == "" {
		return nil, fmt.Errorf("%w: UpstreamBase must be an absolute http or https URL", ErrInvalidOptions)
	}
	pub, err := url.Parse(public)
	if err != nil {
		return nil, fmt.Errorf("%w: PublicBase: %w", ErrInvalidOptions, err)
	}
	if !isHTTP(pub) || pub.Host == "" || pub.User != nil || pub.RawQuery != "" || pub.Fragment != "" {
		return nil, fmt.Errorf("%w: PublicBase must be an absolute http or https URL without credentials, query or fragment", ErrInvalidOptions)
	}
	up := *upstream
	up.Path = strings.TrimRight(up.Path, "/")
	up.RawPath = ""
	pub.Path = strings.TrimRight(pub.Path, "/")
	pub.RawPath = ""
	return &urlMapper{upstream: &up, public: pub}, nil
}

func isHTTP(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return s == "http" || s == "https"
}

// mapURL returns the gateway URL for an advertised one. A URL under the agent's
// base keeps the part of its path below the base; any other http(s) URL, on
// the agent's host or elsewhere (agents often advertise their own public
// hostname), keeps its whole path, because the gateway forwards every path
// below PublicBase to the agent's base. Relative URLs are resolved against
// the agent's base first. The query is kept; credentials and fragment are not.
//
// Non-http(s) URLs (grpc://, dns:///...) yield errNotProxied: the gateway
// speaks HTTP only, so it cannot stand in for them.
func (m *urlMapper) mapURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("%w: empty url", errNotProxied)
	}
	ref, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNotProxied, err)
	}
	// ResolveReference also removes dot segments from absolute URLs.
	u := m.upstreamDir().ResolveReference(ref)
	if !isHTTP(u) || u.Host == "" {
		return "", fmt.Errorf("%w: scheme %q", errNotProxied, clip(u.Scheme))
	}
	p, err := cleanPath(u.Path)
	if err != nil {
		return "", err
	}
	if m.sameOrigin(u) {
		if rest, ok := underBase(p, m.upstream.Path); ok {
			p = rest
		}
	}
	out := *m.public
	out.Path = m.public.Path + p
	out.RawQuery = u.RawQuery
	return out.String(), nil
}

// upstreamDir is the base as a directory, so that "jsonrpc" resolves to
// base/jsonrpc rather than replacing the base's last segment.
func (m *urlMapper) upstreamDir() *url.URL {
	d := *m.upstream
	d.Path += "/"
	return &d
}

func (m *urlMapper) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, m.upstream.Scheme) &&
		strings.EqualFold(u.Hostname(), m.upstream.Hostname()) &&
		effectivePort(u) == effectivePort(m.upstream)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// underBase reports whether p lies at or below base (segment-wise, so /a2a
// does not cover /a2ab) and returns the remainder, "" or "/...".
func underBase(p, base string) (string, bool) {
	if base == "" {
		return p, true
	}
	if p == base {
		return "", true
	}
	if strings.HasPrefix(p, base+"/") {
		return p[len(base):], true
	}
	return "", false
}

// cleanPath refuses dot segments that survive reference resolution in
// percent-encoded form ("%2e%2e"): many clients decode them and would then
// climb out of this agent's prefix on the gateway into another agent's.
func cleanPath(p string) (string, error) {
	if p == "" || p == "/" {
		return "", nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("%w: dot segment in path", errNotProxied)
		}
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p, nil
}

// clip shortens third-party text for error messages.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}
