package config

import "fmt"

// AccessLogOptions configure the access log: one line per request, with
// "log":"access".
type AccessLogOptions struct {
	// Enabled turns the access log on or off. Default true.
	Enabled *bool `yaml:"enabled"`
	// SampleRate is the fraction of requests that get a line, greater than
	// 0 and at most 1 (to log none, set enabled: false). Default 1.
	SampleRate float64 `yaml:"sample_rate"`
}

// On reports whether access lines are written.
func (a AccessLogOptions) On() bool { return a.Enabled == nil || *a.Enabled }

// TracingOptions configure what spans say. Whether spans are recorded and
// where they go is the standard OTEL_* environment's (docs/observability.md).
type TracingOptions struct {
	// TenantAttribute puts the caller's tenant on spans as a2a.tenant.
	// Default false: tenant names may be customer names, and spans often
	// go to a third-party backend.
	TenantAttribute bool `yaml:"tenant_attribute"`
}

func (a *AccessLogOptions) applyDefaults() {
	if a.SampleRate == 0 {
		a.SampleRate = 1
	}
}

func (a AccessLogOptions) validate(add func(field, format string, args ...any)) {
	if a.SampleRate <= 0 || a.SampleRate > 1 {
		add("log.access.sample_rate", "want a fraction greater than 0 and at most 1, got %s", fmt.Sprint(a.SampleRate))
	}
}
