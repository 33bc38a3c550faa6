package jose

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"
)

// MaxKeyFileBytes bounds a key file so a wrong path (a log file, a device)
// fails clearly instead of being read whole.
const MaxKeyFileBytes = 1 << 20

// JWK is the subset of RFC 7517/7518/8037 public key members the
// gateway reads and writes. Private members ("d", "p", ...) are never read.
type JWK struct {
	Kty    string   `json:"kty"`
	Use    string   `json:"use,omitempty"`
	KeyOps []string `json:"key_ops,omitempty"`
	Alg    string   `json:"alg,omitempty"`
	Kid    string   `json:"kid,omitempty"`
	Crv    string   `json:"crv,omitempty"`
	N      string   `json:"n,omitempty"`
	E      string   `json:"e,omitempty"`
	X      string   `json:"x,omitempty"`
	Y      string   `json:"y,omitempty"`
}

// MarshalJWK renders a public key as a signing JWK.
func MarshalJWK(pub crypto.PublicKey, kid, alg string) (JWK, error) {
	j := JWK{Use: "sig", Kid: kid, Alg: alg}
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *rsa.PublicKey:
		j.Kty = "RSA"
		j.N = b64(k.N.Bytes())
		j.E = b64(big.NewInt(int64(k.E)).Bytes())
	case *ecdsa.PublicKey:
		point, err := k.Bytes()
		if err != nil {
			return JWK{}, fmt.Errorf("encode EC key: %w", err)
		}
		size := (len(point) - 1) / 2
		j.Kty, j.Crv = "EC", k.Curve.Params().Name
		j.X, j.Y = b64(point[1:1+size]), b64(point[1+size:])
	case ed25519.PublicKey:
		j.Kty, j.Crv, j.X = "OKP", "Ed25519", b64(k)
	default:
		return JWK{}, fmt.Errorf("unsupported key type %T", pub)
	}
	return j, nil
}

// EncodeJWKS renders keys as an indented JWKS document.
func EncodeJWKS(keys ...JWK) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		Keys []JWK `json:"keys"`
	}{keys}); err != nil {
		return nil, fmt.Errorf("encode JWKS: %w", err)
	}
	return buf.Bytes(), nil
}

// GenerateKey returns a fresh Ed25519 signing key. Its algorithm is EdDSA
// (see SigningAlgorithm), which an issuer verifying its tokens must pin.
func GenerateKey() (crypto.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate Ed25519 key: %w", err)
	}
	return priv, nil
}

// SigningAlgorithm names the JWS algorithm MintToken uses for key: "EdDSA"
// for Ed25519, "ES256"/"ES384"/"ES512" for ECDSA P-256/P-384/P-521.
func SigningAlgorithm(key crypto.Signer) (string, error) {
	switch k := key.(type) {
	case ed25519.PrivateKey:
		if len(k) != ed25519.PrivateKeySize {
			return "", errors.New("malformed Ed25519 private key")
		}
		return "EdDSA", nil
	case *ecdsa.PrivateKey:
		if k == nil || k.Curve == nil {
			return "", errors.New("malformed ECDSA private key")
		}
		if alg := ecAlgForCurve(k.Curve); alg != "" {
			return alg, nil
		}
		return "", fmt.Errorf("unsupported EC curve %s", k.Curve.Params().Name)
	default:
		return "", fmt.Errorf("unsupported signing key type %T (want Ed25519 or ECDSA)", key)
	}
}

// EncodePrivateKeyPEM renders key as a PKCS#8 "PRIVATE KEY" PEM block.
func EncodePrivateKeyPEM(key crypto.Signer) ([]byte, error) {
	if _, err := SigningAlgorithm(key); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// WritePrivateKeyPEM writes key to a new file readable only by its owner.
// An existing file is never overwritten (the error wraps fs.ErrExist), so a
// key that tokens were minted with cannot be lost by accident.
func WritePrivateKeyPEM(path string, key crypto.Signer) error {
	data, err := EncodePrivateKeyPEM(key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write private key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write private key: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write private key: %w", err)
	}
	return nil
}

// ParsePrivateKeyPEM reads the first private key block: PKCS#8, or SEC 1
// ("EC PRIVATE KEY"). Only Ed25519 and ECDSA keys are accepted.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", strings.ToLower(block.Type), err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", key)
		}
		if _, err := SigningAlgorithm(signer); err != nil {
			return nil, err
		}
		return signer, nil
	}
}

// LoadPrivateKeyPEM reads a key written by WritePrivateKeyPEM (or any PKCS#8
// or SEC 1 Ed25519/ECDSA key).
func LoadPrivateKeyPEM(path string) (crypto.Signer, error) {
	data, err := ReadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("load private key: %w", err)
	}
	key, err := ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("load private key %s: %w", path, err)
	}
	return key, nil
}

// PublicJWKS renders key's public half as a JWKS with kid and alg set, for a
// key_files entry or a JWKS endpoint.
func PublicJWKS(key crypto.Signer, kid string) ([]byte, error) {
	j, err := signingJWK(key, kid)
	if err != nil {
		return nil, err
	}
	return EncodeJWKS(j)
}

// PublicJWK renders key's public half as one compact JWK with kid and alg
// set, for a JWKS the caller assembles.
func PublicJWK(key crypto.Signer, kid string) (json.RawMessage, error) {
	j, err := signingJWK(key, kid)
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// signingJWK is the JWK of key's public half, naming the algorithm key
// signs with.
func signingJWK(key crypto.Signer, kid string) (JWK, error) {
	alg, err := SigningAlgorithm(key)
	if err != nil {
		return JWK{}, err
	}
	return MarshalJWK(key.Public(), kid, alg)
}

// PublicKeyPEM renders key's public half as a PKIX "PUBLIC KEY" PEM block,
// for a key_files entry (its kid is then the file's base name).
func PublicKeyPEM(key crypto.Signer) ([]byte, error) {
	if _, err := SigningAlgorithm(key); err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ReadKeyFile reads a key file of at most MaxKeyFileBytes, refusing
// anything but a regular file.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("key file is not a regular file")
	}
	if fi.Size() > MaxKeyFileBytes {
		return nil, fmt.Errorf("key file is larger than %d bytes", MaxKeyFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if len(data) > MaxKeyFileBytes {
		return nil, fmt.Errorf("key file is larger than %d bytes", MaxKeyFileBytes)
	}
	return data, nil
}
