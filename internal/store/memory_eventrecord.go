package store

import (
	"context"
	"strings"
	"time"
)

func (l memEventLog) Record(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration) (Recorded, error) {
	seq, added, err := l.Append(ctx, agent, taskID, id, payload, at)
	if err != nil {
		return Recorded{}, err
	}
	configs, err := l.logs.configs.List(ctx, agent, taskID)
	if err != nil {
		return Recorded{}, err
	}
	if live > 0 {
		l.logs.mark(TaskRef{agent, taskID}, time.Now().Add(live))
	}
	return Recorded{Seq: seq, Added: added, Configs: configs}, nil
}

func (l memEventLog) Live(_ context.Context, agent, taskID string) (time.Duration, error) {
	m := l.logs
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.marks[TaskRef{agent, taskID}]
	if !ok {
		return 0, nil
	}
	return max(time.Until(until), 0), nil
}

// mark renews a task's live mark. A full map is swept first; a mark that
// still finds no room is not made, which costs only the subscriber's
// following the task as well.
func (m *memEventLogs) mark(ref TaskRef, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.marks[ref]; !ok && len(m.marks) >= m.max {
		m.sweepMarks(time.Now())
		if len(m.marks) >= m.max {
			return
		}
	}
	if _, ok := m.marks[ref]; !ok {
		ref = TaskRef{strings.Clone(ref.Agent), strings.Clone(ref.TaskID)}
	}
	m.marks[ref] = until
}

// sweepMarks drops the lapsed marks; the caller holds mu.
func (m *memEventLogs) sweepMarks(now time.Time) {
	for ref, until := range m.marks {
		if !now.Before(until) {
			delete(m.marks, ref)
		}
	}
}
