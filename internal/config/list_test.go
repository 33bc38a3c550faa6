package config

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestListTasksDefaultsAndKey(t *testing.T) {
	cfg, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.ListTasks; o.PageTokenTTL.D() != time.Hour || o.MaxUpstreamPages != 5 {
		t.Errorf("list_tasks defaults: %+v", o)
	}
	if w := cfg.Warnings(); len(w) != 1 || !strings.Contains(w[0], "list_tasks.page_token_key_env") {
		t.Errorf("without a page token key: warnings %q", w)
	}
	key := bytes.Repeat([]byte{9}, PageTokenKeyBytes)
	t.Setenv("A2AGW_TEST_PAGE_KEY", hex.EncodeToString(key))
	cfg, err = Parse([]byte(minimal + "list_tasks: {page_token_key_env: A2AGW_TEST_PAGE_KEY}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cfg.ListTasks.PageTokenKey(); err != nil || !bytes.Equal(got, key) {
		t.Errorf("page token key = %x, %v", got, err)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("with a page token key: warnings %q", w)
	}
	t.Setenv("A2AGW_TEST_PAGE_KEY", "too short")
	if _, err := Parse([]byte(minimal + "list_tasks: {page_token_key_env: A2AGW_TEST_PAGE_KEY}\n")); err == nil || strings.Contains(err.Error(), "too short") {
		t.Errorf("a short key: %v (the value must not be echoed)", err)
	}
}

func TestTrustedPrefixes(t *testing.T) {
	cfg, err := Parse([]byte(minimal + "trusted_proxies: [10.0.0.0/8, 192.0.2.7, \"2001:db8::/32\", \"::1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.TrustedPrefixes()
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("::1/128"),
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("trusted_proxies read as %v, %v; want %v", got, err, want)
	}
}
