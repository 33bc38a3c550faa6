package dedupe

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The fingerprint ignores what a retry may change (the JSON-RPC id, member
// order, white space) and nothing else.
func TestFingerprint(t *testing.T) {
	rpc := &a2a.Operation{Method: a2a.MethodSend, Binding: a2a.BindingJSONRPC}
	rest := &a2a.Operation{Method: a2a.MethodSend, Binding: a2a.BindingREST}
	stream := &a2a.Operation{Method: a2a.MethodStream, Binding: a2a.BindingJSONRPC}
	base := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"hi"}],"metadata":{"n":12345678901234567890}}}}`
	fp := func(op *a2a.Operation, body string) string {
		t.Helper()
		f, err := fingerprint(op, []byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return f
	}
	same := []string{
		`{"jsonrpc":"2.0","id":"other","method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"hi"}],"metadata":{"n":12345678901234567890}}}}`,
		`{ "params" : { "message" : { "metadata":{"n":12345678901234567890}, "parts":[{"text":"hi"}], "messageId":"m" } }, "method":"SendMessage", "id":7, "jsonrpc":"2.0" }`,
	}
	for _, b := range same {
		if fp(rpc, b) != fp(rpc, base) {
			t.Errorf("retry counted as a different request: %s", b)
		}
	}
	different := []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"hi!"}],"metadata":{"n":12345678901234567890}}}}`,
		// Numbers are compared as written: these differ beyond float64 precision.
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"hi"}],"metadata":{"n":12345678901234567891}}}}`,
	}
	for _, b := range different {
		if fp(rpc, b) == fp(rpc, base) {
			t.Errorf("a changed request counted as the same: %s", b)
		}
	}
	if fp(stream, base) == fp(rpc, base) {
		t.Error("send and stream share a fingerprint")
	}
	params := `{"message":{"messageId":"m","parts":[{"text":"hi"}],"metadata":{"n":12345678901234567890}}}`
	if fp(rest, params) == fp(rpc, base) {
		t.Error("REST and JSON-RPC share a fingerprint")
	}
	if _, err := fingerprint(rpc, []byte(`{"params":`)); err == nil {
		t.Error("a malformed body has a fingerprint")
	}
}

// BenchmarkFingerprint measures the fingerprint of a typical send, the
// work dedupe adds to every first-seen request before it is forwarded.
func BenchmarkFingerprint(b *testing.B) {
	op := &a2a.Operation{Method: a2a.MethodSend, Binding: a2a.BindingJSONRPC}
	body := []byte(`{"jsonrpc":"2.0","id":"c-17-42","method":"SendMessage","params":{"message":{"role":"ROLE_USER",` +
		`"messageId":"6f1c2a0e-9b7d-4c55-8e3f-0a1b2c3d4e5f","parts":[{"text":"Summarise the quarterly report and list the three largest risks."}],` +
		`"metadata":{"client":"bench","attempt":1}},"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":0}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fingerprint(op, body); err != nil {
			b.Fatal(err)
		}
	}
}
