package card

import (
	"errors"
	"net/url"
	"testing"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return u
}

func TestMapURL(t *testing.T) {
	const public = "https://gw.example.com/agents/demo"
	tests := []struct {
		name     string
		upstream string
		in       string
		want     string
		dropped  bool
	}{
		{name: "base itself", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a", want: public},
		{name: "below base", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a/jsonrpc", want: public + "/jsonrpc"},
		{name: "trailing slash on base", upstream: "http://agent.internal:8080/a2a/", in: "http://agent.internal:8080/a2a/rest/v1", want: public + "/rest/v1"},
		{name: "trailing slash kept", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a/", want: public + "/"},
		{name: "query kept", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a/rpc?tenant=acme&x=1", want: public + "/rpc?tenant=acme&x=1"},
		{name: "fragment and credentials dropped", upstream: "http://agent.internal:8080/a2a", in: "http://user:secret@agent.internal:8080/a2a/rpc#frag", want: public + "/rpc"},
		{name: "host case and default port", upstream: "https://Agent.Internal/a2a", in: "https://agent.internal:443/a2a/rpc", want: public + "/rpc"},
		{name: "segment boundary", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2ab/rpc", want: public + "/a2ab/rpc"},
		{name: "same host outside base", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/other/rpc", want: public + "/other/rpc"},
		{name: "other port is another origin", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:9090/a2a/rpc", want: public + "/a2a/rpc"},
		{name: "other scheme is another origin", upstream: "http://agent.internal/a2a", in: "https://agent.internal/a2a/rpc", want: public + "/a2a/rpc"},
		{name: "public hostname of the agent", upstream: "http://agent.internal:8080/a2a", in: "https://agent.example.com/a2a/v1", want: public + "/a2a/v1"},
		{name: "relative path", upstream: "http://agent.internal:8080/a2a", in: "jsonrpc", want: public + "/jsonrpc"},
		{name: "relative dot path", upstream: "http://agent.internal:8080/a2a", in: "./rest", want: public + "/rest"},
		{name: "absolute path reference", upstream: "http://agent.internal:8080/a2a", in: "/a2a/rest", want: public + "/rest"},
		{name: "absolute path outside base", upstream: "http://agent.internal:8080/a2a", in: "/rpc", want: public + "/rpc"},
		{name: "root base", upstream: "http://agent.internal:8080", in: "http://agent.internal:8080/a2a/rpc", want: public + "/a2a/rpc"},
		{name: "dot segments resolved", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a/x/../rpc", want: public + "/rpc"},
		{name: "dot segments cannot climb out", upstream: "http://agent.internal:8080/a2a", in: "https://evil.example/../../other-agent/rpc", want: public + "/other-agent/rpc"},
		{name: "encoded dot segments refused", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a/%2e%2e/%2E%2E/other", dropped: true},
		{name: "escaped characters kept escaped", upstream: "http://agent.internal:8080/a2a", in: "http://agent.internal:8080/a2a/r%20pc", want: public + "/r%20pc"},
		{name: "grpc scheme", upstream: "http://agent.internal:8080/a2a", in: "grpc://agent.internal:50051", dropped: true},
		{name: "host:port without scheme", upstream: "http://agent.internal:8080/a2a", in: "agent.internal:50051", dropped: true},
		{name: "dns target", upstream: "http://agent.internal:8080/a2a", in: "dns:///agent.internal:50051", dropped: true},
		{name: "empty", upstream: "http://agent.internal:8080/a2a", in: "  ", dropped: true},
		{name: "unparsable", upstream: "http://agent.internal:8080/a2a", in: "http://[::1", dropped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newURLMapper(mustURL(t, tc.upstream), public+"/")
			if err != nil {
				t.Fatalf("newURLMapper: %v", err)
			}
			got, err := m.mapURL(tc.in)
			if tc.dropped {
				if !errors.Is(err, errNotProxied) {
					t.Fatalf("mapURL(%q) = %q, %v; want errNotProxied", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("mapURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestNewURLMapperRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name     string
		upstream *url.URL
		public   string
	}{
		{"nil upstream", nil, "https://gw.example.com/agents/demo"},
		{"relative upstream", &url.URL{Path: "/a2a"}, "https://gw.example.com/agents/demo"},
		{"grpc upstream", &url.URL{Scheme: "grpc", Host: "agent:50051"}, "https://gw.example.com/agents/demo"},
		{"relative public", &url.URL{Scheme: "http", Host: "agent"}, "/agents/demo"},
		{"public with query", &url.URL{Scheme: "http", Host: "agent"}, "https://gw.example.com/agents/demo?x=1"},
		{"public with credentials", &url.URL{Scheme: "http", Host: "agent"}, "https://u:p@gw.example.com/agents/demo"},
		{"public unparsable", &url.URL{Scheme: "http", Host: "agent"}, "https://[::1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newURLMapper(tc.upstream, tc.public); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("err = %v, want ErrInvalidOptions", err)
			}
		})
	}
}
