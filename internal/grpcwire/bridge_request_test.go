package grpcwire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// bridgeForms are the six forms a bridge serves or reaches.
var bridgeForms = []a2a.Form{
	{Version: a2a.V10, Binding: a2a.BindingJSONRPC}, {Version: a2a.V10, Binding: a2a.BindingREST}, {Version: a2a.V10, Binding: a2a.BindingGRPC},
	{Version: a2a.V03, Binding: a2a.BindingJSONRPC}, {Version: a2a.V03, Binding: a2a.BindingREST}, {Version: a2a.V03, Binding: a2a.BindingGRPC},
}

// classifyTranslated classifies a translated request as the agent reads
// it; a gRPC one must decode strictly into its request message (every
// member name is the proto's) and classify from its wire form.
func classifyTranslated(t *testing.T, u a2a.UpstreamRequest, to a2a.Form, m a2a.Method) *a2a.Operation {
	t.Helper()
	var op *a2a.Operation
	var e *a2a.Error
	switch to.Binding {
	case a2a.BindingGRPC:
		r, ok := lookup(to.Version, m)
		if !ok {
			t.Fatalf("%s has no %s", to, m)
		}
		req := newOf(r.request)
		if err := protojson.Unmarshal(u.Body, req); err != nil {
			t.Fatalf("%s %s: %s is not its request message: %v", to, m, u.Body, err)
		}
		op, e = Classify(to.Version, m, mustMarshal(t, req))
	case a2a.BindingREST:
		op, e = a2a.ClassifyREST(u.HTTPMethod, u.Path, u.Query, u.Body, to.Version, true)
	default:
		op, e = a2a.ClassifyRPC(u.Body, to.Version, true)
	}
	if e != nil {
		t.Fatalf("the %s request %s %s ?%s %s does not classify: %v", to, u.HTTPMethod, u.Path, u.Query.Encode(), u.Body, e)
	}
	return op
}

// asks is what an Operation asks, in terms every form shares.
func asks(t *testing.T, op *a2a.Operation, tenant bool) map[string]any {
	t.Helper()
	c := comparable(t, op)
	delete(c, "version")
	delete(c, "push")
	if !tenant {
		delete(c, "tenant")
	}
	if op.Method == a2a.MethodPushConfigSet {
		delete(c, "pushID") // 1.0 reads it from the config: compared there
	}
	if op.PushConfig != nil {
		p, e := a2a.ParsePushConfig(op.PushConfig)
		c["push"], c["pushReadable"] = p, e == nil
	}
	return c
}

// bridgeRefused reports whether e is the refusal of a member form to
// cannot carry, for the members restCases hold: 0.3 protobuf JSON messages
// cannot refer to other tasks, and 0.3 JSON-RPC lists push configs
// without paging; ListTasks does not exist in 0.3.
func bridgeRefused(e *a2a.Error, m a2a.Method, to a2a.Form) bool {
	if to.Version != a2a.V03 {
		return false
	}
	if m == a2a.MethodListTasks {
		return e.Code == a2a.ErrUnsupportedOperation.Code
	}
	return e.Code == a2a.ErrInvalidParams.Code &&
		(to.Binding != a2a.BindingJSONRPC && strings.Contains(e.Message, "referenceTaskIds") ||
			to.Binding == a2a.BindingJSONRPC && strings.Contains(e.Message, "pageSize"))
}

