package a2a

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// readAs reads an answer as the gateway reads one in form f: through
// ReadAnswer in f's version, gRPC through its protobuf JSON (which is the
// HTTP+JSON binding's), JSON-RPC in its envelope.
func readAs(m Method, f Form, result []byte) (Event, error) {
	op := Operation{Method: m, Version: f.Version, Binding: f.Binding, RPCID: []byte(`7`)}
	payload := result
	switch f.Binding {
	case BindingGRPC:
		op.Binding = BindingREST
	case BindingJSONRPC:
		payload = RPCResultFrame(op.RPCID, result)
	}
	ev, _, err := ReadAnswer(&op, payload)
	return ev, err
}

// sameEvent compares what the gateway reads of an answer before and
// after translation: what ownership, lifecycle and dedupe act on.
func sameEvent(a, b Event) bool {
	ra, rb := slices.Clone(a.ReferenceTaskIDs), slices.Clone(b.ReferenceTaskIDs)
	slices.Sort(ra)
	slices.Sort(rb)
	return a.Kind == b.Kind && a.TaskID == b.TaskID && a.ContextID == b.ContextID && a.State == b.State && slices.Equal(ra, rb)
}

// checkAgreement: an answer the gateway reads in the agent's form and the
// bridge translates reads the same in the caller's form, so the ids the
// gateway judged are the ids the caller gets; and an answer the gateway
// refuses in the agent's form is not what the bridge is asked about.
func checkAgreement(t *testing.T, m Method, from, to Form, in []byte) {
	t.Helper()
	before, err := readAs(m, from, in)
	if err != nil || m == MethodListTasks || m == MethodExtendedCard {
		return
	}
	out, err := TranslateResult(m, in, from, to)
	if err != nil {
		return
	}
	after, err := readAs(m, to, out)
	if err != nil {
		t.Fatalf("%s %s -> %s: the translation is refused in the caller's form: %v\n in: %s\nout: %s", m, from, to, err, in, out)
	}
	if !sameEvent(before, after) {
		t.Fatalf("%s %s -> %s: read %+v before and %+v after translation\n in: %s\nout: %s", m, from, to, before, after, in, out)
	}
}

// FuzzBridgeAgreement: ReadAnswer and TranslateResult agree on every
// answer both accept.
func FuzzBridgeAgreement(f *testing.F) {
	for _, c := range resultCases() {
		for _, in := range []string{c.a10, c.a03, c.p10, c.p03} {
			f.Add(uint8(c.m), uint8(0), uint8(3), []byte(in))
		}
	}
	for _, in := range agreementAttacks {
		f.Add(uint8(in.m), uint8(slices.Index(bridgeForms, in.from)), uint8(slices.Index(bridgeForms, in.to)), []byte(in.in))
	}
	f.Fuzz(func(t *testing.T, m, i, j uint8, in []byte) {
		method := Method(m % uint8(len(methodNames)))
		from, to := bridgeForms[int(i)%len(bridgeForms)], bridgeForms[int(j)%len(bridgeForms)]
		checkAgreement(t, method, from, to, in)
	})
}

// agreementAttacks are answers spelled one step off the usual: every one
// must be refused, or read the same on both sides of the bridge.
var agreementAttacks = []struct {
	m        Method
	from, to Form
	in       string
}{
	{MethodGetTask, form10, form03, `{"id":"t1","contextId":"c1","TaskId":"t2","status":{"state":"TASK_STATE_WORKING"}}`},
	{MethodGetTask, form10, form03, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"m","role":"ROLE_AGENT","parts":[],"t\u0061skId":"t2"}]}`},
	{MethodGetTask, form10, form03, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"artifactId":"a","parts":[{"text":"x"}],"metadata":{"taskId":"t2"}}]}`},
	{MethodGetTask, form03, form10, `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working","message":{"kind":"message","messageId":"m","role":"agent","parts":[],"taskId":"t2"}}}`},
	{MethodGetTask, form03, form10, `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},"history":[{"kind":"message","messageId":"m","role":"agent","parts":[],"referenceTaskIds":["other"]}]}`},
	{MethodGetTask, form03REST, form10, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","update":{"messageId":"m","role":"ROLE_AGENT","content":[],"taskId":"t2"}}}`},
	{MethodGetTask, form03REST, form03, `{"id":"t1","context_id":"c2","status":{"state":"TASK_STATE_WORKING"}}`},
	{MethodGetTask, form10, form03REST, `{"id":"t1","contextId":"c1","status":{"state":5}}`},
	{MethodGetTask, form10, form03, `{"id":"t1","contextId":"c1","status":{"state":"task_state_completed"}}`},
	{MethodGetTask, form03, form10, `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"Completed"}}`},
	{MethodGetTask, form03, form10, `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"cancelled"}}`},
	{MethodSend, form10, form03, `{"task":{"id":"t1","contextId":"c1"},"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}`},
	{MethodSend, form03, form10, `{"kind":"message","messageId":"m","role":"agent","parts":[],"id":"t1","status":{"state":"working"}}`},
	{MethodSend, form03, form10, `{"kind":"message","messageId":"m","role":"agent","parts":[],"taskId":"t1","referenceTaskIds":["t2","t2"]}`},
	{MethodStream, form03, form10, `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working"},"final":true}`},
	{MethodStream, form03, form10, `{"kind":"status-update","id":"t1","contextId":"c1","status":{"state":"working"},"final":false}`},
	{MethodStream, form03, form10, `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[]},"id":"t2"}`},
	{MethodStream, form03REST, form03, `{"msg":{"messageId":"m","role":"ROLE_AGENT","content":[],"taskId":"t1"}}`},
	{MethodStream, form10, form03, `{"statusUpdate":{"taskId":"t1\u0000","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`},
	{MethodStream, form10, form03, `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m","role":"ROLE_AGENT","parts":[],"contextId":"c9"}}}}`},
}

