package config

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// PushOptions is the `push:` section: the gateway's push-notification
// relay. With it enabled, the gateway answers push-config operations itself
// (the agent never sees the consumers' webhooks), turns every event of a
// task with a push config into signed, durable, ordered webhook deliveries,
// and keeps the per-task event log that resumable streams replay.
type PushOptions struct {
	// Enabled turns the relay on; it needs Signing.KeyFiles.
	Enabled bool `yaml:"enabled"`
	// Signing is how notifications are signed: a JWT whose keys are
	// published at /.well-known/a2a-push-jwks.json on the public listener.
	Signing PushSigning `yaml:"signing"`
	// Allowlist lifts the webhook URL policy for every tenant: host names
	// ("*.example.com" for every name under example.com), IP addresses or
	// CIDRs that may be called over plain http and may be private, each
	// with ":port" or ":*" for every port ("[fd00::/8]:8443" for IPv6);
	// without a port, 80 and 443 only (see push.Allowlist).
	Allowlist []string `yaml:"allowlist"`
	// WebhookSecretEnv names an environment variable holding a Standard
	// Webhooks secret (base64, optionally "whsec_"-prefixed): every
	// notification then carries webhook-id, webhook-timestamp and
	// webhook-signature. Tenants may have their own.
	WebhookSecretEnv string `yaml:"webhook_secret_env"`
	// VerifyEndpoints makes the gateway challenge a webhook at
	// registration, before its first delivery: the receiver must echo a
	// random value (docs/push.md). Tenants may differ.
	VerifyEndpoints bool `yaml:"verify_endpoints"`
	// Tenants holds per-tenant settings that replace the ones above.
	Tenants map[string]PushTenant `yaml:"tenants"`
	// Delivery tunes the delivery workers.
	Delivery PushDelivery `yaml:"delivery"`
	// EventLog bounds each task's event log.
	EventLog PushEventLog `yaml:"event_log"`
	// Resolver resolves webhook host names at registration and at dial
	// time; nil means the system's. Not read from YAML: for tests and for
	// programs that embed the gateway.
	Resolver *net.Resolver `yaml:"-"`
}

// PushSigning configures the notification signing keys.
type PushSigning struct {
	// Issuer is the JWT iss. Default: public_url.
	Issuer string `yaml:"issuer"`
	// KeyFiles are PEM private keys (Ed25519 or ECDSA P-256/384/521). The
	// first signs; all are published, so a key being rotated in is listed
	// after the active one, and the old one stays listed until no
	// notification signed with it can be in flight.
	KeyFiles []string `yaml:"key_files"`
	// KeyIDs are the kid of each key, in order. Default: each file's base
	// name without extension.
	KeyIDs []string `yaml:"key_ids"`
	// TTL is the JWT lifetime (exp - iat). Default 5m.
	TTL duration.Duration `yaml:"ttl"`
}

// PushTenant is one tenant's push settings.
type PushTenant struct {
	// Allowlist replaces push.allowlist for the tenant's webhooks.
	Allowlist []string `yaml:"allowlist"`
	// WebhookSecretEnv replaces push.webhook_secret_env for the tenant.
	WebhookSecretEnv string `yaml:"webhook_secret_env"`
	// VerifyEndpoints, when set, replaces push.verify_endpoints.
	VerifyEndpoints *bool `yaml:"verify_endpoints"`
}

// PushDelivery tunes the delivery workers (see push.DeliveryOptionsOf).
type PushDelivery struct {
	// Schedule is the delay before each retry; after the last the
	// notification is dead-lettered. Default: 5s, 5m, 30m, 2h, 5h, 10h, 10h.
	Schedule []duration.Duration `yaml:"schedule"`
	// Jitter moves each retry by up to this fraction of its delay, either
	// way, so that queues that failed together do not retry together.
	// 0 turns it off; at most 0.5. Default 0.2.
	Jitter *float64 `yaml:"jitter"`
	// Timeout bounds one attempt. Default 10s.
	Timeout duration.Duration `yaml:"timeout"`
	// MaxRetryAfter caps a receiver's Retry-After. Default 1h.
	MaxRetryAfter duration.Duration `yaml:"max_retry_after"`
	// PerReceiverConcurrency bounds requests in flight to one receiver.
	// Default 16.
	PerReceiverConcurrency int `yaml:"per_receiver_concurrency"`
	// PerReceiverRate bounds requests per second to one receiver, with
	// bursts of PerReceiverBurst. 0: unlimited.
	PerReceiverRate  float64 `yaml:"per_receiver_rate"`
	PerReceiverBurst int     `yaml:"per_receiver_burst"`
	// BreakerFailures failed requests in a row open a receiver's circuit
	// breaker for BreakerCooldown. Defaults 5 and 30s; -1 turns it off.
	BreakerFailures int               `yaml:"breaker_failures"`
	BreakerCooldown duration.Duration `yaml:"breaker_cooldown"`
	// Workers bounds the endpoints this replica delivers at a time. Default 64.
	Workers int `yaml:"workers"`
	// LeaseTTL is how long a replica's claim on an endpoint's queue lasts
	// unrenewed: a replica that dies keeps its endpoints that long before
	// another delivers them. At least twice Timeout. Default
	// max(30s, 3*Timeout).
	LeaseTTL duration.Duration `yaml:"lease_ttl"`
	// PollInterval is how often due retries and other replicas' work are
	// looked for. Default 250ms.
	PollInterval duration.Duration `yaml:"poll_interval"`
}

