package push

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// Policies holds the webhook URL policy of every tenant with an allowlist
// of its own, and the default policy of the others. A tenant's webhooks
// are checked under its policy at registration and at every dial, so one
// tenant's allowlist never opens a destination to another.
type Policies struct {
	def     *URLPolicy
	tenants map[string]*URLPolicy
}

// defaultPolicyKey names the default policy in endpoint names.
const defaultPolicyKey = "*"

// NewPolicies returns the policies; def is required, tenants may be nil.
func NewPolicies(def *URLPolicy, tenants map[string]*URLPolicy) *Policies {
	return &Policies{def: def, tenants: tenants}
}

// For returns the policy of tenant's webhooks.
func (p *Policies) For(tenant string) *URLPolicy {
	if t, ok := p.tenants[tenant]; ok {
		return t
	}
	return p.def
}

func (p *Policies) key(tenant string) string {
	if p != nil {
		if _, ok := p.tenants[tenant]; ok {
			return tenant
		}
	}
	return defaultPolicyKey
}

// endpoint is the delivery queue of a push config:
// "<policy>/<agent>/<task id>/<config id>", each part path-escaped, where
// policy is the tenant when it has a policy of its own and "*" otherwise.
// The sender reads the policy from it; the rest names the config, so a
// disabled endpoint's config can be found. Should that be longer than a
// store name may be, task and config are replaced by "~" and a hash.
func (p *Policies) endpoint(c store.PushConfig) string {
	key := p.key(c.Tenant)
	if key != defaultPolicyKey {
		key = url.PathEscape(key)
	}
	head := key + "/" + url.PathEscape(c.Agent) + "/"
	ep := head + url.PathEscape(c.TaskID) + "/" + url.PathEscape(c.ID)
	if len(ep) <= store.MaxNameBytes {
		return ep
	}
	sum := sha256.Sum256([]byte(c.TaskID + "\x00" + c.ID))
	return head + "~" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// parseEndpoint reads the config an endpoint names; false for a hashed one
// or one this package did not name.
func parseEndpoint(ep string) (store.PushConfig, bool) {
	parts := strings.Split(ep, "/")
	if len(parts) != 4 || strings.HasPrefix(parts[2], "~") {
		return store.PushConfig{}, false
	}
	var out [4]string
	for i, s := range parts {
		v, err := url.PathUnescape(s)
		if err != nil || v == "" {
			return store.PushConfig{}, false
		}
		out[i] = v
	}
	return store.PushConfig{Tenant: out[0], Agent: out[1], TaskID: out[2], ID: out[3]}, true
}

// policyOf is the policy an endpoint's notifications are sent under.
func (p *Policies) policyOf(ep string) string {
	key, _, _ := strings.Cut(ep, "/")
	if v, err := url.PathUnescape(key); err == nil {
		return v
	}
	return defaultPolicyKey
}

// PolicySender sends each notification through the HTTPSender of its
// endpoint's policy.
type PolicySender struct {
	p       *Policies
	def     *HTTPSender
	tenants map[string]*HTTPSender
}

var (
	_ Sender        = (*PolicySender)(nil)
	_ ReceiverKeyer = (*PolicySender)(nil)
)

// Sender returns the senders of every policy, signing with signer; their
// requests time out after timeout (zero: DefaultNotificationTimeout).
func (p *Policies) Sender(signer *Signer, timeout time.Duration) *PolicySender {
	s := &PolicySender{p: p, def: NewHTTPSender(p.def, signer, timeout), tenants: make(map[string]*HTTPSender, len(p.tenants))}
	for t, pol := range p.tenants {
		s.tenants[t] = NewHTTPSender(pol, signer, timeout)
	}
	return s
}

func (s *PolicySender) senderOf(ep string) *HTTPSender {
	if t, ok := s.tenants[s.p.policyOf(ep)]; ok {
		return t
	}
	return s.def
}

// Send delivers d under its endpoint's policy.
func (s *PolicySender) Send(ctx context.Context, d store.Delivery) (int, time.Duration, error) {
	return s.senderOf(d.Endpoint).Send(ctx, d)
}

// ReceiverKey is the webhook's scheme, host and port, as HTTPSender's.
func (s *PolicySender) ReceiverKey(d store.Delivery) (string, error) {
	return s.def.ReceiverKey(d)
}
