package proxy

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"
)

func TestSetForwarded(t *testing.T) {
	trusted := trustedProxies{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:1::/48")}
	// spoofed is what a client sends to make the agent believe it is
	// someone, somewhere, else, and to run another method than the one
	// the gateway authorized.
	spoofed := http.Header{
		"X-Forwarded-For":        {"198.51.100.7"},
		"X-Forwarded-Host":       {"admin.internal"},
		"X-Forwarded-Proto":      {"https"},
		"X-Forwarded-Port":       {"443"},
		"X-Forwarded-Prefix":     {"/admin"},
		"X-Real-Ip":              {"198.51.100.7"},
		"Forwarded":              {"for=198.51.100.7;host=admin.internal;proto=https"},
		"True-Client-Ip":         {"198.51.100.7"},
		"X-Client-Ip":            {"198.51.100.7"},
		"Cf-Connecting-Ip":       {"198.51.100.7"},
		"X-Http-Method-Override": {"DELETE"},
		"X-Http-Method":          {"DELETE"},
		"X-Method-Override":      {"DELETE"},
		"X-Original-Method":      {"DELETE"},
		"X-Original-Url":         {"/admin"},
		"X-Rewrite-Url":          {"/admin"},
		"X-Original-Uri":         {"/admin"},
	}
	for _, tc := range []struct {
		name   string
		remote string
		tls    bool
		// want holds the headers the agent must receive; absent ones
		// ("" values) must not be there.
		want map[string]string
	}{
		{"untrusted IPv4", "203.0.113.5:4711", false, map[string]string{
			"X-Forwarded-For": "203.0.113.5", "X-Real-Ip": "203.0.113.5", "X-Forwarded-Host": "gw.example:8080",
			"X-Forwarded-Proto": "http", "Forwarded": `for=203.0.113.5;host="gw.example:8080";proto=http`,
			"X-Forwarded-Port": "", "X-Forwarded-Prefix": "", "True-Client-Ip": "", "X-Client-Ip": "", "Cf-Connecting-Ip": "",
		}},
		{"untrusted IPv6 over TLS", "[2001:db8:2::9]:4711", true, map[string]string{
			"X-Forwarded-For": "2001:db8:2::9", "X-Real-Ip": "2001:db8:2::9", "X-Forwarded-Proto": "https",
			"Forwarded": `for="[2001:db8:2::9]";host="gw.example:8080";proto=https`, "X-Forwarded-Host": "gw.example:8080",
		}},
		{"untrusted IPv4-mapped", "[::ffff:203.0.113.5]:4711", false, map[string]string{
			"X-Forwarded-For": "203.0.113.5", "X-Real-Ip": "203.0.113.5",
		}},
		{"untrusted, looks like a trusted one mapped wrongly", "[::10.0.0.1]:4711", false, map[string]string{
			"X-Forwarded-For": "::a00:1", "X-Forwarded-Host": "gw.example:8080",
		}},
		{"not a TCP peer", "@", false, map[string]string{
			"X-Forwarded-For": "", "X-Real-Ip": "", "Forwarded": "", "X-Forwarded-Host": "gw.example:8080", "X-Forwarded-Proto": "http",
		}},
		{"trusted IPv4", "10.1.2.3:4711", false, map[string]string{
			"X-Forwarded-For": "198.51.100.7, 10.1.2.3", "X-Real-Ip": "198.51.100.7", "X-Forwarded-Host": "admin.internal",
			"X-Forwarded-Proto": "https", "X-Forwarded-Port": "443", "True-Client-Ip": "198.51.100.7",
			"Forwarded": `for=198.51.100.7;host=admin.internal;proto=https, for=10.1.2.3;host="gw.example:8080";proto=http`,
		}},
		{"trusted IPv4-mapped", "[::ffff:10.1.2.3]:4711", false, map[string]string{
			"X-Forwarded-For": "198.51.100.7, 10.1.2.3", "X-Real-Ip": "198.51.100.7",
		}},
		{"trusted IPv6", "[2001:db8:1::7]:4711", false, map[string]string{
			"X-Forwarded-For": "198.51.100.7, 2001:db8:1::7", "X-Real-Ip": "198.51.100.7", "X-Forwarded-Host": "admin.internal",
			"Forwarded": `for=198.51.100.7;host=admin.internal;proto=https, for="[2001:db8:1::7]";host="gw.example:8080";proto=http`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := http.NewRequest(http.MethodPost, "http://gw.example:8080/agents/demo/?_method=DELETE&a=1&_method=PUT&b=%5Fmethod", nil)
			in.RemoteAddr = tc.remote
			in.Header = spoofed.Clone()
			if tc.tls {
				in.TLS = &tls.ConnectionState{}
			}
			out, _ := http.NewRequest(http.MethodPost, "http://agent.internal/?"+in.URL.RawQuery, nil)
			out.Header = in.Header.Clone()
			setForwarded(out, in, trusted)
			for h, want := range tc.want {
				if got := out.Header.Values(h); (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			for _, h := range methodOverrides {
				if v := out.Header.Values(h); len(v) != 0 {
					t.Errorf("method override %s = %q reached the agent", h, v)
				}
			}
			if got := out.URL.RawQuery; got != "a=1&b=%5Fmethod" {
				t.Errorf("query = %q, want the _method parameters dropped and the rest unchanged", got)
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	trusted := trustedProxies{netip.MustParsePrefix("10.0.0.0/8")}
	for chain, want := range map[string]string{
		"203.0.113.5":                        "203.0.113.5",
		"198.51.100.7, 203.0.113.5":          "203.0.113.5", // the client wrote the first entry
		"198.51.100.7, 10.0.0.2, 10.0.0.1":   "198.51.100.7",
		"10.0.0.3, 10.0.0.2, 10.0.0.1":       "10.0.0.3",
		"junk, 203.0.113.9, 10.0.0.1":        "203.0.113.9",
		"198.51.100.7, junk, 10.0.0.1":       "10.0.0.1",
		"2001:db8::1, ::ffff:10.0.0.1":       "2001:db8::1",
		"203.0.113.5,10.0.0.1 , 10.0.0.2   ": "203.0.113.5",
	} {
		if got := clientAddr(chain, trusted).String(); got != want {
			t.Errorf("clientAddr(%q) = %s, want %s", chain, got, want)
		}
	}
}

// A method override in the query is dropped however its name is spelt for
// a framework to read it as _method; everything else stays byte for byte.
func TestDropMethodParam(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "",
		"a=1":                               "a=1",
		"_method=DELETE":                    "",
		"%5Fmethod=DELETE&a=1":              "a=1",
		"%5fmethod=DELETE&a=1":              "a=1",
		"a=1&.method=DELETE":                "a=1",
		"a=1&+method=DELETE":                "a=1",
		"a=1&%20method=PUT&b=2":             "a=1&b=2",
		"[method=PUT&a=%5Fmethod":           "a=%5Fmethod",
		"_method&a=1":                       "a=1",
		"bad%zzkey=1&a=1":                   "a=1",
		"_methods=1&x_method=2&method=3":    "_methods=1&x_method=2&method=3",
		"q=a%20b&_method=PATCH&r=%E2%9C%93": "q=a%20b&r=%E2%9C%93",
	} {
		if got := dropParam(in, "_method"); got != want {
			t.Errorf("dropParam(%q) = %q, want %q", in, got, want)
		}
	}
}
