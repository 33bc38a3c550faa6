package authz

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
)

func TestAPIKeyTable(t *testing.T) {
	t.Setenv("AUTHZ_TEST_KEY_A", "alpha-key-0123456789abcdef")
	sum := sha256.Sum256([]byte("bravo-key-0123456789abcdef"))
	table, err := newAPIKeyTable([]APIKeyOptions{
		{Name: "alpha", Tenant: "acme", Scopes: []string{"tasks:read"}, KeyEnv: "AUTHZ_TEST_KEY_A"},
		{Name: "bravo", Tenant: "globex", Scopes: []string{"tasks:write"}, KeySHA256: hex.EncodeToString(sum[:])},
	}, os.LookupEnv)
	if err != nil {
		t.Fatalf("newAPIKeyTable: %v", err)
	}
	tests := []struct {
		name, key   string
		wantSubject string // empty: no match
		wantTenant  string
	}{
		{"env key", "alpha-key-0123456789abcdef", "alpha", "acme"},
		{"digest key", "bravo-key-0123456789abcdef", "bravo", "globex"},
		{"prefix of a key", "alpha-key-0123456789abcde", "", ""},
		{"key with suffix", "alpha-key-0123456789abcdef0", "", ""},
		{"the digest itself", hex.EncodeToString(sum[:]), "", ""},
		{"empty", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := table.lookup(tc.key)
			if tc.wantSubject == "" {
				if ok {
					t.Fatalf("matched %+v", *p)
				}
				return
			}
			if !ok || p.Subject != tc.wantSubject || p.Tenant != tc.wantTenant || p.Issuer != APIKeyIssuer {
				t.Fatalf("lookup = %+v, %v", p, ok)
			}
		})
	}

	// A caller changing its principal must not change the next one.
	p, _ := table.lookup("alpha-key-0123456789abcdef")
	p.Scopes[0] = "admin"
	p.Tenant = "evil"
	again, _ := table.lookup("alpha-key-0123456789abcdef")
	if again.Tenant != "acme" || !slices.Equal(again.Scopes, []string{"tasks:read"}) {
		t.Fatalf("shared principal was modified: %+v", *again)
	}
}

func TestAPIKeyHeaderWhitespace(t *testing.T) {
	t.Setenv("AUTHZ_TEST_KEY_A", "alpha-key-0123456789abcdef")
	a := newTestAuth(t, Options{APIKeys: []APIKeyOptions{{Name: "alpha", Tenant: "acme", KeyEnv: "AUTHZ_TEST_KEY_A"}}}, nil, nil)
	for _, v := range []string{"alpha-key-0123456789abcdef", " alpha-key-0123456789abcdef ", "\talpha-key-0123456789abcdef"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", v)
		if _, err := a.Authenticate(r); err != nil {
			t.Fatalf("X-API-Key %q: %v", v, err)
		}
	}
}
