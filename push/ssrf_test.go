package push

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// fakeDNS is a DNS server on 127.0.0.1 answering A and AAAA queries from a
// table the test can change between lookups, so a name can resolve to one
// address at registration and another at dial time.
type fakeDNS struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	answers map[string][]netip.Addr
	queries atomic.Int64
}

func startFakeDNS(t *testing.T, answers map[string][]string) *fakeDNS {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	d := &fakeDNS{conn: conn, answers: map[string][]netip.Addr{}}
	for name, addrs := range answers {
		d.set(name, addrs...)
	}
	done := make(chan struct{})
	go d.serve(done)
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return d
}

func (d *fakeDNS) set(name string, addrs ...string) {
	parsed := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		parsed[i] = netip.MustParseAddr(a)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers[strings.ToLower(name)] = parsed
}

func (d *fakeDNS) resolver() *net.Resolver {
	server := d.conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "udp", server)
		},
	}
}

func (d *fakeDNS) serve(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if reply := d.answer(buf[:n]); reply != nil {
			_, _ = d.conn.WriteToUDP(reply, from)
		}
	}
}

// answer builds the reply to one query: the question echoed, then one
// record per table address of the asked type; NXDOMAIN for unknown names.
func (d *fakeDNS) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	var labels []string
	off := 12
	for off < len(q) && q[off] != 0 {
		l := int(q[off])
		if l&0xc0 != 0 || off+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[off+1:off+1+l]))
		off += 1 + l
	}
	qEnd := off + 5
	if qEnd > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[off+1 : off+3])
	d.queries.Add(1)

	d.mu.Lock()
	addrs, known := d.answers[strings.ToLower(strings.Join(labels, "."))]
	d.mu.Unlock()

	var records [][]byte
	for _, a := range addrs {
		switch {
		case qtype == 1 && a.Is4():
			b := a.As4()
			records = append(records, b[:])
		case qtype == 28 && a.Is6():
			b := a.As16()
			records = append(records, b[:])
		}
	}
	rcode := byte(0)
	if !known {
		rcode = 3
	}
	out := make([]byte, 12, 512)
	copy(out, q[:2])
	out[2] = 0x80 | 0x04 | q[2]&0x01 // response, authoritative, recursion desired as asked
	out[3] = 0x80 | rcode            // recursion available
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], uint16(len(records)))
	out = append(out, q[12:qEnd]...)
	for _, r := range records {
		out = append(out, 0xc0, 12) // pointer to the question name
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = binary.BigEndian.AppendUint16(out, 1) // class IN
		out = binary.BigEndian.AppendUint32(out, 0) // TTL
		out = binary.BigEndian.AppendUint16(out, uint16(len(r)))
		out = append(out, r...)
	}
	return out
}

func newPolicy(t *testing.T, allow Allowlist, dns *fakeDNS) *URLPolicy {
	t.Helper()
	p, err := NewURLPolicy(allow, dns.resolver())
	if err != nil {
		t.Fatalf("NewURLPolicy: %v", err)
	}
	return p
}

func wantRefusal(t *testing.T, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal mentioning %q", reason)
	}
	var ue *URLError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v (%T) is not a *URLError", err, err)
	}
	if !errors.Is(err, ErrForbidden) {
		t.Errorf("error %v does not wrap ErrForbidden", err)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("error %q does not mention %q", err, reason)
	}
}

