package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
)

// The gRPC sides of the bridge: gRPC agents (grpcAgent) and gRPC callers
// (grpcCaller), in both versions. A gRPC message is handled in its
// protobuf JSON, the HTTP+JSON body of its version, which is what
// a2a.TranslateRequest and a2a.TranslateResult read and write for gRPC:
// grpcwire turns it into the message and back. Statuses are read into the
// A2A codes they stand for and written from them (grpcwire's status
// table), so an agent's error reaches a caller of any binding as the
// gateway's error for its code, never with its message or details.

// grpcAgent reaches a gRPC agent through its grpcUpstream.
type grpcAgent struct{}

func (grpcAgent) send(c *bridgeCall, up a2a.UpstreamRequest) (agentAnswer, error) {
	s, m := c.s, c.s.Op.Method
	msg, err := grpcwire.EncodeRequestMessage(c.to.Version, m, up.Body)
	if err != nil {
		return nil, a2a.ErrInvalidParams.WithMessage("the request cannot be spelled as a gRPC message of " + c.to.String())
	}
	resp, err := c.g.grpcRoundTrip(c.r, s, c.clientCtx, c.ctx, c.headersLate, c.to.Version, m, msg, func(h http.Header) {
		grpcMetadata(h, c.from, c.to)
	})
	if err != nil {
		return nil, err
	}
	a := &grpcAnswer{c: c, resp: resp, streaming: m.Streaming()}
	if resp.Header.Get("Grpc-Status") != "" {
		// Trailers-only: the agent answered with its status alone.
		a.statusOnly = true
	}
	return a, nil
}

// grpcMetadata makes an HTTP caller's headers the metadata of a call in
// form to: what describes the caller's body, its stream and its version
// describes the call no more (grpcRoundTrip sets the gRPC ones), and the
// activated extensions go under to's version's name.
func grpcMetadata(h http.Header, from, to a2a.Form) {
	if from.Binding != a2a.BindingGRPC {
		for _, k := range []string{"Content-Type", "Accept", "Accept-Encoding", a2a.LastEventIDHeader} {
			h.Del(k)
		}
	}
	moveExtensions(h, to.Version)
}

// dropGRPCHeaders takes the gRPC protocol's own headers of a gRPC
// caller's call out of a request to an HTTP agent: they describe the
// call's framing, which the agent's binding does not have (the deadline
// bounds the exchange itself).
func dropGRPCHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, "Grpc-") {
			h.Del(k)
		}
	}
}

// grpcAnswer is a gRPC agent's answer: the one message of a unary call,
// or the messages of a stream, then its status.
type grpcAnswer struct {
	c          *bridgeCall
	resp       *http.Response
	streaming  bool
	statusOnly bool
	// ended is set once the status was read.
	ended bool
}

func (a *grpcAnswer) stream() bool { return a.streaming }
func (a *grpcAnswer) Close() error { return a.resp.Body.Close() }

