package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Bounds on the console options.
const (
	// MinConsoleSessionKeyBytes is the shortest session key accepted: the
	// key signs every session cookie.
	MinConsoleSessionKeyBytes = 32
	// MaxConsoleSessionTTL bounds how long one sign-in lasts.
	MaxConsoleSessionTTL = 24 * time.Hour
	// MaxConsolePageSize bounds console.page_size; it is the largest page
	// the lifecycle store lists in one call.
	MaxConsolePageSize = 500
	// MinConsoleRateWindow and MaxConsoleRateWindow bound the window of
	// the overview's request and error rates.
	MinConsoleRateWindow = time.Minute
	MaxConsoleRateWindow = time.Hour
)

// ConsoleOptions is the `console:` section: the operations console served
// on the admin listener under /console/. It is off unless enabled.
type ConsoleOptions struct {
	// Enabled serves the console. Default false.
	Enabled bool `yaml:"enabled"`
	// SessionKeyEnv names the environment variable holding the key that
	// signs session cookies (HMAC-SHA256): at least 32 bytes, raw or
	// base64. Every replica must have the same key, so that a session
	// signed by one is accepted by the others. Required when enabled.
	SessionKeyEnv string `yaml:"session_key_env"`
	// SessionTTL is how long a sign-in lasts; the cookie expires with it.
	// Default 8h; at most 24h.
	SessionTTL duration.Duration `yaml:"session_ttl"`
	// OpsScope is the scope a JWT from one of auth.issuers must carry to
	// sign in. Empty (the default) accepts only the ops token
	// (lifecycle.ops_token_env).
	OpsScope string `yaml:"ops_scope"`
	// PageSize is the number of rows on one page of tasks or dead letters;
	// pages follow the store's indexes with a cursor. Default 50; at most
	// 500 (dead-letter pages stop at 100, the store's own limit).
	PageSize int `yaml:"page_size"`
	// RateWindow is the span of the overview's request and error rates,
	// read from the gateway's own metrics every 10s. Default 5m; 1m to 1h.
	RateWindow duration.Duration `yaml:"rate_window"`
}

// ApplyDefaults fills unset fields with their documented defaults.
func (o *ConsoleOptions) ApplyDefaults() {
	o.SessionTTL = duration.Duration(o.SessionTTL.Or(8 * time.Hour))
	if o.PageSize == 0 {
		o.PageSize = 50
	}
	o.RateWindow = duration.Duration(o.RateWindow.Or(5 * time.Minute))
}

// Validate checks the options; errors name the field. The session key's
// value is never put in a message.
func (o *ConsoleOptions) Validate(env Env) error {
	if !o.Enabled {
		return nil
	}
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("console.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch {
	case o.SessionKeyEnv == "":
		add("session_key_env", "required when the console is enabled")
	case env != nil:
		v, _ := env(o.SessionKeyEnv)
		if _, err := ConsoleSessionKey(v); err != nil {
			add("session_key_env", "environment variable %s: %v", o.SessionKeyEnv, err)
		}
	}
	if o.SessionTTL <= 0 || o.SessionTTL.D() > MaxConsoleSessionTTL {
		add("session_ttl", "want more than 0 and at most %s", MaxConsoleSessionTTL)
	}
	if o.PageSize < 1 || o.PageSize > MaxConsolePageSize {
		add("page_size", "want 1 to %d, got %d", MaxConsolePageSize, o.PageSize)
	}
	if d := o.RateWindow.D(); d < MinConsoleRateWindow || d > MaxConsoleRateWindow {
		add("rate_window", "want %s to %s", MinConsoleRateWindow, MaxConsoleRateWindow)
	}
	return errors.Join(errs...)
}

// ConsoleSessionKey reads a session key as the variable holds it: base64
// when it decodes to at least MinConsoleSessionKeyBytes, the raw bytes
// otherwise.
func ConsoleSessionKey(v string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(v); err == nil && len(b) >= MinConsoleSessionKeyBytes {
		return b, nil
	}
	if len(v) < MinConsoleSessionKeyBytes {
		return nil, fmt.Errorf("not set, or shorter than %d bytes", MinConsoleSessionKeyBytes)
	}
	return []byte(v), nil
}
