package a2a

import (
	"encoding/json"
	"testing"
)

// canon re-encodes JSON with sorted keys, so documents compare by content.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestConvertEvent(t *testing.T) {
	tests := []struct {
		name     string
		from, to Version
		kind     EventKind
		in, want string
	}{
		{
			name: "0.3 task to 1.0", from: V03, to: V10, kind: EventTask,
			in: `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"input-required","message":{"kind":"message","messageId":"m1","role":"agent","parts":[{"kind":"text","text":"which?"}]},"timestamp":"2026-01-02T03:04:05Z"},
				"artifacts":[{"artifactId":"a1","parts":[{"kind":"file","file":{"uri":"https://x.example/f","name":"f.pdf","mimeType":"application/pdf"}},{"kind":"data","data":{"k":1.50}}],"metadata":{"m":true}}],
				"history":[{"kind":"message","messageId":"m0","role":"user","parts":[{"kind":"file","file":{"bytes":"aGk=","name":"hi.txt"}}]}],"metadata":{"x":"y"}}`,
			want: `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"which?"}]},"timestamp":"2026-01-02T03:04:05Z"},
				"artifacts":[{"artifactId":"a1","parts":[{"url":"https://x.example/f","filename":"f.pdf","mediaType":"application/pdf"},{"data":{"k":1.50}}],"metadata":{"m":true}}],
				"history":[{"messageId":"m0","role":"ROLE_USER","parts":[{"raw":"aGk=","filename":"hi.txt"}]}],"metadata":{"x":"y"}}}`,
		},
		{
			name: "1.0 task to 0.3", from: V10, to: V03, kind: EventTask,
			in: `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"},"artifacts":[{"artifactId":"a1","parts":[{"text":"x","mediaType":"text/plain"},{"raw":"aGk=","filename":"hi.txt","mediaType":"text/plain"},{"data":[1,2]}]}],
				"history":[{"messageId":"m0","role":"ROLE_USER","parts":[{"url":"https://x.example/f"}]}]}}`,
			want: `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"canceled"},"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"x"},{"kind":"file","file":{"bytes":"aGk=","name":"hi.txt","mimeType":"text/plain"}},{"kind":"data","data":[1,2]}]}],
				"history":[{"kind":"message","messageId":"m0","role":"user","parts":[{"kind":"file","file":{"uri":"https://x.example/f"}}]}]}`,
		},
		{
			name: "0.3 status update to 1.0 drops final", from: V03, to: V10, kind: EventStatusUpdate,
			in:   `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"completed"},"final":true,"metadata":{"a":1}}`,
			want: `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"metadata":{"a":1}}}`,
		},
		{
			name: "1.0 status update to 0.3 sets final", from: V10, to: V03, kind: EventStatusUpdate,
			in:   `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_AUTH_REQUIRED"}}}`,
			want: `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"auth-required"},"final":true}`,
		},
		{
			name: "1.0 working update to 0.3 is not final", from: V10, to: V03, kind: EventStatusUpdate,
			in:   `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":2}}}`,
			want: `{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working"},"final":false}`,
		},
		{
			name: "0.3 artifact update to 1.0", from: V03, to: V10, kind: EventArtifactUpdate,
			in:   `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]},"append":true,"lastChunk":false}`,
			want: `{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"append":true,"lastChunk":false}}`,
		},
		{
			name: "0.3 protobuf JSON task to 1.0", from: V03, to: V10, kind: EventTask,
			in:   `{"task":{"id":"t1","status":{"state":"TASK_STATE_CANCELLED","message":{"messageId":"m","role":"ROLE_AGENT","content":[{"file":{"fileWithUri":"https://x.example/f","mimeType":"a/b"}},{"data":{"data":{"k":"v"}}}]}}}}`,
			want: `{"task":{"id":"t1","status":{"state":"TASK_STATE_CANCELED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"url":"https://x.example/f","mediaType":"a/b"},{"data":{"k":"v"}}]}}}}`,
		},
		{
			name: "legacy task to 0.3", from: VLegacy, to: V03, kind: EventTask,
			in:   `{"id":"t1","sessionId":"s1","status":{"state":"working"},"artifacts":[{"parts":[{"type":"text","text":"x"}]}]}`,
			want: `{"kind":"task","id":"t1","contextId":"s1","status":{"state":"working"},"artifacts":[{"parts":[{"kind":"text","text":"x"}]}]}`,
		},
		{
			name: "bare 1.0 status update is wrapped", from: V10, to: V10, kind: EventStatusUpdate,
			in:   `{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}`,
			want: `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConvertEvent([]byte(tc.in), tc.from, tc.kind, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if canon(t, got) != canon(t, []byte(tc.want)) {
				t.Fatalf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// A payload already in the consumer's shape is sent as it is: the bytes
// the agent produced, which the event id and any signature cover.
func TestConvertEventKeepsBytesInTheTargetShape(t *testing.T) {
	for _, tc := range []struct {
		from, to Version
		kind     EventKind
		in       string
	}{
		{V10, V10, EventStatusUpdate, `{ "statusUpdate" : {"taskId":"t","status":{"state":"TASK_STATE_WORKING"}, "x": 1.50}}`},
		{V03, V03, EventTask, `{"kind":"task", "id":"t","status":{"state":"working"}, "x": 1.50}`},
	} {
		got, err := ConvertEvent([]byte(tc.in), tc.from, tc.kind, tc.to)
		if err != nil || string(got) != tc.in {
			t.Fatalf("ConvertEvent(%s) = %s, %v; want it unchanged", tc.in, got, err)
		}
	}
}

func TestConvertEventRefusesWhatIsNotAnEvent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind EventKind
	}{
		{`[1,2]`, EventTask}, {`"task"`, EventTask}, {`{"kind":"cat"}`, EventTask}, {`{} {}`, EventTask}, {`{"x":1}`, EventNone},
	} {
		if _, err := ConvertEvent([]byte(tc.in), V10, tc.kind, V03); err == nil {
			t.Errorf("ConvertEvent(%s) converted", tc.in)
		}
	}
}

func TestStripPushConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		binding Binding
		in      string
		want    string
	}{
		{"first of several", BindingJSONRPC,
			`{"jsonrpc":"2.0","params":{"configuration":{ "taskPushNotificationConfig" : {"url":"u"} , "blocking":true},"message":{}},"id":1}`,
			`{"jsonrpc":"2.0","params":{"configuration":{ "blocking":true},"message":{}},"id":1}`},
		{"last of several", BindingJSONRPC,
			`{"params":{"configuration":{"blocking":true ,"pushNotificationConfig":{"url":"u,}"}}}}`,
			`{"params":{"configuration":{"blocking":true}}}`},
		{"alone", BindingREST,
			`{"message":{"configuration":{"pushNotificationConfig":1}},"configuration":{"push_notification_config":{"url":"u"}}}`,
			`{"message":{"configuration":{"pushNotificationConfig":1}},"configuration":{}}`},
		{"absent", BindingREST, `{"configuration":{"blocking":true}}`, `{"configuration":{"blocking":true}}`},
		{"no configuration", BindingJSONRPC, `{"params":{"message":{}}}`, `{"params":{"message":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StripPushConfig([]byte(tc.in), tc.binding)
			if err != nil || string(got) != tc.want {
				t.Fatalf("StripPushConfig = %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

func TestParsePushConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want PushConfig
		ok   bool
	}{
		{`{"id":"c","url":"https://x.example/h","token":"t","authentication":{"scheme":"Bearer","credentials":"k"}}`, PushConfig{"c", "https://x.example/h", "t", "Bearer", "k"}, true},
		{`{"url":"https://x.example/h","authentication":{"schemes":["Basic","Bearer"],"credentials":"k"}}`, PushConfig{"", "https://x.example/h", "", "Basic", "k"}, true},
		{`{"id":"c"}`, PushConfig{}, false},
		{`{"url":7}`, PushConfig{}, false},
	} {
		got, err := ParsePushConfig([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePushConfig(%s) = %+v, %v", tc.in, got, err)
		}
	}
}

// isStreamResponse is ConvertEvent's shortcut for a 1.0 event a 1.0
// consumer gets as it is: whatever it takes, decoding the payload whole
// must find it a StreamResponse too, so that the shortcut never passes on
// what the full conversion would have rewritten or refused.
func FuzzIsStreamResponse(f *testing.F) {
	for _, seed := range []string{
		`{"task":{"id":"t"}}`, `{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}`,
		`{"artifactUpdate":{}}`, `{"message":{"messageId":"m"}}`, `{"task":{},"task":{}}`, `{"t\u0061sk":{}}`,
		`{"task":{}} {}`, `{"task":[]}`, `{"task":{},"kind":"task"}`, `{"kind":"task","id":"t"}`, `{"Task":{}}`,
		`{"task":{"id":"\xff"}}`, `[{"task":{}}]`, `{"task":{"id":1e400}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if !isStreamResponse(payload) {
			return
		}
		v, err := decodeJSON(payload)
		if err != nil {
			t.Fatalf("taken as a StreamResponse, but it does not decode: %v", err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatal("taken as a StreamResponse, but it is no object")
		}
		if inner, _, wrapped := unwrapEvent(obj, EventTask); inner == nil || !wrapped {
			t.Fatal("taken as a StreamResponse, but the full reading finds none")
		}
	})
}
