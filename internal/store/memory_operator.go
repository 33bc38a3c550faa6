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
	mu   sync.Mutex
	logs *memRecords[TaskRef, []TaskAttempt]
}

func newMemDeliveryLog(max int) *memDeliveryLog {
	return &memDeliveryLog{logs: newMemRecords[TaskRef, []TaskAttempt](max)}
}

func (m *memDeliveryLog) Add(_ context.Context, agent, taskID string, a TaskAttempt) error {
	a.Endpoint, a.ID, a.Err = strings.Clone(a.Endpoint), strings.Clone(a.ID), strings.Clone(a.Err)
	ref := TaskRef{strings.Clone(agent), strings.Clone(taskID)}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	attempts, _ := m.logs.get(ref, now)
	attempts = append(attempts, a)
	m.logs.put(ref, attempts[max(0, len(attempts)-MaxTaskAttempts):], now.Add(TaskAttemptRetention))
	return nil
}

func (m *memDeliveryLog) List(_ context.Context, agent, taskID string) ([]TaskAttempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Nothing sweeps this log: a read drops the expired log it finds.
	ref := TaskRef{agent, taskID}
	attempts, ok := m.logs.get(ref, time.Now())
	if !ok {
		m.logs.remove(ref)
	}
	return slices.Clone(attempts), nil
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
