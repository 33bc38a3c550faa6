package grpcwire

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// statusCodes is the one table of gRPC status codes of the gateway's
// errors: the protocol's (the A2A errors as the 1.0 specification maps
// them in section 5.4, the JSON-RPC ones by meaning), then the gateway's
// own. An agent's status without ErrorInfo is read as the first protocol
// error of its code (codeError), so the error a code stands for comes
// first among those of that code.
var statusCodes = []struct {
	err  *a2a.Error
	code codes.Code
}{
	// An agent's bare INVALID_ARGUMENT and INTERNAL are these.
	{a2a.ErrInvalidParams, codes.InvalidArgument},
	{a2a.ErrInternal, codes.Internal},
	{a2a.ErrTaskNotFound, codes.NotFound},
	{a2a.ErrTaskNotCancelable, codes.FailedPrecondition},
	{a2a.ErrPushNotSupported, codes.FailedPrecondition},
	{a2a.ErrUnsupportedOperation, codes.FailedPrecondition},
	{a2a.ErrContentTypeUnsupported, codes.InvalidArgument},
	{a2a.ErrInvalidAgentResponse, codes.Internal},
	{a2a.ErrExtendedCardNotConfigured, codes.FailedPrecondition},
	{a2a.ErrVersionNotSupported, codes.FailedPrecondition},
	// The other JSON-RPC errors, by their meaning.
	{a2a.ErrParse, codes.InvalidArgument},
	{a2a.ErrInvalidRequest, codes.InvalidArgument},
	{a2a.ErrMethodNotFound, codes.Unimplemented},
	// The gateway's own.
	{a2a.ErrUnauthenticated, codes.Unauthenticated},
	{a2a.ErrPermissionDenied, codes.PermissionDenied},
	{a2a.ErrRateLimited, codes.ResourceExhausted},
	{a2a.ErrUnavailable, codes.Unavailable},
	{a2a.ErrUpstreamTimeout, codes.DeadlineExceeded},
	{a2a.ErrUpstreamFailed, codes.Unavailable},
	{a2a.ErrPayloadTooLarge, codes.ResourceExhausted},
	// Another call with the message id is still running: retrying the
	// whole call later may succeed.
	{a2a.ErrInProgress, codes.Aborted},
	{a2a.ErrIdempotencyConflict, codes.AlreadyExists},
	{a2a.ErrRequestTimeout, codes.DeadlineExceeded},
	{a2a.ErrHeadersTooLarge, codes.ResourceExhausted},
}

// codeOf is the status code of e: by its A2A code, INTERNAL for a code the
// table does not know.
func codeOf(e *a2a.Error) codes.Code {
	for _, row := range statusCodes {
		if row.err.Code == e.Code {
			return row.code
		}
	}
	return codes.Internal
}

// Status maps an A2A error to its gRPC status: the code, the message, and
// the encoded google.rpc.Status for grpc-status-details-bin (nil when it
// has no details). 1.0 carries the ErrorInfo the specification requires
// (reason, domain a2a-protocol.org; retryAfterSeconds in its metadata as
// in the JSON bindings); both versions carry a RetryInfo when e has a
// retry hint.
func Status(v a2a.Version, e *a2a.Error) (code codes.Code, message string, details []byte) {
	code = codeOf(e)
	st := &spb.Status{Code: int32(code), Message: e.Message}
	retry := e.RetryAfterSeconds()
	if v == a2a.V10 {
		info := &errdetails.ErrorInfo{Reason: e.Reason, Domain: a2a.ErrorDomain}
		if retry > 0 {
			info.Metadata = map[string]string{"retryAfterSeconds": strconv.Itoa(retry)}
		}
		st.Details = append(st.Details, mustAny(info))
	}
	if retry > 0 {
		st.Details = append(st.Details, mustAny(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(retry) * time.Second)}))
	}
	if len(st.Details) == 0 {
		return code, e.Message, nil
	}
	b, _ := marshal(st)
	return code, e.Message, b
}

// mustAny wraps a details message; marshalling these well-known messages
// of strings and numbers cannot fail.
func mustAny(m proto.Message) *anypb.Any {
	a, _ := anypb.New(m)
	return a
}

// WriteError answers a call with e as a trailers-only response: HTTP 200,
// content-type application/grpc and the status in the headers, no body.
// e's extra headers (WWW-Authenticate) are sent too.
func WriteError(w http.ResponseWriter, v a2a.Version, e *a2a.Error) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = append(h[k], vs...)
	}
	h.Set("Content-Type", ContentType)
	setStatus(h, "", v, e)
	w.WriteHeader(http.StatusOK)
}

// ContentType is the media type of gRPC requests and answers.
const ContentType = "application/grpc"

