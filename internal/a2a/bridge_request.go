package a2a

import (
	"encoding/json"
	"net/url"
)

// TranslateRequest spells the request op was classified from in form to.
// body is the request as the pipeline leaves it: the JSON-RPC request, the
// REST body (query is its URL query), or for gRPC the protobuf JSON of the
// request message. id is the JSON-RPC id of a JSON-RPC request to the agent.
//
// A method to lacks is refused with ErrUnsupportedOperation, a member that
// cannot be carried with ErrInvalidParams, both naming what and why in the
// caller's terms.
func TranslateRequest(op *Operation, query url.Values, body []byte, to Form, id json.RawMessage) (UpstreamRequest, *Error) {
	return UpstreamRequest{}, ErrUnsupportedOperation.WithMessage("bridging " + FormOf(op).String() + " to " + to.String() + " is not built")
}
