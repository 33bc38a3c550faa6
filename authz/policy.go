package authz

import (
	"fmt"
	"slices"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

// Policy is an agent's `policy:` section, defined with the rest of the
// configuration.
type Policy = config.Policy

// ValidatePolicy checks what of a policy the configuration cannot: that
// every operation it names scopes for exists. field is its path in the
// configuration.
func ValidatePolicy(p *Policy, field string) error {
	for op := range p.Scopes {
		if op == "*" {
			continue
		}
		if _, ok := a2a.ParseMethodName(op); !ok {
			return fmt.Errorf("%s.scopes: unknown operation %q", field, op)
		}
	}
	return nil
}

// permits reports whether the principal may call op on the agent, and why not.
func permits(p *Policy, pr *request.Principal, op a2a.Method) (ok bool, reason string) {
	if len(p.Tenants) > 0 && !slices.Contains(p.Tenants, pr.Tenant) {
		return false, "tenant_not_allowed"
	}
	need, listed := p.Scopes[op.String()]
	if !listed {
		need = p.Scopes["*"]
	}
	for _, s := range need {
		if !pr.HasScope(s) {
			return false, "missing_scope"
		}
	}
	return true, ""
}

func perSubject(p *Policy) bool { return p.Ownership == config.OwnerSubject }

func clientContextIDs(p *Policy) bool { return p.ClientContextIDs == nil || *p.ClientContextIDs }