// testDNS answers for every name the tests use, so no lookup leaves the
// machine.
func testDNS(t *testing.T) *fakeDNS {
	t.Helper()
	return startFakeDNS(t, map[string][]string{
		"public.test":                 {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"www.example.com":             {"93.184.216.34"},
		"private.test":                {"10.0.0.7"},
		"loop6.test":                  {"::1"},
		"mapped.test":                 {"::ffff:127.0.0.1"},
		"mixed.test":                  {"93.184.216.34", "192.168.0.1"},
		"meta.test":                   {"169.254.169.254"},
		"cgnat.test":                  {"100.64.1.1"},
		"ula.test":                    {"fd12::1"},
		"nat64.test":                  {"64:ff9b::a00:1"},
		"docs6.test":                  {"3fff::1"},
		"169.254.169.254.example.com": {"93.184.216.34"},
		"a.ports.example":             {"10.7.7.7"},
		"rebound.meta.example":        {"169.254.170.23"},
		"nothing.test":                {},
		"hooks.corp.example":          {"10.9.9.9"},
		"a.b.svc.example":             {"172.16.5.5"},
		"svc.example":                 {"10.0.0.1"},
		"meta.svc.example":            {"169.254.169.254"},
		"localhost":                   {"127.0.0.1"},
		"hooks.test":                  {"127.0.0.1"},
		"unlisted.loopback.io":        {"127.0.0.1"},
	})
}

func TestCheckURLRefusesForbiddenDestinations(t *testing.T) {
	dns := testDNS(t)
	p := newPolicy(t, nil, dns)
	tests := []struct {
		url, reason string
	}{
		// IPv4 blocks.
		{"https://0.0.0.0/", "this network"},
		{"https://0.1.2.3/", "this network"},
		{"https://10.1.2.3/", "private"},
		{"https://100.64.0.1/", "shared address"},
		{"https://100.127.255.254/", "shared address"},
		{"https://127.0.0.1/", "loopback"},
		{"https://127.255.0.1:8443/", "loopback"},
		{"https://169.254.1.1/", "link-local"},
		{"https://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"https://169.254.169.253/", "cloud metadata"},
		{"https://169.254.170.2/v2/credentials/x", "credentials endpoint"},
		{"https://169.254.170.23/v1/credentials", "credentials endpoint"},
		{"https://169.254.0.23/", "cloud metadata"},
		{"https://169.254.42.42/", "cloud metadata"},
		{"https://100.100.100.200/", "cloud metadata"},
		{"https://168.63.129.16/", "cloud metadata"},
		{"https://192.0.0.192/", "cloud metadata"},
		{"https://192.88.99.1/", "6to4 relay anycast"},
		{"https://192.31.196.1/", "AS112"},
		{"https://192.52.193.1/", "AMT"},
		{"https://192.175.48.1/", "AS112"},
		{"https://172.16.0.1/", "private"},
		{"https://172.31.255.255/", "private"},
		{"https://192.0.0.8/", "IETF protocol assignment"},
		{"https://192.0.2.1/", "documentation"},
		{"https://192.168.1.1/", "private"},
		{"https://198.18.0.1/", "benchmarking"},
		{"https://198.19.255.1/", "benchmarking"},
		{"https://198.51.100.7/", "documentation"},
		{"https://203.0.113.9/", "documentation"},
		{"https://224.0.0.1/", "multicast"},
		{"https://239.255.255.250/", "multicast"},
		{"https://240.0.0.1/", "reserved"},
		{"https://255.255.255.255/", "broadcast"},
		{"https://127.0.0.1./", "loopback"},
		// IPv6 blocks and forms embedding IPv4.
		{"https://[::]/", "unspecified"},
		{"https://[::1]/", "loopback"},
		{"https://[fe80::1]/", "link-local"},
		{"https://[fe80::1%25eth0]/", "zone"},
		{"https://[fc00::1]/", "unique-local"},
		{"https://[fd12:3456::1]/", "unique-local"},
		{"https://[fec0::1]/", "site-local"},
		{"https://[ff02::1]/", "multicast"},
		{"https://[2001:db8::1]/", "documentation"},
		{"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"},
		{"https://[100::1]/", "discard-only"},
		{"https://[fd00:ec2::254]/", "cloud metadata"},
		{"https://[fd00:ec2::23]/", "credentials endpoint"},
		{"https://[fd20:ce::254]/", "cloud metadata"},
		{"https://[fd00:42::42]/", "cloud metadata"},
		{"https://[3fff::1]/", "documentation address (3fff::/20)"},
		{"https://[3fff:fff::1]/", "documentation address (3fff::/20)"},
		{"https://[5f00::1]/", "SRv6"},
		{"https://[5f01::1]/", "outside 2000::/3"},
		{"https://[2001:2::1]/", "benchmarking"},
		{"https://[2001:10::1]/", "ORCHID"},
		{"https://[2001:20::1]/", "IETF protocol assignment (2001::/23)"},
		{"https://[2001:1::1]/", "IETF protocol assignment (2001::/23)"},
		{"https://[2001:1ff:ffff::1]/", "IETF protocol assignment (2001::/23)"},
		{"https://[2620:4f:8000::1]/", "AS112"},
		{"https://[4000::1]/", "outside 2000::/3"},
		{"https://[1fff:ffff::1]/", "outside 2000::/3"},
		{"https://[::2]/", "IPv4-compatible"},
		// Forms embedding an IPv4 address, refused whatever it is.
		{"https://[::ffff:127.0.0.1]/", "IPv4-mapped address, embedding 127.0.0.1"},
		{"https://[::ffff:7f00:1]/", "IPv4-mapped address, embedding 127.0.0.1"},
		{"https://[::ffff:10.0.0.1]/", "IPv4-mapped"},
		{"https://[::ffff:169.254.169.254]/", "IPv4-mapped"},
		{"https://[::ffff:93.184.216.34]/", "IPv4-mapped"},
		{"https://[::ffff:0:7f00:1]/", "IPv4-translated address (RFC 2765), embedding 127.0.0.1"},
		{"https://[::ffff:0:5db8:d822]/", "IPv4-translated"},
		{"https://[64:ff9b::7f00:1]/", "NAT64 address (64:ff9b::/96), embedding 127.0.0.1"},
		{"https://[64:ff9b::a9fe:a9fe]/", "NAT64"},
		{"https://[64:ff9b::808:808]/", "NAT64"},
		{"https://[64:ff9b:1::a00:1]/", "local-use NAT64"},
		{"https://[2002:7f00:1::1]/", "6to4 address (2002::/16), embedding 127.0.0.1"},
		{"https://[2002:a9fe:a9fe::1]/", "6to4"},
		{"https://[2002:5db8:d822::1]/", "6to4"},
		{"https://[::127.0.0.1]/", "IPv4-compatible"},
		{"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"},
		// Numeric forms some resolvers read as IPv4.
		{"https://2130706433/", "127.0.0.1"},
		{"https://0177.0.0.1/", "127.0.0.1"},
		{"https://0x7f.1/", "127.0.0.1"},
		{"https://0x7F000001/", "127.0.0.1"},
		{"https://017700000001/", "127.0.0.1"},
		{"https://127.1/", "127.0.0.1"},
		{"https://10.1/", "10.0.0.1"},
		{"https://0/", "0.0.0.0"},
		{"https://169.254.43518/", "169.254.169.254"},
		{"https://1.2.3.4.5/", "last label is not alphabetic"},
		{"https://www.example.123/", "last label is not alphabetic"},
		// Names refused without asking DNS.
		{"https://metadata.google.internal/computeMetadata/v1/", "metadata"},
		{"https://METADATA.Google.Internal./", "metadata"},
		{"https://metadata/", "metadata"},
		{"https://metadata.goog/", "metadata"},
		{"https://instance-data.ec2.internal/", "metadata"},
		{"https://metadata.tencentyun.com/latest/meta-data/", "metadata"},
		{"https://api.metadata.cloud.ibm.com/", "metadata"},
		{"https://metadata.platformequinix.com/metadata", "metadata"},
		{"https://x.metadata.google.internal/", "metadata"},
		{"https://localhost/", "localhost"},
		{"https://api.localhost:8080/", "localhost"},
		{"https://intranet/", "single-label"},
		{"https://bücher.example/", "xn--"},
		{"https://-bad.example.com/", "hyphen"},
		{"https://a..example.com/", "1-63 characters"},
		{"https://" + strings.Repeat("a", 64) + ".example.com/", "1-63 characters"},
		// Names whose addresses are forbidden.
		{"https://private.test/hook", "resolves to 10.0.0.7, a private address"},
		{"https://loop6.test/", "resolves to ::1, a loopback"},
		{"https://mapped.test/", "resolves to 127.0.0.1, a loopback address"},
		{"https://mixed.test/", "resolves to 192.168.0.1"},
		{"https://meta.test/", "cloud metadata"},
		{"https://cgnat.test/", "shared address"},
		{"https://ula.test/", "unique-local"},
		{"https://nat64.test/", "NAT64 address (64:ff9b::/96), embedding 10.0.0.1"},
		{"https://docs6.test/", "resolves to 3fff::1"},
		// URL shape.
		{"http://www.example.com/", "plain http"},
		{"http://93.184.216.34/", "plain http"},
		{"ftp://www.example.com/", `scheme "ftp"`},
		{"file:///etc/passwd", "absolute"},
		{"gopher://www.example.com/", `scheme "gopher"`},
		{"javascript:alert(1)", "absolute"},
		{"https://user:secret@www.example.com/", "user name or password"},
		{"https://user@www.example.com/", "user name or password"},
		{"/relative/path", "absolute"},
		{"www.example.com/hook", "absolute"},
		{"https:///path-only", "absolute"},
		{"https://www.example.com:0/", "port"},
		{"https://www.example.com:70000/", "port"},
		{"https://exa mple.com/", "not a valid URL"},
		{"https://" + strings.Repeat("a", 5000) + ".example.com/", "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			err := p.CheckURL(context.Background(), tc.url)
			wantRefusal(t, err, tc.reason)
			if strings.Contains(tc.url, "secret") && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q repeats the URL's password", err)
			}
		})
	}
}

