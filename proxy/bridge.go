package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Bridging in the forwarding path. A request of an agent with a bridge
// section is classified and runs through every stage in the caller's form,
// as any other; at the end of the pipeline, when the caller's form is not
// the agent's, forwardBridged spells it in the agent's form
// (a2a.TranslateRequest), sends it in the agent's binding (a bridgeAgent),
// reads each answer or stream event once in the agent's form with the
// strict reader, spells it in the caller's form (a2a.TranslateResult) and
// only then shows it to the observers and rewriters, framed as an
// unbridged answer in the caller's form would be: they see the same Event,
// the caller's Op and a payload and result in the caller's form, so
// ownership, lifecycle, dedupe, push relay and stream ids work unchanged.
// The caller's side (a bridgeCaller) writes it in the caller's envelope.
//
// A caller in a form the bridge does not offer is refused before any stage
// runs (refuseUnoffered). A caller in the agent's own form is forwarded as
// if there were no bridge: byte for byte, at no cost.
//
// The two sides are interfaces so each binding plugs in once: httpAgent
// and httpCaller serve JSON-RPC and HTTP+JSON in both versions;
// bridgeAgents and bridgeCallers map a binding to its side, and a binding
// without one is refused (UnsupportedOperation) rather than half served.

// bridgeAgent sends a bridged request to the agent in the agent's own
// binding.
type bridgeAgent interface {
	// send hands up (the request in the agent's form) to the agent and
	// returns its answer, to be read in the agent's form (x.agentOp). It
	// sets s.sent once the agent may have the request, and maps a failed
	// exchange like upstreamError.
	send(c *bridgeCall, up a2a.UpstreamRequest) (agentAnswer, error)
}

// bridgeCall is one bridged exchange: the request and its contexts as
// forward bounded them, and both forms.
type bridgeCall struct {
	g *Gateway
	r *http.Request
	s *Scope
	// clientCtx ends when the caller leaves (unless detached), ctx also at
	// the exchange's deadline; headersLate is forward's timer of a stream
	// whose headers must arrive in time, nil for a unary exchange.
	clientCtx, ctx context.Context
	headersLate    *time.Timer
	// from is the caller's form, to the agent's.
	from, to a2a.Form
	// agentOp is the operation as the agent's form spells it, with the
	// JSON-RPC id the agent was sent: what its answers are read against.
	agentOp a2a.Operation
	caller  bridgeCaller
}

// agentAnswer is the agent's answer being read: one unary answer, or the
// events of a stream.
type agentAnswer interface {
	// stream reports whether the answer is a stream of events.
	stream() bool
	// next returns the next answer or event read strictly in the agent's
	// form (a2a.ReadAnswer): the event and its bare result, an agent error
	// as an a2a.EventError event, or keepAlive for a stream's keep-alive.
	// After the last it returns io.EOF. An answer that cannot be read is
	// an *upstreamFailure; any other error is the stream's transport
	// failing, which streamEnd maps.
	next() (ev a2a.Event, result []byte, keepAlive bool, err error)
	// Close stops the reading: the stream watch closes it to unblock next.
	io.Closer
}

// bridgeCaller writes a bridged exchange's answers in the caller's binding.
type bridgeCaller interface {
	// request is the caller's request as a2a.TranslateRequest reads it:
	// the REST query and the body (for gRPC the protobuf JSON of the
	// request message).
	request(r *http.Request, s *Scope) (url.Values, []byte, error)
	// payload frames a result in the caller's form as observers see an
	// unbridged answer of that form: in its JSON-RPC envelope, or bare.
	payload(s *Scope, result []byte) []byte
	// unary writes the one answer, payload as the rewriters left it.
	unary(w http.ResponseWriter, s *Scope, payload []byte) error
	// refuse writes an error as the whole answer.
	refuse(w http.ResponseWriter, s *Scope, ae *a2a.Error)
	// start writes a stream's status line, before its first event.
	start(w http.ResponseWriter)
	// event writes one stream event with the gateway's id ("": none).
	event(w http.ResponseWriter, s *Scope, payload []byte, id string) error
	// keepAlive passes an agent's keep-alive on.
	keepAlive(w http.ResponseWriter) error
	// end ends a started stream: with ae as its last event or status, or
	// cleanly when ae is nil.
	end(w http.ResponseWriter, s *Scope, ae *a2a.Error)
}

// bridgeRPCID is the JSON-RPC id of a bridged request to a JSON-RPC agent
// from a caller of another binding: each exchange has its connection's
// request to itself, so one id serves all.
var bridgeRPCID = []byte("1")

// bridgeAgents and bridgeCallers are the sides of each binding; a binding
// missing here is not bridged.
var (
	bridgeAgents = map[a2a.Binding]bridgeAgent{
		a2a.BindingJSONRPC: httpAgent{}, a2a.BindingREST: httpAgent{}, a2a.BindingGRPC: grpcAgent{},
	}
	bridgeCallers = map[a2a.Binding]bridgeCaller{
		a2a.BindingJSONRPC: httpCaller{}, a2a.BindingREST: httpCaller{}, a2a.BindingGRPC: grpcCaller{},
	}
)

// bridged reports whether s's request goes through its agent's bridge: the
// agent has one and the caller does not speak its form.
func (s *Scope) bridged() bool {
	b := s.Agent.Bridge
	return b != nil && a2a.FormOf(s.Op) != b.Agent
}

