package jose

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrivateKeyPEMFiles(t *testing.T) {
	dir := t.TempDir()
	ed, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ec := mustECKey(t, elliptic.P256())
	for _, tc := range []struct {
		name string
		key  crypto.Signer
	}{{"ed25519", ed}, {"ecdsa", ec}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".key")
			if err := WritePrivateKeyPEM(path, tc.key); err != nil {
				t.Fatalf("WritePrivateKeyPEM: %v", err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Fatalf("key file mode = %v, want 0600", perm)
			}
			if err := WritePrivateKeyPEM(path, tc.key); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("overwrite: error = %v, want fs.ErrExist", err)
			}
			loaded, err := LoadPrivateKeyPEM(path)
			if err != nil {
				t.Fatalf("LoadPrivateKeyPEM: %v", err)
			}
			type equaler interface{ Equal(crypto.PublicKey) bool }
			if !loaded.Public().(equaler).Equal(tc.key.Public()) {
				t.Fatal("loaded key differs from the written one")
			}
		})
	}

	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, err := x509.MarshalPKCS8PrivateKey(mustRSAKey(t))
	if err != nil {
		t.Fatal(err)
	}
	p384DER, err := x509.MarshalPKCS8PrivateKey(mustECKey(t, elliptic.P384()))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    []byte
		wantAlg string
		wantErr string
	}{
		{"sec1 after parameters", append(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8}}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})...), "ES256", ""},
		{"p-384 pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p384DER}), "ES384", ""},
		{"rsa pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER}), "", "unsupported signing key type"},
		{"corrupt pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}), "", "parse private key"},
		{"public key only", pkixPEM(t, &ec.PublicKey), "", "no PEM private key"},
		{"garbage", []byte("garbage"), "", "no PEM private key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParsePrivateKeyPEM(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePrivateKeyPEM: %v", err)
			}
			if alg, err := SigningAlgorithm(key); err != nil || alg != tc.wantAlg {
				t.Fatalf("SigningAlgorithm = %q, %v; want %q", alg, err, tc.wantAlg)
			}
		})
	}

	if _, err := LoadPrivateKeyPEM(filepath.Join(dir, "absent.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: error = %v, want fs.ErrNotExist", err)
	}
	var nilEC *ecdsa.PrivateKey
	if _, err := PublicJWKS(nilEC, "x"); err == nil {
		t.Fatal("PublicJWKS accepted a nil key")
	}
	if _, err := EncodePrivateKeyPEM(nilEC); err == nil {
		t.Fatal("EncodePrivateKeyPEM accepted a nil key")
	}
}

func mustRSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa key: %v", err)
	}
	return k
}

func mustECKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatalf("ec key: %v", err)
	}
	return k
}

func pkixPEM(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
