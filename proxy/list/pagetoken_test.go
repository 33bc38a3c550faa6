package list

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

var (
	tokenNow   = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tokenOwner = pageOwner{tenant: "acme", subject: "alice", agent: "demo"}
	tokenKey   = bytes.Repeat([]byte{7}, 32)
)

func TestPageTokenRoundTrip(t *testing.T) {
	p := newPageTokens(tokenKey, time.Hour)
	for _, c := range []pageCursor{
		{},
		{Skip: 3},
		{Upstream: "YWZ0ZXI6Mg"},
		{Upstream: strings.Repeat("x", maxUpstreamToken), Skip: maxPageSize},
		{Upstream: "gw2.looks-like-ours", Skip: 1},
	} {
		got, ok := p.open(p.issue(c, tokenOwner, tokenNow), tokenOwner, tokenNow.Add(time.Hour-time.Second))
		if !ok || got != c {
			t.Errorf("cursor %+v came back as %+v (ok %v)", c, got, ok)
		}
	}
	if c, ok := p.open("", tokenOwner, tokenNow); !ok || c != (pageCursor{}) {
		t.Errorf("no token: %+v %v, want the start of the list", c, ok)
	}
}

// Every way a token can be wrong gets the same refusal: the caller cannot
// tell a forged token from an expired one or from someone else's.
func TestPageTokenRefusals(t *testing.T) {
	p := newPageTokens(tokenKey, time.Hour)
	valid := p.issue(pageCursor{Upstream: "YWZ0ZXI6Mg", Skip: 2}, tokenOwner, tokenNow)
	refused := map[string]struct {
		tok   string
		owner pageOwner
		now   time.Time
	}{
		"expired":          {valid, tokenOwner, tokenNow.Add(time.Hour)},
		"other tenant":     {valid, pageOwner{"other", "alice", "demo"}, tokenNow},
		"other subject":    {valid, pageOwner{"acme", "bob", "demo"}, tokenNow},
		"other agent":      {valid, pageOwner{"acme", "alice", "calendar"}, tokenNow},
		"shifted boundary": {valid, pageOwner{"acmea", "lice", "demo"}, tokenNow},
		"other key":        {newPageTokens(bytes.Repeat([]byte{8}, 32), time.Hour).issue(pageCursor{Skip: 2}, tokenOwner, tokenNow), tokenOwner, tokenNow},
		"random key":       {newPageTokens(nil, time.Hour).issue(pageCursor{Skip: 2}, tokenOwner, tokenNow), tokenOwner, tokenNow},
		"old format":       {"gw1." + base64.RawURLEncoding.EncodeToString([]byte(`{"u":"forged"}`)), tokenOwner, tokenNow},
		"forged":           {forge(p, pageCursor{Upstream: "forged"}), tokenOwner, tokenNow},
		"truncated":        {valid[:len(valid)-1], tokenOwner, tokenNow},
		"extended":         {valid + "A", tokenOwner, tokenNow},
		"no prefix":        {strings.TrimPrefix(valid, pageTokenPrefix), tokenOwner, tokenNow},
		"padded":           {valid + "==", tokenOwner, tokenNow},
		"short":            {pageTokenPrefix + "AAAA", tokenOwner, tokenNow},
		"empty body":       {pageTokenPrefix, tokenOwner, tokenNow},
		"too long":         {p.issue(pageCursor{Upstream: strings.Repeat("x", maxUpstreamToken+1)}, tokenOwner, tokenNow), tokenOwner, tokenNow},
		"skip too large":   {p.issue(pageCursor{Skip: maxPageSize + 1}, tokenOwner, tokenNow), tokenOwner, tokenNow},
		"future version":   {resign(p, valid, func(b []byte) { b[0] = pageTokenVersion + 1 }), tokenOwner, tokenNow},
	}
	for name, c := range refused {
		if got, ok := p.open(c.tok, c.owner, c.now); ok {
			t.Errorf("%s: token accepted (skip %d, upstream token of %d bytes)", name, got.Skip, len(got.Upstream))
		}
	}
	// Every single character changed, to every other character of the
	// alphabet (and a few outside it): none of them is accepted.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=. "
	for i := range valid {
		for _, r := range alphabet {
			if byte(r) == valid[i] {
				continue
			}
			tampered := valid[:i] + string(r) + valid[i+1:]
			if got, ok := p.open(tampered, tokenOwner, tokenNow); ok {
				t.Fatalf("byte %d changed to %q: token accepted as %+v", i, r, got)
			}
		}
	}
}

// forge builds a token of the right shape with a MAC of zeros, as someone
// without the key would.
func forge(p *pageTokens, c pageCursor) string {
	tok := p.issue(c, tokenOwner, tokenNow)
	b, _ := pageTokenEncoding.DecodeString(strings.TrimPrefix(tok, pageTokenPrefix))
	clear(b[len(b)-32:])
	return pageTokenPrefix + pageTokenEncoding.EncodeToString(b)
}

// resign changes a token's body and signs it again with p's key, to reach
// the checks made after the MAC.
func resign(p *pageTokens, tok string, change func([]byte)) string {
	b, _ := pageTokenEncoding.DecodeString(strings.TrimPrefix(tok, pageTokenPrefix))
	body := b[:len(b)-32]
	change(body)
	return pageTokenPrefix + pageTokenEncoding.EncodeToString(p.mac(tokenOwner, body).Sum(body))
}

// FuzzPageToken: whatever the caller sends, a token opens only if this
// gateway issued exactly it, and then to what was issued.
func FuzzPageToken(f *testing.F) {
	p := newPageTokens(tokenKey, time.Hour)
	valid := p.issue(pageCursor{Upstream: "YWZ0ZXI6Mg", Skip: 2}, tokenOwner, tokenNow)
	for _, seed := range []string{
		"", valid, valid[:len(valid)-1], valid + "A", "gw2.", "gw2.!!!", "gw1.eyJ1IjoiZm9yZ2VkIn0",
		forge(p, pageCursor{Upstream: "forged"}), "garbage", pageTokenPrefix + strings.Repeat("A", maxPageToken),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		c, ok := p.open(tok, tokenOwner, tokenNow)
		if !ok {
			return
		}
		if tok == "" {
			if c != (pageCursor{}) {
				t.Fatalf("no token opened as %+v", c)
			}
			return
		}
		if c.Skip < 0 || c.Skip > maxPageSize || len(c.Upstream) > maxUpstreamToken {
			t.Fatalf("%q opened out of bounds: %+v", tok, c)
		}
		// The only tokens that open are the ones the gateway writes.
		b, _ := pageTokenEncoding.DecodeString(strings.TrimPrefix(tok, pageTokenPrefix))
		expiry := time.Unix(int64(binary.BigEndian.Uint64(b[1:9])), 0)
		if again := p.issue(c, tokenOwner, expiry.Add(-time.Hour)); again != tok {
			t.Fatalf("%q opened as %+v, which issues as %q", tok, c, again)
		}
	})
}
