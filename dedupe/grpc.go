package dedupe

import (
	"encoding/json"
	"net/http"

	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
	"github.com/a2a-gateway/a2a-gateway/proxy"
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

// attachGRPC answers a gRPC streaming duplicate whose task can no longer
// be subscribed to with the task as it is now (rec, the answer of get),
// as a stream of one message; an error answer is passed on as it is.
func attachGRPC(w http.ResponseWriter, s *proxy.Scope, get *a2a.Operation, rec *bufferWriter) error {
	msg, err := grpcwire.ReadMessage(&rec.buf, int64(rec.buf.Len()))
	if err != nil {
		rec.copyTo(w)
		return nil
	}
	_, task, err := grpcwire.ReadAnswer(get, msg)
	if err != nil {
		return a2a.ErrInvalidAgentResponse
	}
	// The HTTP+JSON form of a StreamResponse holding the task, in both
	// versions.
	event, err := json.Marshal(map[string]json.RawMessage{"task": task})
	if err != nil {
		return err
	}
	w.Header().Set(ReplayHeader, "true")
	return proxy.WriteGRPCAnswer(w, s, event)
}
