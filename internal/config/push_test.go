package config

import (
	"testing"
)

func TestPushOptionsPerTenant(t *testing.T) {
	o := PushOptions{WebhookSecretEnv: "ALL", Tenants: map[string]PushTenant{
		"acme": {Allowlist: []string{"10.0.0.0/8"}, WebhookSecretEnv: "ACME"}, "globex": {},
	}}
	if o.WebhookSecretEnvOf("acme") != "ACME" || o.WebhookSecretEnvOf("globex") != "ALL" || o.WebhookSecretEnvOf("other") != "ALL" {
		t.Fatal("per-tenant secrets")
	}
	if al := o.TenantAllowlists(); len(al) != 1 || len(al["acme"]) != 1 {
		t.Fatalf("TenantAllowlists = %v", al)
	}
}
