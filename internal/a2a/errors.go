package a2a

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a protocol error: the JSON-RPC code, the 1.0 ErrorInfo reason, the
// HTTP status of the REST binding and a message safe to show the caller.
// Internal detail belongs in the log, never in Message.
type Error struct {
	Code       int
	Reason     string
	HTTPStatus int
	Message    string
	// RetryAfter, when set, becomes a Retry-After header and a retry hint.
	RetryAfter time.Duration
	// Header carries extra response headers (WWW-Authenticate, for example).
	Header http.Header
}

func (e *Error) Error() string { return e.Message }

// WithMessage returns a copy with a more specific message.
func (e *Error) WithMessage(msg string) *Error {
	c := *e
	c.Message = msg
	return &c
}

// WithRetryAfter returns a copy that tells the caller when to retry.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	c := *e
	c.RetryAfter = d
	return &c
}

// WithHeader returns a copy that adds a response header.
func (e *Error) WithHeader(k, v string) *Error {
	c := *e
	c.Header = e.Header.Clone()
	if c.Header == nil {
		c.Header = http.Header{}
	}
	c.Header.Add(k, v)
	return &c
}

// The protocol's errors, plus the gateway's own in the -32050.. range, which
// the specification leaves to implementations.
var (
	ErrParse                     = &Error{-32700, "PARSE_ERROR", http.StatusBadRequest, "invalid JSON payload", 0, nil}
	ErrInvalidRequest            = &Error{-32600, "INVALID_REQUEST", http.StatusBadRequest, "request payload validation error", 0, nil}
	ErrMethodNotFound            = &Error{-32601, "METHOD_NOT_FOUND", http.StatusNotFound, "method not found", 0, nil}
	ErrInvalidParams             = &Error{-32602, "INVALID_PARAMS", http.StatusBadRequest, "invalid parameters", 0, nil}
	ErrInternal                  = &Error{-32603, "INTERNAL", http.StatusInternalServerError, "internal error", 0, nil}
	ErrTaskNotFound              = &Error{-32001, "TASK_NOT_FOUND", http.StatusNotFound, "task not found", 0, nil}
	ErrTaskNotCancelable         = &Error{-32002, "TASK_NOT_CANCELABLE", http.StatusConflict, "task cannot be canceled", 0, nil}
	ErrPushNotSupported          = &Error{-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", http.StatusBadRequest, "push notifications are not supported", 0, nil}
	ErrUnsupportedOperation      = &Error{-32004, "UNSUPPORTED_OPERATION", http.StatusBadRequest, "this operation is not supported", 0, nil}
	ErrContentTypeUnsupported    = &Error{-32005, "CONTENT_TYPE_NOT_SUPPORTED", http.StatusUnsupportedMediaType, "incompatible content types", 0, nil}
	ErrInvalidAgentResponse      = &Error{-32006, "INVALID_AGENT_RESPONSE", http.StatusBadGateway, "invalid agent response", 0, nil}
	ErrExtendedCardNotConfigured = &Error{-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", http.StatusBadRequest, "extended agent card is not configured", 0, nil}
	ErrVersionNotSupported       = &Error{-32009, "VERSION_NOT_SUPPORTED", http.StatusBadRequest, "protocol version not supported", 0, nil}

	// Gateway errors.
	ErrUnauthenticated     = &Error{-32050, "UNAUTHENTICATED", http.StatusUnauthorized, "authentication required", 0, nil}
	ErrPermissionDenied    = &Error{-32051, "PERMISSION_DENIED", http.StatusForbidden, "permission denied", 0, nil}
	ErrRateLimited         = &Error{-32052, "RESOURCE_EXHAUSTED", http.StatusTooManyRequests, "request budget exceeded", 0, nil}
	ErrUnavailable         = &Error{-32053, "UNAVAILABLE", http.StatusServiceUnavailable, "temporarily unavailable, retry later", 0, nil}
	ErrUpstreamTimeout     = &Error{-32054, "DEADLINE_EXCEEDED", http.StatusGatewayTimeout, "the agent did not answer in time", 0, nil}
	ErrUpstreamFailed      = &Error{-32055, "BAD_GATEWAY", http.StatusBadGateway, "the agent could not be reached", 0, nil}
	ErrPayloadTooLarge     = &Error{-32056, "PAYLOAD_TOO_LARGE", http.StatusRequestEntityTooLarge, "request body exceeds the configured limit", 0, nil}
	ErrInProgress          = &Error{-32057, "IN_PROGRESS", http.StatusConflict, "a request with this message id is still in progress; retry later", 0, nil}
	ErrIdempotencyConflict = &Error{-32058, "IDEMPOTENCY_KEY_REUSED", http.StatusUnprocessableEntity, "this message id was already used for a different request", 0, nil}
	ErrRequestTimeout      = &Error{-32062, "REQUEST_TIMEOUT", http.StatusRequestTimeout, "the request body did not arrive in time", 0, nil}
	ErrHeadersTooLarge     = &Error{-32063, "HEADERS_TOO_LARGE", http.StatusRequestHeaderFieldsTooLarge, "the request header exceeds the configured limit", 0, nil}
)

// grpcStatus maps an HTTP status to the google.rpc.Code name that 1.0 REST
// errors carry in "status".
func grpcStatus(httpStatus int) string {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "FAILED_PRECONDITION"
	case http.StatusRequestEntityTooLarge, http.StatusRequestHeaderFieldsTooLarge, http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusUnsupportedMediaType:
		return "INVALID_ARGUMENT"
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return "DEADLINE_EXCEEDED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	}
	return "INTERNAL"
}

// ErrorDomain is the ErrorInfo domain of the 1.0 specification.
const ErrorDomain = "a2a-protocol.org"

type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (e *Error) info() errorInfo {
	ei := errorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: e.Reason, Domain: ErrorDomain}
	if e.RetryAfter > 0 {
		ei.Metadata = map[string]string{"retryAfterSeconds": strconv.Itoa(retrySeconds(e.RetryAfter))}
	}
	return ei
}

// RetryAfterSeconds is e's retry hint in whole seconds as every binding
// sends it (rounded up, at least 1); 0 when e has none.
func (e *Error) RetryAfterSeconds() int {
	if e.RetryAfter <= 0 {
		return 0
	}
	return retrySeconds(e.RetryAfter)
}

func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// rpcEnvelope is a JSON-RPC 2.0 error response.
type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

// RPCErrorBody encodes e as a JSON-RPC response to the request with id
// (null when unknown) in the shape version v expects: 1.0 carries the
// ErrorInfo list in data, older versions a small object.
func (e *Error) RPCErrorBody(v Version, id json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body := rpcErrorBody{Code: e.Code, Message: e.Message}
	if v == V10 {
		body.Data = []errorInfo{e.info()}
	} else if e.RetryAfter > 0 {
		body.Data = map[string]int{"retryAfterSeconds": retrySeconds(e.RetryAfter)}
	}
	b, _ := json.Marshal(rpcEnvelope{JSONRPC: "2.0", ID: id, Error: body})
	return b
}

type restStatus struct {
	Error restStatusBody `json:"error"`
}

type restStatusBody struct {
	Code    int         `json:"code"`
	Status  string      `json:"status"`
	Message string      `json:"message"`
	Details []errorInfo `json:"details"`
}

// RESTErrorBody encodes e as the HTTP+JSON binding of version v expects:
// 1.0 the google.rpc.Status JSON, 0.3 (and earlier) the JSON-RPC style
// {"code", "message"} object the 0.3 SDKs turn into their error types.
func (e *Error) RESTErrorBody(v Version) []byte {
	if v != V10 {
		body := rpcErrorBody{Code: e.Code, Message: e.Message}
		if e.RetryAfter > 0 {
			body.Data = map[string]int{"retryAfterSeconds": retrySeconds(e.RetryAfter)}
		}
		b, _ := json.Marshal(body)
		return b
	}
	b, _ := json.Marshal(restStatus{Error: restStatusBody{
		Code: e.HTTPStatus, Status: grpcStatus(e.HTTPStatus), Message: e.Message, Details: []errorInfo{e.info()},
	}})
	return b
}

// RPCHTTPStatus is the HTTP status of e over JSON-RPC: 200, as JSON-RPC over
// HTTP prescribes and as the SDK clients need (a2a-go reads the JSON-RPC
// error only from a 200 answer), except 401, which a client must see to
// authenticate again.
func (e *Error) RPCHTTPStatus() int {
	if e.HTTPStatus == http.StatusUnauthorized {
		return http.StatusUnauthorized
	}
	return http.StatusOK
}

// WriteRPCError writes e as a JSON-RPC error response with RPCHTTPStatus.
func WriteRPCError(w http.ResponseWriter, v Version, id json.RawMessage, e *Error) {
	writeErr(w, e, "application/json", e.RPCHTTPStatus(), e.RPCErrorBody(v, id))
}

// WriteRPCStreamError answers a refused streaming method (SendStreamingMessage,
// SubscribeToTask and their 0.3 names) as the SDK servers do: HTTP 200, an
// event stream of one event whose data is the JSON-RPC error response, then
// the end. A client of a streaming method reads any 200 answer as a stream
// (a2a-go's does), so a plain JSON error would read as a stream without
// events. A 401 stays a plain JSON HTTP 401: the status is what makes a
// client authenticate again.
func WriteRPCStreamError(w http.ResponseWriter, v Version, id json.RawMessage, e *Error) {
	if e.RPCHTTPStatus() != http.StatusOK {
		WriteRPCError(w, v, id, e)
		return
	}
	writeErr(w, e, SSEContentType, http.StatusOK, e.StreamErrorEvent(BindingJSONRPC, v, id))
}

// StreamErrorEvent frames e as the last event of a stream in binding b and
// version v, as the SDK servers end a stream that fails: over JSON-RPC a data
// event holding the JSON-RPC error response to the request with id (a2a-go's
// server sends it so, and both SDK clients read an error from any event);
// over HTTP+JSON an "error" event holding the binding's error body, the
// only event the JS SDK's REST clients read an error from.
func (e *Error) StreamErrorEvent(b Binding, v Version, id json.RawMessage) []byte {
	// json.Marshal escapes every line break: the body fits one data line.
	if b == BindingJSONRPC {
		return append(append([]byte("data: "), e.RPCErrorBody(v, id)...), "\n\n"...)
	}
	return append(append([]byte("event: error\ndata: "), e.RESTErrorBody(v)...), "\n\n"...)
}

// WriteRESTError writes e in version v's HTTP+JSON shape with its HTTP status.
func WriteRESTError(w http.ResponseWriter, v Version, e *Error) {
	writeErr(w, e, "application/json", e.HTTPStatus, e.RESTErrorBody(v))
}

// RESTVersion is the version whose error shape a REST caller reads: the one
// it names, else 0.3 under /v1/ and 1.0 elsewhere (the paths outside /v1/
// exist only in 1.0).
func RESTVersion(r *http.Request) Version {
	v, explicit, err := NegotiateVersion(r)
	switch {
	case err != nil:
		return V10
	case explicit:
		return v
	case strings.Contains(r.URL.Path, "/v1/"):
		return V03
	}
	return V10
}

func writeErr(w http.ResponseWriter, e *Error, contentType string, status int, body []byte) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = append(h[k], vs...)
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(e.RetryAfter)))
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
