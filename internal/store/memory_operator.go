package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// memDeliveryLog is the embedded store's DeliveryLog: at most max tasks,
// the one attempted least recently making room for a new one.
type memDeliveryLog struct {
	gate *gate
	max  int

	mu    sync.Mutex
	tasks map[memAttemptRef]*memAttemptLog
}

type memAttemptRef struct{ agent, task string }

type memAttemptLog struct {
	attempts []TaskAttempt
	last     time.Time
}

func newMemDeliveryLog(g *gate, max int) *memDeliveryLog {
	return &memDeliveryLog{gate: g, max: max, tasks: map[memAttemptRef]*memAttemptLog{}}
}

func (m *memDeliveryLog) Add(_ context.Context, agent, taskID string, a TaskAttempt) error {
	if err := m.gate.check(); err != nil {
		return err
	}
	if err := checkTaskAttempt(agent, taskID, &a); err != nil {
		return err
	}
	a.Endpoint, a.ID, a.Err = strings.Clone(a.Endpoint), strings.Clone(a.ID), strings.Clone(a.Err)
	now := time.Now()
	ref := memAttemptRef{strings.Clone(agent), strings.Clone(taskID)}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.tasks[ref]
	if l == nil {
		if len(m.tasks) >= m.max {
			m.evict(now)
		}
		l = &memAttemptLog{}
		m.tasks[ref] = l
	}
	l.attempts = append(l.attempts, a)
	if n := len(l.attempts); n > MaxTaskAttempts {
		l.attempts = slices.Delete(l.attempts, 0, n-MaxTaskAttempts)
	}
	l.last = now
	return nil
}

// evict drops the expired logs, or else the one attempted least recently.
func (m *memDeliveryLog) evict(now time.Time) {
	var oldest memAttemptRef
	var at time.Time
	for ref, l := range m.tasks {
		if now.Sub(l.last) > TaskAttemptRetention {
			delete(m.tasks, ref)
			continue
		}
		if at.IsZero() || l.last.Before(at) {
			oldest, at = ref, l.last
		}
	}
	if len(m.tasks) >= m.max {
		delete(m.tasks, oldest)
	}
}

func (m *memDeliveryLog) List(_ context.Context, agent, taskID string) ([]TaskAttempt, error) {
	if err := m.gate.check(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.tasks[memAttemptRef{agent, taskID}]
	if l == nil || time.Since(l.last) > TaskAttemptRetention {
		return nil, nil
	}
	return slices.Clone(l.attempts), nil
}

func (m *memDelivery) DiscardDeadLetter(_ context.Context, endpoint, id string) (bool, error) {
	if err := m.gate.check(); err != nil {
		return false, err
	}
	if err := checkDeliveryRef(endpoint, id); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.dead[memDeliveryRef{endpoint, id}]
	if e == nil {
		return false, nil
	}
	m.dropDead(e)
	return true, nil
}
