package config

// AgentBridge is one agent's `bridge:` section. It opts the agent into
// bridging: the agent speaks one version over one binding (Agent), and the
// gateway serves it to callers in every interface of Offer, translating
// requests, answers, stream events and errors between the two.
type AgentBridge struct {
	// Agent is the one interface the agent speaks. Every request of a
	// caller in another interface is translated into it.
	Agent BridgeInterface `yaml:"agent"`
	// Offer lists the interfaces the gateway serves in front of the agent;
	// the rewritten card lists exactly these, and a request in any other
	// is refused. Default: JSONRPC and HTTP+JSON in 1.0 and 0.3, and GRPC
	// in both when the agent has a grpc listener.
	Offer []BridgeInterface `yaml:"offer"`
}

// BridgeInterface is one protocol version over one binding.
type BridgeInterface struct {
	// Version is "1.0" or "0.3".
	Version string `yaml:"version"`
	// Binding is the card's name of the binding: "JSONRPC", "HTTP+JSON"
	// or "GRPC".
	Binding string `yaml:"binding"`
}
