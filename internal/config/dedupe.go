package config

import (
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Dedupe store-error behaviours.
const (
	// Refuse answers Unavailable when the store cannot be asked (default):
	// a retry must never reach the agent twice.
	DedupeRefuse = "refuse"
	// Forward sends the message on without deduplication, favouring
	// availability over the at-most-once promise.
	DedupeForward = "forward"
)

// DedupeOptions is the `dedupe:` section of the configuration.
type DedupeOptions struct {
	// Disabled turns deduplication off.
	Disabled bool `yaml:"disabled"`
	// TTL is how long a result is kept for replay. Default 24h.
	TTL duration.Duration `yaml:"ttl"`
	// Lease is how long a claim survives without its holder renewing it;
	// a retry after the lease takes the claim over. Default 30s.
	Lease duration.Duration `yaml:"lease"`
	// Wait bounds how long a duplicate waits for the first request to
	// finish before it is answered "in progress". Default 10s.
	Wait duration.Duration `yaml:"wait"`
	// OnStoreError is "refuse" (default) or "forward".
	OnStoreError string `yaml:"on_store_error"`
	// MaxResultBytes bounds a stored result; larger answers are passed on
	// but not kept, and a retry of them is answered "in progress" until the
	// record expires. Default 1 MiB.
	MaxResultBytes int `yaml:"max_result_bytes"`
}

// ApplyDefaults fills unset fields.
func (o *DedupeOptions) ApplyDefaults() {
	o.TTL = duration.Duration(o.TTL.Or(24 * time.Hour))
	o.Lease = duration.Duration(o.Lease.Or(30 * time.Second))
	o.Wait = duration.Duration(o.Wait.Or(10 * time.Second))
	if o.OnStoreError == "" {
		o.OnStoreError = DedupeRefuse
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = 1 << 20
	}
}

// Validate checks the options; errors name the field.
func (o *DedupeOptions) Validate() error {
	if o.OnStoreError != DedupeRefuse && o.OnStoreError != DedupeForward {
		return fmt.Errorf("dedupe.on_store_error: want %q or %q, got %q", DedupeRefuse, DedupeForward, o.OnStoreError)
	}
	if o.Lease.D() < time.Second {
		return fmt.Errorf("dedupe.lease: must be at least 1s")
	}
	if o.TTL.D() < o.Lease.D() {
		return fmt.Errorf("dedupe.ttl: must be at least dedupe.lease")
	}
	if o.MaxResultBytes < 0 {
		return fmt.Errorf("dedupe.max_result_bytes: must not be negative")
	}
	return nil
}
