package grpcwire

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// EncodeRequestMessage turns the protobuf JSON of m's request message in
// version v (what a2a.TranslateRequest spells for a gRPC agent) into the
// message. Members the message does not define are refused, not dropped.
func EncodeRequestMessage(v a2a.Version, m a2a.Method, protoJSON []byte) ([]byte, error) {
	r, ok := lookup(v, m)
	if !ok {
		return nil, fmt.Errorf("grpcwire: no gRPC method %s in A2A %s", m, v)
	}
	req := newOf(r.request)
	if err := protojson.Unmarshal(protoJSON, req); err != nil {
		return nil, fmt.Errorf("grpcwire: the request of %s: %w", m, err)
	}
	return marshal(req)
}

// RequestJSON is the protobuf JSON of a request message of m in version v
// (as a gRPC caller sent it and the stages left it), which
// a2a.TranslateRequest reads to spell the request in another form.
func RequestJSON(v a2a.Version, m a2a.Method, msg []byte) ([]byte, error) {
	r, ok := lookup(v, m)
	if !ok {
		return nil, fmt.Errorf("grpcwire: no gRPC method %s in A2A %s", m, v)
	}
	req := newOf(r.request)
	if err := proto.Unmarshal(msg, req); err != nil {
		return nil, fmt.Errorf("grpcwire: the request of %s: %w", m, err)
	}
	return protojson.Marshal(req)
}
