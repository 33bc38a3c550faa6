package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
)

// The gRPC binding is served at the HTTP level: a call is an HTTP/2 POST
// whose body is length-prefixed protobuf messages, so it is classified into
// the same a2a.Operation and runs through the same stages as the other
// bindings, its metadata being the request's headers (credentials
// included). Each agent has a gRPC listener of its own (a method path
// names no agent), whose handler is GRPCHandler.

// errCallDeadline is the cause of a call's context ending at the deadline
// its caller set (grpc-timeout).
var errCallDeadline = errors.New("the call's grpc-timeout passed")

// GRPCHandler serves the named agent's gRPC listener: both A2A services
// (lf.a2a.v1.A2AService for 1.0, a2a.v1.A2AService for 0.3), through the
// gateway's pipeline. It is nil for an agent without a grpc section.
func (g *Gateway) GRPCHandler(agent string) http.Handler {
	a, ok := g.agents[agent]
	if !ok || a.grpc == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.timeBody(w, r)
		if !isGRPCContentType(r.Header) {
			// Not a gRPC client: the gRPC protocol's answer to it.
			g.log.Info("request refused: not a gRPC call on a gRPC listener", "agent", a.Name, "content_type", clip(r.Header.Get("Content-Type")))
			http.Error(w, "this listener serves gRPC only", http.StatusUnsupportedMediaType)
			return
		}
		// The caller's deadline bounds the stages as well as the agent's
		// exchange; one that cannot be read is refused by classifyGRPC.
		if d, err := grpcwire.ParseTimeout(r.Header.Get("Grpc-Timeout")); err == nil && d > 0 {
			ctx, cancel := context.WithDeadlineCause(r.Context(), time.Now().Add(d), errCallDeadline)
			defer cancel()
			r = r.WithContext(ctx)
		}
		g.serveAgent(w, r, a, r.URL.EscapedPath(), a2a.BindingGRPC)
	})
}

// isGRPCContentType reports a content type of the gRPC protocol with the
// protobuf codec: application/grpc or application/grpc+proto.
func isGRPCContentType(h http.Header) bool {
	ct := strings.ToLower(strings.TrimSpace(h.Get("Content-Type")))
	return ct == grpcwire.ContentType || ct == grpcwire.ContentType+"+proto"
}

// classifyGRPC reads the call's one request message, within
// limits.grpc.max_request_bytes and limits.body_timeout, and classifies
// it. The version is the service's, from the path.
func (g *Gateway) classifyGRPC(w http.ResponseWriter, r *http.Request, s *Scope) error {
	v, m, ok := grpcwire.ParsePath(r.URL.Path)
	s.Op.Version = a2a.V10
	if ok {
		s.Op.Version = v
	}
	if e := g.checkHeader(r); e != nil {
		return e
	}
	if !ok || r.Method != http.MethodPost {
		return a2a.ErrMethodNotFound.WithMessage("no A2A method at this path")
	}
	if r.Header.Get("Te") != "trailers" {
		return a2a.ErrInvalidRequest.WithMessage("a gRPC call must send te: trailers")
	}
	if enc := r.Header.Get("Grpc-Encoding"); enc != "" && enc != "identity" {
		return a2a.ErrUnsupportedOperation.WithMessage("compressed messages are not accepted; send them uncompressed")
	}
	if t := r.Header.Get("Grpc-Timeout"); t != "" {
		if _, err := grpcwire.ParseTimeout(t); err != nil {
			return a2a.ErrInvalidRequest.WithMessage("grpc-timeout cannot be read")
		}
	}
	limit := g.limits.GRPC.MaxRequestBytes
	body, err := readBody(w, r, limit+grpcPrefixBytes)
	if err != nil {
		return err
	}
	msg, err := oneMessage(body, limit)
	if err != nil {
		return err
	}
	op, cerr := grpcwire.Classify(v, m, msg)
	if cerr != nil {
		return cerr
	}
	s.Op, s.Body = op, msg
	return nil
}

// grpcPrefixBytes is the size of a gRPC message's length prefix.
const grpcPrefixBytes = 5

