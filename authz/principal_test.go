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
