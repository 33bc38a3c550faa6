package store

import (
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// memDeliveryLog is the embedded store's DeliveryLog: at most max tasks,
// the one attempted least recently making room for a new one.
type memDeliveryLog struct {
	max int

	mu    sync.Mutex
	tasks map[memAttemptRef]*list.Element // of *memAttemptLog
	lru   *list.List                      // least recently attempted first
}

type memAttemptRef struct{ agent, task string }

type memAttemptLog struct {
	ref      memAttemptRef
	attempts []TaskAttempt
	last     time.Time
}

func newMemDeliveryLog(max int) *memDeliveryLog {
	return &memDeliveryLog{max: max, tasks: map[memAttemptRef]*list.Element{}, lru: list.New()}
}

func (m *memDeliveryLog) Add(_ context.Context, agent, taskID string, a TaskAttempt) error {
	a.Endpoint, a.ID, a.Err = strings.Clone(a.Endpoint), strings.Clone(a.ID), strings.Clone(a.Err)
	ref := memAttemptRef{strings.Clone(agent), strings.Clone(taskID)}
	m.mu.Lock()
	defer m.mu.Unlock()
	el := m.tasks[ref]
	if el == nil {
		for m.lru.Len() >= m.max {
			oldest := m.lru.Front()
			delete(m.tasks, oldest.Value.(*memAttemptLog).ref)
			m.lru.Remove(oldest)
		}
		el = m.lru.PushBack(&memAttemptLog{ref: ref})
		m.tasks[ref] = el
	} else {
		m.lru.MoveToBack(el)
	}
	l := el.Value.(*memAttemptLog)
	l.attempts = append(l.attempts, a)
	if n := len(l.attempts); n > MaxTaskAttempts {
		l.attempts = slices.Delete(l.attempts, 0, n-MaxTaskAttempts)
	}
	l.last = time.Now()
	return nil
}

func (m *memDeliveryLog) List(_ context.Context, agent, taskID string) ([]TaskAttempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el := m.tasks[memAttemptRef{agent, taskID}]
	if el == nil {
		return nil, nil
	}
	l := el.Value.(*memAttemptLog)
	if time.Since(l.last) > TaskAttemptRetention {
		delete(m.tasks, l.ref)
		m.lru.Remove(el)
		return nil, nil
	}
	return slices.Clone(l.attempts), nil
}

func (m *memDelivery) DiscardDeadLetter(_ context.Context, endpoint, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.dead[memDeliveryRef{endpoint, id}]
	if e == nil {
		return false, nil
	}
	m.dropDead(e)
	return true, nil
}
