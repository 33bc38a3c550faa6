package card

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

var (
	// ErrMalformedCard reports an agent card that is not a JSON object or
	// whose gateway-owned fields have the wrong shape.
	ErrMalformedCard = errors.New("malformed agent card")
	// ErrNoProxiableInterface reports a card none of whose interfaces the
	// gateway can serve (all gRPC, say): re-serving it would advertise
	// endpoints that do not work.
	ErrNoProxiableInterface = errors.New("agent card offers no interface the gateway can proxy")
	// ErrInvalidOptions reports a gateway configuration problem, not an
	// agent problem.
	ErrInvalidOptions = errors.New("invalid card rewrite options")
)

// RewriteOptions says how one agent's card is re-served by the gateway.
type RewriteOptions struct {
	// UpstreamBase is the agent's base URL as configured in the gateway.
	UpstreamBase *url.URL
	// PublicBase is the gateway's public URL for this agent, for example
	// "https://gw.example.com/agents/demo".
	PublicBase string
	// Security describes the gateway's own authentication; it replaces the
	// card's schemes and requirements.
	Security Security
	// Signer re-signs the rewritten card. Nil drops the agent's signatures,
	// which the rewrite invalidates.
	Signer *Signer
	// Streaming and PushNotifications override the agent's capabilities;
	// nil leaves them as the agent declares them.
	Streaming, PushNotifications *bool
	// Version is the protocol version the caller asked for. A hybrid card
	// can carry security schemes in one shape only; it gets the caller's.
	// Zero keeps the shape the agent used.
	Version a2a.Version
	// GRPCAddress is the host:port of the gateway's gRPC listener for the
	// agent; the card then lists a gRPC interface there. Empty: the agent
	// is not served over gRPC, and its gRPC interfaces are dropped.
	GRPCAddress string
	// Bridge, for an agent behind a bridge, replaces the agent's
	// interfaces with the forms the gateway serves it in (see Bridge).
	Bridge *Bridge
	// GRPC says the card answers a gRPC call (the extended card), which
	// the gRPC encoder reads strictly as the protobuf JSON of Version's
	// AgentCard: the security members are written in that shape, and a
	// bridged card has nothing of the other version. An agent without a
	// bridge answers in its caller's version already, and its card keeps
	// its other members.
	GRPC bool
}

// Card members the gateway owns. Everything else passes through untouched.
const (
	fieldURL                  = "url"
	fieldPreferredTransport   = "preferredTransport"
	fieldAdditionalInterfaces = "additionalInterfaces"
	fieldTransport            = "transport"
	fieldProtocolVersion      = "protocolVersion"
	fieldSupportedInterfaces  = "supportedInterfaces"
	fieldProtocolBinding      = "protocolBinding"
	fieldCapabilities         = "capabilities"
	fieldStreaming            = "streaming"
	fieldPushNotifications    = "pushNotifications"
	fieldSecuritySchemes      = "securitySchemes"
	fieldSecurity             = "security"
	fieldSecurityRequirements = "securityRequirements"
	fieldSkills               = "skills"
	fieldSignatures           = "signatures"
	fieldExtendedCardV03      = "supportsAuthenticatedExtendedCard"
)

// dialect is the card shape a field is written in. Detection is per field,
// not per card, because compatibility servers serve hybrid cards that carry
// both shapes side by side.
type dialect int

const (
	dialectV03 dialect = iota + 1
	dialectV10
)

// Validate reports configuration errors, so that they surface when the
// gateway loads its configuration rather than on the first card request.
func (o RewriteOptions) Validate() error {
	if _, err := newURLMapper(o.UpstreamBase, o.PublicBase); err != nil {
		return err
	}
	return o.Security.Validate()
}

// Rewrite re-targets an agent card at the gateway: every interface URL points
// at PublicBase, interfaces the gateway cannot proxy are dropped (a bridged
// card lists the bridge's offer instead), the security schemes become the
// gateway's, capability overrides apply, and the agent's signatures are
// dropped or replaced by the gateway's. Members the
// gateway does not own are kept as they are; members are emitted sorted, so
// equal input gives equal output.
func Rewrite(raw []byte, o RewriteOptions) ([]byte, error) {
	m, err := newURLMapper(o.UpstreamBase, o.PublicBase)
	if err != nil {
		return nil, err
	}
	if err := o.Security.Validate(); err != nil {
		return nil, err
	}
	var card map[string]json.RawMessage
	if err := json.Unmarshal(raw, &card); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedCard, err)
	}
	if card == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedCard)
	}
	r := &rewriter{card: card, urls: m, opts: o}
	if !r.has(fieldURL) && !r.has(fieldAdditionalInterfaces) && !r.has(fieldSupportedInterfaces) {
		return nil, fmt.Errorf("%w: neither url nor supportedInterfaces is present", ErrMalformedCard)
	}
	steps := []func() error{r.v03Interfaces, r.v03GRPC, r.v10Interfaces, r.capabilities, r.security, r.skills}
	if o.Bridge != nil {
		steps = []func() error{r.bridgeInterfaces, r.capabilities, r.bridgeSecurity, r.skills, r.bridgeMembers}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	delete(card, fieldSignatures)
	out, err := encodeJSON(card)
	if err != nil {
		return nil, err
	}
	if o.Signer != nil {
		return o.Signer.Sign(out)
	}
	return out, nil
}

