package push

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"go.yaml.in/yaml/v3"
)

// validate is all the validation the push section gets: the
// configuration's own and this package's.
func validate(o *config.PushOptions) error {
	return errors.Join(o.Validate(config.ProcessEnv), ValidateConfig(o, config.ProcessEnv))
}

func TestPushOptionsValidate(t *testing.T) {
	valid := func() config.PushOptions {
		o := config.PushOptions{Enabled: true, Signing: config.PushSigning{KeyFiles: []string{"/keys/push.pem"}}}
		o.ApplyDefaults("https://gw.example.com")
		return o
	}
	if o := valid(); validate(&o) != nil || o.Signing.Issuer != "https://gw.example.com" || o.EventLog.MaxEvents != 1000 || o.EventLog.Retention.D() != 24*time.Hour {
		t.Fatalf("defaults: %+v, %v", o, validate(&o))
	}
	if o := (config.PushOptions{}); validate(&o) != nil {
		t.Fatalf("a disabled relay without keys: %v", validate(&o))
	}
	for _, tc := range []struct {
		name   string
		mutate func(*config.PushOptions)
		want   string
	}{
		{"no keys", func(o *config.PushOptions) { o.Signing.KeyFiles = nil }, "push.signing.key_files"},
		{"bad allowlist", func(o *config.PushOptions) { o.Allowlist = []string{"not a host/99"} }, "push.allowlist"},
		{"bad tenant name", func(o *config.PushOptions) { o.Tenants = map[string]config.PushTenant{"a/b": {}} }, "push.tenants.a/b"},
		{"bad tenant allowlist", func(o *config.PushOptions) {
			o.Tenants = map[string]config.PushTenant{"acme": {Allowlist: []string{"10.0.0.0/33"}}}
		}, "push.tenants.acme.allowlist"},
		{"allowlist port out of range", func(o *config.PushOptions) { o.Allowlist = []string{"10.0.0.0/8:65536"} }, "push.allowlist[0]"},
		{"jitter too large", func(o *config.PushOptions) { o.Delivery.Jitter = ptr(0.6) }, "push.delivery.jitter"},
		{"negative jitter", func(o *config.PushOptions) { o.Delivery.Jitter = ptr(-0.1) }, "push.delivery.jitter"},
		{"jitter not a number", func(o *config.PushOptions) { o.Delivery.Jitter = ptr(math.NaN()) }, "push.delivery.jitter"},
		{"missing secret", func(o *config.PushOptions) { o.WebhookSecretEnv = "A2AGW_TEST_NO_SUCH_VARIABLE" }, "push.webhook_secret_env"},
		{"schedule too long", func(o *config.PushOptions) { o.Delivery.Schedule = make([]duration.Duration, 40) }, "push.delivery.schedule"},
		{"negative timeout", func(o *config.PushOptions) { o.Delivery.Timeout = -1 }, "push.delivery.timeout"},
		{"negative lease", func(o *config.PushOptions) { o.Delivery.LeaseTTL = -1 }, "push.delivery.lease_ttl"},
		{"lease shorter than two timeouts", func(o *config.PushOptions) {
			o.Delivery.Timeout, o.Delivery.LeaseTTL = duration.Duration(2*time.Second), duration.Duration(3*time.Second)
		}, "push.delivery.lease_ttl"},
		{"lease shorter than two default timeouts", func(o *config.PushOptions) { o.Delivery.LeaseTTL = duration.Duration(time.Second) }, "push.delivery.lease_ttl"},
		{"too many events", func(o *config.PushOptions) { o.EventLog.MaxEvents = 1 << 30 }, "push.event_log.max_events"},
		{"negative retention", func(o *config.PushOptions) { o.EventLog.Retention = -1 }, "push.event_log.retention"},
	} {
		o := valid()
		tc.mutate(&o)
		if err := validate(&o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming %s", tc.name, err, tc.want)
		}
	}
}

func TestPushDeliveryLease(t *testing.T) {
	for _, tc := range []struct {
		name           string
		timeout, lease time.Duration
	}{
		{"default", 0, 0},
		{"short, for a quick takeover", time.Second, 2 * time.Second},
		{"long", 10 * time.Second, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := config.PushOptions{Delivery: config.PushDelivery{Timeout: duration.Duration(tc.timeout), LeaseTTL: duration.Duration(tc.lease)}}
			if err := validate(&o); err != nil {
				t.Fatal(err)
			}
			if got := DeliveryOptionsOf(&o).LeaseTTL; got != tc.lease {
				t.Fatalf("delivery lease %s, want %s", got, tc.lease)
			}
		})
	}
}

func TestPushDeliveryLeaseFromYAML(t *testing.T) {
	var o config.PushOptions
	if err := yaml.Unmarshal([]byte("{delivery: {timeout: 1s, lease_ttl: 2500ms}}"), &o); err != nil {
		t.Fatal(err)
	}
	if err := validate(&o); err != nil {
		t.Fatal(err)
	}
	if got := DeliveryOptionsOf(&o).LeaseTTL; got != 2500*time.Millisecond {
		t.Fatalf("push.delivery.lease_ttl read as %s", got)
	}
	o = config.PushOptions{}
	if err := yaml.Unmarshal([]byte("{delivery: {timeout: 1s, lease_ttl: 1500ms}}"), &o); err != nil {
		t.Fatal(err)
	}
	if err := validate(&o); err == nil || !strings.Contains(err.Error(), "push.delivery.lease_ttl: must be at least twice the timeout") {
		t.Fatalf("a lease shorter than two attempts: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// push.delivery.jitter: unset takes the default, 0 turns jitter off, any
// other value is the fraction.
func TestPushDeliveryJitter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		jitter   *float64
		want     float64
		noJitter bool
	}{
		{"unset", nil, 0, false},
		{"off", ptr(0.0), 0, true},
		{"set", ptr(0.35), 0.35, false},
		{"largest", ptr(0.5), 0.5, false},
	} {
		o := config.PushOptions{Delivery: config.PushDelivery{Jitter: tc.jitter}}
		if err := validate(&o); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if do := DeliveryOptionsOf(&o); do.Jitter != tc.want || do.NoJitter != tc.noJitter {
			t.Errorf("%s: Jitter %g, NoJitter %v; want %g, %v", tc.name, do.Jitter, do.NoJitter, tc.want, tc.noJitter)
		}
	}
}
