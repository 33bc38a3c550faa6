package flow

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

func testKey(t *testing.T, env string, b byte, hexForm bool) {
	t.Helper()
	raw := bytes.Repeat([]byte{b}, config.AuthFlowKeyBytes)
	if hexForm {
		t.Setenv(env, hex.EncodeToString(raw))
	} else {
		t.Setenv(env, base64.RawURLEncoding.EncodeToString(raw))
	}
}

// Keys rotate: what the old active key sealed still opens once a new key
// is active, new values are sealed with the new key, and a value opens
// only with the additional data it was sealed with.
func TestSealerRotationAndBinding(t *testing.T) {
	testKey(t, "AF_TEST_K1", 1, false)
	testKey(t, "AF_TEST_K2", 2, true)
	before, err := newSealer([]config.AuthFlowKey{{ID: "k1", KeyEnv: "AF_TEST_K1", Active: true}})
	if err != nil {
		t.Fatal(err)
	}
	aad := additionalData(purposeCredential, "cal", "task-1", "ch-1")
	secret := []byte("Bearer s3cr3t-token")
	old := before.seal(secret, aad)
	if bytes.Contains(old, secret) || !bytes.HasPrefix(old, []byte("k1:")) {
		t.Fatalf("sealed value: %q", old)
	}
	after, err := newSealer([]config.AuthFlowKey{{ID: "k1", KeyEnv: "AF_TEST_K1"}, {ID: "k2", KeyEnv: "AF_TEST_K2", Active: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := after.open(old, aad); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("old value after rotation: %q %v", got, err)
	}
	fresh := after.seal(secret, aad)
	if !bytes.HasPrefix(fresh, []byte("k2:")) || bytes.Equal(fresh, after.seal(secret, aad)) {
		t.Fatalf("new values: %q (and nonces must differ)", fresh)
	}
	tampered := bytes.Clone(fresh)
	tampered[len(tampered)-1] ^= 1
	for name, tc := range map[string]struct {
		s      *sealer
		sealed []byte
		aad    []byte
	}{
		"other task":      {after, fresh, additionalData(purposeCredential, "cal", "task-2", "ch-1")},
		"other challenge": {after, fresh, additionalData(purposeCredential, "cal", "task-1", "ch-2")},
		"other purpose":   {after, fresh, additionalData(purposeVerifier, "cal", "task-1", "ch-1")},
		"tampered":        {after, tampered, aad},
		"unknown key":     {before, fresh, aad},
		"no key id":       {after, []byte("garbage"), aad},
		"truncated":       {after, fresh[:10], aad},
	} {
		if _, err := tc.s.open(tc.sealed, tc.aad); !errors.Is(err, errSealed) {
			t.Errorf("%s: opened (%v)", name, err)
		}
	}
}

func TestSealerNeedsAnActiveKey(t *testing.T) {
	testKey(t, "AF_TEST_K1", 1, false)
	if _, err := newSealer([]config.AuthFlowKey{{ID: "k1", KeyEnv: "AF_TEST_K1"}}); err == nil {
		t.Fatal("a sealer without an active key was built")
	}
	if _, err := newSealer([]config.AuthFlowKey{{ID: "k1", KeyEnv: "AF_TEST_UNSET", Active: true}}); err == nil {
		t.Fatal("a key from an unset variable was accepted")
	}
}
