package authz

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

func TestVerifiedTokens(t *testing.T) {
	c := newVerifiedTokens()
	now := time.Unix(1_800_000_000, 0)
	key := sha256.Sum256([]byte("token"))
	p := &request.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"a"}}

	c.put(key, p, now.Add(time.Hour), now)
	got, ok := c.get(key, now.Add(time.Second))
	if !ok || got.Tenant != "acme" || got.Subject != "alice" {
		t.Fatalf("a verified token was not remembered: %+v %v", got, ok)
	}
	got.Scopes[0] = "changed"
	if again, _ := c.get(key, now); again.Scopes[0] != "a" {
		t.Fatal("a caller changed the cached principal")
	}
	if _, ok := c.get(key, now.Add(verifiedMaxAge)); ok {
		t.Fatal("an entry outlived the maximum age")
	}

	soon := sha256.Sum256([]byte("expiring"))
	c.put(soon, p, now.Add(10*time.Second), now)
	if _, ok := c.get(soon, now.Add(10*time.Second)); ok {
		t.Fatal("an entry outlived its token's exp")
	}
	expired := sha256.Sum256([]byte("expired"))
	c.put(expired, p, now.Add(-time.Second), now)
	if _, ok := c.get(expired, now); ok {
		t.Fatal("an expired token was remembered")
	}

	for i := range verifiedMaxEntries + 10 {
		c.put(sha256.Sum256([]byte(fmt.Sprint(i))), p, now.Add(time.Hour), now)
	}
	if len(c.m) > verifiedMaxEntries {
		t.Fatalf("the cache holds %d entries, over its bound of %d", len(c.m), verifiedMaxEntries)
	}
}