type rewriter struct {
	card map[string]json.RawMessage
	urls *urlMapper
	opts RewriteOptions
	// grpcListed records the interface lists that have the gateway's gRPC
	// interface.
	grpcListed map[string]bool
	// grpcVersions records, per list, the protocol versions of the gRPC
	// interfaces kept in it.
	grpcVersions map[string]bool
}

// has reports a member that is present and not null; null is treated as
// absent, as proto JSON parsers do.
func (r *rewriter) has(field string) bool {
	v, ok := r.card[field]
	return ok && !isNull(v)
}

func isNull(v json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func (r *rewriter) set(field string, v any) error {
	b, err := encodeJSON(v)
	if err != nil {
		return err
	}
	r.card[field] = b
	return nil
}

// v03Interfaces rewrites url, preferredTransport and additionalInterfaces.
// When the preferred interface cannot be proxied, the first one that can
// takes its place, since a 0.3 card must name a preferred endpoint.
func (r *rewriter) v03Interfaces() error {
	if !r.has(fieldURL) && !r.has(fieldAdditionalInterfaces) {
		return nil
	}
	var mainURL string
	if r.has(fieldURL) {
		if err := json.Unmarshal(r.card[fieldURL], &mainURL); err != nil {
			return fmt.Errorf("%w: url: %w", ErrMalformedCard, err)
		}
	}
	preferred := bindingJSONRPC // the 0.3 default when the card names none
	if r.has(fieldPreferredTransport) {
		if err := json.Unmarshal(r.card[fieldPreferredTransport], &preferred); err != nil {
			return fmt.Errorf("%w: preferredTransport: %w", ErrMalformedCard, err)
		}
	}
	var kept []map[string]json.RawMessage
	if r.has(fieldAdditionalInterfaces) {
		var err error
		if kept, err = r.interfaces(fieldAdditionalInterfaces, fieldTransport); err != nil {
			return err
		}
		if kept, err = r.addGRPC(fieldAdditionalInterfaces, fieldTransport, kept); err != nil {
			return err
		}
		if len(kept) > 0 {
			if err := r.set(fieldAdditionalInterfaces, kept); err != nil {
				return err
			}
		} else {
			delete(r.card, fieldAdditionalInterfaces)
		}
	}
	if isGRPCBinding(preferred) && r.opts.GRPCAddress != "" {
		return r.set(fieldURL, r.opts.GRPCAddress)
	}
	if proxiedBinding(preferred) && mainURL != "" {
		mapped, err := r.urls.mapURL(mainURL)
		if err == nil {
			return r.set(fieldURL, mapped)
		}
		if !errors.Is(err, errNotProxied) {
			return err
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("%w: the preferred 0.3 interface (%s) cannot be proxied and no alternative can", ErrNoProxiableInterface, clip(preferred))
	}
	r.card[fieldURL] = kept[0][fieldURL]
	r.card[fieldPreferredTransport] = kept[0][fieldTransport]
	return nil
}

// v10Interfaces rewrites supportedInterfaces, keeping the agent's order
// because the first entry is the preferred one.
func (r *rewriter) v10Interfaces() error {
	if !r.has(fieldSupportedInterfaces) {
		return nil
	}
	kept, err := r.interfaces(fieldSupportedInterfaces, fieldProtocolBinding)
	if err != nil {
		return err
	}
	if kept, err = r.addGRPC(fieldSupportedInterfaces, fieldProtocolBinding, kept); err != nil {
		return err
	}
	if len(kept) == 0 {
		return fmt.Errorf("%w: no entry of supportedInterfaces can be proxied", ErrNoProxiableInterface)
	}
	return r.set(fieldSupportedInterfaces, kept)
}

// interfaces decodes an interface list and returns the entries the gateway
// can proxy, with their url rewritten and every other member untouched.
func (r *rewriter) interfaces(field, bindingField string) ([]map[string]json.RawMessage, error) {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(r.card[field], &list); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformedCard, field, err)
	}
	kept := make([]map[string]json.RawMessage, 0, len(list))
	for i, iface := range list {
		if iface == nil {
			return nil, fmt.Errorf("%w: %s[%d] is not an object", ErrMalformedCard, field, i)
		}
		var u, binding string
		if err := unmarshalMember(iface, fieldURL, &u); err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %w", ErrMalformedCard, field, i, err)
		}
		if err := unmarshalMember(iface, bindingField, &binding); err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %w", ErrMalformedCard, field, i, err)
		}
		if isGRPCBinding(binding) {
			ok, err := r.grpcInterface(field, iface)
			if err != nil {
				return nil, err
			}
			if ok {
				kept = append(kept, iface)
			}
			continue
		}
		if !proxiedBinding(binding) {
			continue
		}
		mapped, err := r.urls.mapURL(u)
		if errors.Is(err, errNotProxied) {
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := encodeJSON(mapped)
		if err != nil {
			return nil, err
		}
		iface[fieldURL] = b
		kept = append(kept, iface)
	}
	return kept, nil
}