// Defaults of the push event log.
const (
	DefaultEventLogRetention = 24 * time.Hour
	DefaultEventLogMaxEvents = 1000
)

// PushEventLog bounds each task's event log.
type PushEventLog struct {
	// Retention is how long a task's log is kept after its last event.
	// Default 24h.
	Retention duration.Duration `yaml:"retention"`
	// MaxEvents is how many events a task's log keeps. Default 1000.
	MaxEvents int `yaml:"max_events"`
}

// AgentPush is one agent's push settings.
type AgentPush struct {
	// ForwardConfigs passes push-config operations and inline configs
	// through to the agent, which then calls the webhooks itself, instead of
	// the gateway answering them (the default when the relay is enabled).
	ForwardConfigs bool `yaml:"forward_configs"`
	// PushSource says where the relay gets the agent's events from.
	PushSource `yaml:",inline"`
}

// maxPushTenantBytes bounds a tenant name under push.tenants: it is part
// of every delivery endpoint name.
const maxPushTenantBytes = 128

var pushTenantName = regexp.MustCompile(`^[^*/%\s]+$`)

// ApplyDefaults fills unset fields; publicURL is the default issuer.
func (o *PushOptions) ApplyDefaults(publicURL string) {
	if o.Signing.Issuer == "" {
		o.Signing.Issuer = publicURL
	}
	o.EventLog.Retention = duration.Duration(o.EventLog.Retention.Or(DefaultEventLogRetention))
	if o.EventLog.MaxEvents == 0 {
		o.EventLog.MaxEvents = DefaultEventLogMaxEvents
	}
}

// Validate checks the section; errors name the field. Without Enabled only
// the shape is checked. What only package push can check (the signing
// keys' options, the allowlists, the webhook secrets' format, the delivery
// bounds) it checks in push.ValidateConfig.
func (o *PushOptions) Validate(env Env) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("push.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	checkEnv := func(field, name string) {
		if name == "" || !o.Enabled {
			return
		}
		if msg := env.checkVar(name); msg != "" {
			add(field, "%s", msg)
		}
	}
	checkEnv("webhook_secret_env", o.WebhookSecretEnv)
	for t, tc := range o.Tenants {
		f := fmt.Sprintf("tenants.%s", t)
		if len(t) > maxPushTenantBytes || !pushTenantName.MatchString(t) {
			add(f, "a tenant name of 1-%d bytes without '*', '/', '%%' or spaces", maxPushTenantBytes)
		}
		checkEnv(f+".webhook_secret_env", tc.WebhookSecretEnv)
	}
	return errors.Join(errs...)
}

// VerifiesEndpoints reports whether tenant's webhooks are challenged at
// registration.
func (o *PushOptions) VerifiesEndpoints(tenant string) bool {
	if tc, ok := o.Tenants[tenant]; ok && tc.VerifyEndpoints != nil {
		return *tc.VerifyEndpoints
	}
	return o.VerifyEndpoints
}

// TenantAllowlists returns the allowlist of every tenant with its own.
func (o *PushOptions) TenantAllowlists() map[string][]string {
	out := map[string][]string{}
	for t, tc := range o.Tenants {
		if tc.Allowlist != nil {
			out[t] = tc.Allowlist
		}
	}
	return out
}

// WebhookSecretEnvOf names the environment variable of tenant's Standard
// Webhooks secret, "" for none.
func (o *PushOptions) WebhookSecretEnvOf(tenant string) string {
	if tc, ok := o.Tenants[tenant]; ok && tc.WebhookSecretEnv != "" {
		return tc.WebhookSecretEnv
	}
	return o.WebhookSecretEnv
}
