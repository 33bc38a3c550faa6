package a2a

import "testing"

func TestFoldTask(t *testing.T) {
	const snap = `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"1"},{"text":"2"}]},{"artifactId":"b","parts":[{"text":"x"}]}]}`
	for _, tc := range []struct {
		name       string
		snap       string
		kind       EventKind
		v          Version
		event, out string
	}{
		{
			// An upstream subscription's snapshot taken before the last
			// events: it neither reopens the task nor loses artifacts.
			name: "stale task", snap: snap, kind: EventTask, v: V10,
			event: `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"artifactId":"a","parts":[{"text":"1"}]},{"artifactId":"c","parts":[{"text":"new"}]}],"history":[]}}`,
			out:   `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"1"},{"text":"2"}]},{"artifactId":"c","parts":[{"text":"new"}]},{"artifactId":"b","parts":[{"text":"x"}]}],"history":[]}`,
		},
		{
			name: "0.3 artifact replaces", snap: snap, kind: EventArtifactUpdate, v: V03,
			event: `{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"b","parts":[{"kind":"text","text":"y"}]}}`,
			out:   `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"1"},{"text":"2"}]},{"artifactId":"b","parts":[{"text":"y"}]}]}`,
		},
		{
			name: "update before any task", kind: EventStatusUpdate, v: V10,
			event: `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"metadata":{"a2a-gateway/watchdog":{"action":"escalate"}}}}`,
			out:   `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"},"metadata":{"a2a-gateway/watchdog":{"action":"escalate"}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prior []byte
			if tc.snap != "" {
				prior = []byte(tc.snap)
			}
			got, err := FoldTask(prior, []byte(tc.event), tc.v, tc.kind, "t1", "c1")
			if err != nil || canon(t, got) != canon(t, []byte(tc.out)) {
				t.Fatalf("FoldTask = %s, %v\nwant %s", got, err, tc.out)
			}
		})
	}
}
