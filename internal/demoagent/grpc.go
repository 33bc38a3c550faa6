package demoagent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// The gRPC binding reads each request as the HTTP+JSON request of its
// version and answers with that binding's result: the protobuf JSON of a
// gRPC message is exactly the HTTP+JSON body of its version (1.0 for
// lf.a2a.v1, the 0.3 protobuf JSON for a2a.v1). So a gRPC call runs the
// same classification, scenarios, task store and push configs as the other
// bindings, and a task started over gRPC can be read over JSON-RPC.

// GRPCServer returns a gRPC server with both A2A services registered:
// lf.a2a.v1.A2AService (1.0) and a2a.v1.A2AService (0.3). The caller
// serves and stops it; Close ends its open streams.
func (a *Agent) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(opts...)
	a2a10.RegisterA2AServiceServer(s, grpc10{a: a})
	a2a03.RegisterA2AServiceServer(s, grpc03{a: a})
	return s
}

// SetGRPCAddress sets the host:port of the agent's gRPC server, which the
// card then lists as a GRPC interface of both versions; "" lists none.
func (a *Agent) SetGRPCAddress(hostport string) { a.grpcAddr.Store(&hostport) }

func (a *Agent) grpcAddress() string {
	if p := a.grpcAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// restForm is a gRPC request as the HTTP+JSON request of its version. msg
// is the body of a POST, or else the source of the query parameters (its
// members other than the ones in skip, which the path carries); nil for
// neither.
type restForm struct {
	method string
	path   string
	msg    proto.Message
	skip   []string
}

func postForm(path string, body proto.Message) restForm {
	return restForm{method: http.MethodPost, path: path, msg: body}
}

func getForm(path string, query proto.Message, skip ...string) restForm {
	return restForm{method: http.MethodGet, path: path, msg: query, skip: skip}
}

// escapedPath joins path segments, escaping each.
func escapedPath(segs ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// errResourceName answers a request whose ids do not form the resource
// its method acts on.
var errResourceName = a2a.ErrInvalidParams.WithMessage("the request's task, config id or resource name is missing or malformed")

// grpcCall classifies and records one gRPC request; want is the method the
// gRPC method name stands for.
func (a *Agent) grpcCall(ctx context.Context, v a2a.Version, want a2a.Method, req proto.Message, f restForm) (*call, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	header := http.Header{}
	for k, vs := range md {
		header[http.CanonicalHeaderKey(k)] = vs
	}
	fullMethod, _ := grpc.Method(ctx)
	// The recorded body is the request re-encoded: grpc-go hands the
	// server decoded messages only.
	raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	rec := Received{HTTPMethod: http.MethodPost, Path: fullMethod, Header: header, Body: raw, At: time.Now()}

	var body []byte
	var query url.Values
	var err error
	switch {
	case f.msg == nil:
	case f.method == http.MethodPost:
		body, err = protojson.Marshal(f.msg)
	default:
		query, err = queryOf(f.msg, f.skip)
	}
	if err != nil {
		a.keep(rec, nil)
		return nil, grpcError(v, a2a.ErrInvalidParams.WithMessage("the request could not be read"))
	}
	op, e := a2a.ClassifyREST(f.method, f.path, query, body, v, true)
	op.Binding = a2a.BindingGRPC
	a.keep(rec, op)
	if e == nil && op.Method != want || e != nil && e.Code == a2a.ErrMethodNotFound.Code {
		e = errResourceName
	}
	if e != nil {
		return nil, grpcError(v, e)
	}
	c := &call{op: op, d: dialect{v: v, proto: v == a2a.V03}, params: body, query: query, plainBlocking: v == a2a.V03}
	if auth := md.Get("authorization"); len(auth) > 0 {
		c.authorization = auth[0]
	}
	return c, nil
}

// queryOf renders the members of m that skip does not name as HTTP+JSON
// query parameters, under their JSON names.
func queryOf(m proto.Message, skip []string) (url.Values, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var members map[string]any
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, err
	}
	q := url.Values{}
	for k, val := range members {
		if slices.Contains(skip, k) {
			continue
		}
		switch val := val.(type) {
		case string:
			q.Set(k, val)
		case float64:
			q.Set(k, strconv.FormatFloat(val, 'f', -1, 64))
		case bool:
			q.Set(k, strconv.FormatBool(val))
		}
	}
	return q, nil
}

// grpcUnary serves a unary method: it runs the request as the HTTP+JSON
// request f and decodes the result into a new *T.
func grpcUnary[T any, PT interface {
	*T
	proto.Message
}](ctx context.Context, a *Agent, v a2a.Version, want a2a.Method, req proto.Message, f restForm) (PT, error) {
	c, err := a.grpcCall(ctx, v, want, req, f)
	if err != nil {
		return nil, err
	}
	rep, e := a.dispatch(ctx, c)
	if e != nil {
		return nil, grpcError(v, e)
	}
	out := PT(new(T))
	if rep.noContent {
		return out, nil
	}
	// The card carries the fields of both versions side by side; each
	// version's AgentCard reads its own.
	if err := a.decodeResult(rep.result, out, want == a2a.MethodExtendedCard); err != nil {
		return nil, grpcError(v, a2a.ErrInternal)
	}
	return out, nil
}

// grpcStream serves a server-streaming method: every event the stream of
// the HTTP+JSON request f yields becomes one *T message.
func grpcStream[T any, PT interface {
	*T
	proto.Message
}](ctx context.Context, a *Agent, v a2a.Version, want a2a.Method, req proto.Message, f restForm, send func(PT) error) error {
	c, err := a.grpcCall(ctx, v, want, req, f)
	if err != nil {
		return err
	}
	rep, e := a.dispatch(ctx, c)
	if e != nil {
		return grpcError(v, e)
	}
	var failed error
	a.pump(ctx, rep.stream, func(payload any) bool {
		out := PT(new(T))
		if err := a.decodeResult(payload, out, false); err != nil {
			failed = grpcError(v, a2a.ErrInternal)
			return false
		}
		if err := send(out); err != nil {
			failed = err
			return false
		}
		return true
	})
	return failed
}

// decodeResult turns a rendered HTTP+JSON result into its message. Unknown
// members are refused unless lenient, so a rendering that drifts from the
// definitions fails loudly.
func (a *Agent) decodeResult(result any, out proto.Message, lenient bool) error {
	b, err := json.Marshal(result)
	if err == nil {
		err = protojson.UnmarshalOptions{DiscardUnknown: lenient}.Unmarshal(b, out)
	}
	if err != nil {
		a.log.Error("gRPC answer not encoded", "err", err)
	}
	return err
}

// grpcError is the gRPC status of an A2A error as the gateway sends it:
// the 1.0 specification's code, with ErrorInfo for 1.0.
func grpcError(v a2a.Version, e *a2a.Error) error {
	code, msg, details := grpcwire.Status(v, e)
	var st spb.Status
	if details == nil || proto.Unmarshal(details, &st) != nil {
		return grpcstatus.Error(code, msg)
	}
	return grpcstatus.ErrorProto(&st)
}
