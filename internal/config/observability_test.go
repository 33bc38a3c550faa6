package config

import (
	"strings"
	"testing"
)

func TestObservabilityOptions(t *testing.T) {
	cfg, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Log.Access.On() || cfg.Log.Access.SampleRate != 1 || cfg.Tracing.TenantAttribute || cfg.Pprof {
		t.Fatalf("defaults: access %+v, tracing %+v, pprof %v", cfg.Log.Access, cfg.Tracing, cfg.Pprof)
	}
	cfg, err = Parse([]byte(minimal + "log: {access: {enabled: false, sample_rate: 0.1}}\ntracing: {tenant_attribute: true}\npprof: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Access.On() || cfg.Log.Access.SampleRate != 0.1 || !cfg.Tracing.TenantAttribute || !cfg.Pprof {
		t.Fatalf("as written: access %+v, tracing %+v, pprof %v", cfg.Log.Access, cfg.Tracing, cfg.Pprof)
	}
	for _, rate := range []string{"-0.5", "1.5"} {
		_, err := Parse([]byte(minimal + "log: {access: {sample_rate: " + rate + "}}\n"))
		if err == nil || !strings.Contains(err.Error(), "log.access.sample_rate") {
			t.Fatalf("sample_rate %s: %v", rate, err)
		}
	}
}