// SetStatusTrailer sets the status of a call whose answer messages were
// sent as trailers of h (the ResponseWriter's header map, after the body):
// grpc-status 0 when e is nil.
func SetStatusTrailer(h http.Header, v a2a.Version, e *a2a.Error) {
	if e == nil {
		h.Set(http.TrailerPrefix+"Grpc-Status", "0")
		return
	}
	setStatus(h, http.TrailerPrefix, v, e)
}

func setStatus(h http.Header, prefix string, v a2a.Version, e *a2a.Error) {
	code, msg, details := Status(v, e)
	h.Set(prefix+"Grpc-Status", strconv.Itoa(int(code)))
	if msg != "" {
		h.Set(prefix+"Grpc-Message", encodeMessage(msg))
	}
	if details != nil {
		h.Set(prefix+"Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(details))
	}
}

// encodeMessage percent-encodes a grpc-message: every byte outside
// printable ASCII, and '%'.
func encodeMessage(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// codeError is the protocol error an agent's status code stands for: the
// first of the table's errors an agent may answer with (a2a.AgentError),
// INTERNAL's for a code none has.
func codeError(c codes.Code) *a2a.Error {
	for _, row := range statusCodes {
		if row.code == c && a2a.AgentError(row.err.Code).Code == row.err.Code {
			return row.err
		}
	}
	return a2a.ErrInternal
}

// ReadStatus reads an agent's status, from the trailers of its answer or
// the headers of a trailers-only one, into the A2A error code it stands
// for: the reason of an a2a-protocol.org ErrorInfo in
// grpc-status-details-bin when there is one, else the A2A error of the
// status code (codeError). ok is false for
// status OK. An answer without a status, with a malformed one, or whose
// details disagree with grpc-status (another code, two reasons) is an
// error: the gateway cannot tell what the agent meant.
func ReadStatus(h http.Header) (code int, ok bool, err error) {
	vals := h.Values("Grpc-Status")
	if len(vals) != 1 {
		return 0, false, fmt.Errorf("%w: %d grpc-status values, want one", a2a.ErrNotA2A, len(vals))
	}
	n, err := strconv.Atoi(vals[0])
	if err != nil || n < 0 || n > 16 || strconv.Itoa(n) != vals[0] {
		return 0, false, fmt.Errorf("%w: grpc-status is not a status code", a2a.ErrNotA2A)
	}
	status := codes.Code(n)
	reason, err := readDetails(h, status)
	if err != nil {
		return 0, false, err
	}
	if status == codes.OK {
		return 0, false, nil
	}
	if reason != "" {
		for _, row := range statusCodes {
			if row.err.Reason == reason {
				return row.err.Code, true, nil
			}
		}
	}
	return codeError(status).Code, true, nil
}

// readDetails reads the A2A ErrorInfo reason of grpc-status-details-bin
// ("" when there is none), checking the details agree with status.
func readDetails(h http.Header, status codes.Code) (string, error) {
	vals := h.Values("Grpc-Status-Details-Bin")
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: grpc-status-details-bin given more than once", a2a.ErrNotA2A)
	}
	// Binary metadata is base64, padded or not.
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(vals[0], "="))
	if err != nil {
		return "", fmt.Errorf("%w: grpc-status-details-bin is not base64", a2a.ErrNotA2A)
	}
	st := &spb.Status{}
	if err := checkWire(raw, st.ProtoReflect().Descriptor()); err != nil {
		return "", fmt.Errorf("%w: grpc-status-details-bin: %v", a2a.ErrNotA2A, err)
	}
	if err := proto.Unmarshal(raw, st); err != nil {
		return "", fmt.Errorf("%w: grpc-status-details-bin: %v", a2a.ErrNotA2A, err)
	}
	if codes.Code(st.GetCode()) != status {
		return "", fmt.Errorf("%w: grpc-status-details-bin holds status %d, grpc-status is %d", a2a.ErrNotA2A, st.GetCode(), status)
	}
	reason := ""
	for _, d := range st.GetDetails() {
		info := &errdetails.ErrorInfo{}
		if !d.MessageIs(info) {
			continue
		}
		if err := checkWire(d.GetValue(), info.ProtoReflect().Descriptor()); err != nil {
			return "", fmt.Errorf("%w: ErrorInfo: %v", a2a.ErrNotA2A, err)
		}
		if err := d.UnmarshalTo(info); err != nil {
			return "", fmt.Errorf("%w: ErrorInfo: %v", a2a.ErrNotA2A, err)
		}
		if info.GetDomain() != a2a.ErrorDomain {
			continue
		}
		if reason != "" && info.GetReason() != reason {
			return "", fmt.Errorf("%w: two A2A ErrorInfo reasons", a2a.ErrNotA2A)
		}
		reason = info.GetReason()
	}
	return reason, nil
}
