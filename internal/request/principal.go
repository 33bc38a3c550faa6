package request

import (
	"context"
	"slices"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Principal is the authenticated caller.
type Principal struct {
	// Tenant scopes every task, context and push config the caller creates
	// or reads. Never empty.
	Tenant string
	// Subject is the token's subject claim or the API key's name. Never empty.
	Subject string
	// Scopes are the granted scopes, in the order the credential lists them.
	Scopes []string
	// Issuer is the configured issuer name, or authz.APIKeyIssuer.
	Issuer string
}

// HasScope reports whether the principal was granted scope s exactly.
func (p *Principal) HasScope(s string) bool {
	if p == nil {
		return false
	}
	return slices.Contains(p.Scopes, s)
}

// Recorder is the authorization decision for one request, as the stages
// after it use it: it records the ids the answer reveals as the caller's,
// refusing an answer that reveals someone else's, and says which of a list
// of tasks the caller owns.
type Recorder interface {
	// Record makes the tasks and contexts ev reveals the caller's; an error
	// (an *a2a.Error) means the answer must be withheld.
	Record(ctx context.Context, ev a2a.Event) error
	// OwnedTasks reports, for each id, whether the caller owns that task.
	OwnedTasks(ctx context.Context, ids []string) ([]bool, error)
}
