package grpcwire

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The 1.0 specification's table (section 5.4) and the gateway's own.
var wantCodes = map[*a2a.Error]codes.Code{
	a2a.ErrTaskNotFound:              codes.NotFound,
	a2a.ErrTaskNotCancelable:         codes.FailedPrecondition,
	a2a.ErrPushNotSupported:          codes.FailedPrecondition,
	a2a.ErrUnsupportedOperation:      codes.FailedPrecondition,
	a2a.ErrContentTypeUnsupported:    codes.InvalidArgument,
	a2a.ErrInvalidAgentResponse:      codes.Internal,
	a2a.ErrExtendedCardNotConfigured: codes.FailedPrecondition,
	a2a.ErrVersionNotSupported:       codes.FailedPrecondition,
	a2a.ErrParse:                     codes.InvalidArgument,
	a2a.ErrInvalidRequest:            codes.InvalidArgument,
	a2a.ErrMethodNotFound:            codes.Unimplemented,
	a2a.ErrInvalidParams:             codes.InvalidArgument,
	a2a.ErrInternal:                  codes.Internal,
	a2a.ErrUnauthenticated:           codes.Unauthenticated,
	a2a.ErrPermissionDenied:          codes.PermissionDenied,
	a2a.ErrRateLimited:               codes.ResourceExhausted,
	a2a.ErrUnavailable:               codes.Unavailable,
	a2a.ErrUpstreamTimeout:           codes.DeadlineExceeded,
	a2a.ErrUpstreamFailed:            codes.Unavailable,
	a2a.ErrPayloadTooLarge:           codes.ResourceExhausted,
	a2a.ErrInProgress:                codes.Aborted,
	a2a.ErrIdempotencyConflict:       codes.AlreadyExists,
	a2a.ErrRequestTimeout:            codes.DeadlineExceeded,
	a2a.ErrHeadersTooLarge:           codes.ResourceExhausted,
}

func TestStatusTable(t *testing.T) {
	if len(wantCodes) != len(statusCodes) {
		t.Errorf("%d rows, %d expected", len(statusCodes), len(wantCodes))
	}
	for e, want := range wantCodes {
		if code, _, _ := Status(a2a.V10, e); code != want {
			t.Errorf("%s: %s, want %s", e.Reason, code, want)
		}
	}
	if code, _, _ := Status(a2a.V10, a2a.AgentCallError(-1, "x")); code != codes.Internal {
		t.Errorf("an unknown code: %s", code)
	}
}

// decodeDetails reads the details a client library sees.
func decodeDetails(t *testing.T, h http.Header) *status.Status {
	t.Helper()
	raw, err := base64.RawStdEncoding.DecodeString(h.Get("Grpc-Status-Details-Bin"))
	if err != nil {
		t.Fatal(err)
	}
	st := &spb.Status{}
	if err := proto.Unmarshal(raw, st); err != nil {
		t.Fatal(err)
	}
	return status.FromProto(st)
}

func TestWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	e := a2a.ErrRateLimited.WithMessage("budget 100% used: é").WithRetryAfter(1500*time.Millisecond).WithHeader("X-Extra", "1")
	WriteError(rec, a2a.V10, e)
	h := rec.Result().Header
	if rec.Code != http.StatusOK || h.Get("Content-Type") != "application/grpc" || rec.Body.Len() != 0 {
		t.Fatalf("status %d, content type %q, body %q", rec.Code, h.Get("Content-Type"), rec.Body)
	}
	if h.Get("Grpc-Status") != "8" || h.Get("Grpc-Message") != "budget 100%25 used: %C3%A9" || h.Get("X-Extra") != "1" {
		t.Errorf("headers %v", h)
	}
	st := decodeDetails(t, h)
	if st.Code() != codes.ResourceExhausted || st.Message() != e.Message {
		t.Errorf("status %v", st)
	}
	var info *errdetails.ErrorInfo
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.RetryInfo:
			retry = d
		}
	}
	if info == nil || info.Reason != "RESOURCE_EXHAUSTED" || info.Domain != "a2a-protocol.org" || info.Metadata["retryAfterSeconds"] != "2" {
		t.Errorf("ErrorInfo %v", info)
	}
	if retry == nil || retry.RetryDelay.AsDuration() != 2*time.Second {
		t.Errorf("RetryInfo %v", retry)
	}
	if strings.Contains(h.Get("Grpc-Status-Details-Bin"), "=") {
		t.Error("details are padded")
	}

	// 0.3 carries no ErrorInfo; without a retry hint no details at all.
	rec = httptest.NewRecorder()
	WriteError(rec, a2a.V03, a2a.ErrTaskNotFound)
	if h := rec.Result().Header; h.Get("Grpc-Status") != "5" || h.Get("Grpc-Status-Details-Bin") != "" {
		t.Errorf("0.3 headers %v", h)
	}
}

func TestSetStatusTrailer(t *testing.T) {
	h := http.Header{}
	SetStatusTrailer(h, a2a.V10, nil)
	if h.Get(http.TrailerPrefix+"Grpc-Status") != "0" || len(h) != 1 {
		t.Errorf("OK trailer %v", h)
	}
	h = http.Header{}
	SetStatusTrailer(h, a2a.V10, a2a.ErrTaskNotFound)
	if h.Get(http.TrailerPrefix+"Grpc-Status") != "5" || h.Get(http.TrailerPrefix+"Grpc-Status-Details-Bin") == "" {
		t.Errorf("error trailer %v", h)
	}
}

