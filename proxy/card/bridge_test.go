package card

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

const testGRPC = "gw.example.com:50051"

var (
	v10RPC  = a2a.Form{Version: a2a.V10, Binding: a2a.BindingJSONRPC}
	v10REST = a2a.Form{Version: a2a.V10, Binding: a2a.BindingREST}
	v10GRPC = a2a.Form{Version: a2a.V10, Binding: a2a.BindingGRPC}
	v03RPC  = a2a.Form{Version: a2a.V03, Binding: a2a.BindingJSONRPC}
	v03REST = a2a.Form{Version: a2a.V03, Binding: a2a.BindingREST}
	v03GRPC = a2a.Form{Version: a2a.V03, Binding: a2a.BindingGRPC}
)

// bridgeOptions are the options of a bridged agent whose gateway routes
// JSON-RPC at /rpc and HTTP+JSON below /rest.
func bridgeOptions(t *testing.T, agent a2a.Form, offer ...a2a.Form) RewriteOptions {
	t.Helper()
	o := testOptions(t, "http://georoute.internal:8080/a2a")
	o.GRPCAddress = testGRPC
	o.Bridge = &Bridge{Agent: agent, Offer: offer, JSONRPCPath: "/rpc", RESTPath: "/rest/"}
	return o
}

// offerURL is where the test gateway serves f.
func testOfferURL(f a2a.Form) string {
	switch f.Binding {
	case a2a.BindingGRPC:
		return testGRPC
	case a2a.BindingREST:
		return testPublic + "/rest"
	}
	return testPublic + "/rpc"
}

// readCard is how the 0.3 SDKs (a2a-go, the 0.3 JSON schema) and the 1.0
// ones (supportedInterfaces) find the interfaces of a card.
type readCard struct {
	URL                  string `json:"url"`
	PreferredTransport   string `json:"preferredTransport"`
	ProtocolVersion      string `json:"protocolVersion"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"supportedInterfaces"`
}

// forms lists the forms a card offers: a 1.0 reader's from
// supportedInterfaces, a 0.3 reader's from url, preferredTransport and
// additionalInterfaces; each URL must be the gateway's for its binding.
func forms(t *testing.T, raw []byte) (v10Reader, v03Reader []a2a.Form) {
	t.Helper()
	var c readCard
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("the card does not read: %v", err)
	}
	form := func(version, binding, u string) a2a.Form {
		v, ok := a2a.ParseVersionName(version)
		b, okb := a2a.ParseBindingName(binding)
		if !ok || !okb {
			t.Fatalf("interface %q over %q is not a form", version, binding)
		}
		f := a2a.Form{Version: v, Binding: b}
		if u != testOfferURL(f) {
			t.Fatalf("%v is at %q, want the gateway's %q", f, u, testOfferURL(f))
		}
		return f
	}
	for _, i := range c.SupportedInterfaces {
		v10Reader = append(v10Reader, form(i.ProtocolVersion, i.ProtocolBinding, i.URL))
	}
	if c.URL != "" {
		if !strings.HasPrefix(c.ProtocolVersion, "0.3") {
			t.Fatalf("a 0.3 card names protocolVersion %q", c.ProtocolVersion)
		}
		main := form("0.3", c.PreferredTransport, c.URL)
		for _, i := range c.AdditionalInterfaces {
			v03Reader = append(v03Reader, form("0.3", i.Transport, i.URL))
		}
		if len(v03Reader) == 0 || v03Reader[0] != main {
			t.Fatalf("the main interface %v does not lead additionalInterfaces %v", main, v03Reader)
		}
	}
	return v10Reader, v03Reader
}

func ofVersion(fs []a2a.Form, v a2a.Version) []a2a.Form {
	return slices.DeleteFunc(slices.Clone(fs), func(f a2a.Form) bool { return f.Version != v })
}

