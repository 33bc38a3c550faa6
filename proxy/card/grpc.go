package card

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// bindingGRPC is the gRPC binding as AgentInterface spells it (1.0
// protocolBinding, 0.3 transport).
const bindingGRPC = "GRPC"

func isGRPCBinding(b string) bool { return isBinding(b, bindingGRPC) }

// grpcInterface keeps the agent's first gRPC interface of each protocol
// version, pointed at the gateway's gRPC listener for the agent, when the
// agent has one: the listener serves both versions' services, so an agent
// that offers gRPC in 1.0 and in 0.3 keeps both entries. A further entry
// of a version already listed would name the same listener and is dropped.
// It reports whether iface was kept.
func (r *rewriter) grpcInterface(field string, iface map[string]json.RawMessage) (bool, error) {
	version := field + " " + string(iface[fieldProtocolVersion])
	if r.opts.GRPCAddress == "" || r.grpcVersions[version] {
		return false, nil
	}
	b, err := encodeJSON(r.opts.GRPCAddress)
	if err != nil {
		return false, err
	}
	iface[fieldURL] = b
	r.listGRPC(field)
	if r.grpcVersions == nil {
		r.grpcVersions = map[string]bool{}
	}
	r.grpcVersions[version] = true
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

// Card is the rewritten card of key, from the cache as ServeCard serves a
// caller that names no version, for the gateway's own use of it.
func (c *Cache) Card(ctx context.Context, key string, upstreamCardURLs []string, o RewriteOptions) ([]byte, error) {
	e, err := c.lookup(ctx, cacheKey{key, a2a.V10}, upstreamCardURLs, "", o)
	if err != nil {
		return nil, err
	}
	return e.body, nil
}

// OffersJSONRPC reports whether a card offers a JSON-RPC interface: in
// 1.0 supportedInterfaces, in 0.3 its preferred transport (JSON-RPC when
// it names none) or additionalInterfaces.
func OffersJSONRPC(raw []byte) bool {
	var card struct {
		URL                  string          `json:"url"`
		PreferredTransport   *string         `json:"preferredTransport"`
		AdditionalInterfaces []cardInterface `json:"additionalInterfaces"`
		SupportedInterfaces  []cardInterface `json:"supportedInterfaces"`
	}
	if json.Unmarshal(raw, &card) != nil {
		return false
	}
	if card.URL != "" && (card.PreferredTransport == nil || isBinding(*card.PreferredTransport, bindingJSONRPC)) {
		return true
	}
	for _, list := range [][]cardInterface{card.AdditionalInterfaces, card.SupportedInterfaces} {
		for _, i := range list {
			if isBinding(i.Transport, bindingJSONRPC) || isBinding(i.ProtocolBinding, bindingJSONRPC) {
				return true
			}
		}
	}
	return false
}

type cardInterface struct {
	Transport       string `json:"transport"`
	ProtocolBinding string `json:"protocolBinding"`
}

func isBinding(got, want string) bool { return strings.EqualFold(strings.TrimSpace(got), want) }

// GRPCAddress is the address of the agent's own gRPC interface, as its
// card (fetched from upstreamCardURLs, not the rewritten one) names it: the
// first gRPC entry of supportedInterfaces or additionalInterfaces, or the
// card's url when gRPC is its preferred transport. "" when it names none.
func (c *Cache) GRPCAddress(ctx context.Context, upstreamCardURLs []string) (string, error) {
	ctx, cancel := c.fetchContext(ctx)
	defer cancel()
	raw, err := c.fetchCard(ctx, upstreamCardURLs, "")
	if err != nil {
		return "", err
	}
	var card struct {
		URL                  string `json:"url"`
		PreferredTransport   string `json:"preferredTransport"`
		AdditionalInterfaces []struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"additionalInterfaces"`
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(raw, &card); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformedCard, err)
	}
	for _, i := range card.SupportedInterfaces {
		if isGRPCBinding(i.ProtocolBinding) {
			return i.URL, nil
		}
	}
	if isGRPCBinding(card.PreferredTransport) {
		return card.URL, nil
	}
	for _, i := range card.AdditionalInterfaces {
		if isGRPCBinding(i.Transport) {
			return i.URL, nil
		}
	}
	return "", nil
}
