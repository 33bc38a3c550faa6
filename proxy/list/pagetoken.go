package list

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"
	"time"
)

// A page token hands the caller the gateway's place in an agent's task
// list: the agent's own token and how many tasks of that page were already
// handed out. The caller must not be able to choose either (the agent would
// receive a token the gateway never got from it), nor use a token issued to
// someone else, at another agent, or long ago. So a token is
//
//	"gw2." base64url( version | expiry | skip | upstream token | HMAC-SHA256 )
//
// where the MAC also covers the tenant, subject and agent it was issued
// for. These are not in the token: a token presented by anyone else fails
// the MAC like a forged one, and every failure gets the same answer.
const (
	pageTokenPrefix  = "gw2."
	pageTokenVersion = 1
	// pageTokenHeader is the version byte, the expiry (Unix seconds) and
	// the skip count.
	pageTokenHeader = 1 + 8 + 2
	// maxUpstreamToken bounds the agent's token the gateway wraps, and so
	// every token the gateway reads.
	maxUpstreamToken = 4096
	maxPageToken     = len(pageTokenPrefix) + (pageTokenHeader+maxUpstreamToken+sha256.Size+2)/3*4
)

// pageTokenDomain separates these MACs from any other use of the key.
var pageTokenDomain = []byte("a2a-gateway ListTasks page token\x00")

var pageTokenEncoding = base64.RawURLEncoding.Strict()

// pageCursor is the gateway's place in the agent's list.
type pageCursor struct {
	// Upstream is the agent's token for the page being read ("" for its
	// first page).
	Upstream string
	// Skip is how many tasks of that page the caller was already given.
	Skip int
}

// pageOwner is whom and where a token is for.
type pageOwner struct {
	tenant, subject, agent string
}

// pageTokens issues and opens page tokens with one key.
type pageTokens struct {
	key []byte
	ttl time.Duration
}

// newPageTokens uses key, or a random key of this process when key is nil.
func newPageTokens(key []byte, ttl time.Duration) *pageTokens {
	if key == nil {
		key = make([]byte, sha256.Size)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	return &pageTokens{key: key, ttl: ttl}
}

// issue returns the token for c, valid for ttl from now.
func (p *pageTokens) issue(c pageCursor, o pageOwner, now time.Time) string {
	b := make([]byte, pageTokenHeader, pageTokenHeader+len(c.Upstream)+sha256.Size)
	b[0] = pageTokenVersion
	binary.BigEndian.PutUint64(b[1:9], uint64(now.Add(p.ttl).Unix()))
	binary.BigEndian.PutUint16(b[9:11], uint16(c.Skip))
	b = append(b, c.Upstream...)
	b = p.mac(o, b).Sum(b)
	return pageTokenPrefix + pageTokenEncoding.EncodeToString(b)
}

// open returns the cursor tok holds if this gateway issued it to o, it
// has not expired, and it says something the gateway can use. "" is the
// start of the list.
func (p *pageTokens) open(tok string, o pageOwner, now time.Time) (pageCursor, bool) {
	if tok == "" {
		return pageCursor{}, true
	}
	raw, ok := strings.CutPrefix(tok, pageTokenPrefix)
	if !ok || len(tok) > maxPageToken {
		return pageCursor{}, false
	}
	b, err := pageTokenEncoding.DecodeString(raw)
	if err != nil || len(b) < pageTokenHeader+sha256.Size {
		return pageCursor{}, false
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if !hmac.Equal(p.mac(o, body).Sum(nil), sum) {
		return pageCursor{}, false
	}
	// Checked after the MAC: what the gateway signed it also reads the
	// same way, and a token from a future format is refused, not misread.
	expiry := int64(binary.BigEndian.Uint64(body[1:9]))
	skip := int(binary.BigEndian.Uint16(body[9:11]))
	if body[0] != pageTokenVersion || now.Unix() >= expiry || skip > maxPageSize || len(body)-pageTokenHeader > maxUpstreamToken {
		return pageCursor{}, false
	}
	return pageCursor{Upstream: string(body[pageTokenHeader:]), Skip: skip}, true
}

// mac starts the MAC of a token body for o. Each part is length-prefixed,
// so no two (tenant, subject, agent) triples sign the same bytes.
func (p *pageTokens) mac(o pageOwner, body []byte) hash.Hash {
	m := hmac.New(sha256.New, p.key)
	m.Write(pageTokenDomain)
	for _, s := range []string{o.tenant, o.subject, o.agent} {
		m.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		m.Write([]byte(s))
	}
	m.Write(body)
	return m
}
