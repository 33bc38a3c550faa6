package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Where the push relay gets a task's events from (agents[].push.source).
const (
	// PushSourceAuto is native when the agent's card says it sends push
	// notifications, stream when it says it streams, and polling otherwise.
	PushSourceAuto = "auto"
	// PushSourceNative registers the gateway's own webhook at the agent.
	PushSourceNative = "native"
	// PushSourceStream subscribes to the task's stream at the agent.
	PushSourceStream = "stream"
)

// Defaults of PushSource.
const (
	DefaultPushLeaseTTL          = 15 * time.Second
	DefaultPushResubscribeMax    = 30 * time.Second
	DefaultPushMaxStreamFailures = 5
	DefaultPushPollInterval      = 5 * time.Second
	DefaultPushReconcileInterval = time.Minute
)

// Bounds on PushSource.
const (
	// MinPushLeaseTTL keeps lease renewals (every third of it) from
	// hammering the store.
	MinPushLeaseTTL = 300 * time.Millisecond
	// MinPushPollInterval bounds the GetTask calls polling costs an agent.
	MinPushPollInterval = 50 * time.Millisecond
	// MaxPushStreamFailures bounds how long a failing stream is retried
	// before polling.
	MaxPushStreamFailures = 100
)

// PushSource is how the push relay follows one agent's tasks that have push
// configs (fields of agents[].push). Exactly one replica follows a task at
// a time, holding a lease in the store that it renews every third of
// LeaseTTL; when it dies, another replica takes over within LeaseTTL.
type PushSource struct {
	// Source is auto (default), native or stream; see PushSourceAuto.
	Source string `yaml:"source"`
	// LeaseTTL is how long a task's subscription lease lasts unrenewed.
	// Default 15s; at least 300ms.
	LeaseTTL duration.Duration `yaml:"lease_ttl"`
	// ResubscribeMaxBackoff caps the wait, exponential with full jitter,
	// before a dropped upstream stream is opened again. Default 30s.
	ResubscribeMaxBackoff duration.Duration `yaml:"resubscribe_max_backoff"`
	// MaxStreamFailures is how many upstream streams in a row may fail
	// (or end without progress) before the relay polls GetTask instead.
	// Default 5.
	MaxStreamFailures int `yaml:"max_stream_failures"`
	// PollInterval is the GetTask interval of polling. Default 5s.
	PollInterval duration.Duration `yaml:"poll_interval"`
	// ReconcileInterval is how long an agent that pushes natively may stay
	// silent before the relay reads the task with GetTask. Default 1m.
	ReconcileInterval duration.Duration `yaml:"reconcile_interval"`
}

// ApplyDefaults fills the unset fields.
func (p *PushSource) ApplyDefaults() {
	if p.Source == "" {
		p.Source = PushSourceAuto
	}
	p.LeaseTTL = duration.Duration(p.LeaseTTL.Or(DefaultPushLeaseTTL))
	p.ResubscribeMaxBackoff = duration.Duration(p.ResubscribeMaxBackoff.Or(DefaultPushResubscribeMax))
	if p.MaxStreamFailures == 0 {
		p.MaxStreamFailures = DefaultPushMaxStreamFailures
	}
	p.PollInterval = duration.Duration(p.PollInterval.Or(DefaultPushPollInterval))
	p.ReconcileInterval = duration.Duration(p.ReconcileInterval.Or(DefaultPushReconcileInterval))
}

// Validate checks the fields; field is their path ("agents[0].push").
func (p *PushSource) Validate(field string) error {
	var errs []error
	add := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", field, name, fmt.Sprintf(format, args...)))
	}
	switch p.Source {
	case PushSourceAuto, PushSourceNative, PushSourceStream:
	default:
		add("source", "want auto, native or stream, got %q", p.Source)
	}
	if p.LeaseTTL.D() < MinPushLeaseTTL {
		add("lease_ttl", "must be at least %s", MinPushLeaseTTL)
	}
	if p.MaxStreamFailures < 1 || p.MaxStreamFailures > MaxPushStreamFailures {
		add("max_stream_failures", "must be between 1 and %d", MaxPushStreamFailures)
	}
	if p.PollInterval.D() < MinPushPollInterval {
		add("poll_interval", "must be at least %s", MinPushPollInterval)
	}
	if p.ReconcileInterval.D() < MinPushPollInterval {
		add("reconcile_interval", "must be at least %s", MinPushPollInterval)
	}
	return errors.Join(errs...)
}
