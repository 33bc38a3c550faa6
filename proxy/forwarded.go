package proxy

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// methodOverrides name a method (or request target) other than the
// request's own, which frameworks behind a proxy honour: Express's and
// Rack's method-override, OData's X-HTTP-Method, IIS's and Symfony's
// X-Original-URL and X-Rewrite-URL, nginx's X-Original-Method and -URI. The
// gateway authorizes the request as it classified it, by its own method and
// path, so none of them is forwarded, from anyone; the gateway itself reads
// only the request's method.
var methodOverrides = []string{
	"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	"X-Original-Method", "X-Original-Url", "X-Original-Uri", "X-Rewrite-Url",
}

// methodOverrideParam is the query parameter Laravel and Rails read as the
// method of a POST.
const methodOverrideParam = "_method"

// clientHeaders say who the client is and how it reached the gateway. They
// are believed, and passed on, only from a trusted proxy.
var clientHeaders = []string{
	"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix",
	"X-Forwarded-Server", "X-Real-Ip", "Forwarded", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip",
	"Fastly-Client-Ip", "X-Cluster-Client-Ip", "Client-Ip",
}

// trustedProxies are the peers whose forwarding headers the gateway
// believes (config trusted_proxies).
type trustedProxies []netip.Prefix

func (t trustedProxies) contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// setForwarded tells the agent who the client is. From a trusted proxy the
// forwarding headers it sent are kept and this hop is added to them; from
// any other peer they are dropped and replaced by what the gateway sees,
// so a client cannot make the agent believe another address, host or
// scheme. Method overrides are dropped in both cases.
func setForwarded(req, in *http.Request, trusted trustedProxies) {
	for _, h := range methodOverrides {
		req.Header.Del(h)
	}
	req.URL.RawQuery = dropParam(req.URL.RawQuery, methodOverrideParam)

	peer, err := netip.ParseAddrPort(in.RemoteAddr)
	addr := peer.Addr().Unmap()
	if err != nil || !trusted.contains(addr) {
		for _, h := range clientHeaders {
			req.Header.Del(h)
		}
	}
	proto := "http"
	if in.TLS != nil {
		proto = "https"
	}
	if req.Header.Get("X-Forwarded-Proto") == "" {
		req.Header.Set("X-Forwarded-Proto", proto)
	}
	if req.Header.Get("X-Forwarded-Host") == "" {
		req.Header.Set("X-Forwarded-Host", in.Host)
	}
	if err != nil {
		// No address to speak of (not a TCP peer): nothing is claimed.
		return
	}
	chain := strings.Join(req.Header.Values("X-Forwarded-For"), ", ")
	if chain != "" {
		chain += ", "
	}
	req.Header.Set("X-Forwarded-For", chain+addr.String())
	req.Header.Set("X-Real-Ip", clientAddr(req.Header.Get("X-Forwarded-For"), trusted).String())
	hop := "for=" + forwardedNode(addr) + ";host=" + quoteForwarded(in.Host) + ";proto=" + proto
	if prior := strings.Join(req.Header.Values("Forwarded"), ", "); prior != "" {
		hop = prior + ", " + hop
	}
	req.Header.Set("Forwarded", hop)
}

// clientAddr is the client's address from an X-Forwarded-For chain whose
// last entry the gateway saw itself: the last address that is not a
// trusted proxy. Entries before it were written by the client and prove
// nothing.
func clientAddr(chain string, trusted trustedProxies) netip.Addr {
	parts := strings.Split(chain, ",")
	var client netip.Addr
	for i := len(parts) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(parts[i]))
		if err != nil {
			break // a proxy we trust wrote something that is no address
		}
		client = a.Unmap()
		if !trusted.contains(client) {
			break
		}
	}
	return client
}

// forwardedNode writes an address as RFC 7239 wants a node: IPv6 in
// brackets and quotes.
func forwardedNode(a netip.Addr) string {
	if a.Is6() {
		return `"[` + a.String() + `]"`
	}
	return a.String()
}

var forwardedEscapes = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// quoteForwarded quotes a Forwarded value that is not a token (a host with
// a port, say).
func quoteForwarded(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return `"` + forwardedEscapes.Replace(v) + `"`
		}
	}
	return v
}

// dropParam removes every name=value pair of name from a raw query and
// leaves the rest byte for byte. A key is compared as a framework reads
// it: percent-decoded, with '.', ' ' and '[' read as '_' (PHP does so); a
// key that cannot be decoded is dropped too, since some reader may still
// make name of it.
func dropParam(raw, name string) string {
	if raw == "" {
		return raw
	}
	kept := make([]string, 0, strings.Count(raw, "&")+1)
	for _, pair := range strings.Split(raw, "&") {
		key, _, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(key)
		if err != nil || paramName.Replace(k) == name {
			continue
		}
		kept = append(kept, pair)
	}
	return strings.Join(kept, "&")
}

// paramName maps the characters PHP reads as '_' in a parameter name.
var paramName = strings.NewReplacer(".", "_", " ", "_", "[", "_")
