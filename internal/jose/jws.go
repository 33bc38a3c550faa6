package jose

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
)

// MinRSABits refuses RSA keys that no longer resist factoring; NIST SP
// 800-131A disallows anything shorter for signatures.
const MinRSABits = 2048

// Alg is one asymmetric JWS algorithm (RFC 7518, RFC 8037).
type Alg struct {
	name string
	hash crypto.Hash // zero for EdDSA, which hashes internally
	kind string      // "ec", "ed25519", "rsa", "rsa-pss"
	size int         // ECDSA: bytes per coordinate
}

// Name is the algorithm's JWS name.
func (a Alg) Name() string { return a.name }

// FindAlg knows the asymmetric algorithms only: "none" and HMAC never
// authenticate a document to a third party.
func FindAlg(name string) (Alg, bool) {
	switch name {
	case "ES256":
		return Alg{name: name, hash: crypto.SHA256, kind: "ec", size: 32}, true
	case "ES384":
		return Alg{name: name, hash: crypto.SHA384, kind: "ec", size: 48}, true
	case "ES512":
		return Alg{name: name, hash: crypto.SHA512, kind: "ec", size: 66}, true
	case "EdDSA", "Ed25519": // RFC 8037 and its fully specified RFC 9864 name
		return Alg{name: name, kind: "ed25519"}, true
	case "RS256":
		return Alg{name: name, hash: crypto.SHA256, kind: "rsa"}, true
	case "RS384":
		return Alg{name: name, hash: crypto.SHA384, kind: "rsa"}, true
	case "RS512":
		return Alg{name: name, hash: crypto.SHA512, kind: "rsa"}, true
	case "PS256":
		return Alg{name: name, hash: crypto.SHA256, kind: "rsa-pss"}, true
	case "PS384":
		return Alg{name: name, hash: crypto.SHA384, kind: "rsa-pss"}, true
	case "PS512":
		return Alg{name: name, hash: crypto.SHA512, kind: "rsa-pss"}, true
	}
	return Alg{}, false
}

// ecAlgForCurve names the only algorithm allowed with each curve.
func ecAlgForCurve(c elliptic.Curve) string {
	switch CurveName(c) {
	case "P-256":
		return "ES256"
	case "P-384":
		return "ES384"
	case "P-521":
		return "ES512"
	}
	return ""
}

// AlgForKey is the algorithm a key signs with: ES256/ES384/ES512 for
// P-256/P-384/P-521, EdDSA for Ed25519, RS256 for RSA of MinRSABits or more.
func AlgForKey(pub crypto.PublicKey) (Alg, error) {
	var name string
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		name = ecAlgForCurve(k.Curve)
	case ed25519.PublicKey:
		name = "EdDSA"
	case *rsa.PublicKey:
		if k.N.BitLen() < MinRSABits {
			return Alg{}, fmt.Errorf("RSA key shorter than %d bits", MinRSABits)
		}
		name = "RS256"
	}
	a, ok := FindAlg(name)
	if !ok {
		return Alg{}, fmt.Errorf("unsupported signing key type %T", pub)
	}
	return a, nil
}

// AlgByName returns the algorithm a signature names, refusing one that does
// not fit the key (algorithm confusion) and anything symmetric or "none".
func AlgByName(name string, key crypto.PublicKey) (Alg, error) {
	a, ok := FindAlg(name)
	if !ok {
		return Alg{}, fmt.Errorf("unsupported algorithm %q", clip(name))
	}
	fits := false
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		fits = a.kind == "ec" && ecAlgForCurve(k.Curve) == a.name
	case ed25519.PublicKey:
		fits = a.kind == "ed25519"
	case *rsa.PublicKey:
		fits = (a.kind == "rsa" || a.kind == "rsa-pss") && k.N.BitLen() >= MinRSABits
	}
	if !fits {
		return Alg{}, fmt.Errorf("algorithm %s does not fit the %T key", a.name, key)
	}
	return a, nil
}

// CurveName is the curve's name ("P-256"), "" for none.
func CurveName(c elliptic.Curve) string {
	if c == nil || c.Params() == nil {
		return ""
	}
	return c.Params().Name
}

func (a Alg) digest(input []byte) []byte {
	h := a.hash.New()
	h.Write(input)
	return h.Sum(nil)
}

// Sign signs input with key, in the JWS form of the signature.
func (a Alg) Sign(key crypto.Signer, input []byte) ([]byte, error) {
	switch a.kind {
	case "ed25519":
		return key.Sign(rand.Reader, input, crypto.Hash(0))
	case "rsa":
		return key.Sign(rand.Reader, a.digest(input), a.hash)
	case "ec":
		der, err := key.Sign(rand.Reader, a.digest(input), a.hash)
		if err != nil {
			return nil, err
		}
		// crypto.Signer returns ASN.1 DER; JWS wants the fixed-size R || S.
		var rs struct{ R, S *big.Int }
		if rest, err := asn1.Unmarshal(der, &rs); err != nil || len(rest) > 0 {
			return nil, errors.New("ECDSA signer returned a malformed signature")
		}
		out := make([]byte, 2*a.size)
		rs.R.FillBytes(out[:a.size])
		rs.S.FillBytes(out[a.size:])
		return out, nil
	}
	return nil, fmt.Errorf("cannot sign with %s", a.name)
}

// Verify reports whether sig, in the JWS form, is key's signature of input.
func (a Alg) Verify(key crypto.PublicKey, input, sig []byte) bool {
	switch k := key.(type) {
	case ed25519.PublicKey:
		return len(k) == ed25519.PublicKeySize && ed25519.Verify(k, input, sig)
	case *rsa.PublicKey:
		if a.kind == "rsa-pss" {
			return rsa.VerifyPSS(k, a.hash, a.digest(input), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return rsa.VerifyPKCS1v15(k, a.hash, a.digest(input), sig) == nil
	case *ecdsa.PublicKey:
		if len(sig) != 2*a.size {
			return false
		}
		r := new(big.Int).SetBytes(sig[:a.size])
		s := new(big.Int).SetBytes(sig[a.size:])
		return ecdsa.Verify(k, a.digest(input), r, s)
	}
	return false
}
