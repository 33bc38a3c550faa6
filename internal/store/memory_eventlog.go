package store

import (
	"bytes"
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// memEventLogs keeps each task's log in a slice, with a list of the tasks
// in order of their last append: retention and the size bounds both evict
// from the front. The bounds count events and snapshots across tasks, and
// their bytes.
type memEventLogs struct {
	max      int
	maxBytes int
	// configs are the push configs Record reads.
	configs *memPushConfigs

	mu     sync.Mutex
	tasks  map[TaskRef]*list.Element // of *memTaskLog
	order  *list.List                // least recently appended first
	events int
	bytes  int
	// marks are the live marks, by when they lapse.
	marks map[TaskRef]time.Time
}

// memEventLogMaxBytes bounds the payload and snapshot bytes the memory
// store keeps for event logs.
const memEventLogMaxBytes = 256 << 20

type memTaskLog struct {
	ref      TaskRef
	events   []LoggedEvent // oldest first, Seq increasing
	ids      map[string]int64
	next     int64
	snapSeq  int64
	snapshot []byte
	expires  time.Time
}

// memEventLog is a view of the logs with its own bounds.
type memEventLog struct {
	logs *memEventLogs
	o    EventLogOptions
}

var _ EventLog = memEventLog{}

func newMemEventLogs(maxEntries int, configs *memPushConfigs) *memEventLogs {
	return &memEventLogs{
		max: maxEntries, maxBytes: memEventLogMaxBytes, configs: configs,
		tasks: map[TaskRef]*list.Element{}, order: list.New(), marks: map[TaskRef]time.Time{},
	}
}

func (l memEventLog) Bounded(o EventLogOptions) EventLog {
	return memEventLog{logs: l.logs, o: o.withDefaults()}
}

// live returns the task's log unless it expired; the caller holds mu.
func (m *memEventLogs) live(ref TaskRef, now time.Time) *memTaskLog {
	el := m.tasks[ref]
	if el == nil {
		return nil
	}
	t := el.Value.(*memTaskLog)
	if !now.Before(t.expires) {
		m.drop(el)
		return nil
	}
	return t
}

func (m *memEventLogs) drop(el *list.Element) {
	t := m.order.Remove(el).(*memTaskLog)
	delete(m.tasks, t.ref)
	m.events -= len(t.events)
	for _, e := range t.events {
		m.bytes -= len(e.Payload)
	}
	if t.snapshot != nil {
		m.events--
		m.bytes -= len(t.snapshot)
	}
}

// touch returns the task's log, created if need be, renewed for o's
// retention and moved to the back; it makes room for one more entry of
// size bytes by evicting the least recently appended logs.
func (m *memEventLogs) touch(ref TaskRef, o EventLogOptions, now time.Time, size int) *memTaskLog {
	t := m.live(ref, now)
	if t == nil {
		t = &memTaskLog{ref: TaskRef{strings.Clone(ref.Agent), strings.Clone(ref.TaskID)}, ids: map[string]int64{}, next: 1}
		m.tasks[t.ref] = m.order.PushBack(t)
	} else {
		m.order.MoveToBack(m.tasks[ref])
	}
	t.expires = now.Add(o.Retention)
	for (m.events >= m.max || m.bytes+size > m.maxBytes) && m.order.Front() != nil && m.order.Front().Value.(*memTaskLog) != t {
		m.drop(m.order.Front())
	}
	return t
}

// add logs the event as Record does.
func (l memEventLog) add(agent, taskID, id string, payload []byte, at time.Time) (int64, bool, error) {
	m := l.logs
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	ref := TaskRef{agent, taskID}
	if t := m.live(ref, now); t != nil {
		if seq, ok := t.ids[id]; ok {
			return seq, false, nil
		}
	}
	t := m.touch(ref, l.o, now, len(payload))
	seq := t.next
	t.next++
	t.events = append(t.events, LoggedEvent{Seq: seq, ID: strings.Clone(id), Payload: bytes.Clone(payload), At: at})
	t.ids[t.events[len(t.events)-1].ID] = seq
	m.events++
	m.bytes += len(payload)
	if excess := len(t.events) - l.o.MaxEvents; excess > 0 {
		for _, e := range t.events[:excess] {
			delete(t.ids, e.ID)
			m.bytes -= len(e.Payload)
		}
		t.events = slices.Delete(t.events, 0, excess)
		m.events -= excess
	}
	return seq, true, nil
}

func (l memEventLog) After(_ context.Context, agent, taskID, id string, limit int) ([]LoggedEvent, bool, error) {
	m := l.logs
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.live(TaskRef{agent, taskID}, time.Now())
	if t == nil {
		return nil, id == "", nil
	}
	from := 0
	if id != "" {
		seq, ok := t.ids[id]
		if !ok {
			return nil, false, nil
		}
		from, _ = slices.BinarySearchFunc(t.events, seq+1, func(e LoggedEvent, s int64) int { return int(e.Seq - s) })
	}
	// Events are never modified once logged, so the copies share payloads.
	return slices.Clone(t.events[from:min(from+limit, len(t.events))]), true, nil
}

func (l memEventLog) Snapshot(_ context.Context, agent, taskID string) (int64, []byte, bool, error) {
	m := l.logs
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.live(TaskRef{agent, taskID}, time.Now())
	if t == nil || t.snapshot == nil {
		return 0, nil, false, nil
	}
	return t.snapSeq, t.snapshot, true, nil
}

func (l memEventLog) SaveSnapshot(_ context.Context, agent, taskID string, seq int64, snapshot []byte) (bool, error) {
	m := l.logs
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.live(TaskRef{agent, taskID}, now); t != nil && t.snapSeq >= seq {
		return false, nil
	}
	t := m.touch(TaskRef{agent, taskID}, l.o, now, len(snapshot))
	if t.snapshot == nil {
		m.events++
	}
	m.bytes += len(snapshot) - len(t.snapshot)
	t.snapSeq, t.snapshot = seq, bytes.Clone(snapshot)
	return true, nil
}

func (m *memEventLogs) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepMarks(now)
	for el := m.order.Front(); el != nil; {
		next := el.Next()
		if !now.Before(el.Value.(*memTaskLog).expires) {
			m.drop(el)
		}
		el = next
	}
}

func (l memEventLog) Record(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration) (Recorded, error) {
	seq, added, err := l.add(agent, taskID, id, payload, at)
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
