package config

import (
	"net/url"
	"strings"
	"testing"
)

func TestUpstreamNormalisation(t *testing.T) {
	same := [][]string{
		{"http://agent:80", "http://agent", "HTTP://Agent/", "http://agent//", "http://user:secret@agent/#frag"},
		{"https://agent.example/a2a", "https://AGENT.example:443/a2a/", "https://agent.example/a2a//"},
		{"http://[::1]:9001/x", "http://[::1]:9001/x/"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if a, b := (&Agent{URL: group[0]}).Upstream(), (&Agent{URL: u}).Upstream(); a != b {
				t.Errorf("%s and %s: %q and %q, want one upstream", group[0], u, a, b)
			}
		}
	}
	apart := [][2]string{
		{"http://agent", "https://agent"},
		{"http://agent", "http://agent:8080"},
		{"http://agent/a", "http://agent/A"},
		{"http://agent/a", "http://agent/a/b"},
		{"http://agent/a%2Fb", "http://agent/a/b"},
		{"http://localhost:9001", "http://127.0.0.1:9001"},
	}
	for _, p := range apart {
		if a, b := (&Agent{URL: p[0]}).Upstream(), (&Agent{URL: p[1]}).Upstream(); a == b {
			t.Errorf("%s and %s: both %q, want two upstreams", p[0], p[1], a)
		}
	}
	if u := (&Agent{URL: "http://user:secret@agent"}).Upstream(); strings.Contains(u, "secret") {
		t.Errorf("upstream %q keeps the URL's credentials", u)
	}
}

func TestRecordKeys(t *testing.T) {
	agents := []Agent{
		{Name: "a", URL: "http://agent:9001"},
		{Name: "b", URL: "http://AGENT:9001/", JSONRPCPath: "/rpc", RESTPath: "/rest"},
		{Name: "c", URL: "http://other:9001"},
		{Name: "d", URL: "http://agent:9001", Namespace: "shared"},
		{Name: "e", URL: "http://10.0.0.5:9001", Namespace: "shared"},
		{Name: "f", URL: "http://elsewhere", Namespace: "a"},
	}
	want := map[string]string{"a": "a", "b": "a", "c": "c", "d": "ns/shared", "e": "ns/shared", "f": "ns/a"}
	got := RecordKeys(agents)
	for name, key := range want {
		if got[name] != key {
			t.Errorf("mount %s: record key %q, want %q", name, got[name], key)
		}
	}
	if len(got) != len(want) {
		t.Errorf("record keys %v, want %v", got, want)
	}
}

func TestNamespaceValidation(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name   string
		agents []Agent
		field  string
	}{
		{"bad name", []Agent{{Name: "a", URL: "http://x", Namespace: "a/b"}}, "agents[0].namespace"},
		{"too long", []Agent{{Name: "a", URL: "http://x", Namespace: strings.Repeat("n", 64)}}, "agents[0].namespace"},
		{"ownership differs on one url", []Agent{
			{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://x/", Policy: Policy{Ownership: OwnerSubject}},
		}, "agents[1].policy.ownership"},
		{"ownership differs in one namespace", []Agent{
			{Name: "a", URL: "http://x", Namespace: "n"}, {Name: "b", URL: "http://y", Namespace: "n", Policy: Policy{Ownership: OwnerSubject}},
		}, "agents[1].policy.ownership"},
		{"client context ids differ", []Agent{
			{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://x:80"},
		}, "agents[1].policy.client_context_ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "client context ids differ" {
				tc.agents[1].Policy.ClientContextIDs = &no
			}
			var fields []string
			validateNamespaces(tc.agents, func(field, format string, args ...any) { fields = append(fields, field) })
			if len(fields) != 1 || fields[0] != tc.field {
				t.Errorf("errors at %v, want one at %s", fields, tc.field)
			}
		})
	}
	yes := true
	ok := []Agent{
		{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://x", Policy: Policy{Ownership: OwnerSubject}},
		{Name: "c", URL: "http://x", Namespace: "n"}, {Name: "d", URL: "http://y"},
	}
	ok[3].Policy.ClientContextIDs = &yes
	ok[1].Namespace = "m"
	// The defaults spelt out are the defaults.
	ok = append(ok, Agent{Name: "e", URL: "http://y", Policy: Policy{Ownership: OwnerTenant, ClientContextIDs: &yes}})
	validateNamespaces(ok, func(field, format string, args ...any) {
		t.Errorf("separate record keys refused: %s: %s", field, format)
	})
}