// unmarshalMember decodes an optional member; absent and null leave v as is.
func unmarshalMember(obj map[string]json.RawMessage, name string, v any) error {
	raw, ok := obj[name]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (r *rewriter) capabilities() error {
	if r.opts.Streaming == nil && r.opts.PushNotifications == nil {
		return nil
	}
	caps := map[string]json.RawMessage{}
	if r.has(fieldCapabilities) {
		if err := json.Unmarshal(r.card[fieldCapabilities], &caps); err != nil || caps == nil {
			return fmt.Errorf("%w: capabilities is not an object", ErrMalformedCard)
		}
	}
	for name, v := range map[string]*bool{fieldStreaming: r.opts.Streaming, fieldPushNotifications: r.opts.PushNotifications} {
		if v == nil {
			continue
		}
		b, err := encodeJSON(*v)
		if err != nil {
			return err
		}
		caps[name] = b
	}
	return r.set(fieldCapabilities, caps)
}

// security replaces the agent's schemes with the gateway's, in the dialect
// the card already uses for each field. A requirement field is written when
// the card had it, or when it is the one matching the schemes' dialect. A
// gRPC answer gets the protobuf shape of its version.
func (r *rewriter) security() error {
	if r.opts.GRPC {
		// The answer to a gRPC call is protobuf JSON, of the caller's
		// version as the agent's (the call was forwarded unchanged).
		if r.opts.Version == a2a.V03 {
			return r.writeSecurity(shapeV03Proto)
		}
		return r.writeSecurity(shapeV10)
	}
	flavor, ok := schemeFlavor(r.card[fieldSecuritySchemes])
	if !ok {
		flavor = r.cardFlavor()
	}
	hybrid := r.has(fieldSupportedInterfaces) && (r.has(fieldURL) || r.has(fieldAdditionalInterfaces))
	if hybrid && r.opts.Version == a2a.V10 {
		flavor = dialectV10
	} else if hybrid && r.opts.Version == a2a.V03 {
		flavor = dialectV03
	}
	sec := r.opts.Security
	if len(sec.Schemes) == 0 {
		delete(r.card, fieldSecuritySchemes)
		delete(r.card, fieldSecurity)
		delete(r.card, fieldSecurityRequirements)
		return nil
	}
	hadV03Reqs, hadV10Reqs := r.has(fieldSecurity), r.has(fieldSecurityRequirements)
	var schemes any = sec.v10Schemes()
	if flavor == dialectV03 {
		schemes = sec.v03Schemes()
	}
	if err := r.set(fieldSecuritySchemes, schemes); err != nil {
		return err
	}
	if hadV03Reqs || flavor == dialectV03 {
		if err := r.set(fieldSecurity, sec.v03Requirements()); err != nil {
			return err
		}
	}
	if hadV10Reqs || flavor == dialectV10 {
		if err := r.set(fieldSecurityRequirements, sec.v10Requirements()); err != nil {
			return err
		}
	}
	return nil
}

// cardFlavor decides the dialect of a card whose securitySchemes do not say:
// any 0.3-only member makes it a 0.3 (or hybrid) card.
func (r *rewriter) cardFlavor() dialect {
	for _, f := range []string{fieldURL, fieldPreferredTransport, fieldAdditionalInterfaces, fieldProtocolVersion, fieldSecurity, fieldExtendedCardV03} {
		if r.has(f) {
			return dialectV03
		}
	}
	return dialectV10
}

// skills drops per-skill security requirements: they name the agent's
// schemes, which are no longer in the card, and the gateway authenticates
// every skill the same way.
func (r *rewriter) skills() error {
	if !r.has(fieldSkills) {
		return nil
	}
	var skills []map[string]json.RawMessage
	if err := json.Unmarshal(r.card[fieldSkills], &skills); err != nil {
		return fmt.Errorf("%w: skills: %w", ErrMalformedCard, err)
	}
	changed := false
	for i, sk := range skills {
		if sk == nil {
			return fmt.Errorf("%w: skills[%d] is not an object", ErrMalformedCard, i)
		}
		for _, f := range []string{fieldSecurity, fieldSecurityRequirements} {
			if _, ok := sk[f]; ok {
				delete(sk, f)
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	return r.set(fieldSkills, skills)
}

// encodeJSON marshals without HTML escaping, so text such as "<" and "&" in
// descriptions reaches clients as the agent wrote it; map members are sorted.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode agent card: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// proxiedBinding reports whether the gateway carries a protocol binding at
// the agent's public URL: JSON-RPC and HTTP+JSON. gRPC is served on the
// agent's gRPC listener (grpcInterface); custom bindings are dropped from
// the card even when their URL is https.
func proxiedBinding(b string) bool {
	b = strings.TrimSpace(b)
	return strings.EqualFold(b, bindingJSONRPC) || strings.EqualFold(b, bindingHTTPJSON)
}
