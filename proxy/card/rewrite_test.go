package card

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const testPublic = "https://gw.example.com/agents/geo"

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

// decode keeps numbers as written, so preserved members compare exactly.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func decodeValue(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func testOptions(t *testing.T, upstream string) RewriteOptions {
	t.Helper()
	return RewriteOptions{UpstreamBase: mustURL(t, upstream), PublicBase: testPublic, Security: GatewaySecurity(true, "X-API-Key")}
}

const (
	wantV03Schemes = `{
		"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "JWT issued by the gateway's trusted identity provider"},
		"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "API key issued by the gateway operator"}}`
	wantV10Schemes = `{
		"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT", "description": "JWT issued by the gateway's trusted identity provider"}},
		"apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key", "description": "API key issued by the gateway operator"}}}`
	wantV03Security     = `[{"bearer": []}, {"apiKey": []}]`
	wantV10Requirements = `[{"schemes": {"bearer": {"list": []}}}, {"schemes": {"apiKey": {"list": []}}}]`
)

// gatewayOwned are the top-level members a rewrite may change.
var gatewayOwned = map[string]bool{
	fieldURL: true, fieldPreferredTransport: true, fieldAdditionalInterfaces: true, fieldSupportedInterfaces: true,
	fieldCapabilities: true, fieldSecuritySchemes: true, fieldSecurity: true, fieldSecurityRequirements: true,
	fieldSkills: true, fieldSignatures: true,
}

type wantIface struct {
	url     string
	binding string
	from    int // index of the entry in the input list
}

func TestRewriteFixtures(t *testing.T) {
	tests := []struct {
		name          string
		fixture       string
		upstream      string
		wantURL       string // "" when the card has no url
		wantPreferred string // "" when the card has no preferredTransport
		wantAdditonal []wantIface
		wantSupported []wantIface
		wantSchemes   string
		wantSecurity  string // "" when absent
		wantReqs      string // "" when absent
	}{
		{
			name:          "v0.3",
			fixture:       "v03.json",
			upstream:      "http://georoute.internal:8080/a2a",
			wantURL:       testPublic + "/v1",
			wantPreferred: "JSONRPC",
			wantAdditonal: []wantIface{
				{testPublic + "/v1", "JSONRPC", 0},
				{testPublic + "/a2a/json?tenant=eu", "HTTP+JSON", 3},
				{testPublic + "/rest/v2", "HTTP+JSON", 4},
			},
			wantSchemes:  wantV03Schemes,
			wantSecurity: wantV03Security,
		},
		{
			name:     "v1.0",
			fixture:  "v10.json",
			upstream: "http://georoute.internal:8080/a2a",
			wantSupported: []wantIface{
				{testPublic + "/v1", "JSONRPC", 1},
				{testPublic + "/a2a/json", "HTTP+JSON", 3},
				{testPublic + "/other/jsonrpc", "JSONRPC", 4},
			},
			wantSchemes: wantV10Schemes,
			wantReqs:    wantV10Requirements,
		},
		{
			name:          "hybrid",
			fixture:       "hybrid.json",
			upstream:      "http://localhost:41241",
			wantURL:       testPublic + "/a2a/jsonrpc",
			wantPreferred: "JSONRPC",
			wantAdditonal: []wantIface{{testPublic + "/a2a/rest", "HTTP+JSON", 0}},
			wantSupported: []wantIface{
				{testPublic + "/a2a/jsonrpc", "JSONRPC", 0},
				{testPublic + "/a2a/rest", "HTTP+JSON", 1},
				{testPublic + "/a2a/jsonrpc", "JSONRPC", 3},
			},
			wantSchemes:  wantV03Schemes,
			wantSecurity: wantV03Security,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := fixture(t, tc.fixture)
			out, err := Rewrite(raw, testOptions(t, tc.upstream))
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			again, err := Rewrite(raw, testOptions(t, tc.upstream))
			if err != nil || !bytes.Equal(out, again) {
				t.Fatalf("output is not deterministic")
			}
			in, got := decode(t, raw), decode(t, out)

			checkString(t, got, fieldURL, tc.wantURL)
			checkString(t, got, fieldPreferredTransport, tc.wantPreferred)
			checkInterfaces(t, in, got, fieldAdditionalInterfaces, fieldTransport, tc.wantAdditonal)
			checkInterfaces(t, in, got, fieldSupportedInterfaces, fieldProtocolBinding, tc.wantSupported)
			checkJSON(t, got, fieldSecuritySchemes, tc.wantSchemes)
			checkJSON(t, got, fieldSecurity, tc.wantSecurity)
			checkJSON(t, got, fieldSecurityRequirements, tc.wantReqs)

			if _, ok := got[fieldSignatures]; ok {
				t.Errorf("signatures survived a rewrite without a signer")
			}
			if !reflect.DeepEqual(got[fieldCapabilities], in[fieldCapabilities]) {
				t.Errorf("capabilities changed without overrides: %v", got[fieldCapabilities])
			}
			checkSkills(t, in, got)
			for k, v := range in {
				if gatewayOwned[k] {
					continue
				}
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("member %q changed: got %v, want %v", k, got[k], v)
				}
			}
			for k := range got {
				if _, ok := in[k]; !ok && !gatewayOwned[k] {
					t.Errorf("unexpected member %q added", k)
				}
			}
		})
	}
}

