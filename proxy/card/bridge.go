package card

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Bridge is, for an agent behind a bridge, what its card offers instead of
// the agent's own interfaces: the gateway serves the agent in every form of
// Offer and translates, so the card lists exactly those, each at the
// gateway, whatever interfaces the agent itself advertises.
type Bridge struct {
	// Agent is the form the agent speaks; its card is in Agent.Version.
	Agent a2a.Form
	// Offer is the forms served, in the order the card lists them (the
	// first is the preferred one).
	Offer []a2a.Form
	// JSONRPCPath and RESTPath are where the gateway serves the two HTTP
	// bindings below PublicBase: the agent's jsonrpc_path and rest_path,
	// which the gateway's routes use whatever the binding of the agent.
	JSONRPCPath, RESTPath string
}

// Card members of one version only, which a bridged card carries when it
// serves that version: a reader of the other version ignores them over
// HTTP, but the gRPC encoder refuses them.
const (
	// 0.3 (both dialects; the extended card flag is a capability in 1.0).
	fieldExtendedCardV10 = "extendedAgentCard"
	// 0.3 JSON-RPC only: neither 1.0 nor the 0.3 protobuf card has it.
	fieldStateTransitionHistory = "stateTransitionHistory"
	// 1.0 and 0.3 JSON-RPC: the 0.3 protobuf card has no icon.
	fieldIconURL = "iconUrl"
)

// v03CardVersion is the 0.3 protocolVersion a bridged card names when the
// agent's card (a 1.0 one) names none: the 0.3 schema's default.
const v03CardVersion = "0.3.0"

// cardShape is the spelling of a card as one reader reads it.
type cardShape int

const (
	// shapeV03 is a 0.3 JSON-RPC card: OpenAPI-style schemes with a
	// "type", requirements in `security` as name -> scopes.
	shapeV03 cardShape = iota + 1
	// shapeV03Proto is the protobuf JSON of the 0.3 AgentCard (a 0.3 gRPC
	// caller's extended card): one-of wrapped schemes, requirements in
	// `security` as {schemes: {name: {list}}}.
	shapeV03Proto
	// shapeV10 is a 1.0 card (JSON and protobuf JSON are one):
	// one-of wrapped schemes, requirements in securityRequirements.
	shapeV10
)

// bridgeServes reports the versions a bridged card is read in: every
// offered one over HTTP, where one card serves both SDK generations; only
// the caller's for a gRPC answer, which is read strictly.
func (r *rewriter) bridgeServes() (v03, v10 bool) {
	if r.opts.GRPC {
		return r.opts.Version == a2a.V03, r.opts.Version == a2a.V10
	}
	for _, f := range r.opts.Bridge.Offer {
		v03 = v03 || f.Version == a2a.V03
		v10 = v10 || f.Version == a2a.V10
	}
	return v03, v10
}

// bridgeShape is how the card's security members are spelt: in the one
// version served, else in the caller's (0.3 for a caller naming none, as
// the protocol says), so that each SDK generation reads its own.
func (r *rewriter) bridgeShape() cardShape {
	v03, v10 := r.bridgeServes()
	switch {
	case r.opts.GRPC && v03:
		return shapeV03Proto
	case v10 && (!v03 || r.opts.Version == a2a.V10):
		return shapeV10
	}
	return shapeV03
}

// bridgeInterfaces replaces every interface member of the card with the
// bridge's offer: when 1.0 is served, supportedInterfaces lists every
// offered form with its version (a 1.0 interface can name 0.3); when 0.3
// is, url and preferredTransport name the first 0.3 form and
// additionalInterfaces all of them, the main one included as the 0.3
// specification asks. A card serving 0.3 alone is a plain 0.3 card.
func (r *rewriter) bridgeInterfaces() error {
	b := r.opts.Bridge
	if len(b.Offer) == 0 {
		return fmt.Errorf("%w: a bridge offers no interface", ErrInvalidOptions)
	}
	supported := make([]map[string]string, 0, len(b.Offer))
	var additional []map[string]string
	for _, f := range b.Offer {
		u, err := r.offerURL(f.Binding)
		if err != nil {
			return err
		}
		supported = append(supported, map[string]string{
			fieldURL: u, fieldProtocolBinding: f.Binding.CardName(), fieldProtocolVersion: f.Version.String(),
		})
		if f.Version == a2a.V03 {
			additional = append(additional, map[string]string{fieldURL: u, fieldTransport: f.Binding.CardName()})
		}
	}
	for _, f := range []string{fieldURL, fieldPreferredTransport, fieldAdditionalInterfaces, fieldSupportedInterfaces} {
		delete(r.card, f)
	}
	v03, v10 := r.bridgeServes()
	if v10 {
		if err := r.set(fieldSupportedInterfaces, supported); err != nil {
			return err
		}
	}
	if !v03 || len(additional) == 0 {
		return nil
	}
	if err := r.set(fieldURL, additional[0][fieldURL]); err != nil {
		return err
	}
	if err := r.set(fieldPreferredTransport, additional[0][fieldTransport]); err != nil {
		return err
	}
	if err := r.set(fieldAdditionalInterfaces, additional); err != nil {
		return err
	}
	var pv string
	if err := unmarshalMember(r.card, fieldProtocolVersion, &pv); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedCard, err)
	}
	if !strings.HasPrefix(pv, "0.3") {
		return r.set(fieldProtocolVersion, v03CardVersion)
	}
	return nil
}

