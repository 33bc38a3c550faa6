package card

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
)

var (
	// ErrNoSignature reports a card without signatures.
	ErrNoSignature = errors.New("agent card is not signed")
	// ErrSignatureInvalid reports a card none of whose signatures verifies
	// with the given keys.
	ErrSignatureInvalid = errors.New("no agent card signature verifies")
)

// minRSABits refuses keys too short to be trusted.
const minRSABits = 2048

// Signer signs rewritten cards with the gateway's key. The algorithm follows
// from the key: ES256/ES384/ES512 for P-256/P-384/P-521, EdDSA for Ed25519,
// RS256 for RSA. Any crypto.Signer works, so the key may live in an HSM or KMS.
type Signer struct {
	key       crypto.Signer
	alg       jwsAlg
	kid       string
	protected string // base64url of the protected header; the same for every card
}

type protectedHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid,omitempty"`
	Jku string `json:"jku,omitempty"`
}

// NewSigner returns a signer that names kid in every signature and, when jku
// is not empty, the https URL of the JWKS that publishes the public key.
func NewSigner(key crypto.Signer, kid string, jku string) (*Signer, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: signing key is nil", ErrInvalidOptions)
	}
	if strings.TrimSpace(kid) == "" {
		return nil, fmt.Errorf("%w: signing key id is empty", ErrInvalidOptions)
	}
	if jku != "" {
		u, err := url.Parse(jku)
		if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: jku must be an absolute https URL", ErrInvalidOptions)
		}
	}
	alg, err := algForKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	hdr, err := json.Marshal(protectedHeader{Alg: alg.name, Typ: "JOSE", Kid: kid, Jku: jku})
	if err != nil {
		return nil, fmt.Errorf("encode protected header: %w", err)
	}
	return &Signer{key: key, alg: alg, kid: kid, protected: base64.RawURLEncoding.EncodeToString(hdr)}, nil
}

// KeyID is the kid the signer puts in its signatures.
func (s *Signer) KeyID() string { return s.kid }

// Public is the verification key to publish (in the JWKS named by jku).
func (s *Signer) Public() crypto.PublicKey { return s.key.Public() }

// Sign returns card with its signatures replaced by one signature of the
// gateway. Members are emitted sorted.
func (s *Signer) Sign(card []byte) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(card, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedCard)
	}
	payload, err := SigningPayload(card)
	if err != nil {
		return nil, err
	}
	sig, err := s.alg.sign(s.key, []byte(s.protected+"."+base64.RawURLEncoding.EncodeToString(payload)))
	if err != nil {
		return nil, fmt.Errorf("sign agent card: %w", err)
	}
	sigs, err := encodeJSON([]map[string]string{{"protected": s.protected, "signature": base64.RawURLEncoding.EncodeToString(sig)}})
	if err != nil {
		return nil, err
	}
	obj[fieldSignatures] = sigs
	return encodeJSON(obj)
}

// SigningPayload is what a card signature covers: the RFC 8785 canonical
// form of the card without "signatures" and without members holding default
// values (null, "", [] and {}, recursively), as the A2A signing rules
// require before canonicalisation. Keeping false and 0 follows the rule for
// optional fields explicitly set, which cannot be told apart from others
// without the schema.
func SigningPayload(card []byte) ([]byte, error) {
	obj, err := parseCardObject(card)
	if err != nil {
		return nil, err
	}
	// A card of nothing but defaults strips to {}, which is still signed.
	stripped, _ := stripDefaults(obj.without(fieldSignatures))
	var buf bytes.Buffer
	if err := writeCanonical(&buf, stripped); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// literalPayload is the canonical card without "signatures" and with default
// values kept: what a signer that applies RFC 8785 alone produces.
func literalPayload(obj *jsonObject) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, obj.without(fieldSignatures)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func parseCardObject(card []byte) (*jsonObject, error) {
	v, err := parseJSON(card)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedCard, err)
	}
	obj, ok := v.(*jsonObject)
	if !ok {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedCard)
	}
	return obj, nil
}