func checkString(t *testing.T, card map[string]any, field, want string) {
	t.Helper()
	v, ok := card[field]
	if want == "" {
		if ok {
			t.Errorf("%s = %v, want absent", field, v)
		}
		return
	}
	if v != want {
		t.Errorf("%s = %v, want %q", field, v, want)
	}
}

func checkJSON(t *testing.T, card map[string]any, field, want string) {
	t.Helper()
	v, ok := card[field]
	if want == "" {
		if ok {
			t.Errorf("%s = %v, want absent", field, v)
		}
		return
	}
	if w := decodeValue(t, want); !reflect.DeepEqual(v, w) {
		t.Errorf("%s =\n%v\nwant\n%v", field, v, w)
	}
}

// checkInterfaces compares url and binding of each kept entry and requires
// every other member to be the one of the input entry it came from.
func checkInterfaces(t *testing.T, in, got map[string]any, field, bindingField string, want []wantIface) {
	t.Helper()
	list, ok := got[field].([]any)
	if want == nil {
		if ok {
			t.Errorf("%s = %v, want absent", field, list)
		}
		return
	}
	if len(list) != len(want) {
		t.Fatalf("%s has %d entries, want %d: %v", field, len(list), len(want), list)
	}
	orig := in[field].([]any)
	for i, w := range want {
		e := list[i].(map[string]any)
		if e[fieldURL] != w.url || e[bindingField] != w.binding {
			t.Errorf("%s[%d] = %v %v, want %s %s", field, i, e[fieldURL], e[bindingField], w.url, w.binding)
		}
		if !strings.HasPrefix(e[fieldURL].(string), testPublic) {
			t.Errorf("%s[%d] does not point at the gateway: %v", field, i, e[fieldURL])
		}
		src := orig[w.from].(map[string]any)
		for k, v := range src {
			if k != fieldURL && !reflect.DeepEqual(e[k], v) {
				t.Errorf("%s[%d].%s = %v, want %v", field, i, k, e[k], v)
			}
		}
		if len(e) != len(src) {
			t.Errorf("%s[%d] members changed: %v, input %v", field, i, e, src)
		}
	}
}

func checkSkills(t *testing.T, in, got map[string]any) {
	t.Helper()
	inSkills, gotSkills := in[fieldSkills].([]any), got[fieldSkills].([]any)
	if len(inSkills) != len(gotSkills) {
		t.Fatalf("skills: %d, want %d", len(gotSkills), len(inSkills))
	}
	for i := range inSkills {
		want := map[string]any{}
		for k, v := range inSkills[i].(map[string]any) {
			if k != fieldSecurity && k != fieldSecurityRequirements {
				want[k] = v
			}
		}
		if !reflect.DeepEqual(gotSkills[i], want) {
			t.Errorf("skills[%d] = %v, want %v", i, gotSkills[i], want)
		}
	}
}

