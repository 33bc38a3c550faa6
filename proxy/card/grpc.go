package card

import (
	"encoding/json"
	"strings"
)

// bindingGRPC is the gRPC binding as AgentInterface spells it (1.0
// protocolBinding, 0.3 transport).
const bindingGRPC = "GRPC"

func isGRPCBinding(b string) bool { return strings.EqualFold(strings.TrimSpace(b), bindingGRPC) }

// grpcInterface keeps the agent's first gRPC interface, pointed at the
// gateway's gRPC listener for the agent, when the agent has one; any
// further gRPC entry would name the same listener and is dropped. It
// reports whether iface was kept.
func (r *rewriter) grpcInterface(field string, iface map[string]json.RawMessage) (bool, error) {
	if r.opts.GRPCAddress == "" || r.grpcListed[field] {
		return false, nil
	}
	b, err := encodeJSON(r.opts.GRPCAddress)
	if err != nil {
		return false, err
	}
	iface[fieldURL] = b
	r.listGRPC(field)
	return true, nil
}

func (r *rewriter) listGRPC(field string) {
	if r.grpcListed == nil {
		r.grpcListed = map[string]bool{}
	}
	r.grpcListed[field] = true
}

// addGRPC appends the gateway's gRPC interface for the agent to an
// interface list that lacks one: an agent whose card does not list its
// gRPC service is still reached over gRPC through the gateway. The entry
// has the members of the list's first entry that describe the protocol
// (protocolVersion in 1.0), so it reads as the same agent's.
func (r *rewriter) addGRPC(field, bindingField string, kept []map[string]json.RawMessage) ([]map[string]json.RawMessage, error) {
	if r.opts.GRPCAddress == "" || r.grpcListed[field] {
		return kept, nil
	}
	entry := map[string]json.RawMessage{}
	var err error
	if entry[fieldURL], err = encodeJSON(r.opts.GRPCAddress); err != nil {
		return nil, err
	}
	if entry[bindingField], err = encodeJSON(bindingGRPC); err != nil {
		return nil, err
	}
	if field == fieldSupportedInterfaces {
		version := json.RawMessage(`"1.0"`)
		if len(kept) > 0 {
			if v, ok := kept[0][fieldProtocolVersion]; ok {
				version = v
			}
		}
		entry[fieldProtocolVersion] = version
	}
	r.listGRPC(field)
	return append(kept, entry), nil
}

// v03GRPC lists the gateway's gRPC interface in a 0.3 card that has no
// additionalInterfaces: the card's main interface and the gRPC one.
func (r *rewriter) v03GRPC() error {
	if r.opts.GRPCAddress == "" || r.grpcListed[fieldAdditionalInterfaces] || !r.has(fieldURL) {
		return nil
	}
	preferred := json.RawMessage(`"` + bindingJSONRPC + `"`)
	if r.has(fieldPreferredTransport) {
		preferred = r.card[fieldPreferredTransport]
	}
	list := []map[string]json.RawMessage{{fieldURL: r.card[fieldURL], fieldTransport: preferred}}
	var name string
	if err := json.Unmarshal(preferred, &name); err == nil && isGRPCBinding(name) {
		r.listGRPC(fieldAdditionalInterfaces)
	}
	list, err := r.addGRPC(fieldAdditionalInterfaces, fieldTransport, list)
	if err != nil {
		return err
	}
	return r.set(fieldAdditionalInterfaces, list)
}
