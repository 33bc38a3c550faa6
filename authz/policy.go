package authz

import (
	"fmt"
	"slices"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

// Ownership scopes: who may act on a task once it exists.
const (
	// OwnerTenant lets any subject of the owning tenant act on its tasks.
	OwnerTenant = "tenant"
	// OwnerSubject restricts each task to the subject that created it.
	OwnerSubject = "subject"
)

// Policy is an agent's `policy:` section: who may use the agent and which
// scopes each operation needs.
type Policy struct {
	// Tenants that may use the agent. Empty means every authenticated tenant.
	Tenants []string `yaml:"tenants"`
	// Scopes maps an operation (send, stream, get, list, cancel, subscribe,
	// push_config_set, push_config_get, push_config_list,
	// push_config_delete, extended_card) to the scopes it requires, all of
	// them. The key "*" applies to operations not listed. Empty: no scope
	// is required beyond authentication.
	Scopes map[string][]string `yaml:"scopes"`
	// Ownership is "tenant" (default: any subject of the owning tenant may
	// act on a task) or "subject" (only the subject that created it).
	Ownership string `yaml:"ownership"`
	// ClientContextIDs allows a caller to start a conversation under a
	// context id of its own choosing, which the gateway then reserves for
	// the caller (default true). Set false for agents that issue predictable
	// context ids, so no caller can reserve one before the agent issues it.
	ClientContextIDs *bool `yaml:"client_context_ids"`
}

// Validate checks a policy; field is its path in the configuration.
func (p *Policy) Validate(field string) error {
	switch p.Ownership {
	case "", OwnerTenant, OwnerSubject:
	default:
		return fmt.Errorf("%s.ownership: want %q or %q, got %q", field, OwnerTenant, OwnerSubject, p.Ownership)
	}
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
func (p *Policy) permits(pr *request.Principal, op a2a.Method) (ok bool, reason string) {
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

func (p *Policy) perSubject() bool { return p.Ownership == OwnerSubject }

func (p *Policy) clientContextIDs() bool { return p.ClientContextIDs == nil || *p.ClientContextIDs }