// A bridged card lists exactly the offered forms, at the gateway, to both
// generations of readers, whatever the agent's card listed: 1.0 readers
// find every form (with its version) in supportedInterfaces, 0.3 readers
// the 0.3 ones.
func TestBridgedCardListsTheOffer(t *testing.T) {
	offers := map[string][]a2a.Form{
		"everything": {v10RPC, v10REST, v10GRPC, v03RPC, v03REST, v03GRPC},
		"0.3 first":  {v03GRPC, v03RPC, v10REST},
		"1.0 only":   {v10REST, v10RPC},
		"0.3 only":   {v03RPC, v03REST},
		"one":        {v10GRPC},
	}
	for _, fx := range []string{"v03.json", "v10.json", "hybrid.json"} {
		for name, offer := range offers {
			for _, version := range []a2a.Version{0, a2a.V03, a2a.V10} {
				t.Run(fx+"/"+name+"/"+version.String(), func(t *testing.T) {
					o := bridgeOptions(t, offer[0], offer...)
					o.Version = version
					out, err := Rewrite(fixture(t, fx), o)
					if err != nil {
						t.Fatalf("Rewrite: %v", err)
					}
					v10Reader, v03Reader := forms(t, out)
					// A card offering 0.3 alone is a 0.3 card, which the 1.0
					// SDKs read in their 0.3 compatibility.
					want10 := offer
					if len(ofVersion(offer, a2a.V10)) == 0 {
						want10 = nil
					}
					if !slices.Equal(v10Reader, want10) {
						t.Errorf("supportedInterfaces offer %v, want %v", v10Reader, want10)
					}
					if want := ofVersion(offer, a2a.V03); !slices.Equal(v03Reader, want) {
						t.Errorf("the 0.3 members offer %v, want %v", v03Reader, want)
					}
					if strings.Contains(string(out), "georoute") && strings.Contains(string(out), "8080") {
						t.Errorf("the agent's own address is in the card: %s", out)
					}
					if got, want := OffersJSONRPC(out), slices.ContainsFunc(offer, func(f a2a.Form) bool { return f.Binding == a2a.BindingJSONRPC }); got != want {
						t.Errorf("OffersJSONRPC = %v, want %v", got, want)
					}
					checkBridgedSecurity(t, out, offer, version)
				})
			}
		}
	}
}

// checkBridgedSecurity: the schemes and their one requirement member are
// in the shape of the version the caller reads (0.3 when it names none),
// or of the only version offered.
func checkBridgedSecurity(t *testing.T, out []byte, offer []a2a.Form, caller a2a.Version) {
	t.Helper()
	want := caller
	switch {
	case len(ofVersion(offer, a2a.V10)) == 0:
		want = a2a.V03
	case len(ofVersion(offer, a2a.V03)) == 0:
		want = a2a.V10
	case want == 0:
		want = a2a.V03
	}
	card := decode(t, out)
	schemes, reqs, absent := wantV10Schemes, fieldSecurityRequirements, fieldSecurity
	if want == a2a.V03 {
		schemes, reqs, absent = wantV03Schemes, fieldSecurity, fieldSecurityRequirements
	}
	checkJSON(t, card, fieldSecuritySchemes, schemes)
	if _, ok := card[reqs]; !ok {
		t.Errorf("%s is missing", reqs)
	}
	if _, ok := card[absent]; ok {
		t.Errorf("%s is written beside %s", absent, reqs)
	}
}

