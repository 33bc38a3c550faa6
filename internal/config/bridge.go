package config

import "fmt"

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

// applyBridgeDefaults fills each bridge's offer: every version over
// JSON-RPC and HTTP+JSON, and over gRPC too when the agent has a gRPC
// listener for the gateway to serve it on.
func (c *Config) applyBridgeDefaults() {
	for i := range c.Agents {
		b := c.Agents[i].Bridge
		if b == nil || len(b.Offer) > 0 {
			continue
		}
		bindings := []string{"JSONRPC", "HTTP+JSON"}
		if c.Agents[i].GRPC != nil {
			bindings = append(bindings, "GRPC")
		}
		for _, v := range []string{"1.0", "0.3"} {
			for _, bd := range bindings {
				b.Offer = append(b.Offer, BridgeInterface{Version: v, Binding: bd})
			}
		}
	}
}

// validateBridges checks every bridge section: known versions and
// bindings, no interface offered twice, the agent's own interface among
// those offered, and a gRPC listener for a gRPC one.
func (c *Config) validateBridges(add func(field, format string, args ...any)) {
	for i, a := range c.Agents {
		if a.Bridge == nil {
			continue
		}
		f := fmt.Sprintf("agents[%d].bridge", i)
		a.Bridge.Agent.validate(f+".agent", add)
		if a.Bridge.Agent.Binding == "GRPC" && a.GRPC == nil {
			add(f+".agent.binding", "GRPC needs the agent's grpc section (upstream, listener)")
		}
		seen := map[BridgeInterface]bool{}
		for j, o := range a.Bridge.Offer {
			of := fmt.Sprintf("%s.offer[%d]", f, j)
			o.validate(of, add)
			if seen[o] {
				add(of, "%s over %s is offered twice", o.Version, o.Binding)
			}
			seen[o] = true
			if o.Binding == "GRPC" && a.GRPC == nil {
				add(of+".binding", "GRPC needs the agent's grpc section (its listener)")
			}
		}
		if len(a.Bridge.Offer) > 0 && !seen[a.Bridge.Agent] {
			add(f+".offer", "must include the agent's own interface (%s over %s): a caller that speaks it is forwarded unchanged", a.Bridge.Agent.Version, a.Bridge.Agent.Binding)
		}
	}
}

func (b BridgeInterface) validate(field string, add func(field, format string, args ...any)) {
	if b.Version != "1.0" && b.Version != "0.3" {
		add(field+".version", "want \"1.0\" or \"0.3\", got %q", b.Version)
	}
	switch b.Binding {
	case "JSONRPC", "HTTP+JSON", "GRPC":
	default:
		add(field+".binding", "want JSONRPC, HTTP+JSON or GRPC, got %q", b.Binding)
	}
}
