package store

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Recorded is what EventLog.Record did with an event.
type Recorded struct {
	// Seq and Added are Append's results.
	Seq   int64
	Added bool
	// Configs are the task's push configs, oldest first, as they were when
	// the event was logged.
	Configs []PushConfig
}

// MaxLiveMark bounds the live argument of EventLog.Record: a mark is a
// short promise, renewed by every event of the stream that makes it.
const MaxLiveMark = time.Hour

func checkLive(live time.Duration) error {
	if live < 0 || live > MaxLiveMark {
		return fmt.Errorf("%w: live mark of %s is not between 0 and %s", ErrInvalidArgument, live, MaxLiveMark)
	}
	return nil
}

// liveMillis is a positive live mark in whole milliseconds, rounded up so
// that a mark under a millisecond still marks.
func liveMillis(live time.Duration) int64 {
	return int64((live + time.Millisecond - 1) / time.Millisecond)
}

// sortPushConfigs puts configs in List's order: oldest first, then by id.
func sortPushConfigs(cs []PushConfig) {
	slices.SortFunc(cs, func(a, b PushConfig) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
}