// stripDefaults removes null, "", [] and {} members and array elements,
// including containers that become empty once cleaned. It reports false when
// v itself is such a default.
func stripDefaults(v any) (any, bool) {
	switch v := v.(type) {
	case nil:
		return nil, false
	case string:
		return v, v != ""
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			if c, ok := stripDefaults(e); ok {
				out = append(out, c)
			}
		}
		return out, len(out) > 0
	case *jsonObject:
		out := &jsonObject{}
		for _, m := range v.members {
			if c, ok := stripDefaults(m.value); ok {
				out.members = append(out.members, jsonMember{m.key, c})
			}
		}
		return out, len(out.members) > 0
	default:
		return v, true
	}
}

type cardSignature struct {
	Protected string                     `json:"protected"`
	Signature string                     `json:"signature"`
	Header    map[string]json.RawMessage `json:"header"`
}

// Verify checks that at least one of the card's signatures verifies with the
// key its kid names in keys. The payload is tried both with default values
// removed (the A2A signing rules) and as plain RFC 8785 of the card, since
// signers in the field produce either; both cover every non-default member.
func Verify(card []byte, keys map[string]crypto.PublicKey) error {
	obj, err := parseCardObject(card)
	if err != nil {
		return err
	}
	rawSigs, ok := obj.get(fieldSignatures)
	if !ok || rawSigs == nil {
		return ErrNoSignature
	}
	var sigs []cardSignature
	if err := json.Unmarshal(card, &struct {
		Signatures *[]cardSignature `json:"signatures"`
	}{&sigs}); err != nil {
		return fmt.Errorf("%w: signatures: %w", ErrMalformedCard, err)
	}
	if len(sigs) == 0 {
		return ErrNoSignature
	}
	stripped, err := SigningPayload(card)
	if err != nil {
		return err
	}
	literal, err := literalPayload(obj)
	if err != nil {
		return err
	}
	payloads := [][]byte{stripped}
	if !bytes.Equal(stripped, literal) {
		payloads = append(payloads, literal)
	}
	reasons := make([]string, 0, len(sigs))
	for i, sig := range sigs {
		err := verifyOne(sig, payloads, keys)
		if err == nil {
			return nil
		}
		reasons = append(reasons, fmt.Sprintf("signature %d: %v", i, err))
	}
	return fmt.Errorf("%w: %s", ErrSignatureInvalid, strings.Join(reasons, "; "))
}

func verifyOne(sig cardSignature, payloads [][]byte, keys map[string]crypto.PublicKey) error {
	hdrJSON, err := base64.RawURLEncoding.DecodeString(sig.Protected)
	if err != nil {
		return fmt.Errorf("protected header is not base64url: %w", err)
	}
	var hdr struct {
		Alg  string          `json:"alg"`
		Kid  string          `json:"kid"`
		Crit json.RawMessage `json:"crit"`
	}
	if err := json.Unmarshal(hdrJSON, &hdr); err != nil {
		return fmt.Errorf("protected header is not a JSON object: %w", err)
	}
	// No header extension is understood here, so any critical one (b64=false,
	// for instance) makes the signature unverifiable (RFC 7515 section 4.1.11).
	if len(hdr.Crit) > 0 {
		return errors.New("protected header lists critical extensions")
	}
	kid := hdr.Kid
	if kid == "" {
		if raw, ok := sig.Header["kid"]; ok {
			_ = json.Unmarshal(raw, &kid)
		}
	}
	key, ok := keys[kid]
	if !ok {
		return fmt.Errorf("no key for kid %q", clip(kid))
	}
	alg, err := algByName(hdr.Alg, key)
	if err != nil {
		return err
	}
	sigBytes, err := base64.RawURLEncoding.DecodeString(sig.Signature)
	if err != nil {
		return fmt.Errorf("signature is not base64url: %w", err)
	}
	for _, p := range payloads {
		if alg.verify(key, []byte(sig.Protected+"."+base64.RawURLEncoding.EncodeToString(p)), sigBytes) {
			return nil
		}
	}
	return errors.New("signature does not match the card")
}

