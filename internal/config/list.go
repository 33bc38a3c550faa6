package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// PageTokenKeyBytes is the size of the key that signs ListTasks page
// tokens (HMAC-SHA256).
const PageTokenKeyBytes = 32

// ListTasksOptions is the `list_tasks:` section. The gateway filters the
// agents' ListTasks answers to the caller's tasks and pages them itself,
// with page tokens of its own: signed, bound to the caller and the agent,
// and short-lived.
type ListTasksOptions struct {
	// PageTokenKeyEnv names the environment variable holding the key that
	// signs page tokens: 32 bytes as base64 or 64 hex digits. Without it
	// every process signs with a random key of its own, so a token works
	// only on the replica that issued it and only until it restarts; set it
	// (to the same value everywhere) when several replicas serve one agent.
	PageTokenKeyEnv string `yaml:"page_token_key_env"`
	// PageTokenTTL is how long a page token can be used. Default 1h.
	PageTokenTTL duration.Duration `yaml:"page_token_ttl"`
	// MaxUpstreamPages bounds the pages one ListTasks reads from the agent
	// to fill its answer; when they are read the caller gets the tasks
	// found so far and a token to continue. Default 5.
	MaxUpstreamPages int `yaml:"max_upstream_pages"`
}

// ApplyDefaults fills unset fields.
func (o *ListTasksOptions) ApplyDefaults() {
	o.PageTokenTTL = duration.Duration(o.PageTokenTTL.Or(time.Hour))
	if o.MaxUpstreamPages == 0 {
		o.MaxUpstreamPages = 5
	}
}

// Validate checks the section; errors name the field. env is what the key
// variable is checked against; nil skips that check.
func (o *ListTasksOptions) Validate(env Env) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("list_tasks.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if o.PageTokenKeyEnv != "" && env != nil {
		if _, err := o.pageTokenKey(env); err != nil {
			add("page_token_key_env", "%v", err)
		}
	}
	if o.PageTokenTTL < duration.Duration(time.Second) {
		add("page_token_ttl", "must be at least 1s")
	}
	if o.MaxUpstreamPages < 1 || o.MaxUpstreamPages > 100 {
		add("max_upstream_pages", "must be between 1 and 100")
	}
	return errors.Join(errs...)
}

// PageTokenKey reads the configured page-token key from the process's
// environment; nil without page_token_key_env.
func (o *ListTasksOptions) PageTokenKey() ([]byte, error) { return o.pageTokenKey(ProcessEnv) }

func (o *ListTasksOptions) pageTokenKey(env Env) ([]byte, error) {
	if o.PageTokenKeyEnv == "" {
		return nil, nil
	}
	return loadKey(env, o.PageTokenKeyEnv, PageTokenKeyBytes)
}