// The members of one version follow the versions offered: the extended
// card flag is spelt in each (from the agent's own), 0.3's protocolVersion
// only when 0.3 is offered; the rest of the card is the agent's.
func TestBridgedCardVersionMembers(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		agent   a2a.Form
		offer   []a2a.Form
		want03  bool // supportsAuthenticatedExtendedCard, protocolVersion
		want10  bool // capabilities.extendedAgentCard
	}{
		{"v10.json", v10RPC, []a2a.Form{v10RPC, v03RPC}, true, true},
		{"v10.json", v10RPC, []a2a.Form{v10RPC}, false, true},
		{"v03.json", v03RPC, []a2a.Form{v03RPC, v10REST}, true, true},
		{"v03.json", v03RPC, []a2a.Form{v03RPC}, true, false},
	} {
		t.Run(tc.fixture+" "+tc.offer[len(tc.offer)-1].String(), func(t *testing.T) {
			in := decode(t, fixture(t, tc.fixture))
			out, err := Rewrite(fixture(t, tc.fixture), bridgeOptions(t, tc.agent, tc.offer...))
			if err != nil {
				t.Fatal(err)
			}
			got := decode(t, out)
			caps := got[fieldCapabilities].(map[string]any)
			flag03, has03 := got[fieldExtendedCardV03]
			flag10, has10 := caps[fieldExtendedCardV10]
			if has03 != tc.want03 || has10 != tc.want10 {
				t.Fatalf("extended card flag: 0.3 %v, 1.0 %v; want %v, %v", has03, has10, tc.want03, tc.want10)
			}
			for _, f := range []any{flag03, flag10} {
				if f != nil && f != true {
					t.Errorf("the extended card flag is %v, the agent's is true", f)
				}
			}
			if _, ok := got[fieldProtocolVersion]; ok != tc.want03 {
				t.Errorf("protocolVersion present: %v, want %v", ok, tc.want03)
			}
			owned := map[string]bool{fieldProtocolVersion: true, fieldExtendedCardV03: true}
			for k, v := range in {
				if gatewayOwned[k] || owned[k] {
					continue
				}
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("member %q changed: got %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

// A gRPC caller's extended card is the protobuf JSON of its version's
// AgentCard, which the gateway's gRPC encoder takes; a 1.0 caller's lists
// every offered form, a 0.3 caller's the 0.3 ones.
func TestBridgedCardForGRPCCallers(t *testing.T) {
	offer := []a2a.Form{v10GRPC, v10RPC, v03GRPC, v03REST}
	for _, fx := range []string{"v03.json", "v10.json", "hybrid.json"} {
		for _, tc := range []struct {
			version a2a.Version
			msg     proto.Message
		}{{a2a.V10, &a2a10.AgentCard{}}, {a2a.V03, &a2a03.AgentCard{}}} {
			t.Run(fx+"/"+tc.version.String(), func(t *testing.T) {
				raw := withoutVendorMembers(t, fixture(t, fx))
				o := bridgeOptions(t, v03RPC, offer...)
				o.Version, o.GRPC = tc.version, true
				out, err := Rewrite(raw, o)
				if err != nil {
					t.Fatal(err)
				}
				op := &a2a.Operation{Version: tc.version, Binding: a2a.BindingGRPC, Method: a2a.MethodExtendedCard}
				if _, err := grpcwire.EncodeAnswer(op, out); err != nil {
					t.Fatalf("the gRPC encoder refuses the card: %v\n%s", err, out)
				}
				if err := protojson.Unmarshal(out, tc.msg); err != nil {
					t.Fatal(err)
				}
				v10Reader, v03Reader := forms(t, out)
				want10, want03 := offer, ofVersion(offer, a2a.V03)
				if tc.version == a2a.V03 {
					want10 = nil
				} else {
					want03 = nil
				}
				if !slices.Equal(v10Reader, want10) || !slices.Equal(v03Reader, want03) {
					t.Errorf("offers %v and %v, want %v and %v", v10Reader, v03Reader, want10, want03)
				}
				var c struct {
					Schemes map[string]map[string]any `json:"securitySchemes"`
				}
				if err := json.Unmarshal(out, &c); err != nil || c.Schemes[SchemeBearer]["httpAuthSecurityScheme"] == nil {
					t.Errorf("the bearer scheme is not in protobuf JSON: %v %s", err, out)
				}
			})
		}
	}
}

// withoutVendorMembers drops the fixtures' x- members, which no protobuf
// card has.
func withoutVendorMembers(t *testing.T, raw []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		if strings.HasPrefix(k, "x-") {
			delete(m, k)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A member the caller's protobuf card lacks is not dropped in silence: the
// encoder refuses the card.
func TestBridgedCardForGRPCRefusesUnknownMembers(t *testing.T) {
	o := bridgeOptions(t, v10RPC, v10RPC, v10GRPC)
	o.Version, o.GRPC = a2a.V10, true
	out, err := Rewrite(fixture(t, "v10.json"), o) // it has x-deployment
	if err != nil {
		t.Fatal(err)
	}
	op := &a2a.Operation{Version: a2a.V10, Binding: a2a.BindingGRPC, Method: a2a.MethodExtendedCard}
	if _, err := grpcwire.EncodeAnswer(op, out); err == nil {
		t.Fatalf("a card with an unknown member was encoded")
	}
}

func TestBridgedCardRefusesBadOptions(t *testing.T) {
	noGRPC := bridgeOptions(t, v10RPC, v10RPC, v03GRPC)
	noGRPC.GRPCAddress = ""
	for name, o := range map[string]RewriteOptions{
		"gRPC offered without a listener": noGRPC,
		"nothing offered":                 bridgeOptions(t, v10RPC),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Rewrite(fixture(t, "v10.json"), o); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("err = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// An agent's own gRPC extended card, forwarded to a caller of its version,
// gets the gateway's security in that version's protobuf shape (0.3 keeps
// its requirements in `security`, as {schemes}), which the encoder takes.
func TestGRPCExtendedCardSecurityShape(t *testing.T) {
	for _, tc := range []struct {
		version a2a.Version
		card    string
	}{
		{a2a.V10, `{"name":"a","description":"d","version":"1","capabilities":{"streaming":true},
			"supportedInterfaces":[{"url":"http://georoute.internal:8080/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"agent:50051","protocolBinding":"GRPC","protocolVersion":"1.0"}],
			"securitySchemes":{"x":{"httpAuthSecurityScheme":{"scheme":"Basic"}}},"securityRequirements":[{"schemes":{"x":{"list":[]}}}],
			"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
			"skills":[{"id":"s","name":"s","description":"d","tags":["t"],"securityRequirements":[{"schemes":{"x":{"list":[]}}}]}]}`},
		{a2a.V03, `{"protocolVersion":"0.3.0","name":"a","description":"d","version":"1","capabilities":{"streaming":true},
			"url":"http://georoute.internal:8080/a2a","preferredTransport":"JSONRPC","additionalInterfaces":[{"url":"agent:50051","transport":"GRPC"}],
			"securitySchemes":{"x":{"httpAuthSecurityScheme":{"scheme":"Basic"}}},"security":[{"schemes":{"x":{"list":[]}}}],
			"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"supportsAuthenticatedExtendedCard":true,
			"skills":[{"id":"s","name":"s","description":"d","tags":["t"],"security":[{"schemes":{"x":{"list":[]}}}]}]}`},
	} {
		t.Run(tc.version.String(), func(t *testing.T) {
			op := &a2a.Operation{Version: tc.version, Binding: a2a.BindingGRPC, Method: a2a.MethodExtendedCard}
			if _, err := grpcwire.EncodeAnswer(op, []byte(tc.card)); err != nil {
				t.Fatalf("the agent's card is not protobuf JSON: %v", err)
			}
			o := testOptions(t, "http://georoute.internal:8080/a2a")
			o.GRPCAddress, o.Version, o.GRPC = testGRPC, tc.version, true
			out, err := Rewrite([]byte(tc.card), o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := grpcwire.EncodeAnswer(op, out); err != nil {
				t.Fatalf("the gRPC encoder refuses the rewritten card: %v\n%s", err, out)
			}
			reqs := fieldSecurityRequirements
			if tc.version == a2a.V03 {
				reqs = fieldSecurity
			}
			card := decode(t, out)
			checkJSON(t, card, fieldSecuritySchemes, wantV10Schemes)
			checkJSON(t, card, reqs, wantV10Requirements)
		})
	}
}
