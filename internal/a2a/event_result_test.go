package a2a

import (
	"reflect"
	"testing"
)

func TestParseRPCEventResult(t *testing.T) {
	cases := []struct {
		name, in, result string
		kind             EventKind
		wantErr          bool
	}{
		{"1.0 status update", `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`,
			`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`, EventStatusUpdate, false},
		{"0.3 task, spacing kept", `{"jsonrpc":"2.0","id":"x","result": {"kind":"task", "id":"t","contextId":"c"} }`,
			`{"kind":"task", "id":"t","contextId":"c"}`, EventTask, false},
		{"null result", `{"jsonrpc":"2.0","id":1,"result":null}`, "null", EventNone, false},
		{"error response", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no"}}`, "", EventError, false},
		{"not JSON-RPC", `[1]`, "", EventNone, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, res, err := ParseRPCEventResult([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if string(res) != tc.result || ev.Kind != tc.kind {
				t.Fatalf("got %v %q, want %v %q", ev.Kind, res, tc.kind, tc.result)
			}
			if tc.wantErr {
				return
			}
			if plain, err := ParseRPCEvent([]byte(tc.in)); err != nil || !reflect.DeepEqual(plain, ev) {
				t.Fatalf("ParseRPCEvent = %+v, %v; want %+v", plain, err, ev)
			}
		})
	}
}