func TestNamespaceWarnings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		agents []Agent
		warn   []string
	}{
		{"one mount per agent", []Agent{{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://y"}}, nil},
		{"two mounts, one url", []Agent{{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://X/"}}, nil},
		{"two urls, one namespace", []Agent{{Name: "a", URL: "http://x", Namespace: "n"}, {Name: "b", URL: "http://y", Namespace: "n"}}, nil},
		{"one url, two namespaces", []Agent{{Name: "a", URL: "http://x", Namespace: "n"}, {Name: "b", URL: "http://x", Namespace: "m"}}, []string{"agents[0] (a) and agents[1] (b)"}},
		{"one url, one namespace left out", []Agent{{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://x:80", Namespace: "m"}}, []string{"agents[0] (a) and agents[1] (b)"}},
		{"three mounts", []Agent{{Name: "a", URL: "http://x"}, {Name: "b", URL: "http://x"}, {Name: "c", URL: "http://x", Namespace: "m"}}, []string{"agents[0] (a) and agents[2] (c)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NamespaceWarnings(tc.agents)
			if len(got) != len(tc.warn) {
				t.Fatalf("warnings %q, want %d", got, len(tc.warn))
			}
			for i, w := range tc.warn {
				if !strings.Contains(got[i], w) || !strings.Contains(got[i], "same upstream") {
					t.Errorf("warning %q, want one about %s", got[i], w)
				}
			}
		})
	}
}

// FuzzUpstream checks what the normalisation promises on any URL the
// configuration would accept: credentials never survive, trailing slashes,
// letter case of scheme and host, and a default port written out do not
// change the upstream.
func FuzzUpstream(f *testing.F) {
	for _, s := range []string{
		"http://agent", "HTTPS://Agent.Example:443/a2a/", "http://user:secret@agent:9001/x",
		"http://[::1]:9001/", "http://agent/a%2Fb//", "http://agent/%41", "http://agent:0080/",
		"http://agent@evil/", "http://a:b@c:d@e/", "http://agent/x?y", "http://agent/#frag",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			return
		}
		got := (&Agent{URL: raw}).Upstream()
		_, rest, _ := strings.Cut(got, "://")
		if authority, _, _ := strings.Cut(rest, "/"); strings.Contains(authority, "@") {
			t.Fatalf("%q: upstream %q keeps user information", raw, got)
		}
		if again := (&Agent{URL: got}).Upstream(); again != got {
			t.Fatalf("%q: upstream %q normalises again to %q", raw, got, again)
		}
		upper := func(s string) string {
			return strings.Map(func(r rune) rune {
				if 'a' <= r && r <= 'z' {
					return r - 'a' + 'A'
				}
				return r
			}, s)
		}
		v := *u
		v.Scheme, v.Host, v.Path, v.RawPath = upper(u.Scheme), upper(u.Host), u.Path+"/", ""
		if u.RawPath != "" {
			v.RawPath = u.RawPath + "/"
		}
		if u.Port() == "" && !strings.HasSuffix(u.Host, ":") {
			v.Host += map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
		}
		if other := (&Agent{URL: v.String()}).Upstream(); other != got {
			t.Fatalf("%q and %q: upstreams %q and %q", raw, v.String(), got, other)
		}
	})
}