// TestBridgeAgreementAttacks runs the attack answers through every pair of
// forms.
func TestBridgeAgreementAttacks(t *testing.T) {
	for _, a := range agreementAttacks {
		for _, from := range bridgeForms {
			for _, to := range bridgeForms {
				checkAgreement(t, a.m, from, to, []byte(a.in))
			}
		}
	}
}

// TestTranslateResultEmpty: an empty answer (which ReadAnswer lets through
// for a REST answer without a task) is no answer in any other form: only a
// deleted push config is spelled from nothing.
func TestTranslateResultEmpty(t *testing.T) {
	for m := range Method(len(methodNames)) {
		for _, from := range bridgeForms {
			for _, to := range bridgeForms {
				if from == to || m == MethodExtendedCard {
					continue
				}
				for _, in := range []string{"", " \n"} {
					out, err := TranslateResult(m, []byte(in), from, to)
					if m == MethodPushConfigDelete {
						if err != nil || len(out) == 0 {
							t.Errorf("delete %s -> %s of %q: %q, %v", from, to, in, out, err)
						}
						continue
					}
					if err == nil {
						t.Errorf("%s %s -> %s: the empty answer %q became %q", m, from, to, in, out)
					}
				}
			}
		}
	}
}

// TestBridgeRefusalClipsNames: the member an answer or request is refused
// for is named, clipped, in the error (which is logged, or the caller's
// error message): a member name of any length makes a short line.
func TestBridgeRefusalClipsNames(t *testing.T) {
	long := strings.Repeat("k", 10000)
	_, err := TranslateResult(MethodGetTask, []byte(`{"id":"t","`+long+`":1}`), form10, form03)
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("answer refusal: %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
	_, e := TranslateRequest(&Operation{Method: MethodSend, Version: V03, Binding: BindingJSONRPC, RPCID: []byte("1")}, nil,
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[],"`+long+`":1}}}`), form10, []byte("1"))
	if e == nil || len(e.Message) > 200 {
		t.Fatalf("request refusal: %v", e)
	}
}

// TestBridgeRequestPathIDs: ids a caller names (which the agent chose, so
// any string) that would make another path or resource name when spelled
// in the agent's form are refused; every other id reaches the agent as the
// same id of the same method.
func TestBridgeRequestPathIDs(t *testing.T) {
	ids := []string{"..", ".", "a/../b", "a/b", "a%2Fb", "%2e%2e", "x:cancel", "x:subscribe", "tasks", "a?b=1", "a#b", "a;b", " x", `a\u0000b`, "pushNotificationConfigs"}
	calls := []struct{ method, params string }{
		{"GetTask", `{"id":"ID"}`},
		{"CancelTask", `{"id":"ID"}`},
		{"SubscribeToTask", `{"id":"ID"}`},
		{"GetTaskPushNotificationConfig", `{"taskId":"ID","id":"ID"}`},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"t","id":"ID"}`},
		{"ListTaskPushNotificationConfigs", `{"taskId":"ID"}`},
	}
	translated := 0
	for _, id := range ids {
		for _, c := range calls {
			for _, to := range []Form{{V10, BindingREST}, {V03, BindingREST}, {V03, BindingJSONRPC}} {
				params := strings.ReplaceAll(c.params, "ID", id)
				body := rpcRequest(c.method, params)
				op, e := ClassifyRPC(body, V10, true)
				if e != nil {
					continue // the classifier refuses it for every agent
				}
				u, e := TranslateRequest(op, nil, body, to, []byte("7"))
				if e != nil {
					continue
				}
				translated++
				var back *Operation
				if to.Binding == BindingREST {
					back, e = ClassifyREST(u.HTTPMethod, u.Path, u.Query, u.Body, to.Version, true)
				} else {
					back, e = ClassifyRPC(u.Body, to.Version, true)
				}
				if e != nil || back.Method != op.Method || back.TaskID != op.TaskID || back.PushConfigID != op.PushConfigID {
					t.Errorf("%s %s to %s: %s %s %s reads as %+v (%v)", c.method, params, to, u.HTTPMethod, u.Path, u.Body, back, e)
				}
				if to.Binding == BindingREST {
					for _, seg := range strings.Split(u.Path, "/") {
						if seg == "." || seg == ".." {
							t.Errorf("%s %s to %s: the path %s has a dot segment", c.method, params, to, u.Path)
						}
					}
				}
			}
		}
	}
	if translated < len(ids)*len(calls) {
		t.Fatalf("only %d requests translated", translated)
	}
}
