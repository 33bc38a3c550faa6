package serve

import (
	"slices"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/authz"
)

// A rewritten card names only the kinds of credential the gateway accepts.
func TestCardSecurityFollowsTheConfiguration(t *testing.T) {
	issuer := []authz.IssuerOptions{{Name: "idp"}}
	key := []authz.APIKeyOptions{{Name: "ci"}}
	for _, tc := range []struct {
		name string
		o    authz.Options
		want []string
	}{
		{"issuers only", authz.Options{Issuers: issuer}, []string{"bearer"}},
		{"API keys only", authz.Options{APIKeys: key}, []string{"apiKey"}},
		{"both", authz.Options{Issuers: issuer, APIKeys: key}, []string{"bearer", "apiKey"}},
	} {
		var got []string
		for _, s := range gatewaySecurity(tc.o).Schemes {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: schemes %v, want %v", tc.name, got, tc.want)
		}
	}
}
