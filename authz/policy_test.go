package authz

import (
	"errors"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

func TestPolicyValidate(t *testing.T) {
	every := map[string][]string{"*": {"a2a:tasks.read"}}
	for _, m := range a2a.AllMethods {
		every[m.String()] = []string{"scope:" + m.String()}
	}
	cases := []struct {
		name    string
		policy  Policy
		wantErr string
	}{
		{"zero", Policy{}, ""},
		{"tenant ownership", Policy{Ownership: config.OwnerTenant}, ""},
		{"subject ownership", Policy{Ownership: config.OwnerSubject, Tenants: []string{"acme"}}, ""},
		{"every operation and the default", Policy{Scopes: every}, ""},
		{"empty scope list", Policy{Scopes: map[string][]string{"cancel": nil}}, ""},
		{"ownership in another case", Policy{Ownership: "Subject"}, `agents[0].policy.ownership: want "tenant" or "subject", got "Subject"`},
		{"unknown ownership", Policy{Ownership: "owner"}, `agents[0].policy.ownership: want "tenant" or "subject", got "owner"`},
		{"unknown operation", Policy{Scopes: map[string][]string{"delete": {"x"}}}, `agents[0].policy.scopes: unknown operation "delete"`},
		{"JSON-RPC method name", Policy{Scopes: map[string][]string{"tasks/cancel": {"x"}}}, `agents[0].policy.scopes: unknown operation "tasks/cancel"`},
		{"operation in another case", Policy{Scopes: map[string][]string{"Cancel": {"x"}}}, `agents[0].policy.scopes: unknown operation "Cancel"`},
		{"unknown is not an operation", Policy{Scopes: map[string][]string{"unknown": {"x"}}}, `agents[0].policy.scopes: unknown operation "unknown"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Ownership is the configuration's to check, scopes this package's.
			err := errors.Join(tc.policy.Validate("agents[0].policy"), ValidatePolicy(&tc.policy, "agents[0].policy"))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestPolicyPermits(t *testing.T) {
	alice := &request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"a2a:tasks.read", "a2a:tasks.write"}}
	bare := &request.Principal{Tenant: "acme", Subject: "bot"}
	stranger := &request.Principal{Tenant: "other", Subject: "eve", Scopes: []string{"a2a:tasks.read", "a2a:tasks.write", "a2a:tasks.cancel"}}
	cases := []struct {
		name   string
		policy Policy
		p      *request.Principal
		op     a2a.Method
		ok     bool
		reason string
	}{
		{"open policy", Policy{}, bare, a2a.MethodCancelTask, true, ""},
		{"tenant listed", Policy{Tenants: []string{"acme"}}, alice, a2a.MethodGetTask, true, ""},
		{"tenant not listed", Policy{Tenants: []string{"acme"}}, stranger, a2a.MethodGetTask, false, "tenant_not_allowed"},
		{"tenant check comes before scopes", Policy{Tenants: []string{"acme"}, Scopes: map[string][]string{"get": {"nope"}}}, stranger, a2a.MethodGetTask, false, "tenant_not_allowed"},
		{"listed scope held", Policy{Scopes: map[string][]string{"send": {"a2a:tasks.write"}}}, alice, a2a.MethodSend, true, ""},
		{"listed scope missing", Policy{Scopes: map[string][]string{"cancel": {"a2a:tasks.cancel"}}}, alice, a2a.MethodCancelTask, false, "missing_scope"},
		{"every listed scope is needed", Policy{Scopes: map[string][]string{"send": {"a2a:tasks.write", "a2a:push.write"}}}, alice, a2a.MethodSend, false, "missing_scope"},
		{"unlisted operation needs nothing", Policy{Scopes: map[string][]string{"cancel": {"a2a:tasks.cancel"}}}, bare, a2a.MethodGetTask, true, ""},
		{"default applies to unlisted", Policy{Scopes: map[string][]string{"*": {"a2a:tasks.read"}}}, bare, a2a.MethodListTasks, false, "missing_scope"},
		{"default held", Policy{Scopes: map[string][]string{"*": {"a2a:tasks.read"}}}, alice, a2a.MethodSubscribe, true, ""},
		{"listed replaces default", Policy{Scopes: map[string][]string{"*": {"a2a:tasks.cancel"}, "get": {"a2a:tasks.read"}}}, alice, a2a.MethodGetTask, true, ""},
		{"listed empty needs nothing", Policy{Scopes: map[string][]string{"*": {"a2a:tasks.cancel"}, "get": {}}}, bare, a2a.MethodGetTask, true, ""},
		{"scopes match exactly", Policy{Scopes: map[string][]string{"get": {"a2a:tasks"}}}, alice, a2a.MethodGetTask, false, "missing_scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := permits(&tc.policy, tc.p, tc.op)
			if ok != tc.ok || reason != tc.reason {
				t.Fatalf("permits = %v, %q; want %v, %q", ok, reason, tc.ok, tc.reason)
			}
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	no, yes := false, true
	cases := []struct {
		policy         Policy
		perSubject     bool
		clientContexts bool
	}{
		{Policy{}, false, true},
		{Policy{Ownership: config.OwnerTenant, ClientContextIDs: &yes}, false, true},
		{Policy{Ownership: config.OwnerSubject, ClientContextIDs: &no}, true, false},
	}
	for _, tc := range cases {
		name := strings.TrimSpace(tc.policy.Ownership + " contexts")
		t.Run(name, func(t *testing.T) {
			if got := perSubject(&tc.policy); got != tc.perSubject {
				t.Errorf("perSubject = %v, want %v", got, tc.perSubject)
			}
			if got := clientContextIDs(&tc.policy); got != tc.clientContexts {
				t.Errorf("clientContextIDs = %v, want %v", got, tc.clientContexts)
			}
		})
	}
}
