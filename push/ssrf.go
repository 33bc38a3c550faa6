package push

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrForbidden marks a destination the URL policy refuses, as opposed to one
// that could not be resolved or reached. Refusals at registration and at dial
// time both wrap it, so errors.Is(err, ErrForbidden) holds for the error an
// *http.Client from URLPolicy.Client returns too.
var ErrForbidden = errors.New("destination forbidden by the webhook URL policy")

// DefaultDeliveryTimeout is the whole-request timeout URLPolicy.Client uses
// when given none; A2A recommends 10-30 s for webhook calls.
const DefaultDeliveryTimeout = 15 * time.Second

const (
	maxURLBytes  = 4096
	maxHostBytes = 253
	// maxDialTimeout keeps a black-holed destination from holding a
	// delivery worker for the whole request budget before any byte is sent.
	maxDialTimeout = 10 * time.Second
)

// URLError is a refused webhook URL. Reason is written for the tenant who
// registered the URL: it names the host and why, never the rest of the URL
// (query strings often carry credentials).
type URLError struct {
	Host   string // empty when the URL did not parse far enough to have one
	Reason string
	Err    error // ErrForbidden for policy refusals, else the resolution error
}

func (e *URLError) Error() string {
	if e.Host == "" {
		return "webhook URL refused: " + e.Reason
	}
	return fmt.Sprintf("webhook URL refused: host %q: %s", e.Host, e.Reason)
}

func (e *URLError) Unwrap() error { return e.Err }

func refuse(host, format string, args ...any) *URLError {
	return &URLError{Host: host, Reason: fmt.Sprintf(format, args...), Err: ErrForbidden}
}

// URLPolicy decides which webhook destinations the gateway may call. It is
// immutable and safe for concurrent use.
type URLPolicy struct {
	allow    allowRules
	ranges   []addrRange
	resolver *net.Resolver
}

// NewURLPolicy compiles allow; a nil resolver means net.DefaultResolver. The
// same resolver serves registration checks and delivery dials.
func NewURLPolicy(allow Allowlist, resolver *net.Resolver) (*URLPolicy, error) {
	ranges := forbiddenRanges()
	rules, errs := compileAllowlist("allowlist", allow, ranges)
	if len(errs) > 0 {
		return nil, fmt.Errorf("webhook URL policy: %w", errors.Join(errs...))
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return &URLPolicy{allow: rules, ranges: ranges, resolver: resolver}, nil
}

// target is what the static checks learn about a URL's host.
type target struct {
	host        string     // canonical: lower case, no trailing dot, no brackets
	addr        netip.Addr // valid when the host is an IP literal
	nameAllowed bool       // the host name itself is on the allowlist
}

// CheckURL is the registration-time check: an absolute http(s) URL without
// userinfo, https unless the host is allowlisted, and every address the host
// resolves to now public or allowlisted. Every refusal is a *URLError.
// Passing says nothing about later: deliveries are checked again at dial time.
func (p *URLPolicy) CheckURL(ctx context.Context, raw string) error {
	if len(raw) > maxURLBytes {
		return refuse("", "the URL is longer than %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, which may hold credentials.
		return refuse("", "not a valid URL")
	}
	t, err := p.checkStatic(u)
	if err != nil {
		return err
	}
	if t.addr.IsValid() {
		return nil
	}
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", t.host)
	if err != nil {
		return &URLError{Host: t.host, Reason: "the host name cannot be resolved", Err: err}
	}
	if len(addrs) == 0 {
		return &URLError{Host: t.host, Reason: "the host name has no addresses", Err: ErrForbidden}
	}
	for _, a := range addrs {
		if err := p.checkAddr(t.host, a, t.nameAllowed, true); err != nil {
			return err
		}
	}
	return nil
}

// checkStatic runs every check that needs no DNS: scheme, userinfo, port,
// host syntax, names refused outright and IP literals.
func (p *URLPolicy) checkStatic(u *url.URL) (target, error) {
	if u.Opaque != "" || u.Scheme == "" || u.Host == "" {
		return target{}, refuse("", "the URL must be absolute, like https://host/path")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return target{}, refuse("", "scheme %q is not allowed; use https", u.Scheme)
	}
	if u.User != nil {
		return target{}, refuse("", "the URL must not carry a user name or password; use the push config's authentication")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return target{}, refuse("", "port %q is out of range", port)
		}
	}
	t, err := p.checkHost(u.Hostname())
	if err != nil {
		return target{}, err
	}
	if u.Scheme == "http" && !t.nameAllowed && !(t.addr.IsValid() && p.allow.containsAddr(t.addr)) {
		return target{}, refuse(t.host, "plain http is allowed only for hosts on the tenant's allowlist; use https")
	}
	return t, nil
}

func (p *URLPolicy) checkHost(h string) (target, error) {
	if h == "" {
		return target{}, refuse("", "the URL has no host")
	}
	host := canonicalHost(h)
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return target{}, refuse(h, "IPv6 zone identifiers are not allowed")
		}
		t := target{host: a.String(), addr: a}
		return t, p.checkAddr(t.host, a, false, false)
	}
	if reason := hostSyntax(host); reason != "" {
		return target{}, refuse(host, "%s", reason)
	}
	if isMetadataHost(host) {
		return target{}, refuse(host, "cloud metadata services are never a webhook destination")
	}
	t := target{host: host, nameAllowed: p.allow.matchesName(host)}
	if t.nameAllowed {
		return t, nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return target{}, refuse(host, "localhost names always mean this machine (RFC 6761)")
	}
	if !strings.Contains(host, ".") {
		return target{}, refuse(host, "single-label host names resolve through local search domains; use a fully qualified name")
	}
	return t, nil
}

