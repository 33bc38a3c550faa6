package flow

import (
	"encoding/json"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// grpcMessageMetadata sets key in the message metadata of a gRPC send to
// value, or removes it when value is nil, keeping every other byte of the
// message.
func grpcMessageMetadata(s *proxy.Scope, key string, value any) ([]byte, error) {
	if value == nil {
		return grpcwire.DeleteMessageMetadata(s.Op.Version, s.Body, key)
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return grpcwire.SetMessageMetadata(s.Op.Version, s.Body, key, v)
}

// errGRPCMetadata refuses a gRPC send whose message metadata cannot be
// changed as the agent's credential delivery needs.
var errGRPCMetadata = a2a.ErrInvalidParams.WithMessage("the message's metadata cannot be read")
