package grpcwire

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzRequestJSON: any request message a caller may send is either refused
// or spelled as protobuf JSON that EncodeRequestMessage turns back into the
// same request: what the bridge reads of a gRPC request is all of it.
func FuzzRequestJSON(f *testing.F) {
	for _, c := range restCases(f) {
		f.Add(indexOf(f, c.v, c.m), mustMarshal(f, c.req))
	}
	for _, c := range strictCases {
		f.Add(uint8(0), c.msg)
	}
	f.Fuzz(func(t *testing.T, i uint8, msg []byte) {
		r := rpcOf(i)
		if _, e := Classify(r.version, r.method, msg); e != nil {
			return // refused before any stage: never translated
		}
		js, err := RequestJSON(r.version, r.method, msg)
		if err != nil {
			t.Fatalf("a classified request has no protobuf JSON: %v", err)
		}
		back, err := EncodeRequestMessage(r.version, r.method, js)
		if err != nil {
			t.Fatalf("its protobuf JSON %s does not encode: %v", js, err)
		}
		want, got := newOf(r.request), newOf(r.request)
		if proto.Unmarshal(msg, want) != nil || proto.Unmarshal(back, got) != nil || !proto.Equal(want, got) {
			t.Fatalf("the request changed through protobuf JSON:\n%v\n%v", want, got)
		}
	})
}