// checkAddr decides one address: public passes; cloud metadata, multicast,
// unspecified and reserved never pass; the rest pass only for an
// allowlisted host name or an address inside an allowlisted IP or CIDR.
func (p *URLPolicy) checkAddr(host string, a netip.Addr, nameAllowed, resolved bool) error {
	reason, never := classify(p.ranges, a)
	if reason == "" {
		return nil
	}
	if !never && (nameAllowed || p.allow.containsAddr(a)) {
		return nil
	}
	shown := a.WithZone("")
	if resolved {
		return refuse(host, "resolves to %s, %s", shown, reason)
	}
	if host == shown.String() {
		return refuse(host, "%s", reason)
	}
	return refuse(host, "%s is %s", shown, reason)
}

// Client returns the client deliveries must use. Its dialer checks the
// address actually connected to, after DNS, so a host that resolved to a
// public address at registration and now resolves to a private one is
// refused at connect time; each request's URL gets the static checks again,
// so a tightened allowlist applies to URLs registered before; redirects are
// returned rather than followed (a 3xx could point anywhere); no proxy is
// taken from the environment. timeout bounds each whole request; zero or less
// means DefaultDeliveryTimeout. Each call builds its own connection pool, so
// build one client per worker pool and reuse it.
func (p *URLPolicy) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultDeliveryTimeout
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            p.dialContext(min(timeout, maxDialTimeout)),
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    min(timeout, maxDialTimeout),
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    DefaultPerReceiverConcurrency, // a busy receiver's connections are used again, not dialed anew
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: &guardedTransport{policy: p, next: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: timeout,
	}
}

func (p *URLPolicy) dialContext(timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		host = canonicalHost(host)
		nameAllowed := p.allow.matchesName(host)
		d := net.Dialer{
			Timeout:   timeout,
			KeepAlive: 30 * time.Second,
			Resolver:  p.resolver,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return refuse(host, "dialed address %q is not an IP address", address)
				}
				return p.checkAddr(host, ap.Addr(), nameAllowed, true)
			},
		}
		return d.DialContext(ctx, network, addr)
	}
}

// guardedTransport repeats the static URL checks on every request.
type guardedTransport struct {
	policy *URLPolicy
	next   *http.Transport
}

func (g *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := g.policy.checkStatic(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // http.RoundTripper must close the body even on error
		}
		return nil, err
	}
	return g.next.RoundTrip(req)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the pool.
func (g *guardedTransport) CloseIdleConnections() { g.next.CloseIdleConnections() }

func canonicalHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// hostSyntax explains why h (canonical) is not a host name, or returns "".
// The last label must start with a letter: no top-level domain is numeric,
// and refusing numeric ones keeps inet_aton forms such as "2130706433",
// "0177.0.0.1", "0x7f.1" and "127.1" away from resolvers that would read
// them as IPv4 addresses.
func hostSyntax(h string) string {
	if len(h) > maxHostBytes {
		return fmt.Sprintf("the host name is longer than %d bytes", maxHostBytes)
	}
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			return "internationalised host names must be given in their ASCII (xn--) form"
		}
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "not a valid host name: each label must be 1-63 characters"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "not a valid host name: a label starts or ends with a hyphen"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Sprintf("not a valid host name: character %q", c)
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] < 'a' || last[0] > 'z' {
		if a, ok := legacyIPv4(h); ok {
			return fmt.Sprintf("non-canonical IPv4 literal (some resolvers read it as %s); write addresses in dotted-quad form", a)
		}
		return "not a valid host name: the last label is not alphabetic"
	}
	return ""
}

