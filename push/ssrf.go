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
	ranges := addressTable()
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
	host string     // canonical: lower case, no trailing dot, no brackets
	addr netip.Addr // valid when the host is an IP literal
	port uint16     // the URL's port, or its scheme's default
	name match      // the host name itself on the allowlist
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
		// The resolver returns some IPv4 answers (from /etc/hosts, say) in
		// IPv4-mapped form; either way the connection is IPv4, and the
		// dialer sees the IPv4 address.
		if err := p.checkAddr(t.host, a.Unmap(), t.port, t.name, true); err != nil {
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
	port := uint16(443)
	switch u.Scheme {
	case "https":
	case "http":
		port = 80
	default:
		return target{}, refuse("", "scheme %q is not allowed; use https", u.Scheme)
	}
	if u.User != nil {
		return target{}, refuse("", "the URL must not carry a user name or password; use the push config's authentication")
	}
	if s := u.Port(); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			return target{}, refuse("", "port %q is out of range", s)
		}
		port = uint16(n)
	}
	t, err := p.checkHost(u.Hostname(), port)
	if err != nil {
		return target{}, err
	}
	if u.Scheme == "http" && !t.name.open {
		m := match{}
		if t.addr.IsValid() {
			m = p.allow.matchAddr(t.addr, port)
		}
		if !m.open {
			return target{}, refuse(t.host, "plain http is allowed only for hosts on the tenant's allowlist; use https%s", portHint(port, t.name, m))
		}
	}
	return t, nil
}

func (p *URLPolicy) checkHost(h string, port uint16) (target, error) {
	if h == "" {
		return target{}, refuse("", "the URL has no host")
	}
	host := canonicalHost(h)
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return target{}, refuse(h, "IPv6 zone identifiers are not allowed")
		}
		t := target{host: a.String(), addr: a, port: port}
		return t, p.checkAddr(t.host, a, port, match{}, false)
	}
	if reason := hostSyntax(host); reason != "" {
		return target{}, refuse(host, "%s", reason)
	}
	if isMetadataHost(host) {
		return target{}, refuse(host, "cloud metadata services are never a webhook destination")
	}
	t := target{host: host, port: port, name: p.allow.matchName(host, port)}
	if t.name.open {
		return t, nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return target{}, refuse(host, "localhost names always mean this machine (RFC 6761)%s", portHint(port, t.name, match{}))
	}
	if !strings.Contains(host, ".") {
		return target{}, refuse(host, "single-label host names resolve through local search domains; use a fully qualified name%s", portHint(port, t.name, match{}))
	}
	return t, nil
}