// TestTranslateRequestAllForms starts from gRPC requests of every method
// in both versions, translates each to all six forms and each of those to
// all six again, and checks that every translation classifies (gRPC ones
// through the request message) to the same operation.
func TestTranslateRequestAllForms(t *testing.T) {
	id := json.RawMessage(`"b-1"`)
	checked, refused := 0, 0
	for _, c := range restCases(t) {
		op0, e := Classify(c.v, c.m, mustMarshal(t, c.req))
		if e != nil {
			t.Fatalf("%s: %v", c.name, e)
		}
		body0 := mustJSON(t, c.req)
		for _, x := range bridgeForms {
			ux, e := a2a.TranslateRequest(op0, nil, body0, x, id)
			if e != nil {
				if !bridgeRefused(e, c.m, x) {
					t.Fatalf("%s to %s: %v", c.name, x, e)
				}
				refused++
				continue
			}
			opX := classifyTranslated(t, ux, x, c.m)
			if got, want := asks(t, opX, x.Version == c.v), asks(t, op0, x.Version == c.v); !reflect.DeepEqual(got, want) {
				t.Errorf("%s to %s: %v, want %v", c.name, x, got, want)
			}
			for _, y := range bridgeForms {
				uy, e := a2a.TranslateRequest(opX, ux.Query, ux.Body, y, id)
				if e != nil {
					if !bridgeRefused(e, c.m, y) {
						t.Fatalf("%s via %s to %s: %v", c.name, x, y, e)
					}
					refused++
					continue
				}
				opY := classifyTranslated(t, uy, y, c.m)
				both10 := x.Version == a2a.V10 && y.Version == a2a.V10
				if got, want := asks(t, opY, both10), asks(t, opX, both10); !reflect.DeepEqual(got, want) {
					t.Errorf("%s via %s to %s: %v, want %v", c.name, x, y, got, want)
				}
				checked++
			}
		}
	}
	if checked < 600 || refused == 0 {
		t.Fatalf("%d translations checked, %d refused", checked, refused)
	}
}

// TestTranslateRequestGRPCBodies: the members a gRPC request carries
// beside its ids arrive in every other form.
func TestTranslateRequestGRPCBodies(t *testing.T) {
	for _, c := range restCases(t) {
		if c.m != a2a.MethodSend || c.v != a2a.V03 {
			continue
		}
		op, e := Classify(c.v, c.m, mustMarshal(t, c.req))
		if e != nil {
			t.Fatal(e)
		}
		to := a2a.Form{Version: a2a.V10, Binding: a2a.BindingGRPC}
		u, e := a2a.TranslateRequest(op, nil, mustJSON(t, c.req), to, nil)
		if e != nil {
			t.Fatal(e)
		}
		var got struct {
			Configuration struct {
				AcceptedOutputModes        []string
				HistoryLength              int
				ReturnImmediately          bool
				TaskPushNotificationConfig struct{ URL string }
			}
			Metadata map[string]any
			Message  struct{ Parts []map[string]any }
		}
		if err := json.Unmarshal(u.Body, &got); err != nil {
			t.Fatal(err)
		}
		cf := got.Configuration
		if !reflect.DeepEqual(cf.AcceptedOutputModes, []string{"text/plain"}) || cf.HistoryLength != 2 || cf.ReturnImmediately ||
			cf.TaskPushNotificationConfig.URL != "https://hooks.example.com/c" || got.Metadata["trace"] != "abc" || len(got.Message.Parts) != 1 {
			t.Errorf("0.3 gRPC send as 1.0: %s", u.Body)
		}
	}
}

// FuzzTranslateRequestGRPC: any gRPC request the classifier reads
// translates to every form or is refused with a protocol error, and each
// translation classifies to the same operation (a gRPC one through its
// request message, decoded strictly).
func FuzzTranslateRequestGRPC(f *testing.F) {
	for _, c := range restCases(f) {
		f.Add(indexOf(f, c.v, c.m), mustMarshal(f, c.req), uint8(0))
	}
	f.Fuzz(func(t *testing.T, i uint8, msg []byte, to uint8) {
		r := rpcOf(i)
		op, e := Classify(r.version, r.method, msg)
		if e != nil {
			return
		}
		req := newOf(r.request)
		if err := proto.Unmarshal(msg, req); err != nil {
			t.Fatal(err)
		}
		body := mustJSON(t, req)
		form := bridgeForms[int(to)%len(bridgeForms)]
		u, e := a2a.TranslateRequest(op, nil, body, form, json.RawMessage("1"))
		if e != nil {
			if e.Code != a2a.ErrInvalidParams.Code && e.Code != a2a.ErrUnsupportedOperation.Code {
				t.Fatalf("%s to %s refused with %d %s", a2a.FormOf(op), form, e.Code, e.Message)
			}
			return
		}
		both10 := form.Version == a2a.V10 && r.version == a2a.V10
		if got, want := asks(t, classifyTranslated(t, u, form, r.method), both10), asks(t, op, both10); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s to %s: %v, want %v", a2a.FormOf(op), form, got, want)
		}
	})
}
