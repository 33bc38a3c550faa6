package a2a

import "encoding/json"

type rpcRequestEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  any             `json:"params"`
}

type rpcResultEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
}

// TaskParams are the params of a request that names one task (get,
// cancel, subscribe), in the shape every version uses; Tenant is the 1.0
// routing tenant, for agents that serve several.
type TaskParams struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
}

// RPCRequest encodes a JSON-RPC request for m in version v, for calls the
// gateway makes on a caller's behalf.
func RPCRequest(v Version, m Method, id json.RawMessage, params any) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcRequestEnvelope{JSONRPC: "2.0", ID: id, Method: RPCMethodName(m, v), Params: params})
	return b
}

// RPCResult wraps a result in a JSON-RPC response to the request with id.
func RPCResult(id, result json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcResultEnvelope{JSONRPC: "2.0", ID: id, Result: result})
	return b
}

// TaskEvent frames a bare Task as a stream event or send result of version
// v: 1.0 wraps it ({"task": ...}); 0.3 tasks carry their own kind.
func TaskEvent(v Version, task json.RawMessage) json.RawMessage {
	if v != V10 {
		return task
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"task": task})
	return b
}