// checkAddr decides one address reached on port: public passes; never
// blocks (cloud metadata, multicast, IPv4 embedded in IPv6, ...) never
// pass; the rest pass only for a host name allowlisted on port or an
// address inside an allowlist entry open on port.
func (p *URLPolicy) checkAddr(host string, a netip.Addr, port uint16, name match, resolved bool) error {
	reason, never := classify(p.ranges, a)
	if reason == "" {
		return nil
	}
	m := p.allow.matchAddr(a, port)
	if !never {
		if name.open || m.open {
			return nil
		}
		reason += portHint(port, name, m)
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

// portHint explains a refusal of a destination the allowlist names, but
// for other ports only.
func portHint(port uint16, matches ...match) string {
	for _, m := range matches {
		if m.listed && !m.open {
			return fmt.Sprintf("; the allowlist names this host, but not port %d (an entry without a port opens 80 and 443 only)", port)
		}
	}
	return ""
}

// Client returns the client a request to a webhook outside the delivery
// path must use (the endpoint challenge); deliveries go through HTTPSender,
// which dials with the same checks. Its dialer checks the
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
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		host = canonicalHost(host)
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, refuse(host, "dialed port %q is not a port number", portStr)
		}
		name := p.allow.matchName(host, uint16(port))
		d := net.Dialer{
			Timeout:   timeout,
			KeepAlive: 30 * time.Second,
			Resolver:  p.resolver,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return refuse(host, "dialed address %q is not an IP address", address)
				}
				return p.checkAddr(host, ap.Addr(), ap.Port(), name, true)
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

// isMetadataHost names cloud instance-metadata services, and every name
// under them, refused by name so the refusal is clear even where DNS would
// give a link-local answer.
func isMetadataHost(h string) bool {
	for _, m := range [...]string{
		"metadata", "metadata.google.internal", "metadata.goog", // GCP
		"instance-data", "instance-data.ec2.internal", // AWS
		"metadata.tencentyun.com",                             // Tencent Cloud
		"api.metadata.cloud.ibm.com",                          // IBM Cloud
		"metadata.platformequinix.com", "metadata.packet.net", // Equinix Metal: public addresses, answering per instance
	} {
		if h == m || strings.HasSuffix(h, "."+m) {
			return true
		}
	}
	return false
}

// addrRange is one block of the address table. never blocks stay refused
// whatever the allowlist says; embedV4 > 0 marks an IPv6 block that
// carries an IPv4 address at that byte offset, named in the refusal.
type addrRange struct {
	prefix  netip.Prefix
	reason  string
	never   bool
	embedV4 int
}

// addressTable lists, in the order they are tried, every block that is not
// a public unicast destination: what no entry matches is public. It is an
// allowlist in the shape of a table: every IPv6 address outside global
// unicast (2000::/3, RFC 4291) is refused by ::/3, 4000::/2 and 8000::/1,
// and every IPv4 address outside unicast by 224.0.0.0/4 and 240.0.0.0/4.
//
// The blocks are every entry of the IANA IPv4 and IPv6 Special-Purpose
// Address Registries (iana.org/assignments/iana-ipv4-special-registry and
// iana-ipv6-special-registry, RFC 6890 and RFC 8190; the IPv6 registry as
// updated 2025-10-09), plus the cloud metadata and credentials endpoints.
// A block IANA adds later outside 2000::/3 is refused already; one inside
// 2000::/3 or in IPv4 unicast space must be added here.
// Registry entries marked globally reachable are refused too, as parts of
// blocks that are not (inside 192.0.0.0/24 and 2001::/23) or on their own:
// they are anycast protocol services (PCP, TURN, DNS-SD SRP, AMT, AS112,
// RFC 7723, 8155, 9665, 7450, 7534, 7535) or identifiers that are not
// locators (ORCHIDv2, RFC 7343; drone DETs, RFC 9374), never a webhook
// receiver.
//
// The first block holding an address decides it, so blocks inside others
// come first: the metadata endpoints inside link-local space keep their
// stronger rule, loopback ::1 its weaker one inside ::/96.
func addressTable() []addrRange {
	block := func(cidr, reason string) addrRange {
		return addrRange{prefix: netip.MustParsePrefix(cidr), reason: reason}
	}
	never := func(cidr, reason string) addrRange {
		r := block(cidr, reason)
		r.never = true
		return r
	}
	// IPv6 forms embedding an IPv4 address are refused outright rather
	// than judged by that address: none is needed to reach a receiver,
	// and a translator's or tunnel's reach cannot be judged from here.
	embeds := func(cidr, reason string, offset int) addrRange {
		r := never(cidr, reason)
		r.embedV4 = offset
		return r
	}
	const (
		metadata  = "a cloud metadata or credentials endpoint"
		private   = "a private address (RFC 1918)"
		notGlobal = "not a global unicast address (outside 2000::/3)"
	)
	return []addrRange{
		never("169.254.169.0/24", metadata),   // instance metadata of AWS, GCP, Azure, OCI, OpenStack and others at .254; AWS DNS .253, time .123
		never("169.254.170.0/24", metadata),   // AWS ECS task credentials (.2), EKS Pod Identity (.23)
		never("169.254.0.23/32", metadata),    // Tencent Cloud
		never("169.254.42.42/32", metadata),   // Scaleway
		never("100.100.100.200/32", metadata), // Alibaba Cloud
		never("168.63.129.16/32", metadata),   // Azure WireServer: public space, host-local
		never("192.0.0.192/32", metadata),     // Oracle Cloud Classic
		never("fd00:ec2::/32", metadata),      // AWS over IPv6: metadata ::254, DNS ::253, time ::123, EKS Pod Identity ::23
		never("fd20:ce::254/128", metadata),   // GCP over IPv6
		never("fd00:42::42/128", metadata),    // Scaleway over IPv6

		// IPv4 Special-Purpose Address Registry.
		never("0.0.0.0/8", `in "this network" (0.0.0.0/8)`),
		block("10.0.0.0/8", private),
		block("100.64.0.0/10", "a shared address (100.64.0.0/10, RFC 6598)"),
		block("127.0.0.0/8", "a loopback address"),
		block("169.254.0.0/16", "a link-local address"),
		block("172.16.0.0/12", private),
		block("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
		block("192.0.2.0/24", "a documentation address (192.0.2.0/24)"),
		block("192.31.196.0/24", "an AS112 DNS service address (192.31.196.0/24)"),
		block("192.52.193.0/24", "an AMT relay address (192.52.193.0/24)"),
		block("192.88.99.0/24", "a 6to4 relay anycast address (192.88.99.0/24, deprecated)"),
		block("192.168.0.0/16", private),
		block("192.175.48.0/24", "an AS112 DNS service address (192.175.48.0/24)"),
		block("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
		block("198.51.100.0/24", "a documentation address (198.51.100.0/24)"),
		block("203.0.113.0/24", "a documentation address (203.0.113.0/24)"),
		never("224.0.0.0/4", "a multicast address"),
		never("255.255.255.255/32", "the broadcast address"),
		never("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),

		// IPv6 Special-Purpose Address Registry, outside 2000::/3.
		block("::1/128", "a loopback address"),
		never("::/128", "the unspecified address"),
		embeds("::ffff:0:0/96", "an IPv4-mapped address", 12),
		embeds("::ffff:0:0:0/96", "an IPv4-translated address (RFC 2765)", 12),
		embeds("::/96", "an IPv4-compatible address (deprecated)", 12),
		embeds("64:ff9b::/96", "a NAT64 address (64:ff9b::/96)", 12),
		never("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)"),
		never("100::/64", "a discard-only address (100::/64)"),
		block("fc00::/7", "a unique-local address (fc00::/7)"),
		block("fe80::/10", "a link-local address"),
		block("fec0::/10", "a site-local address (deprecated)"),
		never("ff00::/8", "a multicast address"),
		never("5f00::/16", "an SRv6 segment identifier (5f00::/16)"),
		never("::/3", notGlobal),
		never("4000::/2", notGlobal),
		never("8000::/1", notGlobal),

		// IPv6 Special-Purpose Address Registry, inside 2000::/3.
		never("2001::/32", "a Teredo tunnel address (2001::/32)"),
		block("2001:2::/48", "a benchmarking address (2001:2::/48)"),
		block("2001:10::/28", "a deprecated ORCHID address (2001:10::/28)"),
		block("2001::/23", "an IETF protocol assignment (2001::/23)"),
		block("2001:db8::/32", "a documentation address (2001:db8::/32)"),
		embeds("2002::/16", "a 6to4 address (2002::/16)", 2),
		block("2620:4f:8000::/48", "an AS112 DNS service address (2620:4f:8000::/48)"),
		block("3fff::/20", "a documentation address (3fff::/20)"),
	}
}

// classify explains why a is not a public unicast address ("" if it is) and
// whether the allowlist may lift that.
func classify(ranges []addrRange, a netip.Addr) (reason string, never bool) {
	a = a.WithZone("")
	for _, r := range ranges {
		if !r.prefix.Contains(a) {
			continue
		}
		if r.embedV4 == 0 {
			return r.reason, r.never
		}
		b := a.As16()
		inner := netip.AddrFrom4([4]byte(b[r.embedV4 : r.embedV4+4]))
		return fmt.Sprintf("%s, embedding %s (write the IPv4 address)", r.reason, inner), true
	}
	return "", false
}

// Allowlist lifts the policy for destinations a tenant's operator trusts.
// An entry is a host name (exact, or "*.example.com" for every name under
// example.com but not example.com itself), an IP address or a CIDR, with
// an optional port: "hooks.internal:8443", "10.0.0.0/8:8443",
// "[fd00::/8]:8443", or ":*" for every port. An entry without a port opens
// ports 80 and 443 only, so that listing a host does not open every
// service on it. A destination on the list may use plain http and may be
// private (a listed host name may resolve to anything); the never blocks of
// the address table (cloud metadata and credentials endpoints, multicast,
// unspecified, reserved, IPv4 embedded in IPv6) stay refused, even inside a
// listed range.
type Allowlist []string

// Validate reports every malformed entry; field is the list's path in the
// configuration (entries are reported as field[i]).
func (a Allowlist) Validate(field string) error {
	_, errs := compileAllowlist(field, a, addressTable())
	return errors.Join(errs...)
}

// Ports an allowlist entry opens, besides a single port 1-65535.
const (
	webPorts = 0  // no port given: 80 and 443
	anyPort  = -1 // ":*"
)

// allowRule is one compiled allowlist entry: exactly one of name, suffix
// and prefix is set.
type allowRule struct {
	name   string       // an exact host name
	suffix string       // ".example.com" for "*.example.com"
	prefix netip.Prefix // an IP address or CIDR
	port   int          // a port, webPorts or anyPort
}

func (r allowRule) opens(port uint16) bool {
	switch r.port {
	case anyPort:
		return true
	case webPorts:
		return port == 80 || port == 443
	}
	return int(port) == r.port
}

type allowRules []allowRule

// match is what the allowlist says of a host or an address: listed by
// some entry, and open on the port asked about.
type match struct{ listed, open bool }

func (rs allowRules) matchName(host string, port uint16) match {
	var m match
	for _, r := range rs {
		if r.name == host || r.suffix != "" && len(host) > len(r.suffix) && strings.HasSuffix(host, r.suffix) {
			m.listed = true
			m.open = m.open || r.opens(port)
		}
	}
	return m
}

func (rs allowRules) matchAddr(a netip.Addr, port uint16) match {
	a = a.WithZone("")
	var m match
	for _, r := range rs {
		if r.prefix.IsValid() && r.prefix.Contains(a) {
			m.listed = true
			m.open = m.open || r.opens(port)
		}
	}
	return m
}

func compileAllowlist(field string, list Allowlist, ranges []addrRange) (allowRules, []error) {
	rules := make(allowRules, 0, len(list))
	var errs []error
	for i, entry := range list {
		r, err := parseAllowEntry(entry, ranges)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %q: %w", field, i, entry, err))
			continue
		}
		rules = append(rules, r)
	}
	return rules, errs
}

// parseAllowEntry compiles one allowlist entry.
func parseAllowEntry(entry string, ranges []addrRange) (allowRule, error) {
	if entry == "" || strings.TrimSpace(entry) != entry {
		return allowRule{}, errors.New("entries must be non-empty and have no surrounding spaces")
	}
	host, port, bracketed, err := splitAllowPort(entry)
	if err != nil {
		return allowRule{}, err
	}
	if bracketed || strings.Contains(host, ":") {
		_, aerr := netip.ParseAddr(host)
		_, perr := netip.ParsePrefix(host)
		if aerr != nil && perr != nil {
			return allowRule{}, errors.New("not a valid IPv6 address or CIDR (with a port, write it as [address]:port)")
		}
	}
	r := allowRule{port: port}
	if strings.Contains(host, "/") {
		r.prefix, err = allowPrefix(host, ranges)
		return r, err
	}
	if a, perr := netip.ParseAddr(host); perr == nil {
		r.prefix = netip.PrefixFrom(a, a.BitLen())
		return r, allowAddr(a, ranges)
	}
	name, wildcard, err := allowName(host)
	if err != nil {
		return allowRule{}, err
	}
	if wildcard {
		r.suffix = "." + name
	} else {
		r.name = name
	}
	return r, nil
}

// splitAllowPort separates an entry's port: "host:port", "[v6]:port",
// "[v6/bits]:port", ":*" for every port. An IPv6 address or CIDR without
// brackets has no port.
func splitAllowPort(entry string) (host string, port int, bracketed bool, err error) {
	if rest, ok := strings.CutPrefix(entry, "["); ok {
		inner, after, found := strings.Cut(rest, "]")
		if !found || !strings.Contains(inner, ":") {
			return "", 0, true, errors.New("brackets must enclose an IPv6 address or CIDR, as in [fd00::/8]:8443")
		}
		if after == "" {
			return inner, webPorts, true, nil
		}
		p, ok := strings.CutPrefix(after, ":")
		if !ok {
			return "", 0, true, errors.New(`only ":port" may follow "]"`)
		}
		port, err = parseAllowPort(p)
		return inner, port, true, err
	}
	if strings.Count(entry, ":") != 1 {
		return entry, webPorts, false, nil
	}
	host, p, _ := strings.Cut(entry, ":")
	port, err = parseAllowPort(p)
	return host, port, false, err
}

func parseAllowPort(s string) (int, error) {
	if s == "*" {
		return anyPort, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] < '1' || s[0] > '9' {
		return 0, fmt.Errorf(`port %q: want 1-65535 without leading zeros, or "*" for every port`, s)
	}
	return n, nil
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
	// The first block holding the whole range decides it, as classify
	// decides an address; blocks inside the range keep their own rule.
	for _, r := range ranges {
		if r.prefix.Bits() <= p.Bits() && r.prefix.Contains(p.Addr()) {
			if r.never {
				return netip.Prefix{}, fmt.Errorf("lies inside %s, which is %s and never a webhook destination", r.prefix, r.reason)
			}
			break
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
