package dedupe

import (
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// canonicalGRPC is a gRPC send's message in a canonical form: parsed and
// encoded again deterministically, so that a retry whose encoder wrote
// the message's maps (metadata) in another order is the same send.
func canonicalGRPC(v a2a.Version, msg []byte) ([]byte, error) {
	var req proto.Message = &a2a10.SendMessageRequest{}
	if v == a2a.V03 {
		req = &a2a03.SendMessageRequest{}
	}
	if err := proto.Unmarshal(msg, req); err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(req)
}