func TestCheckURLAllowsPublicDestinations(t *testing.T) {
	dns := testDNS(t)
	p := newPolicy(t, nil, dns)
	for _, raw := range []string{
		"https://93.184.216.34/hook",
		"https://8.8.8.8:8443/a?b=c",
		"https://[2606:4700:4700::1111]/",
		"https://[2001:200::1]/",                             // just past 2001::/23
		"https://[2001:dff:ffff::1]/",                        // just before 2001:db8::/32... of the same /16
		"https://[2003::1]/",                                 // just past 6to4
		"https://[3fff:1000::1]/",                            // just past 3fff::/20
		"https://[2620:4f:8001::1]/",                         // just past 2620:4f:8000::/48
		"https://[3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]/", // the last global unicast address
		"https://192.88.100.1/",                              // just past 192.88.99.0/24
		"https://169.254.169.254.example.com/",
		"https://public.test/webhooks/a2a", // A and AAAA both public
		"https://WWW.Example.COM./hook#frag",
	} {
		t.Run(raw, func(t *testing.T) {
			if err := p.CheckURL(context.Background(), raw); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestCheckURLResolutionFailure(t *testing.T) {
	dns := testDNS(t)
	p := newPolicy(t, nil, dns)
	for _, raw := range []string{"https://missing.test/", "https://nothing.test/"} {
		t.Run(raw, func(t *testing.T) {
			err := p.CheckURL(context.Background(), raw)
			var ue *URLError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v (%T) is not a *URLError", err, err)
			}
			if !strings.Contains(ue.Reason, "resolved") && !strings.Contains(ue.Reason, "no addresses") {
				t.Errorf("reason %q does not say the name did not resolve", ue.Reason)
			}
			var dnsErr *net.DNSError
			if errors.Is(err, ErrForbidden) == errors.As(err, &dnsErr) {
				t.Errorf("error %v: want either a policy refusal or the DNS error, not both or neither", err)
			}
		})
	}
}

// registry is the address table as the test states it, independently of
// the code's: every block of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries, the cloud metadata and credentials endpoints, multicast and
// IPv6 outside global unicast. The most specific block holding an address
// decides it; an address no block holds is public.
var registry = []struct {
	cidr, reason string
	never        bool
}{
	{"169.254.169.0/24", "cloud metadata", true},
	{"169.254.170.0/24", "credentials endpoint", true},
	{"169.254.0.23/32", "cloud metadata", true},
	{"169.254.42.42/32", "cloud metadata", true},
	{"100.100.100.200/32", "cloud metadata", true},
	{"168.63.129.16/32", "cloud metadata", true},
	{"192.0.0.192/32", "cloud metadata", true},
	{"fd00:ec2::/32", "cloud metadata", true},
	{"fd20:ce::254/128", "cloud metadata", true},
	{"fd00:42::42/128", "cloud metadata", true},

	{"0.0.0.0/8", "this network", true},
	{"10.0.0.0/8", "private", false},
	{"100.64.0.0/10", "shared address", false},
	{"127.0.0.0/8", "loopback", false},
	{"169.254.0.0/16", "link-local", false},
	{"172.16.0.0/12", "private", false},
	{"192.0.0.0/24", "IETF protocol assignment", false},
	{"192.0.2.0/24", "documentation", false},
	{"192.31.196.0/24", "AS112", false},
	{"192.52.193.0/24", "AMT", false},
	{"192.88.99.0/24", "6to4 relay anycast", false},
	{"192.168.0.0/16", "private", false},
	{"192.175.48.0/24", "AS112", false},
	{"198.18.0.0/15", "benchmarking", false},
	{"198.51.100.0/24", "documentation", false},
	{"203.0.113.0/24", "documentation", false},
	{"224.0.0.0/4", "multicast", true},
	{"240.0.0.0/4", "reserved", true},
	{"255.255.255.255/32", "broadcast", true},

	{"::/128", "unspecified", true},
	{"::1/128", "loopback", false},
	{"::ffff:0:0/96", "IPv4-mapped", true},
	{"::ffff:0:0:0/96", "IPv4-translated", true},
	{"::/96", "IPv4-compatible", true},
	{"64:ff9b::/96", "NAT64", true},
	{"64:ff9b:1::/48", "local-use NAT64", true},
	{"100::/64", "discard-only", true},
	{"5f00::/16", "SRv6", true},
	{"fc00::/7", "unique-local", false},
	{"fe80::/10", "link-local", false},
	{"fec0::/10", "site-local", false},
	{"ff00::/8", "multicast", true},
	{"::/3", "outside 2000::/3", true},
	{"4000::/2", "outside 2000::/3", true},
	{"8000::/1", "outside 2000::/3", true},
	{"2001::/23", "IETF protocol assignment (2001::/23)", false},
	{"2001::/32", "Teredo", true},
	{"2001:2::/48", "benchmarking", false},
	{"2001:10::/28", "ORCHID", false},
	{"2001:db8::/32", "documentation", false},
	{"2002::/16", "6to4", true},
	{"2620:4f:8000::/48", "AS112", false},
	{"3fff::/20", "documentation", false},
}

// expected is what registry says of a: its most specific block, or ok
// false for a public address.
func expected(t *testing.T, a netip.Addr) (reason string, never, ok bool) {
	t.Helper()
	best := -1
	for _, r := range registry {
		p := netip.MustParsePrefix(r.cidr)
		if p.Contains(a) && p.Bits() > best {
			best, reason, never, ok = p.Bits(), r.reason, r.never, true
		}
	}
	return reason, never, ok
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Every block's first and last address, and the addresses just outside
// it, are classified as the registry says: the block's reason and rule
// inside, the neighbouring block's or public outside.
func TestAddressTableFollowsRegistries(t *testing.T) {
	ranges := addressTable()
	check := func(a netip.Addr) {
		t.Helper()
		if !a.IsValid() {
			return
		}
		reason, never := classify(ranges, a)
		want, wantNever, blocked := expected(t, a)
		switch {
		case !blocked && reason != "":
			t.Errorf("%s: refused as %q, want public", a, reason)
		case blocked && !strings.Contains(reason, want):
			t.Errorf("%s: reason %q, want %q", a, reason, want)
		case blocked && never != wantNever:
			t.Errorf("%s (%s): never %v, want %v", a, reason, never, wantNever)
		}
	}
	for _, r := range registry {
		p := netip.MustParsePrefix(r.cidr)
		first, last := p.Addr(), lastAddr(p)
		for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
			check(a)
		}
	}
	// The code's table holds nothing the registry does not: each of its
	// blocks, at both ends and just outside, is judged the same way.
	for _, r := range ranges {
		first, last := r.prefix.Addr(), lastAddr(r.prefix)
		for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
			check(a)
		}
	}
	for _, a := range []string{"1.1.1.1", "8.8.8.8", "93.184.216.34", "223.255.255.255", "2000::1", "2606:4700:4700::1111", "2a00:1450::1", "3ffe::1"} {
		check(netip.MustParseAddr(a))
	}
}

func TestAllowlistLiftsPolicy(t *testing.T) {
	dns := testDNS(t)
	p := newPolicy(t, Allowlist{
		"Hooks.Corp.Example", "*.svc.example", "10.1.2.3", "192.168.0.0/16", "fd00::/8", "localhost:9000", "169.254.0.0/16",
		"10.5.0.0/16:8443", "[fd01::/16]:*", "*.ports.example:*", "127.0.0.1",
	}, dns)
	tests := []struct {
		url    string
		reason string // empty: allowed
	}{
		{"http://hooks.corp.example/a2a", ""},            // by name: http and a private address
		{"http://hooks.corp.example.:80/", ""},           // trailing dot is the same name
		{"https://hooks.corp.example:443/", ""},          // no port in the entry: 80 and 443
		{"http://a.b.svc.example/", ""},                  // by wildcard
		{"https://svc.example/", "10.0.0.1"},             // the wildcard does not cover the apex
		{"http://10.1.2.3/", ""},                         // by IP
		{"http://10.1.2.4/", "private"},                  // next door is not listed
		{"https://10.1.2.4/", "private"},                 // nor over https
		{"http://192.168.77.1/", ""},                     // by CIDR
		{"https://[fd00::5]/", ""},                       // by IPv6 CIDR
		{"http://[fd00::5]/", ""},                        // over http too
		{"http://localhost:9000/", ""},                   // localhost when listed by name, with its port
		{"https://169.254.10.10/", ""},                   // listed link-local
		{"https://169.254.171.1/", ""},                   // just past the credentials range
		{"http://10.5.1.1:8443/", ""},                    // a CIDR with a port
		{"https://[fd01::1]:12345/", ""},                 // an IPv6 CIDR with every port
		{"http://a.ports.example:9999/", ""},             // a wildcard with every port
		{"https://127.0.0.1/", ""},                       // loopback on 443
		{"https://[::ffff:192.168.1.1]/", "IPv4-mapped"}, // the mapped form of a listed address is not listed
		// Ports the entries do not name.
		{"http://hooks.corp.example:8080/", "but not port 8080"},
		{"https://hooks.corp.example:8443/", "resolves to 10.9.9.9, a private address (RFC 1918); the allowlist names this host, but not port 8443"},
		{"http://10.1.2.3:8080/", "but not port 8080"},
		{"https://10.1.2.3:8080/", "private address (RFC 1918); the allowlist names this host, but not port 8080"},
		{"http://localhost/", "localhost"},
		{"https://10.5.1.1/", "but not port 443"},
		{"http://10.5.1.1:8444/", "but not port 8444"},
		{"https://[fd00::5]:8443/", "but not port 8443"},
		{"http://127.0.0.1:16379/", "but not port 16379"}, // Redis on an allowlisted loopback address
		{"http://127.0.0.1:6379/", "but not port 6379"},
		{"https://127.0.0.1:22/", "loopback"},
		// Metadata and credentials endpoints inside listed ranges.
		{"https://169.254.169.254/", "metadata"},
		{"https://169.254.169.253/", "metadata"},
		{"https://169.254.169.123/", "metadata"},
		{"https://169.254.170.2/", "credentials endpoint"},
		{"http://169.254.170.23/", "credentials endpoint"},
		{"https://169.254.0.23/", "metadata"},
		{"https://169.254.42.42/", "metadata"},
		{"https://[fd00:ec2::254]/", "metadata"},
		{"https://[fd00:ec2::23]/", "credentials endpoint"},
		{"https://[fd00:42::42]/", "metadata"},
		{"https://meta.svc.example/", "metadata"},          // nor a listed name resolving to one
		{"https://metadata.google.internal/", "meta"},      // nor the metadata names
		{"https://unlisted.loopback.io:8443/", "loopback"}, // unlisted names still checked
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			err := p.CheckURL(context.Background(), tc.url)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantRefusal(t, err, tc.reason)
		})
	}
}