func TestRewriteCapabilityOverrides(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name            string
		card            string
		streaming, push *bool
		want            string
	}{
		{"push enabled by the relay", `{"url":"http://a/x","capabilities":{"streaming":false,"pushNotifications":false,"x":1}}`, nil, &yes,
			`{"streaming":false,"pushNotifications":true,"x":1}`},
		{"streaming disabled", `{"url":"http://a/x","capabilities":{"streaming":true}}`, &no, nil, `{"streaming":false}`},
		{"capabilities created", `{"supportedInterfaces":[{"url":"http://a/x","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, &yes, &yes,
			`{"streaming":true,"pushNotifications":true}`},
		{"null capabilities", `{"url":"http://a/x","capabilities":null}`, nil, &yes, `{"pushNotifications":true}`},
		{"no overrides", `{"url":"http://a/x","capabilities":{"extensions":[{"uri":"u"}]}}`, nil, nil, `{"extensions":[{"uri":"u"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, "http://a")
			o.Streaming, o.PushNotifications = tc.streaming, tc.push
			out, err := Rewrite([]byte(tc.card), o)
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			checkJSON(t, decode(t, out), fieldCapabilities, tc.want)
		})
	}
}

func TestRewriteInterfaceSelection(t *testing.T) {
	tests := []struct {
		name string
		card string
		grpc string            // RewriteOptions.GRPCAddress
		want map[string]string // member -> expected JSON; "" means absent
	}{
		{
			name: "grpc configured: the gateway's listener replaces the agent's gRPC interfaces",
			card: `{"supportedInterfaces":[{"url":"a:1","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"a:2","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			grpc: "gw.example.com:443",
			want: map[string]string{fieldSupportedInterfaces: `[{"url":"gw.example.com:443","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"` + testPublic + `/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]`},
		},
		{
			name: "grpc configured: a gRPC interface per protocol version is kept",
			card: `{"supportedInterfaces":[{"url":"a:1","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"a:1","protocolBinding":"GRPC","protocolVersion":"0.3"},{"url":"a:2","protocolBinding":"GRPC","protocolVersion":"0.3"}]}`,
			grpc: "gw.example.com:443",
			want: map[string]string{fieldSupportedInterfaces: `[{"url":"gw.example.com:443","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"gw.example.com:443","protocolBinding":"GRPC","protocolVersion":"0.3"}]`},
		},
		{
			name: "grpc configured: a 1.0 card without a gRPC interface gets one",
			card: `{"supportedInterfaces":[{"url":"http://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			grpc: "gw.example.com:443",
			want: map[string]string{fieldSupportedInterfaces: `[{"url":"` + testPublic + `/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"gw.example.com:443","protocolBinding":"GRPC","protocolVersion":"1.0"}]`},
		},
		{
			name: "grpc configured: a gRPC-only 1.0 card is served",
			card: `{"supportedInterfaces":[{"url":"a:1","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`,
			grpc: "127.0.0.1:50051",
			want: map[string]string{fieldSupportedInterfaces: `[{"url":"127.0.0.1:50051","protocolBinding":"GRPC","protocolVersion":"1.0"}]`},
		},
		{
			name: "grpc configured: a gRPC-preferred 0.3 card keeps gRPC preferred",
			card: `{"url":"a:1","preferredTransport":"GRPC","additionalInterfaces":[{"url":"a:1","transport":"GRPC"},{"url":"http://a/rpc","transport":"JSONRPC"}]}`,
			grpc: "gw.example.com:443",
			want: map[string]string{
				fieldURL: `"gw.example.com:443"`, fieldPreferredTransport: `"GRPC"`,
				fieldAdditionalInterfaces: `[{"url":"gw.example.com:443","transport":"GRPC"},{"url":"` + testPublic + `/rpc","transport":"JSONRPC"}]`,
			},
		},
		{
			name: "grpc configured: a 0.3 card without additionalInterfaces gets both",
			card: `{"url":"http://a/rpc"}`,
			grpc: "gw.example.com:443",
			want: map[string]string{
				fieldURL:                  `"` + testPublic + `/rpc"`,
				fieldAdditionalInterfaces: `[{"url":"` + testPublic + `/rpc","transport":"JSONRPC"},{"url":"gw.example.com:443","transport":"GRPC"}]`,
			},
		},
		{
			name: "grpc configured: a gRPC-only 0.3 card is served",
			card: `{"url":"a:1","preferredTransport":"GRPC"}`,
			grpc: "gw.example.com:443",
			want: map[string]string{fieldURL: `"gw.example.com:443"`, fieldPreferredTransport: `"GRPC"`, fieldAdditionalInterfaces: `[{"url":"gw.example.com:443","transport":"GRPC"}]`},
		},
		{
			name: "grpc preferred falls back to the first proxied interface",
			card: `{"url":"https://a/grpc","preferredTransport":"GRPC","additionalInterfaces":[{"url":"https://a/grpc","transport":"GRPC"},{"url":"http://a/rest","transport":"HTTP+JSON"},{"url":"http://a/rpc","transport":"JSONRPC"}]}`,
			want: map[string]string{
				fieldURL: `"` + testPublic + `/rest"`, fieldPreferredTransport: `"HTTP+JSON"`,
				fieldAdditionalInterfaces: `[{"url":"` + testPublic + `/rest","transport":"HTTP+JSON"},{"url":"` + testPublic + `/rpc","transport":"JSONRPC"}]`,
			},
		},
		{
			name: "default transport is JSON-RPC",
			card: `{"url":"http://a/rpc"}`,
			want: map[string]string{fieldURL: `"` + testPublic + `/rpc"`, fieldPreferredTransport: ""},
		},
		{
			name: "only grpc additional interfaces are removed",
			card: `{"url":"http://a/rpc","additionalInterfaces":[{"url":"grpc://a:1","transport":"GRPC"}]}`,
			want: map[string]string{fieldURL: `"` + testPublic + `/rpc"`, fieldAdditionalInterfaces: ""},
		},
		{
			name: "custom bindings are dropped, binding case is tolerated",
			card: `{"supportedInterfaces":[{"url":"http://a/ws","protocolBinding":"WEBSOCKET"},{"url":"http://a/rpc","protocolBinding":"jsonrpc"}]}`,
			want: map[string]string{fieldSupportedInterfaces: `[{"url":"` + testPublic + `/rpc","protocolBinding":"jsonrpc"}]`},
		},
		{
			name: "interfaces without a binding are dropped",
			card: `{"url":"http://a/rpc","additionalInterfaces":[{"url":"http://a/x"},{"url":"http://a/rpc","transport":"JSONRPC"}]}`,
			want: map[string]string{fieldAdditionalInterfaces: `[{"url":"` + testPublic + `/rpc","transport":"JSONRPC"}]`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, "http://a")
			o.GRPCAddress = tc.grpc
			out, err := Rewrite([]byte(tc.card), o)
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			got := decode(t, out)
			for field, want := range tc.want {
				checkJSON(t, got, field, want)
			}
		})
	}
}

func TestRewriteSecurity(t *testing.T) {
	oidc := Security{
		Schemes: []Scheme{
			{Name: "corp", OpenIDConnect: &OpenIDConnect{URL: "https://idp.example.com/.well-known/openid-configuration"}},
			{Name: "key", APIKey: &APIKey{Location: "header", Name: "X-Key"}},
		},
		Requirements: []Requirement{{"corp": {"openid", "a2a"}, "key": nil}},
	}
	tests := []struct {
		name     string
		card     string
		security Security
		want     map[string]string
	}{
		{
			name:     "no gateway authentication removes every scheme",
			card:     `{"url":"http://a/rpc","securitySchemes":{"x":{"type":"http","scheme":"basic"}},"security":[{"x":[]}],"securityRequirements":[{"schemes":{"x":{"list":[]}}}],"skills":[{"id":"s","security":[{"x":[]}]}]}`,
			security: Security{},
			want:     map[string]string{fieldSecuritySchemes: "", fieldSecurity: "", fieldSecurityRequirements: "", fieldSkills: `[{"id":"s"}]`},
		},
		{
			name:     "v1.0 card without schemes gets v1.0 shapes",
			card:     `{"supportedInterfaces":[{"url":"http://a/rpc","protocolBinding":"JSONRPC"}]}`,
			security: oidc,
			want: map[string]string{
				fieldSecuritySchemes:      `{"corp":{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://idp.example.com/.well-known/openid-configuration"}},"key":{"apiKeySecurityScheme":{"location":"header","name":"X-Key"}}}`,
				fieldSecurityRequirements: `[{"schemes":{"corp":{"list":["openid","a2a"]},"key":{"list":[]}}}]`,
				fieldSecurity:             "",
			},
		},
		{
			name:     "v0.3 card without schemes gets v0.3 shapes",
			card:     `{"url":"http://a/rpc","protocolVersion":"0.3.0"}`,
			security: oidc,
			want: map[string]string{
				fieldSecuritySchemes:      `{"corp":{"type":"openIdConnect","openIdConnectUrl":"https://idp.example.com/.well-known/openid-configuration"},"key":{"type":"apiKey","in":"header","name":"X-Key"}}`,
				fieldSecurity:             `[{"corp":["openid","a2a"],"key":[]}]`,
				fieldSecurityRequirements: "",
			},
		},
		{
			name:     "v1.0 schemes with a 0.3 security list rewrite both requirement fields",
			card:     `{"supportedInterfaces":[{"url":"http://a/rpc","protocolBinding":"JSONRPC"}],"securitySchemes":{"g":{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://x"}}},"security":[{"g":["openid"]}]}`,
			security: GatewaySecurity(true, ""),
			want: map[string]string{
				fieldSecuritySchemes:      `{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"JWT","description":"JWT issued by the gateway's trusted identity provider"}}}`,
				fieldSecurity:             `[{"bearer":[]}]`,
				fieldSecurityRequirements: `[{"schemes":{"bearer":{"list":[]}}}]`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, "http://a")
			o.Security = tc.security
			out, err := Rewrite([]byte(tc.card), o)
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			got := decode(t, out)
			for field, want := range tc.want {
				checkJSON(t, got, field, want)
			}
		})
	}
}

func TestRewriteErrors(t *testing.T) {
	valid := `{"url":"http://a/rpc"}`
	tests := []struct {
		name   string
		card   string
		modify func(*RewriteOptions)
		want   error
	}{
		{name: "empty", card: ``, want: ErrMalformedCard},
		{name: "truncated", card: `{"url":`, want: ErrMalformedCard},
		{name: "null", card: `null`, want: ErrMalformedCard},
		{name: "array", card: `[]`, want: ErrMalformedCard},
		{name: "no interfaces", card: `{"name":"x"}`, want: ErrMalformedCard},
		{name: "url not a string", card: `{"url":5}`, want: ErrMalformedCard},
		{name: "preferredTransport not a string", card: `{"url":"http://a","preferredTransport":{}}`, want: ErrMalformedCard},
		{name: "interfaces not a list", card: `{"supportedInterfaces":{}}`, want: ErrMalformedCard},
		{name: "interface not an object", card: `{"supportedInterfaces":[null]}`, want: ErrMalformedCard},
		{name: "interface url not a string", card: `{"supportedInterfaces":[{"url":1,"protocolBinding":"JSONRPC"}]}`, want: ErrMalformedCard},
		{name: "capabilities not an object", card: `{"url":"http://a","capabilities":[]}`, modify: func(o *RewriteOptions) { o.Streaming = new(bool) }, want: ErrMalformedCard},
		{name: "skills not a list", card: `{"url":"http://a","skills":"x"}`, want: ErrMalformedCard},
		{name: "all grpc", card: `{"supportedInterfaces":[{"url":"grpc://a","protocolBinding":"GRPC"}]}`, want: ErrNoProxiableInterface},
		{name: "grpc only 0.3", card: `{"url":"https://a","preferredTransport":"GRPC"}`, want: ErrNoProxiableInterface},
		{name: "nil upstream", card: valid, modify: func(o *RewriteOptions) { o.UpstreamBase = nil }, want: ErrInvalidOptions},
		{name: "bad public base", card: valid, modify: func(o *RewriteOptions) { o.PublicBase = "gw/agents" }, want: ErrInvalidOptions},
		{name: "scheme without kind", card: valid, modify: func(o *RewriteOptions) { o.Security = Security{Schemes: []Scheme{{Name: "x"}}} }, want: ErrInvalidOptions},
		{name: "scheme with two kinds", card: valid, modify: func(o *RewriteOptions) {
			o.Security = Security{Schemes: []Scheme{{Name: "x", HTTP: &HTTPAuth{Scheme: "Bearer"}, APIKey: &APIKey{Location: "header", Name: "k"}}}}
		}, want: ErrInvalidOptions},
		{name: "duplicate scheme", card: valid, modify: func(o *RewriteOptions) {
			o.Security.Schemes = append(o.Security.Schemes, o.Security.Schemes[0])
		}, want: ErrInvalidOptions},
		{name: "requirement names unknown scheme", card: valid, modify: func(o *RewriteOptions) {
			o.Security.Requirements = []Requirement{{"nope": nil}}
		}, want: ErrInvalidOptions},
		{name: "bad api key location", card: valid, modify: func(o *RewriteOptions) {
			o.Security = Security{Schemes: []Scheme{{Name: "k", APIKey: &APIKey{Location: "body", Name: "k"}}}}
		}, want: ErrInvalidOptions},
		{name: "relative oidc url", card: valid, modify: func(o *RewriteOptions) {
			o.Security = Security{Schemes: []Scheme{{Name: "o", OpenIDConnect: &OpenIDConnect{URL: "/.well-known/openid-configuration"}}}}
		}, want: ErrInvalidOptions},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, "http://a")
			if tc.modify != nil {
				tc.modify(&o)
			}
			out, err := Rewrite([]byte(tc.card), o)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Rewrite = %s, %v; want %v", out, err, tc.want)
			}
		})
	}
}

