package bench

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
)

// TestIssuerTokensPassTheGatewaysAuthenticator checks the tokens against
// the gateway's own authenticator, configured as the harness configures
// the gateway, and that the JWKS server counts fetches per gateway.
func TestIssuerTokensPassTheGatewaysAuthenticator(t *testing.T) {
	is, err := startIssuer()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := is.close(); err != nil {
			t.Error(err)
		}
	}()
	creds, err := is.tokens(3)
	if err != nil {
		t.Fatal(err)
	}
	jwksURL := is.url("gw-a")
	is.url("gw-b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	authn, err := authz.NewAuthenticator(ctx, authz.Options{Issuers: []authz.IssuerOptions{{
		Name: issuerName, Issuer: issuerURL, Audiences: []string{audience},
		Algorithms: []string{is.algorithm}, JWKSURL: jwksURL,
	}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer authn.Close()

	tests := []struct {
		name    string
		cred    credential
		subject string
		ok      bool
	}{
		{"first client", creds[0], "client-0", true},
		{"third client", creds[2], "client-2", true},
		{"api key", apiKeyCredential("k"), "", false},
		{"tampered token", bearerCredential(creds[1].value[len("Bearer "):] + "x"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gateway.invalid/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(tt.cred.header, tt.cred.value)
			p, err := authn.Authenticate(req)
			if (err == nil) != tt.ok {
				t.Fatalf("Authenticate error %v, want ok=%v", err, tt.ok)
			}
			if tt.ok && (p.Tenant != benchTenant || p.Subject != tt.subject) {
				t.Fatalf("principal tenant %q subject %q, want %q %q", p.Tenant, p.Subject, benchTenant, tt.subject)
			}
		})
	}
	if n := is.fetchCount("gw-a"); n != 1 {
		t.Fatalf("gw-a fetched the JWKS %d times, want once at start-up", n)
	}
	if n := is.fetchCount("gw-b"); n != 0 {
		t.Fatalf("gw-b fetched the JWKS %d times, want 0", n)
	}
	resp, err := http.Get(is.base + jwksPrefix + "unregistered")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unregistered gateway got status %d, want 404", resp.StatusCode)
	}
}