// An entry opening every port still cannot open a metadata endpoint.
func TestAllowlistEveryPortKeepsMetadataRefused(t *testing.T) {
	dns := testDNS(t)
	p := newPolicy(t, Allowlist{"169.254.0.0/16:*", "[fd00::/8]:*", "rebound.meta.example:*", "100.64.0.0/10:*"}, dns)
	for _, raw := range []string{
		"http://169.254.169.254/", "http://169.254.169.254:8080/", "http://169.254.170.2:80/", "http://169.254.170.23:80/",
		"http://[fd00:ec2::254]:80/", "http://rebound.meta.example:8080/", "http://100.100.100.200/",
	} {
		t.Run(raw, func(t *testing.T) {
			wantRefusal(t, p.CheckURL(context.Background(), raw), "metadata or credentials endpoint")
		})
	}
	if err := p.CheckURL(context.Background(), "http://169.254.10.1:8080/"); err != nil {
		t.Errorf("the rest of the range: %v", err)
	}
}

func TestAllowlistValidate(t *testing.T) {
	good := Allowlist{
		"hooks.example.com", "*.example.net", "10.0.0.0/8", "192.168.1.10", "fd00::/8", "localhost", "HOOKS.Example.ORG.", "svc_a.internal",
		"10.0.0.0/8:8443", "[fd00::/8]:443", "hooks.internal:8443", "*.example.net:*", "[::1]:*", "127.0.0.1:*", "[fd00::1]", "[fd00::1]:65535",
		"169.254.0.0/16", "fd00::1:443",
	}
	if err := good.Validate("push.allowlist"); err != nil {
		t.Fatalf("valid allowlist refused: %v", err)
	}
	tests := []struct {
		entry, reason string
	}{
		{"", "non-empty"},
		{" hooks.example.com", "surrounding spaces"},
		{"*", "wildcard"},
		{"*.", "wildcard"},
		{"a.*.example.com", "wildcard"},
		{"example.*", "wildcard"},
		{"10.0.0.0/33", "not a valid CIDR"},
		{"10.0.0.1/8", "did you mean 10.0.0.0/8"},
		{"0.0.0.0/0", "/0"},
		{"::/0", "/0"},
		{"[::/0]:*", "/0"},
		{"169.254.169.254", "never"},
		{"169.254.169.254/32", "never"},
		{"169.254.169.253", "never"},
		{"169.254.170.0/24", "never"},
		{"169.254.170.23:*", "never"},
		{"169.254.169.0/25", "never"},
		{"100.100.100.200:80", "never"},
		{"[fd00:ec2::254]:*", "never"},
		{"fd00:ec2::/48", "never"},
		{"224.0.0.0/8", "never"},
		{"255.255.255.255", "never"},
		{"64:ff9b::/96", "never"},
		{"64:ff9b::a00:1", "never"},
		{"2002::/16", "never"},
		{"2001::/32", "never"},
		{"4000::/3", "never"},
		{"[5f00::/16]:443", "never"},
		{"::ffff:10.0.0.0/104", "IPv4 form"},
		{"::ffff:10.0.0.1", "IPv4 form"},
		{"[::ffff:10.0.0.1]:80", "IPv4 form"},
		{"fe80::1%eth0", "zone"},
		{"[fe80::1%eth0]:443", "zone"},
		{"metadata.google.internal", "metadata"},
		{"*.metadata.google.internal", "metadata"},
		{"metadata.tencentyun.com:443", "metadata"},
		{"a.metadata.google.internal", "metadata"},
		{"bad!host", "character"},
		{"2130706433", "127.0.0.1"},
		{"bücher.example", "xn--"},
		// Ports.
		{"hooks.example.com:0", "port"},
		{"hooks.example.com:65536", "port"},
		{"hooks.example.com:080", "leading zeros"},
		{"hooks.example.com:+80", "port"},
		{"hooks.example.com:-1", "port"},
		{"hooks.example.com:", "port"},
		{"hooks.example.com:http", "port"},
		{"hooks.example.com:**", "port"},
		{"10.0.0.0/8:", "port"},
		{":443", "1-63 characters"},
		{"[fd00::/8]443", "only \":port\""},
		{"[fd00::/8]:", "port"},
		{"[10.0.0.1]:80", "brackets"},
		{"[hooks.example.com]:80", "brackets"},
		{"[fd00::1", "brackets"},
		{"[fd00::zz]:80", "IPv6"},
		{"fd00::/8:443", "[address]:port"},
		{"hooks.example.com:80:80", "[address]:port"},
	}
	for _, tc := range tests {
		t.Run(tc.entry, func(t *testing.T) {
			list := append(Allowlist{"hooks.example.com"}, tc.entry)
			err := list.Validate("push.allowlist")
			if err == nil {
				t.Fatalf("entry %q accepted", tc.entry)
			}
			if !strings.Contains(err.Error(), "push.allowlist[1]") || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q: want push.allowlist[1] and %q", err, tc.reason)
			}
			if _, err := NewURLPolicy(list, nil); err == nil {
				t.Error("NewURLPolicy accepted the entry")
			}
		})
	}
}

