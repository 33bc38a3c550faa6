package push

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// SignerOptionsOf are the signing keys the push section configures.
func SignerOptionsOf(o *config.PushOptions) SignerOptions {
	return SignerOptions{Issuer: o.Signing.Issuer, KeyFiles: o.Signing.KeyFiles, KeyIDs: o.Signing.KeyIDs, TTL: o.Signing.TTL.D()}
}

// DeliveryOptionsOf are the delivery settings the push section configures.
func DeliveryOptionsOf(o *config.PushOptions) DeliveryOptions {
	d := o.Delivery
	var schedule []time.Duration
	if d.Schedule != nil {
		schedule = make([]time.Duration, len(d.Schedule))
		for i, s := range d.Schedule {
			schedule[i] = s.D()
		}
	}
	var jitter float64
	if d.Jitter != nil {
		jitter = *d.Jitter
	}
	return DeliveryOptions{
		Schedule: schedule, Jitter: jitter, NoJitter: d.Jitter != nil && *d.Jitter == 0, Timeout: d.Timeout.D(), MaxRetryAfter: d.MaxRetryAfter.D(),
		PerReceiverConcurrency: d.PerReceiverConcurrency, PerReceiverRate: d.PerReceiverRate, PerReceiverBurst: d.PerReceiverBurst,
		BreakerFailures: d.BreakerFailures, BreakerCooldown: d.BreakerCooldown.D(), Workers: d.Workers, PollInterval: d.PollInterval.D(),
		LeaseTTL: d.LeaseTTL.D(),
	}
}

// ValidateConfig checks what of the push section the configuration cannot
// check on its own (config.PushOptions.Validate checks the rest): the
// signing options when the relay is enabled, the allowlists, the Standard
// Webhooks secrets the named variables hold (with a nil env, none), the
// delivery settings and the event log's bounds. Errors name the field.
func ValidateConfig(o *config.PushOptions, env config.Env) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if o.Enabled {
		so := SignerOptionsOf(o)
		add(so.Validate("push.signing"))
	}
	add(Allowlist(o.Allowlist).Validate("push.allowlist"))
	checkSecret := func(field, name string) {
		if name == "" || !o.Enabled || env == nil {
			return
		}
		// A variable that is unset or empty is the configuration's
		// problem, reported there.
		if v, ok := env(name); ok && v != "" {
			if _, err := ParseWebhookSecret(v); err != nil {
				add(fmt.Errorf("push.%s: the Standard Webhooks secret in %s: %v", field, name, err))
			}
		}
	}
	checkSecret("webhook_secret_env", o.WebhookSecretEnv)
	for t, tc := range o.Tenants {
		f := fmt.Sprintf("tenants.%s", t)
		add(Allowlist(tc.Allowlist).Validate("push." + f + ".allowlist"))
		checkSecret(f+".webhook_secret_env", tc.WebhookSecretEnv)
	}
	do := DeliveryOptionsOf(o)
	add(do.Validate("push.delivery"))
	add(store.EventLogOptionsOf(o.EventLog).Validate("push.event_log"))
	return errors.Join(errs...)
}