// offerURL is where the gateway serves binding b for the agent.
func (r *rewriter) offerURL(b a2a.Binding) (string, error) {
	path := r.opts.Bridge.JSONRPCPath
	switch b {
	case a2a.BindingGRPC:
		if r.opts.GRPCAddress == "" {
			return "", fmt.Errorf("%w: the bridge offers gRPC but the agent has no gRPC listener address", ErrInvalidOptions)
		}
		return r.opts.GRPCAddress, nil
	case a2a.BindingREST:
		path = r.opts.Bridge.RESTPath
	}
	u := *r.urls.public
	u.Path += strings.TrimRight(path, "/")
	return u.String(), nil
}

// bridgeSecurity writes the gateway's schemes and requirements in the
// bridged card's shape.
func (r *rewriter) bridgeSecurity() error { return r.writeSecurity(r.bridgeShape()) }

// writeSecurity writes the gateway's schemes and requirements in shape,
// and drops the other shapes' requirement member, so that each reader
// finds one consistent pair.
func (r *rewriter) writeSecurity(shape cardShape) error {
	for _, f := range []string{fieldSecuritySchemes, fieldSecurity, fieldSecurityRequirements} {
		delete(r.card, f)
	}
	sec := r.opts.Security
	if len(sec.Schemes) == 0 {
		return nil
	}
	switch shape {
	case shapeV03:
		if err := r.set(fieldSecuritySchemes, sec.v03Schemes()); err != nil {
			return err
		}
		return r.set(fieldSecurity, sec.v03Requirements())
	case shapeV03Proto:
		if err := r.set(fieldSecuritySchemes, sec.v10Schemes()); err != nil {
			return err
		}
		return r.set(fieldSecurity, sec.v10Requirements())
	}
	if err := r.set(fieldSecuritySchemes, sec.v10Schemes()); err != nil {
		return err
	}
	return r.set(fieldSecurityRequirements, sec.v10Requirements())
}

// bridgeMembers gives the card the version-specific members of the
// versions it serves and drops the others': the extended card flag is a
// top-level member in 0.3 and a capability in 1.0 (copied from the
// agent's own spelling), protocolVersion is 0.3's, and members one
// reader's schema lacks (0.3 stateTransitionHistory; iconUrl in the 0.3
// protobuf card) are dropped from a gRPC answer, which is read strictly.
func (r *rewriter) bridgeMembers() error {
	v03, v10 := r.bridgeServes()
	caps := map[string]json.RawMessage{}
	if r.has(fieldCapabilities) {
		if err := json.Unmarshal(r.card[fieldCapabilities], &caps); err != nil || caps == nil {
			return fmt.Errorf("%w: capabilities is not an object", ErrMalformedCard)
		}
	}
	extended, ok := caps[fieldExtendedCardV10]
	if own, has := r.card[fieldExtendedCardV03]; has && (!ok || r.opts.Bridge.Agent.Version == a2a.V03) {
		extended, ok = own, true
	}
	delete(caps, fieldExtendedCardV10)
	delete(r.card, fieldExtendedCardV03)
	if ok && !isNull(extended) {
		if v10 {
			caps[fieldExtendedCardV10] = extended
		}
		if v03 {
			r.card[fieldExtendedCardV03] = extended
		}
	}
	if !v03 {
		delete(r.card, fieldProtocolVersion)
	}
	if r.opts.GRPC {
		delete(caps, fieldStateTransitionHistory)
		if v03 {
			delete(r.card, fieldIconURL)
		}
	}
	if !r.has(fieldCapabilities) && len(caps) == 0 {
		return nil
	}
	return r.set(fieldCapabilities, caps)
}