func (a *grpcAnswer) next() (a2a.Event, []byte, bool, error) {
	if a.ended {
		return a2a.Event{}, nil, false, io.EOF
	}
	if a.statusOnly {
		return a.status(a.resp.Header, false)
	}
	limit := a.c.g.limits.GRPC.MaxAnswerBytes
	msg, err := grpcwire.ReadMessage(a.resp.Body, limit)
	switch {
	case errors.Is(err, io.EOF):
		return a.status(a.resp.Trailer, false)
	case err != nil:
		return a.readError(err)
	}
	if !a.streaming {
		// A unary answer is one message, then the status.
		if _, err := grpcwire.ReadMessage(a.resp.Body, limit); !errors.Is(err, io.EOF) {
			if err == nil {
				err = errors.New("a unary answer with more than one message")
			}
			return a.readError(err)
		}
		if ev, _, _, err := a.status(a.resp.Trailer, true); !errors.Is(err, io.EOF) {
			return ev, nil, false, err // the agent's error, or a status refused
		}
	}
	ev, payload, err := grpcwire.ReadAnswer(&a.c.agentOp, msg)
	if err != nil {
		return a2a.Event{}, nil, false, &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return ev, payload, false, nil
}

// status reads the agent's status from h: its error as an error event,
// else the end of the answer (io.EOF), which a unary call may only reach
// after its message (answered).
func (a *grpcAnswer) status(h http.Header, answered bool) (a2a.Event, []byte, bool, error) {
	a.ended = true
	code, failed, err := readGRPCStatus(h)
	switch {
	case err != nil:
		return a2a.Event{}, nil, false, err
	case failed:
		return a2a.Event{Kind: a2a.EventError, ErrorCode: code}, nil, false, nil
	case !a.streaming && !answered:
		return a2a.Event{}, nil, false, &upstreamFailure{err: errors.New("the agent ended the call without an answer"), a2aErr: a2a.ErrInvalidAgentResponse}
	}
	return a2a.Event{}, nil, false, io.EOF
}

// readError maps a failed read of a message: a broken connection is the
// stream's transport failing (which the relay maps, the caller leaving
// and the gateway draining included); a message that cannot be read is
// an answer refused.
func (a *grpcAnswer) readError(err error) (a2a.Event, []byte, bool, error) {
	if errors.Is(err, errTransport) {
		return a2a.Event{}, nil, false, err
	}
	return a2a.Event{}, nil, false, &upstreamFailure{err: fmt.Errorf("agent answer refused: %w", err), a2aErr: a2a.ErrInvalidAgentResponse.WithMessage("a message of the agent's answer cannot be read")}
}

// grpcCaller answers gRPC callers.
type grpcCaller struct{}

func (grpcCaller) request(_ *http.Request, s *Scope) (url.Values, []byte, error) {
	body, err := grpcwire.RequestJSON(s.Op.Version, s.Op.Method, s.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("the request message as protobuf JSON: %w", err)
	}
	return nil, body, nil
}

// payload is the result itself: observers see a gRPC answer in its
// protobuf JSON, as observeGRPC shows it.
func (grpcCaller) payload(_ *Scope, result []byte) []byte { return result }

func (grpcCaller) unary(w http.ResponseWriter, s *Scope, payload []byte) error {
	msg, err := grpcwire.EncodeAnswer(s.Op, payload)
	if err != nil {
		return unencodable(err)
	}
	WriteGRPCMessages(w, s.Op.Version, grpcwire.AppendMessage(make([]byte, 0, grpcPrefixBytes+len(msg)), msg))
	return nil
}

// unencodable is the failure of an answer, translated, that is no message
// of the caller's version.
func unencodable(err error) error {
	return &upstreamFailure{err: fmt.Errorf("a translated answer has no gRPC message: %w", err), a2aErr: a2a.ErrInvalidAgentResponse}
}

func (grpcCaller) refuse(w http.ResponseWriter, s *Scope, ae *a2a.Error) {
	grpcwire.WriteError(w, s.Op.Version, ae)
}

func (grpcCaller) start(w http.ResponseWriter) { startGRPC(w, nil) }

// event writes one message; gRPC has no event ids. An event that is no
// message of the caller's version ends the stream with
// INVALID_AGENT_RESPONSE, and the error ends the relay.
func (grpcCaller) event(w http.ResponseWriter, s *Scope, payload []byte, _ string) error {
	msg, err := grpcwire.EncodeAnswer(s.Op, payload)
	if err != nil {
		s.Log().Warn("stream ended: an event has no gRPC message", "err", err)
		endGRPC(w, s.Op.Version, nil, a2a.ErrInvalidAgentResponse)
		return unencodable(err)
	}
	_, err = w.Write(grpcwire.AppendMessage(make([]byte, 0, grpcPrefixBytes+len(msg)), msg))
	return err
}

// keepAlive writes nothing: HTTP/2 pings keep a gRPC connection alive.
func (grpcCaller) keepAlive(http.ResponseWriter) error { return nil }

func (grpcCaller) end(w http.ResponseWriter, s *Scope, ae *a2a.Error) {
	endGRPC(w, s.Op.Version, nil, ae)
}