// legacyIPv4 parses the inet_aton forms (1-4 parts, each decimal, 0-octal or
// 0x-hex, the last filling the remaining bytes), only to say in a refusal
// what such a host would have meant.
func legacyIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, s := range parts {
		base := 10
		switch {
		case len(s) > 1 && (s[:2] == "0x"):
			base, s = 16, s[2:]
			if s == "" {
				s = "0"
			}
		case len(s) > 1 && s[0] == '0':
			base, s = 8, s[1:]
		}
		v, err := strconv.ParseUint(s, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var ip uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		ip |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	ip |= last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// isMetadataHost names cloud instance-metadata services, refused by name so
// the refusal is clear even where DNS would give a link-local answer.
func isMetadataHost(h string) bool {
	switch h {
	case "metadata", "metadata.google.internal", "metadata.goog",
		"instance-data", "instance-data.ec2.internal":
		return true
	}
	return false
}

// addrRange is one forbidden block. never blocks stay refused whatever the
// allowlist says; embedV4 > 0 marks an IPv6 block that carries an IPv4
// address at that byte offset, which is judged instead.
type addrRange struct {
	prefix  netip.Prefix
	reason  string
	never   bool
	embedV4 int
}

// forbiddenRanges lists, in the order they are tried, every block that is
// not a public unicast destination. The never blocks come first so that,
// say, the metadata address inside link-local space keeps its stronger rule.
func forbiddenRanges() []addrRange {
	block := func(cidr, reason string) addrRange {
		return addrRange{prefix: netip.MustParsePrefix(cidr), reason: reason}
	}
	never := func(cidr, reason string) addrRange {
		r := block(cidr, reason)
		r.never = true
		return r
	}
	embeds := func(cidr, reason string, offset int) addrRange {
		r := block(cidr, reason)
		r.embedV4 = offset
		return r
	}
	const metadata = "a cloud metadata endpoint"
	return []addrRange{
		never("169.254.169.254/32", metadata), // AWS, GCP, Azure, OCI, OpenStack
		never("169.254.170.2/32", metadata),   // AWS ECS task metadata
		never("100.100.100.200/32", metadata), // Alibaba Cloud
		never("168.63.129.16/32", metadata),   // Azure WireServer, public space but host-local
		never("fd00:ec2::254/128", metadata),  // AWS IMDS over IPv6
		never("0.0.0.0/8", `in "this network" (0.0.0.0/8)`),
		never("255.255.255.255/32", "the broadcast address"),
		never("224.0.0.0/4", "a multicast address"),
		never("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
		never("::/128", "the unspecified address"),
		never("ff00::/8", "a multicast address"),

		block("127.0.0.0/8", "a loopback address"),
		block("10.0.0.0/8", "a private address (RFC 1918)"),
		block("172.16.0.0/12", "a private address (RFC 1918)"),
		block("192.168.0.0/16", "a private address (RFC 1918)"),
		block("100.64.0.0/10", "a shared address (100.64.0.0/10, RFC 6598)"),
		block("169.254.0.0/16", "a link-local address"),
		block("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
		block("192.0.2.0/24", "a documentation address (192.0.2.0/24)"),
		block("198.51.100.0/24", "a documentation address (198.51.100.0/24)"),
		block("203.0.113.0/24", "a documentation address (203.0.113.0/24)"),
		block("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),

		block("::1/128", "a loopback address"),
		block("::/96", "an IPv4-compatible IPv6 address (deprecated)"),
		block("fe80::/10", "a link-local address"),
		block("fec0::/10", "a site-local address (deprecated)"),
		block("fc00::/7", "a unique-local address (fc00::/7)"),
		block("100::/64", "a discard-only address (100::/64)"),
		block("2001:db8::/32", "a documentation address (2001:db8::/32)"),
		block("2001::/32", "a Teredo tunnel address"),
		block("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)"),
		embeds("64:ff9b::/96", "NAT64", 12),
		embeds("2002::/16", "6to4", 2),
	}
}

// classify explains why a is not a public unicast address ("" if it is) and
// whether the allowlist may lift that. IPv4-mapped addresses and IPv6 forms
// that embed an IPv4 address are judged by the IPv4 address they reach.
func classify(ranges []addrRange, a netip.Addr) (reason string, never bool) {
	a = a.WithZone("")
	if a.Is4In6() {
		reason, never = classify(ranges, a.Unmap())
		if reason != "" {
			reason += " (IPv4-mapped)"
		}
		return reason, never
	}
	for _, r := range ranges {
		if !r.prefix.Contains(a) {
			continue
		}
		if r.embedV4 == 0 {
			return r.reason, r.never
		}
		b := a.As16()
		inner := netip.AddrFrom4([4]byte(b[r.embedV4 : r.embedV4+4]))
		reason, never = classify(ranges, inner)
		if reason != "" {
			reason = fmt.Sprintf("%s (%s embedded in a %s address)", reason, inner, r.reason)
		}
		return reason, never
	}
	return "", false
}

// Allowlist lifts the policy for destinations a tenant's operator trusts:
// entries are host names (exact, or "*.example.com" for every name under
// example.com but not example.com itself), IP addresses or CIDRs. A
// destination on the list may use plain http and may be private (a listed
// host name may resolve to anything); cloud metadata, multicast, unspecified
// and reserved addresses stay refused.
type Allowlist []string

// Validate reports every malformed entry; field is the list's path in the
// configuration (entries are reported as field[i]).
func (a Allowlist) Validate(field string) error {
	_, errs := compileAllowlist(field, a, forbiddenRanges())
	return errors.Join(errs...)
}

type allowRules struct {
	names    map[string]struct{}
	suffixes []string // ".example.com" for "*.example.com"
	prefixes []netip.Prefix
}

func (r *allowRules) matchesName(host string) bool {
	if _, ok := r.names[host]; ok {
		return true
	}
	for _, s := range r.suffixes {
		if len(host) > len(s) && strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func (r *allowRules) containsAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range r.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func compileAllowlist(field string, list Allowlist, ranges []addrRange) (allowRules, []error) {
	rules := allowRules{names: make(map[string]struct{}, len(list))}
	var errs []error
	for i, entry := range list {
		path := fmt.Sprintf("%s[%d]", field, i)
		var err error
		switch {
		case entry == "" || strings.TrimSpace(entry) != entry:
			err = errors.New("entries must be non-empty and have no surrounding spaces")
		case strings.Contains(entry, "/"):
			var p netip.Prefix
			if p, err = allowPrefix(entry, ranges); err == nil {
				rules.prefixes = append(rules.prefixes, p)
			}
		default:
			if a, perr := netip.ParseAddr(entry); perr == nil {
				if err = allowAddr(a, ranges); err == nil {
					rules.prefixes = append(rules.prefixes, netip.PrefixFrom(a, a.BitLen()))
				}
				break
			}
			var name string
			var wildcard bool
			if name, wildcard, err = allowName(entry); err == nil {
				if wildcard {
					rules.suffixes = append(rules.suffixes, "."+name)
				} else {
					rules.names[name] = struct{}{}
				}
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: %w", path, entry, err))
		}
	}
	return rules, errs
}

func allowPrefix(entry string, ranges []addrRange) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(entry)
	if err != nil {
		return netip.Prefix{}, errors.New("not a valid CIDR")
	}
	switch {
	case p.Addr().Is4In6():
		return netip.Prefix{}, errors.New("write IPv4 ranges in IPv4 form")
	case p.Bits() == 0:
		return netip.Prefix{}, errors.New("a /0 range would switch the policy off")
	case p != p.Masked():
		return netip.Prefix{}, fmt.Errorf("has address bits set beyond the prefix length; did you mean %s?", p.Masked())
	}
	for _, r := range ranges {
		if r.never && r.prefix.Bits() <= p.Bits() && r.prefix.Contains(p.Addr()) {
			return netip.Prefix{}, fmt.Errorf("lies inside %s, which is %s and never a webhook destination", r.prefix, r.reason)
		}
	}
	return p, nil
}

func allowAddr(a netip.Addr, ranges []addrRange) error {
	switch {
	case a.Zone() != "":
		return errors.New("IPv6 zone identifiers are not allowed")
	case a.Is4In6():
		return errors.New("write IPv4 addresses in IPv4 form")
	}
	if reason, never := classify(ranges, a); never {
		return fmt.Errorf("%s is never a webhook destination", reason)
	}
	return nil
}

func allowName(entry string) (name string, wildcard bool, err error) {
	name = canonicalHost(entry)
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		name, wildcard = rest, true
	}
	if strings.Contains(name, "*") {
		return "", false, errors.New(`a wildcard is allowed only as a leading "*." label`)
	}
	if reason := hostSyntax(name); reason != "" {
		return "", false, errors.New(reason)
	}
	if isMetadataHost(name) {
		return "", false, errors.New("cloud metadata services cannot be allowlisted")
	}
	return name, wildcard, nil
}