// oneMessage is the one request message of a unary or server-streaming
// call's body.
func oneMessage(body []byte, limit int64) ([]byte, error) {
	rd := bytes.NewReader(body)
	msg, err := grpcwire.ReadMessage(rd, limit)
	switch {
	case errors.Is(err, io.EOF):
		return nil, a2a.ErrInvalidRequest.WithMessage("the call carries no request message")
	case errors.Is(err, grpcwire.ErrTooLarge):
		return nil, a2a.ErrPayloadTooLarge.WithMessage("the request message exceeds limits.grpc.max_request_bytes")
	case errors.Is(err, grpcwire.ErrCompressed):
		return nil, a2a.ErrUnsupportedOperation.WithMessage("compressed messages are not accepted; send them uncompressed")
	case err != nil:
		return nil, a2a.ErrInvalidRequest.WithMessage("the request message cannot be read")
	case rd.Len() > 0:
		return nil, a2a.ErrInvalidRequest.WithMessage("the call carries more than one request message")
	}
	return msg, nil
}

// grpcAnswerMetadata are the agent's response headers and trailers a gRPC
// caller receives, by name, like answerHeaders: the protocol's own. The
// status (grpc-status, grpc-message, grpc-status-details-bin) is always
// the gateway's.
var grpcAnswerMetadata = []string{a2a.VersionHeader, "A2a-Extensions", "X-A2a-Extensions"}

// copyGRPCMetadata copies the allowed metadata of src into dst under
// prefix (http.TrailerPrefix for trailers).
func copyGRPCMetadata(dst, src http.Header, prefix string) {
	for _, k := range grpcAnswerMetadata {
		if vs := src.Values(k); len(vs) > 0 {
			dst[prefix+http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
}

// startGRPC writes the header of a gRPC answer that carries messages.
func startGRPC(w http.ResponseWriter, agentHeader http.Header) {
	h := w.Header()
	copyGRPCMetadata(h, agentHeader, "")
	h.Set("Content-Type", grpcwire.ContentType)
	w.WriteHeader(http.StatusOK)
}

// endGRPC writes a started answer's trailers: the allowed ones of the
// agent's, and the status, OK for a nil e.
func endGRPC(w http.ResponseWriter, v a2a.Version, agentTrailer http.Header, e *a2a.Error) {
	copyGRPCMetadata(w.Header(), agentTrailer, http.TrailerPrefix)
	grpcwire.SetStatusTrailer(w.Header(), v, e)
}

// WriteGRPCAnswer answers a gRPC call with the answer the gateway built
// itself (a push config it holds, a filtered list page) from its HTTP+JSON
// form: the protobuf message of the same answer, and status OK.
func WriteGRPCAnswer(w http.ResponseWriter, s *Scope, payload []byte) error {
	msg, err := grpcwire.EncodeAnswer(s.Op, payload)
	if err != nil {
		return err
	}
	WriteGRPCMessages(w, s.Op.Version, grpcwire.AppendMessage(nil, msg))
	return nil
}

// WriteGRPCMessages answers a gRPC call with messages already framed (a
// stored answer replayed): the messages, and status OK.
func WriteGRPCMessages(w http.ResponseWriter, v a2a.Version, framed []byte) {
	startGRPC(w, nil)
	_, _ = w.Write(framed)
	endGRPC(w, v, nil, nil)
}

// deriveGRPC is the request message of a call the gateway derives (see
// Scope.Derive) from its JSON-RPC request. One that cannot be encoded is
// an empty message, which names no task: the agent refuses it.
func deriveGRPC(op *a2a.Operation, rpcRequest []byte) []byte {
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(rpcRequest, &req) != nil {
		return nil
	}
	msg, err := grpcwire.EncodeRequest(op.Version, op.Method, req.Params)
	if err != nil {
		return nil
	}
	return msg
}

// GRPCStreamStarted reports whether an answer's header starts a gRPC
// stream of messages, rather than answering with a status alone.
func GRPCStreamStarted(h http.Header) bool {
	return isGRPCContentType(h) && h.Get("Grpc-Status") == ""
}

// grpcAnswerStatus is the status code of a gRPC answer that relayed an
// agent's error (in its header, or its trailers once it started), for the
// request metric; "" for none or OK.
func grpcAnswerStatus(h http.Header) string {
	code := h.Get("Grpc-Status")
	if code == "" {
		code = h.Get(http.TrailerPrefix + "Grpc-Status")
	}
	if code == "0" {
		return ""
	}
	return code
}
