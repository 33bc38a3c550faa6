package authz

import (
	"strings"
	"testing"
)

func TestValidIdentity(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"acme", true},
		{"org_1234-eu", true},
		{"tenant with spaces", true},
		{"日本", true},
		{strings.Repeat("a", maxIdentityBytes), true},
		{"", false},
		{strings.Repeat("a", maxIdentityBytes+1), false},
		{"a\nb", false},
		{"a\x00b", false},
		{"a\u0085b", false},
		{string([]byte{0xff, 0xfe}), false},
	}
	for _, tc := range tests {
		if got := validIdentity(tc.in); got != tc.want {
			t.Errorf("validIdentity(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestHasScope(t *testing.T) {
	p := &Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "push"}}
	tests := []struct {
		scope string
		want  bool
	}{
		{"tasks:read", true},
		{"push", true},
		{"tasks", false},
		{"TASKS:READ", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := p.HasScope(tc.scope); got != tc.want {
			t.Errorf("HasScope(%q) = %v, want %v", tc.scope, got, tc.want)
		}
	}
	var none *Principal
	if none.HasScope("tasks:read") {
		t.Error("a nil principal has a scope")
	}
}
