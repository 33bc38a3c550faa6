package authz

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

// Verifying a signature is the costliest step of a request (an Ed25519 or
// ECDSA check per call), and clients send the same token many times. The
// cache remembers tokens that passed verification, by their SHA-256, until
// they expire or for at most verifiedMaxAge: the bound on how long a token
// signed by a key just removed from its issuer's JWKS is still accepted.
// Failures are never cached.
const (
	verifiedMaxAge     = time.Minute
	verifiedMaxEntries = 10000
)

type verifiedTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verified
}

type verified struct {
	p     request.Principal
	until time.Time
}

func newVerifiedTokens() *verifiedTokens {
	return &verifiedTokens{m: make(map[[sha256.Size]byte]verified)}
}

// get returns a copy of the principal of a token verified before, if its
// entry is still good at now.
func (c *verifiedTokens) get(key [sha256.Size]byte, now time.Time) (*request.Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if !ok {
		return nil, false
	}
	if !now.Before(v.until) {
		delete(c.m, key)
		return nil, false
	}
	p := v.p
	p.Scopes = append([]string(nil), v.p.Scopes...)
	return &p, true
}

// put remembers a verified token until exp, at most verifiedMaxAge.
func (c *verifiedTokens) put(key [sha256.Size]byte, p *request.Principal, exp, now time.Time) {
	until := now.Add(verifiedMaxAge)
	if exp.Before(until) {
		until = exp
	}
	if !now.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= verifiedMaxEntries {
		for k, v := range c.m {
			if !now.Before(v.until) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < verifiedMaxEntries {
				break
			}
			delete(c.m, k) // an arbitrary entry: a miss only costs a verification
		}
	}
	c.m[key] = verified{p: *p, until: until}
}
