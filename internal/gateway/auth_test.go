package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// TestUnauthenticated refuses requests without a valid credential with 401
// and a WWW-Authenticate challenge, in the caller's binding and version,
// before anything reaches the agent.
func TestUnauthenticated(t *testing.T) {
	env := gwtest.Start(t)
	c := newCaller(t, env)

	foreignKey, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	// Right issuer, audience and key id, signed by a key the gateway does not trust.
	forged, err := authz.MintToken(foreignKey, "gwtest", gwtest.Issuer, gwtest.Audience, "acme", "mallory", gwtest.AllScopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	credentials := []struct {
		name   string
		header http.Header
		// invalid: a credential was presented, so the challenge says
		// error="invalid_token" (RFC 6750 section 3.1).
		invalid bool
	}{
		{"none", nil, false},
		{"garbage", header("Authorization", "Bearer not-a-jwt"), true},
		{"forged", header("Authorization", "Bearer "+forged), true},
		{"wrong scheme", header("Authorization", "Basic YWxpY2U6c2VjcmV0"), false},
	}
	calls := []struct {
		name string
		rq   request
		v    a2a.Version
	}{
		{"jsonrpc 1.0", request{method: http.MethodPost, path: "/", header: v10(), rpc: true,
			body: rpcBody(a2a.MethodSend, a2a.V10, "auth-1", `{"message":`+c.msg10("complete")+`}`)}, a2a.V10},
		{"jsonrpc 0.3", request{method: http.MethodPost, path: "/", rpc: true,
			body: rpcBody(a2a.MethodGetTask, a2a.V03, "auth-2", `{"id":"t-1"}`)}, a2a.V03},
		{"rest 1.0", request{method: http.MethodGet, path: "/tasks/t-1", header: v10()}, a2a.V10},
		{"rest stream", request{method: http.MethodPost, path: "/message:stream", header: v10(),
			body: []byte(`{"message":` + c.msg10("complete") + `}`)}, a2a.V10},
	}
	env.Agent.ResetRequests()
	counts := tally{}
	for _, cred := range credentials {
		for _, call := range calls {
			t.Run(cred.name+"/"+call.name, func(t *testing.T) {
				rq := call.rq
				rq.anonymous = true
				rq.header = rq.header.Clone()
				if rq.header == nil {
					rq.header = http.Header{}
				}
				for k, vs := range cred.header {
					rq.header[k] = vs
				}
				resp, body := c.do(t, rq)
				op, _ := classify(t, rq)
				counts.add(op, a2a.ErrUnauthenticated.Reason)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("HTTP %d: %s", resp.StatusCode, body)
				}
				challenge := resp.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(challenge, "Bearer ") || !strings.Contains(challenge, `realm="`) {
					t.Fatalf("WWW-Authenticate %q", challenge)
				}
				if got := strings.Contains(challenge, `error="invalid_token"`); got != cred.invalid {
					t.Fatalf("WWW-Authenticate %q: invalid_token %t, want %t", challenge, got, cred.invalid)
				}
				if rq.rpc {
					wantUnauthenticatedRPC(t, body, call.v)
				} else {
					wantUnauthenticatedREST(t, body)
				}
			})
		}
	}
	if got := env.Agent.Requests(); len(got) != 0 {
		t.Fatalf("%d unauthenticated requests reached the agent", len(got))
	}
	counts.wait(t, env.Admin)
}

// classify names the operation a test request asks for, for the metric label.
func classify(t *testing.T, rq request) (a2a.Method, a2a.Version) {
	t.Helper()
	v := a2a.V03
	if rq.header.Get(a2a.VersionHeader) == "1.0" {
		v = a2a.V10
	}
	var op *a2a.Operation
	var e *a2a.Error
	if rq.rpc {
		op, e = a2a.ClassifyRPC(rq.body, v, v == a2a.V10)
	} else {
		op, e = a2a.ClassifyREST(rq.method, rq.path, nil, rq.body, v, v == a2a.V10)
	}
	if e != nil {
		t.Fatalf("test request not classified: %v", e)
	}
	return op.Method, op.Version
}

func wantUnauthenticatedRPC(t *testing.T, body []byte, v a2a.Version) {
	t.Helper()
	var got struct {
		ID    string `json:"id"`
		Error struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Error.Code != a2a.ErrUnauthenticated.Code || !strings.HasPrefix(got.ID, "auth-") {
		t.Fatalf("want JSON-RPC error %d for the request's id: %s", a2a.ErrUnauthenticated.Code, body)
	}
	var details []map[string]any
	isList := json.Unmarshal(got.Error.Data, &details) == nil && len(details) > 0
	if v == a2a.V10 && (!isList || details[0]["reason"] != a2a.ErrUnauthenticated.Reason) {
		t.Fatalf("1.0 error without its ErrorInfo: %s", body)
	}
	if v != a2a.V10 && isList {
		t.Fatalf("0.x error with a 1.0 ErrorInfo list: %s", body)
	}
}

func wantUnauthenticatedREST(t *testing.T, body []byte) {
	t.Helper()
	var got struct {
		Error struct {
			Code    int              `json:"code"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	e := got.Error
	if e.Code != http.StatusUnauthorized || e.Status != "UNAUTHENTICATED" || len(e.Details) == 0 || e.Details[0]["reason"] != a2a.ErrUnauthenticated.Reason {
		t.Fatalf("not a 401 google.rpc.Status: %s", body)
	}
}
