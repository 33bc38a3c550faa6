package push

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// EventID is the stable id of one task event: the same event from any
// source (a client's stream, an upstream subscription, a native push)
// gives the same id. It is the SSE id of the event, its key in the event
// log and the id of its notifications. It hashes the RFC 8785 canonical
// form of payload, the unwrapped result object, so member order and white
// space, which differ between sources, do not count; text without a
// canonical form (duplicate members, say) is hashed as it is. The id is 32
// lower-case hex digits: safe in headers, SSE fields and delivery ids.
func EventID(payload []byte) string {
	b, err := jose.Canonicalize(payload)
	if err != nil {
		b = payload
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
