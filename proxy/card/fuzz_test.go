package card

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

func FuzzRewrite(f *testing.F) {
	for _, name := range []string{"v03.json", "v10.json", "hybrid.json"} {
		b, err := readFixture(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"url":null}`, `{"url":"%zz"}`, `{"url":"http://a/../../x"}`,
		`{"supportedInterfaces":[{"url":"http://a","protocolBinding":"JSONRPC"}],"capabilities":7}`,
		`{"additionalInterfaces":[{"url":"rest","transport":"HTTP+JSON"}],"preferredTransport":"GRPC"}`,
		`{"url":"http://a","securitySchemes":{"x":{"type":1}},"skills":[{"security":null}]}`,
		`{"url":"http://a","signatures":[{"protected":"e30","signature":"AA"}],"x":1e999}`,
	} {
		f.Add([]byte(s), true)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	signer, err := NewSigner(key, "fuzz", "")
	if err != nil {
		f.Fatal(err)
	}
	upstream := &url.URL{Scheme: "http", Host: "georoute.internal:8080", Path: "/a2a"}
	yes := true
	f.Fuzz(func(t *testing.T, raw []byte, sign bool) {
		o := RewriteOptions{UpstreamBase: upstream, PublicBase: testPublic, Security: GatewaySecurity(true, "X-API-Key"), PushNotifications: &yes}
		if sign {
			o.Signer = signer
		}
		out, err := Rewrite(raw, o)
		if err != nil {
			return
		}
		var card map[string]json.RawMessage
		if err := json.Unmarshal(out, &card); err != nil {
			t.Fatalf("output is not a JSON object: %v", err)
		}
		for _, u := range interfaceURLs(t, card) {
			if !strings.HasPrefix(u, testPublic) {
				t.Fatalf("interface URL %q does not point at the gateway", u)
			}
		}
		if sign {
			if err := Verify(out, map[string]crypto.PublicKey{"fuzz": &key.PublicKey}); err != nil {
				t.Fatalf("own signature does not verify: %v", err)
			}
		} else if _, ok := card[fieldSignatures]; ok {
			t.Fatalf("signatures kept without a signer")
		}
		_ = Verify(raw, nil) // must not panic on arbitrary input either
	})
}

// FuzzRewriteBridged: whatever the agent's card says, a bridged card that
// is served lists the gateway's interfaces only.
func FuzzRewriteBridged(f *testing.F) {
	for _, name := range []string{"v03.json", "v10.json", "hybrid.json"} {
		b, err := readFixture(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	for _, s := range []string{
		`{"url":"http://a"}`, `{"supportedInterfaces":[]}`, `{"url":"x","capabilities":null,"supportsAuthenticatedExtendedCard":1}`,
		`{"url":"x","capabilities":[]}`, `{"url":"x","protocolVersion":7}`, `{"url":"x","capabilities":{"extendedAgentCard":"no"}}`,
	} {
		f.Add([]byte(s), uint8(7))
	}
	upstream := &url.URL{Scheme: "http", Host: "georoute.internal:8080", Path: "/a2a"}
	all := []a2a.Form{
		{Version: a2a.V10, Binding: a2a.BindingJSONRPC}, {Version: a2a.V10, Binding: a2a.BindingREST}, {Version: a2a.V10, Binding: a2a.BindingGRPC},
		{Version: a2a.V03, Binding: a2a.BindingJSONRPC}, {Version: a2a.V03, Binding: a2a.BindingREST}, {Version: a2a.V03, Binding: a2a.BindingGRPC},
	}
	f.Fuzz(func(t *testing.T, raw []byte, pick uint8) {
		// pick's bits choose the caller: its version, whether it calls
		// over gRPC, and which forms are offered.
		var offer []a2a.Form
		for i, fm := range all {
			if pick>>(i%6)&1 == 1 || i == int(pick%6) {
				offer = append(offer, fm)
			}
		}
		o := RewriteOptions{UpstreamBase: upstream, PublicBase: testPublic, Security: GatewaySecurity(true, ""), GRPCAddress: "gw:1",
			Bridge:  &Bridge{Agent: offer[0], Offer: offer, JSONRPCPath: "/", RESTPath: "/rest"},
			Version: []a2a.Version{0, a2a.V03, a2a.V10}[pick%3], GRPC: pick&0x80 != 0}
		out, err := Rewrite(raw, o)
		if err != nil {
			return
		}
		var card map[string]json.RawMessage
		if err := json.Unmarshal(out, &card); err != nil {
			t.Fatalf("output is not a JSON object: %v", err)
		}
		for _, u := range interfaceURLs(t, card) {
			if !strings.HasPrefix(u, testPublic) && u != "gw:1" {
				t.Fatalf("interface URL %q is not the gateway's", u)
			}
		}
	})
}

func readFixture(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", name))
}

func interfaceURLs(t *testing.T, card map[string]json.RawMessage) []string {
	t.Helper()
	var urls []string
	if raw, ok := card[fieldURL]; ok && !isNull(raw) {
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			t.Fatalf("url: %v", err)
		}
		urls = append(urls, u)
	}
	for _, field := range []string{fieldAdditionalInterfaces, fieldSupportedInterfaces} {
		raw, ok := card[field]
		if !ok || isNull(raw) {
			continue
		}
		var list []struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("%s: %v", field, err)
		}
		for _, e := range list {
			urls = append(urls, e.URL)
		}
	}
	return urls
}
