package flow

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// errSealed is the one error Open returns: which check failed is not the
// caller's business, and no detail of the ciphertext leaks into logs.
var errSealed = errors.New("authflow: sealed value cannot be opened")

// sealer encrypts credentials at rest with AES-256-GCM. A sealed value is
//
//	<key id> ":" <12-byte nonce> <ciphertext and tag>
//
// so any configured key, not only the active one, opens what it sealed:
// keys rotate by adding a new active key and keeping the old one until
// the credentials it sealed have expired (at most a challenge's lifetime).
// The additional data binds a value to its challenge, task and purpose:
// copied to another record, it does not open.
type sealer struct {
	active string
	aeads  map[string]cipher.AEAD
}

func newSealer(keys []config.AuthFlowKey) (*sealer, error) {
	s := &sealer{aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, k := range keys {
		raw, err := k.Load()
		if err != nil {
			return nil, fmt.Errorf("auth_flows key %q: %w", k.ID, err)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("auth_flows key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("auth_flows key %q: %w", k.ID, err)
		}
		s.aeads[k.ID] = aead
		if k.Active {
			s.active = k.ID
		}
	}
	if s.active == "" {
		return nil, errors.New("auth_flows: no active key")
	}
	return s, nil
}

func (s *sealer) seal(plaintext, aad []byte) []byte {
	aead := s.aeads[s.active]
	out := make([]byte, 0, len(s.active)+1+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out = append(out, s.active...)
	out = append(out, ':')
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plaintext, aad)
}

func (s *sealer) open(sealed, aad []byte) ([]byte, error) {
	id, rest, ok := bytes.Cut(sealed, []byte{':'})
	if !ok {
		return nil, errSealed
	}
	aead := s.aeads[string(id)]
	if aead == nil || len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, errSealed
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, rest[:n], rest[n:], aad)
	if err != nil {
		return nil, errSealed
	}
	return plain, nil
}

// Purposes of sealed values, part of their additional data.
const (
	purposeCredential = "credential"
	purposeVerifier   = "pkce-verifier"
)

// additionalData binds a sealed value to one challenge of one task:
// length-prefixed fields, so no two bindings encode alike.
func additionalData(purpose, agent, taskID, challengeID string) []byte {
	var b []byte
	for _, f := range []string{"a2a-gateway/auth-flow", purpose, agent, taskID, challengeID} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}