// refuseUnoffered refuses a request in a form the agent's bridge does not
// offer, naming the forms that are: in a version not offered at all as
// VersionNotSupported, else as UnsupportedOperation.
func refuseUnoffered(a *Agent, op *a2a.Operation) error {
	b := a.Bridge
	if b == nil || b.Offers(a2a.FormOf(op)) {
		return nil
	}
	names := make([]string, len(b.Offer))
	version := false
	for i, f := range b.Offer {
		names[i] = f.String()
		version = version || f.Version == op.Version
	}
	msg := "this agent is served in " + strings.Join(names, ", ") + "; not in " + a2a.FormOf(op).String()
	if !version {
		return a2a.ErrVersionNotSupported.WithMessage(msg)
	}
	return a2a.ErrUnsupportedOperation.WithMessage(msg)
}

// forwardBridged is forward for a bridged request: ctx is bounded and the
// stream slot taken as forward does for every request.
func (g *Gateway) forwardBridged(w http.ResponseWriter, r *http.Request, s *Scope, clientCtx, ctx context.Context, headersLate *time.Timer) error {
	c := &bridgeCall{g: g, r: r, s: s, clientCtx: clientCtx, ctx: ctx, headersLate: headersLate, from: a2a.FormOf(s.Op), to: s.Agent.Bridge.Agent}
	agent, caller := bridgeAgents[c.to.Binding], bridgeCallers[c.from.Binding]
	if agent == nil || caller == nil {
		return a2a.ErrUnsupportedOperation.WithMessage("bridging " + c.from.String() + " to " + c.to.String() + " is not available")
	}
	c.caller = caller
	// Every later line of the request says where it was bridged to.
	s.AddLogAttrs("bridged_to", c.to.String())
	query, body, err := caller.request(r, s)
	if err != nil {
		return err
	}
	id := bridgeRPCID
	if c.from.Binding == a2a.BindingJSONRPC && len(s.Op.RPCID) > 0 {
		id = s.Op.RPCID
	}
	up, aerr := a2a.TranslateRequest(s.Op, query, body, c.to, id)
	if aerr != nil {
		return aerr
	}
	c.agentOp = *s.Op
	c.agentOp.Version, c.agentOp.Binding, c.agentOp.RPCID = c.to.Version, c.to.Binding, id
	task := c.readTask()
	ans, err := agent.send(c, up)
	if err != nil {
		return err
	}
	defer ans.Close()
	ans = c.taskFirst(ans, task)
	if ans.stream() {
		return c.relayStream(w, ans)
	}
	return c.relayUnary(w, ans)
}

// translate spells one answer or event of the agent in the caller's form
// and observes it: the payload the caller gets, and the stream event's id.
func (c *bridgeCall) translate(ctx context.Context, ev a2a.Event, result []byte, stream bool) ([]byte, string, error) {
	out, err := a2a.TranslateResult(c.s.Op.Method, result, c.to, c.from)
	if err != nil && c.s.Op.Method == a2a.MethodExtendedCard {
		// The card stage (proxy/card) spells the agent's card in the
		// caller's form from what it observes; the bytes written here
		// are its to discard, and without it no caller gets a card half
		// translated.
		if _, err := c.g.observeParsed(ctx, c.s, ev, c.caller.payload(c.s, result), result); err != nil {
			return nil, "", err
		}
		return nil, "", errCardForm
	}
	if err != nil {
		return nil, "", &upstreamFailure{
			err:    fmt.Errorf("agent answer not translatable from %s to %s: %w", c.to, c.from, err),
			a2aErr: a2a.ErrInvalidAgentResponse.WithMessage("the agent's answer cannot be spelled in " + c.from.String()),
		}
	}
	payload := c.caller.payload(c.s, out)
	if stream {
		return c.g.observeEvent(ctx, c.s, ev, payload, out)
	}
	payload, err = c.g.observeParsed(ctx, c.s, ev, payload, out)
	return payload, "", err
}

// agentError observes the agent's error as its error event, the payload
// being the gateway's error for its code in the caller's form, and returns
// that error.
func (c *bridgeCall) agentError(ctx context.Context, code int, stream bool) (*a2a.Error, error) {
	ae := a2a.AgentError(code)
	var payload []byte
	if c.from.Binding == a2a.BindingJSONRPC {
		payload = ae.RPCErrorBody(c.from.Version, c.s.Op.RPCID)
	}
	ev := a2a.Event{Kind: a2a.EventError, ErrorCode: code}
	var err error
	if stream {
		_, _, err = c.g.observeEvent(ctx, c.s, ev, payload, nil)
	} else {
		_, err = c.g.observeParsed(ctx, c.s, ev, payload, nil)
	}
	return ae, err
}

// relayUnary relays the agent's one answer.
func (c *bridgeCall) relayUnary(w http.ResponseWriter, ans agentAnswer) error {
	ev, result, _, err := ans.next()
	if err != nil {
		return err
	}
	if ev.Kind == a2a.EventError {
		ae, err := c.agentError(c.clientCtx, ev.ErrorCode, false)
		if err != nil {
			return err
		}
		c.caller.refuse(w, c.s, ae)
		return nil
	}
	payload, _, err := c.translate(c.clientCtx, ev, result, false)
	if errors.Is(err, errCardForm) {
		c.caller.refuse(w, c.s, a2a.ErrInvalidAgentResponse.WithMessage("the agent's card is not in the caller's form"))
		return nil
	}
	if err != nil {
		return err
	}
	return c.caller.unary(w, c.s, payload)
}

// errCardForm: an extended card in the agent's form, observed but not
// relayed (see translate).
var errCardForm = errors.New("the extended card is left to the card stage")
