package authz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckMaterial reports every key file and secret that NewAuthenticator
// would refuse, at once, and skips only the secrets when env is nil.
func TestCheckMaterialReportsEverything(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{
		Issuers: []IssuerOptions{
			{Name: "a", Issuer: "https://a.example", Audiences: []string{"gw"}, Algorithms: []string{"RS256"},
				KeyFiles: []string{filepath.Join(dir, "missing.pem"), garbage}},
			{Name: "b", Issuer: "https://b.example", Audiences: []string{"gw"}, Algorithms: []string{"HS256"},
				HMACSecretEnv: "AUTHZ_TEST_UNSET_HMAC"},
		},
		APIKeys: []APIKeyOptions{
			{Name: "k1", Tenant: "t", KeyEnv: "AUTHZ_TEST_UNSET_KEY"},
			{Name: "k2", Tenant: "t", KeyEnv: "AUTHZ_TEST_SHORT_KEY"},
		},
	}
	if err := Validate(&o); err != nil {
		t.Fatalf("options: %v", err)
	}
	env := func(name string) (string, bool) {
		if name == "AUTHZ_TEST_SHORT_KEY" {
			return "short", true
		}
		return "", false
	}
	err := CheckMaterial(&o, env)
	if err == nil {
		t.Fatal("bad material accepted")
	}
	for _, want := range []string{
		"auth.issuers[0].key_files[0]", "auth.issuers[0].key_files[1]",
		"auth.issuers[1].hmac_secret_env", "auth.api_keys[0].key_env", "auth.api_keys[1].key_env",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %s in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "short,") || strings.Contains(err.Error(), `"short"`) {
		t.Errorf("a secret's value is in the message: %v", err)
	}
	err = CheckMaterial(&o, nil)
	if err == nil || strings.Contains(err.Error(), "hmac_secret_env") || strings.Contains(err.Error(), "api_keys") ||
		!strings.Contains(err.Error(), "key_files[1]") {
		t.Fatalf("with the environment skipped, want only the key files: %v", err)
	}
}