func TestRewriteOptionsValidate(t *testing.T) {
	good := testOptions(t, "http://a")
	if err := good.Validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	tests := []struct {
		name   string
		modify func(*RewriteOptions)
	}{
		{"no upstream", func(o *RewriteOptions) { o.UpstreamBase = nil }},
		{"no public base", func(o *RewriteOptions) { o.PublicBase = "" }},
		{"unnamed scheme", func(o *RewriteOptions) { o.Security.Schemes[0].Name = "" }},
		{"empty requirement", func(o *RewriteOptions) { o.Security.Requirements = []Requirement{{}} }},
		{"empty HTTP scheme", func(o *RewriteOptions) { o.Security.Schemes[0].HTTP = &HTTPAuth{} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, "http://a")
			tc.modify(&o)
			if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Validate = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// A hybrid card can carry its security schemes in one shape only: the
// caller's version picks it.
func TestHybridCardSchemesFollowCallerVersion(t *testing.T) {
	for _, tc := range []struct {
		version     a2a.Version
		wantWrapped bool
		wantField   string
	}{
		{a2a.V10, true, fieldSecurityRequirements},
		{a2a.V03, false, fieldSecurity},
	} {
		t.Run(tc.version.String(), func(t *testing.T) {
			o := testOptions(t, "http://localhost:41241")
			o.Version = tc.version
			out, err := Rewrite(fixture(t, "hybrid.json"), o)
			if err != nil {
				t.Fatal(err)
			}
			var card map[string]json.RawMessage
			if err := json.Unmarshal(out, &card); err != nil {
				t.Fatal(err)
			}
			wrapped := bytes.Contains(card[fieldSecuritySchemes], []byte("httpAuthSecurityScheme"))
			if wrapped != tc.wantWrapped || card[tc.wantField] == nil {
				t.Fatalf("version %v: schemes %s, %s present: %v", tc.version, card[fieldSecuritySchemes], tc.wantField, card[tc.wantField] != nil)
			}
		})
	}
}
