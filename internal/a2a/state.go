package a2a

import "strings"

// State is a task state, normalised across every dialect's spelling.
type State uint8

const (
	StateUnknown State = iota // unspecified, unknown or unrecognised
	StateSubmitted
	StateWorking
	StateInputRequired
	StateAuthRequired
	StateCompleted
	StateFailed
	StateCanceled
	StateRejected
)

// AllStates lists every known state except StateUnknown, in lifecycle order.
var AllStates = []State{
	StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired,
	StateCompleted, StateFailed, StateCanceled, StateRejected,
}

// stateSpellings is the single table of wire spellings: index 0 is the 0.x
// spelling (also the label used in metrics and logs), index 1 the 1.0 enum.
var stateSpellings = [...][2]string{
	StateUnknown:       {"unknown", "TASK_STATE_UNSPECIFIED"},
	StateSubmitted:     {"submitted", "TASK_STATE_SUBMITTED"},
	StateWorking:       {"working", "TASK_STATE_WORKING"},
	StateInputRequired: {"input-required", "TASK_STATE_INPUT_REQUIRED"},
	StateAuthRequired:  {"auth-required", "TASK_STATE_AUTH_REQUIRED"},
	StateCompleted:     {"completed", "TASK_STATE_COMPLETED"},
	StateFailed:        {"failed", "TASK_STATE_FAILED"},
	StateCanceled:      {"canceled", "TASK_STATE_CANCELED"},
	StateRejected:      {"rejected", "TASK_STATE_REJECTED"},
}

// String is the short lower-case name, used in logs and metric labels.
func (s State) String() string {
	if int(s) < len(stateSpellings) {
		return stateSpellings[s][0]
	}
	return "unknown"
}

// Wire is the spelling a peer of version v expects.
func (s State) Wire(v Version) string {
	if int(s) >= len(stateSpellings) {
		s = StateUnknown
	}
	if v == V10 {
		return stateSpellings[s][1]
	}
	return stateSpellings[s][0]
}

// ParseState accepts every spelling seen on the wire: "working",
// "TASK_STATE_WORKING", the 0.3 gRPC "TASK_STATE_CANCELLED" and "cancelled".
// Anything else is StateUnknown.
func ParseState(s string) State {
	switch strings.ToLower(s) {
	case "task_state_cancelled", "cancelled":
		return StateCanceled
	}
	for i, sp := range stateSpellings {
		if s == sp[0] || s == sp[1] {
			return State(i)
		}
	}
	// Some agents capitalise; accept a case-insensitive match as a last resort.
	for i, sp := range stateSpellings {
		if strings.EqualFold(s, sp[0]) || strings.EqualFold(s, sp[1]) {
			return State(i)
		}
	}
	return StateUnknown
}

// Terminal reports whether no further transition may follow.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled || s == StateRejected
}

// Interrupted reports whether the task waits on the client.
func (s State) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// transitions is the one table of allowed state changes per version. A
// missing entry means the change is not allowed. Terminal states have no
// outgoing edges in any version. Legacy agents never emit the 0.3 states.
var transitions = map[Version]map[State][]State{
	V10:     edges03and10,
	V03:     edges03and10,
	VLegacy: edgesLegacy,
}

// edges03and10 is shared: 0.3 and 1.0 allow the same edges, only the
// spellings differ.
var edges03and10 = map[State][]State{
	StateUnknown:       {StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired, StateCompleted, StateFailed, StateCanceled, StateRejected},
	StateSubmitted:     {StateWorking, StateInputRequired, StateAuthRequired, StateCompleted, StateFailed, StateCanceled, StateRejected},
	StateWorking:       {StateInputRequired, StateAuthRequired, StateCompleted, StateFailed, StateCanceled, StateRejected},
	StateInputRequired: {StateWorking, StateSubmitted, StateAuthRequired, StateCompleted, StateFailed, StateCanceled, StateRejected},
	StateAuthRequired:  {StateWorking, StateSubmitted, StateInputRequired, StateCompleted, StateFailed, StateCanceled, StateRejected},
}

var edgesLegacy = map[State][]State{
	StateUnknown:       {StateSubmitted, StateWorking, StateInputRequired, StateCompleted, StateFailed, StateCanceled},
	StateSubmitted:     {StateWorking, StateInputRequired, StateCompleted, StateFailed, StateCanceled},
	StateWorking:       {StateInputRequired, StateCompleted, StateFailed, StateCanceled},
	StateInputRequired: {StateWorking, StateSubmitted, StateCompleted, StateFailed, StateCanceled},
}

// CanTransition reports whether a task of version v may move from one state
// to another. Staying in the same non-terminal state is allowed (a repeated
// working update carries new messages or artifacts).
func CanTransition(v Version, from, to State) bool {
	if from == to {
		return !from.Terminal() && transitions[v][from] != nil
	}
	for _, s := range transitions[v][from] {
		if s == to {
			return true
		}
	}
	return false
}