// trailerOf turns SetStatusTrailer's keys into the trailers a client reads.
func trailerOf(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		out[http.CanonicalHeaderKey(strings.TrimPrefix(k, http.TrailerPrefix))] = vs
	}
	return out
}

func TestStatusRoundTrip(t *testing.T) {
	for e := range wantCodes {
		for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
			h := http.Header{}
			SetStatusTrailer(h, v, e)
			code, ok, err := ReadStatus(trailerOf(h))
			if err != nil || !ok {
				t.Fatalf("%s %s: %v %v", v, e.Reason, ok, err)
			}
			want := e.Code
			if v == a2a.V03 {
				want = codeError(wantCodes[e]).Code
			}
			if code != want {
				t.Errorf("%s %s: code %d, want %d", v, e.Reason, code, want)
			}
		}
	}
	code, ok, err := ReadStatus(http.Header{"Grpc-Status": {"0"}})
	if code != 0 || ok || err != nil {
		t.Errorf("OK: %d %v %v", code, ok, err)
	}
	for c, want := range map[string]*a2a.Error{
		"14": a2a.ErrInternal, "16": a2a.ErrInternal, "2": a2a.ErrInternal,
		"5": a2a.ErrTaskNotFound, "9": a2a.ErrTaskNotCancelable, "3": a2a.ErrInvalidParams, "13": a2a.ErrInternal, "12": a2a.ErrMethodNotFound,
	} {
		code, ok, err = ReadStatus(http.Header{"Grpc-Status": {c}})
		if code != want.Code || !ok || err != nil {
			t.Errorf("status %s without details: %d %v %v, want %d", c, code, ok, err, want.Code)
		}
	}
}

func TestReadStatusFromGRPCGo(t *testing.T) {
	// The details grpc-go's status package writes, padded as some
	// libraries send them.
	st, err := status.New(codes.NotFound, "no such task").WithDetails(&errdetails.ErrorInfo{Reason: "TASK_NOT_FOUND", Domain: "a2a-protocol.org"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := proto.Marshal(st.Proto())
	h := http.Header{"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {base64.StdEncoding.EncodeToString(raw)}}
	if code, ok, err := ReadStatus(h); code != a2a.ErrTaskNotFound.Code || !ok || err != nil {
		t.Errorf("%d %v %v", code, ok, err)
	}
	// The reason decides over the code.
	st, _ = status.New(codes.FailedPrecondition, "").WithDetails(&errdetails.ErrorInfo{Reason: "PUSH_NOTIFICATION_NOT_SUPPORTED", Domain: "a2a-protocol.org"})
	raw, _ = proto.Marshal(st.Proto())
	h = http.Header{"Grpc-Status": {"9"}, "Grpc-Status-Details-Bin": {base64.RawStdEncoding.EncodeToString(raw)}}
	if code, _, err := ReadStatus(h); code != a2a.ErrPushNotSupported.Code || err != nil {
		t.Errorf("reason: %d %v", code, err)
	}
	// Another domain's reason is not A2A's.
	st, _ = status.New(codes.NotFound, "").WithDetails(&errdetails.ErrorInfo{Reason: "PUSH_NOTIFICATION_NOT_SUPPORTED", Domain: "example.com"})
	raw, _ = proto.Marshal(st.Proto())
	h = http.Header{"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {base64.RawStdEncoding.EncodeToString(raw)}}
	if code, _, err := ReadStatus(h); code != a2a.ErrTaskNotFound.Code || err != nil {
		t.Errorf("foreign domain: %d %v", code, err)
	}
}

func TestReadStatusRefuses(t *testing.T) {
	details := func(code codes.Code, reasons ...string) string {
		st := status.New(code, "")
		for _, r := range reasons {
			st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: r, Domain: "a2a-protocol.org"})
		}
		raw, _ := proto.Marshal(st.Proto())
		return base64.RawStdEncoding.EncodeToString(raw)
	}
	for name, h := range map[string]http.Header{
		"no status":         {},
		"two statuses":      {"Grpc-Status": {"5", "0"}},
		"not a number":      {"Grpc-Status": {"five"}},
		"signed":            {"Grpc-Status": {"+5"}},
		"out of range":      {"Grpc-Status": {"17"}},
		"not base64":        {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {"***"}},
		"not a status":      {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {base64.RawStdEncoding.EncodeToString([]byte{0xff})}},
		"codes disagree":    {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {details(codes.Internal, "TASK_NOT_FOUND")}},
		"two reasons":       {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {details(codes.NotFound, "TASK_NOT_FOUND", "INTERNAL")}},
		"details twice":     {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {details(codes.NotFound), details(codes.NotFound)}},
		"details with OK":   {"Grpc-Status": {"0"}, "Grpc-Status-Details-Bin": {details(codes.NotFound)}},
		"unknown field":     {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {base64.RawStdEncoding.EncodeToString(cat(tagVarint(1, 5), tagVarint(9, 1)))}},
		"bad ErrorInfo":     {"Grpc-Status": {"5"}, "Grpc-Status-Details-Bin": {base64.RawStdEncoding.EncodeToString(cat(tagVarint(1, 5), tagBytes(3, cat(tagBytes(1, []byte("type.googleapis.com/google.rpc.ErrorInfo")), tagBytes(2, tagBytes(1, []byte{0xff}))))))}},
		"leading zero code": {"Grpc-Status": {"05"}},
	} {
		if _, _, err := ReadStatus(h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
