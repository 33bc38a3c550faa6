package card

// Protocol bindings as the specification spells them in AgentInterface
// (1.0 protocolBinding, 0.3 transport). Only these two are carried by the
// gateway; see proxiedBinding.
const (
	bindingJSONRPC  = "JSONRPC"
	bindingHTTPJSON = "HTTP+JSON"
)
