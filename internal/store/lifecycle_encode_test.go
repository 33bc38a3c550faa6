package store

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAppendHistoryIsJSON pins the hist field to what json.Marshal wrote
// before it was written by hand, so records of either can be read back.
func TestAppendHistoryIsJSON(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	for _, tt := range []struct {
		name string
		hist []TaskTransition
	}{
		{"empty", nil},
		{"first state", []TaskTransition{{To: "working", At: at}}},
		{"several", []TaskTransition{
			{From: "unknown", To: "submitted", At: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
			{From: "submitted", To: "input-required", At: at.Add(time.Second)},
			{From: "input-required", To: "completed", At: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		}},
		{"whole seconds", []TaskTransition{{From: "working", To: "canceled", At: at.Truncate(time.Second)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Helper()
			want := make([]lifecycleTransitionJSON, len(tt.hist))
			for i, tr := range tt.hist {
				want[i] = lifecycleTransitionJSON(tr)
			}
			b, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendHistory(nil, tt.hist); string(got) != string(b) {
				t.Errorf("appendHistory = %s, want %s", got, b)
			}
		})
	}
}