// formatRule writes r back as an allowlist entry, for the fuzz target's
// round trip.
func formatRule(r allowRule) string {
	var h string
	switch {
	case r.prefix.IsValid() && r.prefix.IsSingleIP():
		h = r.prefix.Addr().String()
	case r.prefix.IsValid():
		h = r.prefix.String()
	case r.suffix != "":
		h = "*" + r.suffix
	default:
		h = r.name
	}
	if r.port == webPorts {
		return h
	}
	if r.prefix.IsValid() && r.prefix.Addr().Is6() {
		h = "[" + h + "]"
	}
	if r.port == anyPort {
		return h + ":*"
	}
	return h + ":" + strconv.Itoa(r.port)
}

// FuzzAllowlistEntry: the entry parser never panics; what it accepts is one
// well-formed rule that reads back the same, and no rule opens a never
// block, on any port.
func FuzzAllowlistEntry(f *testing.F) {
	for _, seed := range []string{
		"hooks.example.com", "*.example.net:*", "10.0.0.0/8:8443", "[fd00::/8]:443", "[::1]:*", "127.0.0.1", "fd00::1:443",
		"169.254.0.0/16", "169.254.0.0/16:*", "169.254.170.23", "[fd00:ec2::254]:80", "::ffff:127.0.0.1", "[::ffff:0:7f00:1]:80",
		"64:ff9b::/96", "2002::/16", "[3fff::/20]:*", "0.0.0.0/0", "::/1", "[fe80::1%eth0]:443", "hooks:080", "hooks:65536",
		"[fd00::1", "[fd00::/8]443", "fd00::/8:443", "metadata.google.internal:443", "2130706433:80", "0x7f.1:*", "localhost:0",
		"*.:*", "[]:", "[:]:1", ":*",
	} {
		f.Add(seed)
	}
	ranges := addressTable()
	var probes []netip.Addr
	for _, r := range ranges {
		if r.never {
			probes = append(probes, r.prefix.Addr(), lastAddr(r.prefix))
		}
	}
	f.Fuzz(func(t *testing.T, entry string) {
		r, err := parseAllowEntry(entry, ranges)
		if err != nil {
			return
		}
		set := 0
		for _, ok := range []bool{r.name != "", r.suffix != "", r.prefix.IsValid()} {
			if ok {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("%q: rule %+v sets %d of name, suffix and prefix", entry, r, set)
		}
		if r.port != webPorts && r.port != anyPort && (r.port < 1 || r.port > 65535) {
			t.Fatalf("%q: port %d", entry, r.port)
		}
		if r.prefix.IsValid() && (r.prefix.Bits() == 0 || r.prefix != r.prefix.Masked() || r.prefix.Addr().Is4In6() || r.prefix.Addr().Zone() != "") {
			t.Fatalf("%q: prefix %s", entry, r.prefix)
		}
		for _, h := range []string{r.name, strings.TrimPrefix(r.suffix, ".")} {
			if h != "" && (hostSyntax(h) != "" || isMetadataHost(h)) {
				t.Fatalf("%q: host name %q", entry, h)
			}
		}
		back := formatRule(r)
		again, err := parseAllowEntry(back, ranges)
		if err != nil || again != r {
			t.Fatalf("%q: read back as %q: %+v, %v; want %+v", entry, back, again, err, r)
		}
		p := &URLPolicy{allow: allowRules{r}, ranges: ranges}
		for _, a := range probes {
			for _, port := range []uint16{80, 443, 8080} {
				if err := p.checkAddr("probe", a, port, p.allow.matchName(r.name, port), true); err == nil {
					t.Fatalf("%q opens %s on port %d", entry, a, port)
				}
			}
		}
	})
}

// deadListener is a loopback TCP listener that is never served: after a refused
// request, a pending connection in its backlog proves the dialer got through.
func deadListener(t *testing.T) *net.TCPListener {
	t.Helper()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func assertNoConnection(t *testing.T, l *net.TCPListener) {
	t.Helper()
	if err := l.SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	if c, err := l.Accept(); err == nil {
		_ = c.Close()
		t.Fatal("the client connected to the forbidden address")
	}
}

// webhookCallers are the two ways the gateway calls a webhook under a
// policy: Client (the endpoint challenge at registration) and HTTPSender
// (every delivery, on connection pools of its own). Each SSRF case runs
// through both: post sends one POST of "{}" to url, with its status.
var webhookCallers = []struct {
	name string
	post func(t *testing.T, p *URLPolicy, url string) (status int, err error)
}{
	{"client", func(t *testing.T, p *URLPolicy, url string) (int, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Client(10 * time.Second).Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}},
	{"sender", func(t *testing.T, p *URLPolicy, url string) (int, error) {
		signer := newSigner(t, SignerOptions{Issuer: testIssuer, KeyFiles: []string{writeKey(t, t.TempDir(), "push", ed25519Key(t))}})
		payload, err := EncodePayload(Request{URL: url, ContentType: "application/json", Body: []byte("{}")})
		if err != nil {
			t.Fatal(err)
		}
		status, _, err := NewHTTPSender(p, signer, 10*time.Second).Send(t.Context(), store.Delivery{ID: "n-1", TaskID: "task-1", Payload: payload})
		return status, err
	}},
}

func TestWebhookCallsRefuseDNSRebinding(t *testing.T) {
	for _, c := range webhookCallers {
		t.Run(c.name, func(t *testing.T) {
			dns := testDNS(t)
			dns.set("rebind.test", "93.184.216.34")
			p := newPolicy(t, nil, dns)
			l := deadListener(t)
			port := l.Addr().(*net.TCPAddr).Port
			hook := fmt.Sprintf("https://rebind.test:%d/hook", port)

			if err := p.CheckURL(context.Background(), hook); err != nil {
				t.Fatalf("registration refused while the name was public: %v", err)
			}
			dns.set("rebind.test", "127.0.0.1")
			before := dns.queries.Load()

			_, err := c.post(t, p, hook)
			if err == nil {
				t.Fatal("request to a rebound name succeeded")
			}
			wantRefusal(t, err, "resolves to 127.0.0.1, a loopback address")
			if dns.queries.Load() == before {
				t.Error("the name was not resolved again at dial time")
			}
			assertNoConnection(t, l)
		})
	}
}

// The dialer applies the same policy to the address and port it connects
// to: an allowlisted address is open only on the ports its entry names, and
// an allowlisted name that now resolves to a credentials endpoint is refused
// before any packet is sent.
func TestDialerChecksAddressAndPort(t *testing.T) {
	dns := testDNS(t)
	open := deadListener(t)
	closed := deadListener(t)
	openPort, closedPort := open.Addr().(*net.TCPAddr).Port, closed.Addr().(*net.TCPAddr).Port
	p := newPolicy(t, Allowlist{fmt.Sprintf("127.0.0.1:%d", openPort), "rebound.meta.example:*", "hooks.test"}, dns)
	dial := p.dialContext(5 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := dial(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", openPort))
	if err != nil {
		t.Fatalf("dial the allowlisted port: %v", err)
	}
	_ = c.Close()
	for _, tc := range []struct{ addr, reason string }{
		{fmt.Sprintf("127.0.0.1:%d", closedPort), "but not port"},
		{fmt.Sprintf("hooks.test:%d", closedPort), "resolves to 127.0.0.1, a loopback address; the allowlist names this host, but not port"},
		{"rebound.meta.example:80", "resolves to 169.254.170.23, a cloud metadata or credentials endpoint"},
		{"[::ffff:127.0.0.1]:80", "loopback"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			c, err := dial(ctx, "tcp", tc.addr)
			if err == nil {
				_ = c.Close()
			}
			wantRefusal(t, err, tc.reason)
		})
	}
	assertNoConnection(t, closed)
}

func TestWebhookCallsCheckEveryRequest(t *testing.T) {
	dns := testDNS(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	open := newPolicy(t, Allowlist{fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("hooks.test:%d", port)}, dns)
	closed := newPolicy(t, nil, dns)

	tests := []struct {
		name   string
		policy *URLPolicy
		url    string
		reason string
	}{
		{"allowlisted IP", open, srv.URL, ""},
		{"allowlisted name", open, fmt.Sprintf("http://hooks.test:%d/", port), ""},
		{"allowlisted IP, another port", open, fmt.Sprintf("http://127.0.0.1:%d/", port+1), "but not port"},
		{"allowlisted name, another port", open, fmt.Sprintf("https://hooks.test:%d/", port+1), "resolves to 127.0.0.1"},
		{"loopback IP not listed", closed, srv.URL, "loopback"},
		{"public IP over http", closed, "http://93.184.216.34/", "plain http"},
		{"loopback IP over https", closed, fmt.Sprintf("https://127.0.0.1:%d/", port), "loopback"},
		{"name resolving to loopback", closed, fmt.Sprintf("https://hooks.test:%d/", port), "resolves to 127.0.0.1"},
		{"metadata name", open, "http://metadata.google.internal/", "metadata"},
		{"userinfo", open, "http://u:p@127.0.0.1:1/", "user name"},
	}
	for _, c := range webhookCallers {
		for _, tc := range tests {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				before := hits.Load()
				status, err := c.post(t, tc.policy, tc.url)
				if tc.reason == "" {
					if err != nil {
						t.Fatalf("request refused: %v", err)
					}
					if status != http.StatusOK || hits.Load() != before+1 {
						t.Fatalf("status %d, %d hits", status, hits.Load()-before)
					}
					return
				}
				wantRefusal(t, err, tc.reason)
				if hits.Load() != before {
					t.Error("the server received the refused request")
				}
			})
		}
	}
}

func TestWebhookCallsDoNotFollowRedirects(t *testing.T) {
	dns := testDNS(t)
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(http.ResponseWriter, *http.Request) { followed.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p := newPolicy(t, Allowlist{"127.0.0.1:*"}, dns)

	for _, c := range webhookCallers {
		t.Run(c.name, func(t *testing.T) {
			status, err := c.post(t, p, srv.URL+"/start")
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			if status != http.StatusFound {
				t.Errorf("status %d, want the 302 itself", status)
			}
			if n := followed.Load(); n != 0 {
				t.Errorf("the redirect was followed %d times", n)
			}
		})
	}
	// The client's answer keeps the redirect's target for its caller to see.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/start", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Client(10 * time.Second).Do(req)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	_ = resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/target" || followed.Load() != 0 {
		t.Errorf("GET: status %d, Location %q, followed %d times", resp.StatusCode, loc, followed.Load())
	}
}

func TestClientTransportSettings(t *testing.T) {
	p, err := NewURLPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		give, want time.Duration
	}{
		{0, DefaultDeliveryTimeout},
		{-time.Second, DefaultDeliveryTimeout},
		{25 * time.Second, 25 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.give.String(), func(t *testing.T) {
			c := p.Client(tc.give)
			if c.Timeout != tc.want {
				t.Errorf("timeout %s, want %s", c.Timeout, tc.want)
			}
			g, ok := c.Transport.(*guardedTransport)
			if !ok {
				t.Fatalf("transport %T", c.Transport)
			}
			// An environment proxy would be dialed instead of the checked
			// destination, so the transport must never consult one.
			if g.next.Proxy != nil {
				t.Error("the transport takes a proxy")
			}
			//lint:ignore SA1019 the deprecated hook is read only to check that nothing set it
			if g.next.DialContext == nil || g.next.DialTLSContext != nil || g.next.Dial != nil {
				t.Error("dialing does not go through the checked dialer")
			}
		})
	}
}

func TestGuardedTransportClosesRefusedBody(t *testing.T) {
	p, err := NewURLPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := &closeRecorder{Reader: strings.NewReader("{}")}
	req := &http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Header: http.Header{}, Body: body}
	if _, err := p.Client(time.Second).Transport.RoundTrip(req); !errors.Is(err, ErrForbidden) {
		t.Fatalf("error %v, want a refusal", err)
	}
	if !body.closed {
		t.Error("request body left open")
	}
}

type closeRecorder struct {
	*strings.Reader
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

func TestLegacyIPv4(t *testing.T) {
	tests := []struct {
		in   string
		want string // empty: not an inet_aton form
	}{
		{"2130706433", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x7f.0x0.0x0.0x1", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"4294967296", ""},
		{"256.1", ""},
		{"1.2.3.256", ""},
		{"08.1.1.1", ""},
		{"1.2.3.4.5", ""},
		{"abc", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := legacyIPv4(tc.in)
			if tc.want == "" {
				if ok {
					t.Fatalf("parsed as %s", got)
				}
				return
			}
			if !ok || got.String() != tc.want {
				t.Fatalf("got %v %v, want %s", got, ok, tc.want)
			}
		})
	}
}
