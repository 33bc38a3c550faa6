package card

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func BenchmarkRewrite(b *testing.B) {
	raw, err := readFixture("v03.json")
	if err != nil {
		b.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := NewSigner(key, "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		signer *Signer
	}{{"unsigned", nil}, {"signed", signer}} {
		b.Run(bc.name, func(b *testing.B) {
			o := RewriteOptions{UpstreamBase: mustURLB(b, "http://georoute.internal:8080/a2a"), PublicBase: testPublic, Security: GatewaySecurity(true, "X-API-Key"), Signer: bc.signer}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Rewrite(raw, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServeCardHit is the hot path: every card request after the first.
func BenchmarkServeCardHit(b *testing.B) {
	raw, err := readFixture("v10.json")
	if err != nil {
		b.Fatal(err)
	}
	up := httptest.NewServer(serveBytes(raw))
	defer up.Close()
	c := NewCache(up.Client(), 0, testMaxCardBytes, testFetchTimeout, nil)
	o := RewriteOptions{UpstreamBase: mustURLB(b, "http://georoute.internal:8080/a2a"), PublicBase: testPublic, Security: GatewaySecurity(true, "")}
	urls := []string{up.URL + "/.well-known/agent-card.json"}
	req := httptest.NewRequest(http.MethodGet, "/agents/geo/.well-known/agent-card.json", nil)
	req.Header.Set("A2A-Version", "1.0")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		c.ServeCard(w, req, "geo", urls, o)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

func mustURLB(b *testing.B, s string) *url.URL {
	b.Helper()
	u, err := url.Parse(s)
	if err != nil {
		b.Fatal(err)
	}
	return u
}