// jwsAlg is one JWS algorithm (RFC 7518, RFC 8037).
type jwsAlg struct {
	name string
	hash crypto.Hash // zero for EdDSA, which hashes internally
	kind string      // "ec", "ed25519", "rsa", "rsa-pss"
	size int         // ECDSA: bytes per coordinate
}

// findAlg knows the asymmetric algorithms only: "none" and HMAC never
// authenticate a card to a third party.
func findAlg(name string) (jwsAlg, bool) {
	switch name {
	case "ES256":
		return jwsAlg{name: name, hash: crypto.SHA256, kind: "ec", size: 32}, true
	case "ES384":
		return jwsAlg{name: name, hash: crypto.SHA384, kind: "ec", size: 48}, true
	case "ES512":
		return jwsAlg{name: name, hash: crypto.SHA512, kind: "ec", size: 66}, true
	case "EdDSA", "Ed25519": // RFC 8037 and its fully specified RFC 9864 name
		return jwsAlg{name: name, kind: "ed25519"}, true
	case "RS256":
		return jwsAlg{name: name, hash: crypto.SHA256, kind: "rsa"}, true
	case "RS384":
		return jwsAlg{name: name, hash: crypto.SHA384, kind: "rsa"}, true
	case "RS512":
		return jwsAlg{name: name, hash: crypto.SHA512, kind: "rsa"}, true
	case "PS256":
		return jwsAlg{name: name, hash: crypto.SHA256, kind: "rsa-pss"}, true
	case "PS384":
		return jwsAlg{name: name, hash: crypto.SHA384, kind: "rsa-pss"}, true
	case "PS512":
		return jwsAlg{name: name, hash: crypto.SHA512, kind: "rsa-pss"}, true
	}
	return jwsAlg{}, false
}

// ecAlgForCurve names the only algorithm allowed with each curve.
func ecAlgForCurve(c elliptic.Curve) string {
	switch curveName(c) {
	case "P-256":
		return "ES256"
	case "P-384":
		return "ES384"
	case "P-521":
		return "ES512"
	}
	return ""
}

func algForKey(pub crypto.PublicKey) (jwsAlg, error) {
	var name string
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		name = ecAlgForCurve(k.Curve)
	case ed25519.PublicKey:
		name = "EdDSA"
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return jwsAlg{}, fmt.Errorf("RSA key shorter than %d bits", minRSABits)
		}
		name = "RS256"
	}
	a, ok := findAlg(name)
	if !ok {
		return jwsAlg{}, fmt.Errorf("unsupported signing key type %T", pub)
	}
	return a, nil
}

// algByName returns the algorithm a signature names, refusing one that does
// not fit the key (algorithm confusion) and anything symmetric or "none".
func algByName(name string, key crypto.PublicKey) (jwsAlg, error) {
	a, ok := findAlg(name)
	if !ok {
		return jwsAlg{}, fmt.Errorf("unsupported algorithm %q", clip(name))
	}
	fits := false
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		fits = a.kind == "ec" && ecAlgForCurve(k.Curve) == a.name
	case ed25519.PublicKey:
		fits = a.kind == "ed25519"
	case *rsa.PublicKey:
		fits = (a.kind == "rsa" || a.kind == "rsa-pss") && k.N.BitLen() >= minRSABits
	}
	if !fits {
		return jwsAlg{}, fmt.Errorf("algorithm %s does not fit the %T key", a.name, key)
	}
	return a, nil
}

func curveName(c elliptic.Curve) string {
	if c == nil || c.Params() == nil {
		return ""
	}
	return c.Params().Name
}

func (a jwsAlg) digest(input []byte) []byte {
	h := a.hash.New()
	h.Write(input)
	return h.Sum(nil)
}

func (a jwsAlg) sign(key crypto.Signer, input []byte) ([]byte, error) {
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

func (a jwsAlg) verify(key crypto.PublicKey, input, sig []byte) bool {
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
