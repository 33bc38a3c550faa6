package webhook

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Delivery
	}{
		{
			name: "0.3 task (a2a-go sender, @a2a-js/sdk v0.3 serializer)",
			body: `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}`,
			want: Delivery{TaskID: "t1", State: "completed", Kind: "task", Event: "task:completed"},
		},
		{
			name: "0.3 task with artifacts, the gateway's rendering for 0.3 consumers",
			body: `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"working"},"artifacts":[` +
				`{"artifactId":"a1","parts":[{"kind":"text","text":"chunk 1"},{"kind":"text","text":"chunk 2"}]},` +
				`{"artifactId":"a2","parts":[{"kind":"text","text":"other"}]}]}`,
			want: Delivery{TaskID: "t1", State: "working", Kind: "task", Event: "task:working [chunk 1chunk 2, other]"},
		},
		{
			name: "0.3 status update",
			body: `{"kind":"status-update","taskId":"t2","contextId":"c1","status":{"state":"working"},"final":false}`,
			want: Delivery{TaskID: "t2", State: "working", Kind: "status_update", Event: "status:working"},
		},
		{
			name: "1.0 StreamResponse with a task",
			body: `{"task":{"id":"t3","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}`,
			want: Delivery{TaskID: "t3", State: "input-required", Kind: "task", Event: "task:input-required"},
		},
		{
			name: "1.0 StreamResponse with a status update",
			body: `{"statusUpdate":{"taskId":"t3","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
			want: Delivery{TaskID: "t3", State: "completed", Kind: "status_update", Event: "status:completed"},
		},
		{
			name: "1.0 StreamResponse with an artifact update has no state",
			body: `{"artifactUpdate":{"taskId":"t4","contextId":"c1","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}`,
			want: Delivery{TaskID: "t4", Kind: "artifact_update", Event: "artifact:x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse([]byte(tt.body)); got != tt.want {
				t.Errorf("Parse = %+v, want %+v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`not json`, `{"hello":"world"}`, `[]`} {
		if d := Parse([]byte(bad)); d.Error == "" {
			t.Errorf("Parse(%q) = %+v, want an error", bad, d)
		}
	}
}
