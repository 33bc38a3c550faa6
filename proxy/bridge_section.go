package proxy

import (
	"fmt"
	"slices"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// Bridge is an agent's bridge section, read into forms: the one the agent
// speaks, and those the gateway serves in front of it.
type Bridge struct {
	Agent a2a.Form
	Offer []a2a.Form
}

// Offers reports whether callers in form f are served.
func (b *Bridge) Offers(f a2a.Form) bool { return slices.Contains(b.Offer, f) }

// ParseBridge reads a validated bridge section; nil without one.
func ParseBridge(c *config.AgentBridge) (*Bridge, error) {
	if c == nil {
		return nil, nil
	}
	agent, err := parseInterface(c.Agent)
	if err != nil {
		return nil, fmt.Errorf("bridge.agent: %w", err)
	}
	b := &Bridge{Agent: agent}
	for i, o := range c.Offer {
		f, err := parseInterface(o)
		if err != nil {
			return nil, fmt.Errorf("bridge.offer[%d]: %w", i, err)
		}
		b.Offer = append(b.Offer, f)
	}
	return b, nil
}

func parseInterface(i config.BridgeInterface) (a2a.Form, error) {
	v, ok := a2a.ParseVersionName(i.Version)
	if !ok {
		return a2a.Form{}, fmt.Errorf("unknown version %q", i.Version)
	}
	b, ok := a2a.ParseBindingName(i.Binding)
	if !ok {
		return a2a.Form{}, fmt.Errorf("unknown binding %q", i.Binding)
	}
	return a2a.Form{Version: v, Binding: b}, nil
}
