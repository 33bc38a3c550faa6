package a2a

// TranslateResult spells one answer to method m, read in form from, in form
// to. result is a unary answer's result or one stream event's, without the
// JSON-RPC envelope (as ReadAnswer returns it; for gRPC the protobuf JSON
// of the answer message), and so is what it returns. A status update for a
// 0.3 caller gets its final flag from its state.
//
// An answer that cannot be translated is an error wrapping ErrNotA2A: the
// gateway refuses it as INVALID_AGENT_RESPONSE.
func TranslateResult(m Method, result []byte, from, to Form) ([]byte, error) {
	return nil, ErrNotA2A
}
