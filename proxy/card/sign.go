package card

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

var (
	// ErrNoSignature reports a card without signatures.
	ErrNoSignature = errors.New("agent card is not signed")
	// ErrSignatureInvalid reports a card none of whose signatures verifies
	// with the given keys.
	ErrSignatureInvalid = errors.New("no agent card signature verifies")
)

// Signer signs rewritten cards with the gateway's key. The algorithm follows
// from the key: ES256/ES384/ES512 for P-256/P-384/P-521, EdDSA for Ed25519,
// RS256 for RSA. Any crypto.Signer works, so the key may live in an HSM or KMS.
type Signer struct {
	key       crypto.Signer
	alg       jose.Alg
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
	alg, err := jose.AlgForKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	hdr, err := json.Marshal(protectedHeader{Alg: alg.Name(), Typ: "JOSE", Kid: kid, Jku: jku})
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
	sig, err := s.alg.Sign(s.key, []byte(s.protected+"."+base64.RawURLEncoding.EncodeToString(payload)))
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
	stripped, _ := stripDefaults(obj.Without(fieldSignatures))
	return jose.Canonical(stripped)
}

// literalPayload is the canonical card without "signatures" and with default
// values kept: what a signer that applies RFC 8785 alone produces.
func literalPayload(obj *jose.Object) ([]byte, error) {
	return jose.Canonical(obj.Without(fieldSignatures))
}

func parseCardObject(card []byte) (*jose.Object, error) {
	v, err := jose.ParseJSON(card)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedCard, err)
	}
	obj, ok := v.(*jose.Object)
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
	case *jose.Object:
		out := &jose.Object{}
		for _, m := range v.Members {
			if c, ok := stripDefaults(m.Value); ok {
				out.Members = append(out.Members, jose.Member{Key: m.Key, Value: c})
			}
		}
		return out, len(out.Members) > 0
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
	rawSigs, ok := obj.Get(fieldSignatures)
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
	alg, err := jose.AlgByName(hdr.Alg, key)
	if err != nil {
		return err
	}
	sigBytes, err := base64.RawURLEncoding.DecodeString(sig.Signature)
	if err != nil {
		return fmt.Errorf("signature is not base64url: %w", err)
	}
	for _, p := range payloads {
		if alg.Verify(key, []byte(sig.Protected+"."+base64.RawURLEncoding.EncodeToString(p)), sigBytes) {
			return nil
		}
	}
	return errors.New("signature does not match the card")
}
