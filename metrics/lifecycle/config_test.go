package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

func TestLifecycleOptionsYAMLAndDefaults(t *testing.T) {
	raw := `
record_retention: 48h
tenant_retention: {acme: 2h}
orphan_after: 10m
sweep_interval: 5s
tenant_label: true
max_tenant_labels: 5
ops_webhook: https://ops.example.com/hook
workers: 2
queue_size: 16
poll_after: 0s
max_polls_per_sweep: 7
`
	var o config.LifecycleOptions
	dec := yaml.NewDecoder(strings.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&o); err != nil {
		t.Fatal(err)
	}
	o.ApplyDefaults()
	if err := o.Validate(config.ProcessEnv); err != nil {
		t.Fatal(err)
	}
	if o.Retention("acme") != 2*time.Hour || o.Retention("beta") != 48*time.Hour || o.OrphanAfter.D() != 10*time.Minute ||
		o.SweepInterval.D() != 5*time.Second || !o.TenantLabel || o.MaxTenantLabels != 5 || o.Workers != 2 || o.QueueSize != 16 ||
		o.Polling() != 0 || o.MaxPollsPerSweep != 7 {
		t.Errorf("decoded %+v", o)
	}

	var d config.LifecycleOptions
	d.ApplyDefaults()
	if d.RecordRetention.D() != 720*time.Hour || d.OrphanAfter.D() != time.Hour || d.SweepInterval.D() != 30*time.Second ||
		d.MaxTenantLabels != 20 || d.Workers != 32 || d.QueueSize != 1024 || d.Polling() != 30*time.Second || d.MaxPollsPerSweep != 100 {
		t.Errorf("defaults %+v", d)
	}

	var w config.WatchdogOptions
	if err := yaml.Unmarshal([]byte("working: 1h\ninput_required: 24h\nauth_required: 30m\n"), &w); err != nil {
		t.Fatal(err)
	}
	w.ApplyDefaults()
	if w.Working.D() != time.Hour || w.InputRequired.D() != 24*time.Hour || w.AuthRequired.D() != 30*time.Minute || w.Action != config.WatchdogEscalate {
		t.Errorf("watchdog %+v", w)
	}
}

func TestLifecycleOptionsValidate(t *testing.T) {
	t.Setenv("LC_SHORT_TOKEN", "short")
	t.Setenv("LC_GOOD_TOKEN", "0123456789abcdef")
	tests := []struct {
		name   string
		change func(*config.LifecycleOptions)
		want   string
	}{
		{"defaults", func(*config.LifecycleOptions) {}, ""},
		{"zero retention", func(o *config.LifecycleOptions) { o.RecordRetention = -1 }, "lifecycle.record_retention"},
		{"empty tenant", func(o *config.LifecycleOptions) {
			o.TenantRetention = map[string]duration.Duration{"": duration.Duration(time.Hour)}
		}, "lifecycle.tenant_retention"},
		{"zero tenant retention", func(o *config.LifecycleOptions) {
			o.TenantRetention = map[string]duration.Duration{"acme": 0}
		}, `lifecycle.tenant_retention["acme"]`},
		{"orphan after", func(o *config.LifecycleOptions) { o.OrphanAfter = -1 }, "lifecycle.orphan_after"},
		{"sweep interval", func(o *config.LifecycleOptions) { o.SweepInterval = duration.Duration(time.Millisecond) }, "lifecycle.sweep_interval"},
		{"tenant labels", func(o *config.LifecycleOptions) { o.TenantLabel, o.MaxTenantLabels = true, 5000 }, "lifecycle.max_tenant_labels"},
		{"missing token variable", func(o *config.LifecycleOptions) { o.OpsTokenEnv = "LC_NOT_SET_ANYWHERE" }, "lifecycle.ops_token_env"},
		{"short token", func(o *config.LifecycleOptions) { o.OpsTokenEnv = "LC_SHORT_TOKEN" }, "at least 16 bytes"},
		{"good token", func(o *config.LifecycleOptions) { o.OpsTokenEnv = "LC_GOOD_TOKEN" }, ""},
		{"webhook", func(o *config.LifecycleOptions) { o.OpsWebhook = "ftp://example.com" }, "lifecycle.ops_webhook"},
		{"workers", func(o *config.LifecycleOptions) { o.Workers = 1000 }, "lifecycle.workers"},
		{"queue", func(o *config.LifecycleOptions) { o.QueueSize = -1 }, "lifecycle.queue_size"},
		{"poll after", func(o *config.LifecycleOptions) { *o.PollAfter = -1 }, "lifecycle.poll_after"},
		{"polls per sweep", func(o *config.LifecycleOptions) { o.MaxPollsPerSweep = config.MaxPollsPerSweepLimit + 1 }, "lifecycle.max_polls_per_sweep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o config.LifecycleOptions
			o.ApplyDefaults()
			tt.change(&o)
			err := o.Validate(config.ProcessEnv)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want it to mention %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "short\""):
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

func TestWatchdogOptionsValidate(t *testing.T) {
	tests := []struct {
		w    config.WatchdogOptions
		want string
	}{
		{config.WatchdogOptions{Action: config.WatchdogCancel, Working: duration.Duration(time.Hour)}, ""},
		{config.WatchdogOptions{Action: config.WatchdogEscalate}, ""},
		{config.WatchdogOptions{Action: "kill"}, "agents[0].watchdog.action"},
		{config.WatchdogOptions{Action: config.WatchdogCancel, InputRequired: -1}, "agents[0].watchdog.input_required"},
	}
	for _, tt := range tests {
		err := tt.w.Validate("agents[0].watchdog")
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.w, err, tt.want)
		}
	}
}
