package a2a

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseState(t *testing.T) {
	cases := []struct {
		in   string
		want State
	}{
		// 0.x spellings.
		{"submitted", StateSubmitted},
		{"working", StateWorking},
		{"input-required", StateInputRequired},
		{"auth-required", StateAuthRequired},
		{"completed", StateCompleted},
		{"failed", StateFailed},
		{"canceled", StateCanceled},
		{"rejected", StateRejected},
		{"unknown", StateUnknown},
		// 1.0 enum names.
		{"TASK_STATE_SUBMITTED", StateSubmitted},
		{"TASK_STATE_WORKING", StateWorking},
		{"TASK_STATE_INPUT_REQUIRED", StateInputRequired},
		{"TASK_STATE_AUTH_REQUIRED", StateAuthRequired},
		{"TASK_STATE_COMPLETED", StateCompleted},
		{"TASK_STATE_FAILED", StateFailed},
		{"TASK_STATE_CANCELED", StateCanceled},
		{"TASK_STATE_REJECTED", StateRejected},
		{"TASK_STATE_UNSPECIFIED", StateUnknown},
		// British spelling: 0.3 gRPC and some agents.
		{"TASK_STATE_CANCELLED", StateCanceled},
		{"cancelled", StateCanceled},
		// Capitalised by some agents; every spelling is accepted in any case.
		{"Completed", StateCompleted},
		{"INPUT-REQUIRED", StateInputRequired},
		{"task_state_working", StateWorking},
		{"Task_State_Auth_Required", StateAuthRequired},
		{"Cancelled", StateCanceled},
		{"CANCELLED", StateCanceled},
		{"task_state_cancelled", StateCanceled},
		// Not states.
		{"", StateUnknown},
		{"paused", StateUnknown},
		{"TASK_STATE_", StateUnknown},
		{"working ", StateUnknown},
		{" working", StateUnknown},
		{"input_required", StateUnknown},
		{"TASK_STATE_INPUT-REQUIRED", StateUnknown},
		{"3", StateUnknown},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			if got := ParseState(tc.in); got != tc.want {
				t.Errorf("ParseState(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestStateWire(t *testing.T) {
	cases := []struct {
		state            State
		legacy, v03, v10 string
	}{
		{StateUnknown, "unknown", "unknown", "TASK_STATE_UNSPECIFIED"},
		{StateSubmitted, "submitted", "submitted", "TASK_STATE_SUBMITTED"},
		{StateWorking, "working", "working", "TASK_STATE_WORKING"},
		{StateInputRequired, "input-required", "input-required", "TASK_STATE_INPUT_REQUIRED"},
		{StateAuthRequired, "auth-required", "auth-required", "TASK_STATE_AUTH_REQUIRED"},
		{StateCompleted, "completed", "completed", "TASK_STATE_COMPLETED"},
		{StateFailed, "failed", "failed", "TASK_STATE_FAILED"},
		{StateCanceled, "canceled", "canceled", "TASK_STATE_CANCELED"},
		{StateRejected, "rejected", "rejected", "TASK_STATE_REJECTED"},
		{State(200), "unknown", "unknown", "TASK_STATE_UNSPECIFIED"},
	}
	for _, tc := range cases {
		t.Run(tc.state.String(), func(t *testing.T) {
			for _, w := range []struct {
				v    Version
				want string
			}{{VLegacy, tc.legacy}, {V03, tc.v03}, {V10, tc.v10}} {
				got := tc.state.Wire(w.v)
				if got != w.want {
					t.Errorf("Wire(%v) = %q, want %q", w.v, got, w.want)
				}
				if tc.state <= StateRejected && ParseState(got) != tc.state {
					t.Errorf("ParseState(Wire(%v)) = %v, want %v", w.v, ParseState(got), tc.state)
				}
			}
			if tc.state.String() != tc.legacy {
				t.Errorf("String() = %q, want %q", tc.state.String(), tc.legacy)
			}
		})
	}
}

func TestAllStates(t *testing.T) {
	if len(AllStates) != 8 {
		t.Fatalf("AllStates has %d states, want 8", len(AllStates))
	}
	if slices.Contains(AllStates, StateUnknown) {
		t.Error("AllStates contains StateUnknown")
	}
	labels := map[string]bool{}
	for _, s := range AllStates {
		l := s.String()
		if labels[l] || strings.ToLower(l) != l {
			t.Errorf("label %q is duplicated or not lower case", l)
		}
		labels[l] = true
	}
}

func TestTerminalAndInterrupted(t *testing.T) {
	cases := []struct {
		state       State
		terminal    bool
		interrupted bool
	}{
		{StateUnknown, false, false},
		{StateSubmitted, false, false},
		{StateWorking, false, false},
		{StateInputRequired, false, true},
		{StateAuthRequired, false, true},
		{StateCompleted, true, false},
		{StateFailed, true, false},
		{StateCanceled, true, false},
		{StateRejected, true, false},
	}
	for _, tc := range cases {
		if got := tc.state.Terminal(); got != tc.terminal {
			t.Errorf("%v.Terminal() = %v, want %v", tc.state, got, tc.terminal)
		}
		if got := tc.state.Interrupted(); got != tc.interrupted {
			t.Errorf("%v.Interrupted() = %v, want %v", tc.state, got, tc.interrupted)
		}
	}
}

var allVersions = []Version{VLegacy, V03, V10}

func everyState() []State { return append([]State{StateUnknown}, AllStates...) }

// No edge leaves a terminal state, in any version, not even to itself.
func TestCanTransitionTerminalIsFinal(t *testing.T) {
	for _, v := range allVersions {
		for _, from := range everyState() {
			if !from.Terminal() {
				continue
			}
			for _, to := range everyState() {
				if CanTransition(v, from, to) {
					t.Errorf("%v: %v -> %v allowed", v, from, to)
				}
			}
		}
	}
}

// Legacy agents have neither auth-required nor rejected: no edge leads into
// or out of them.
func TestCanTransitionLegacyStates(t *testing.T) {
	for _, s := range []State{StateAuthRequired, StateRejected} {
		for _, other := range everyState() {
			if CanTransition(VLegacy, s, other) {
				t.Errorf("legacy: %v -> %v allowed", s, other)
			}
			if CanTransition(VLegacy, other, s) {
				t.Errorf("legacy: %v -> %v allowed", other, s)
			}
		}
	}
}

func TestCanTransition(t *testing.T) {
	cases := []struct {
		from, to State
		versions []Version // versions that allow the edge; all others refuse it
	}{
		{StateUnknown, StateSubmitted, allVersions},
		{StateUnknown, StateWorking, allVersions},
		{StateUnknown, StateCompleted, allVersions},
		{StateUnknown, StateAuthRequired, []Version{V03, V10}},
		{StateUnknown, StateRejected, []Version{V03, V10}},
		{StateSubmitted, StateWorking, allVersions},
		{StateSubmitted, StateCompleted, allVersions},
		{StateSubmitted, StateRejected, []Version{V03, V10}},
		{StateSubmitted, StateSubmitted, allVersions},
		{StateWorking, StateWorking, allVersions},
		{StateWorking, StateInputRequired, allVersions},
		{StateWorking, StateAuthRequired, []Version{V03, V10}},
		{StateWorking, StateCompleted, allVersions},
		{StateWorking, StateFailed, allVersions},
		{StateWorking, StateCanceled, allVersions},
		{StateWorking, StateRejected, []Version{V03, V10}},
		{StateWorking, StateSubmitted, nil},
		{StateWorking, StateUnknown, nil},
		{StateInputRequired, StateWorking, allVersions},
		{StateInputRequired, StateSubmitted, allVersions},
		{StateInputRequired, StateInputRequired, allVersions},
		{StateInputRequired, StateAuthRequired, []Version{V03, V10}},
		{StateInputRequired, StateCanceled, allVersions},
		{StateAuthRequired, StateWorking, []Version{V03, V10}},
		{StateAuthRequired, StateAuthRequired, []Version{V03, V10}},
		{StateAuthRequired, StateInputRequired, []Version{V03, V10}},
		{StateAuthRequired, StateFailed, []Version{V03, V10}},
		{StateCompleted, StateWorking, nil},
		{StateCompleted, StateCompleted, nil},
		{StateFailed, StateSubmitted, nil},
		{StateCanceled, StateCanceled, nil},
		{StateRejected, StateWorking, nil},
	}
	for _, tc := range cases {
		for _, v := range allVersions {
			want := slices.Contains(tc.versions, v)
			if got := CanTransition(v, tc.from, tc.to); got != want {
				t.Errorf("CanTransition(%v, %v, %v) = %v, want %v", v, tc.from, tc.to, got, want)
			}
		}
	}
}

func TestCanTransitionUnknownVersion(t *testing.T) {
	for _, v := range []Version{0, 9} {
		for _, from := range everyState() {
			for _, to := range everyState() {
				if from != to && CanTransition(v, from, to) {
					t.Errorf("version %d: %v -> %v allowed", v, from, to)
				}
			}
		}
	}
}
