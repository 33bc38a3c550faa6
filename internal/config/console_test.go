package config

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestConsoleOffByDefault(t *testing.T) {
	cfg, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Console; o.Enabled || o.SessionTTL.D() != 8*time.Hour || o.PageSize != 50 || o.RateWindow.D() != 5*time.Minute || o.OpsScope != "" {
		t.Fatalf("console defaults: %+v", o)
	}
}

func TestConsoleSessionKey(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, MinConsoleSessionKeyBytes)
	env := func(v string) Env {
		return func(name string) (string, bool) {
			if name == "A2AGW_TEST_CONSOLE_KEY" {
				return v, true
			}
			return "", false
		}
	}
	for _, tc := range []struct {
		name, value string
		want        []byte
	}{
		{"base64", base64.StdEncoding.EncodeToString(raw), raw},
		{"raw", strings.Repeat("k", 40), []byte(strings.Repeat("k", 40))},
	} {
		cfg, err := ParseEnv([]byte(minimal+"console: {enabled: true, session_key_env: A2AGW_TEST_CONSOLE_KEY}\n"), env(tc.value))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, err := ConsoleSessionKey(tc.value); err != nil || !bytes.Equal(got, tc.want) || !cfg.Console.Enabled {
			t.Fatalf("%s: key %q, %v", tc.name, got, err)
		}
	}
	_, err := ParseEnv([]byte(minimal+"console: {enabled: true, session_key_env: A2AGW_TEST_CONSOLE_KEY}\n"), env("short-secret-value"))
	if err == nil || !strings.Contains(err.Error(), "line 5: console.session_key_env: environment variable A2AGW_TEST_CONSOLE_KEY") ||
		strings.Contains(err.Error(), "short-secret-value") {
		t.Fatalf("a short key: %v (want the line and field, never the value)", err)
	}
}

func TestConsoleRejects(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no key", "console: {enabled: true}\n", "line 5: console.session_key_env: required when the console is enabled"},
		{"long session", "console:\n  enabled: true\n  session_key_env: K\n  session_ttl: 48h\n", "line 8: console.session_ttl: want more than 0 and at most 24h0m0s"},
		{"page size", "console:\n  enabled: true\n  session_key_env: K\n  page_size: 501\n", "line 8: console.page_size: want 1 to 500, got 501"},
		{"rate window", "console:\n  enabled: true\n  session_key_env: K\n  rate_window: 10s\n", "line 8: console.rate_window: want 1m0s to 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnv([]byte(minimal+tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// Off, nothing else is checked.
	if _, err := ParseEnv([]byte(minimal+"console: {page_size: 9999}\n"), nil); err != nil {
		t.Fatalf("a disabled console's fields were checked: %v", err)
	}
}
