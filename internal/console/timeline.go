package console

import (
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// timeline is a task's states drawn to scale: each segment's width is its
// share of the task's life, so a long wait shows as long.
type timeline struct {
	Segments []segment
	Total    time.Duration
	// Interruptions and Resumes count the waits on the client and the
	// returns to work after them.
	Interruptions, Resumes int
	// Truncated: the record keeps only its newest transitions.
	Truncated bool
}

type segment struct {
	State string
	From  time.Time
	Dwell time.Duration
	// X and Width place the segment, in percent of the bar.
	X, Width float64
	// Open: the task is still in this state.
	Open bool
	// Event says what entering the state was: "interrupted", "resumed",
	// "ended" or "".
	Event string
}

// minWidth keeps a very short state visible in the bar, in percent.
const minWidth = 0.4

func buildTimeline(rec store.TaskLifecycle, now time.Time) timeline {
	var tl timeline
	tl.Truncated = len(rec.History) >= store.MaxLifecycleHistory
	type entry struct {
		state string
		at    time.Time
	}
	var entries []entry
	if len(rec.History) == 0 || rec.History[0].At.After(rec.Created) {
		first := rec.State
		if len(rec.History) > 0 {
			first = rec.History[0].From
		}
		entries = append(entries, entry{first, rec.Created})
	}
	for _, h := range rec.History {
		entries = append(entries, entry{h.To, h.At})
	}
	end := now
	if a2a.ParseState(rec.State).Terminal() {
		end = rec.StateSince
	}
	start := rec.Created
	if len(entries) > 0 && entries[0].at.Before(start) {
		start = entries[0].at
	}
	tl.Total = max(end.Sub(start), 0)
	prev := ""
	for i, e := range entries {
		until := end
		if i+1 < len(entries) {
			until = entries[i+1].at
		}
		s := segment{State: e.state, From: e.at, Dwell: max(until.Sub(e.at), 0), Open: i == len(entries)-1 && !a2a.ParseState(e.state).Terminal()}
		st, was := a2a.ParseState(e.state), a2a.ParseState(prev)
		switch {
		case st.Interrupted():
			s.Event = "interrupted"
			tl.Interruptions++
		case was.Interrupted() && !st.Terminal():
			s.Event = "resumed"
			tl.Resumes++
		case st.Terminal():
			s.Event = "ended"
		}
		if tl.Total > 0 {
			s.X = 100 * float64(e.at.Sub(start)) / float64(tl.Total)
			s.Width = max(100*float64(s.Dwell)/float64(tl.Total), minWidth)
		} else {
			s.Width = 100
		}
		s.X = min(s.X, 100-minWidth)
		tl.Segments = append(tl.Segments, s)
		prev = e.state
	}
	return tl
}
