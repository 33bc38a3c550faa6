package store

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// memPushSources keeps the records oldest Put first, for the size bound.
type memPushSources struct {
	mu   sync.Mutex
	recs *memRecords[TaskRef, PushSource]
}

var _ PushSources = (*memPushSources)(nil)

func newMemPushSources(maxEntries int) *memPushSources {
	return &memPushSources{recs: newMemRecords[TaskRef, PushSource](maxEntries)}
}

func (m *memPushSources) Get(_ context.Context, agent, taskID string) (PushSource, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.recs.get(TaskRef{agent, taskID}, time.Now())
	s.SecretHash = bytes.Clone(s.SecretHash)
	return s, ok, nil
}

func (m *memPushSources) Put(_ context.Context, s PushSource, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs.put(TaskRef{s.Agent, s.TaskID}, s, time.Now().Add(ttl))
	return nil
}

func (m *memPushSources) Delete(_ context.Context, agent, taskID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs.remove(TaskRef{agent, taskID})
	return nil
}

func (m *memPushSources) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs.sweep(now)
}
