package store

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// memPushSources keeps the records in a map, oldest Put first in a list
// for the size bound.
type memPushSources struct {
	max int

	mu    sync.Mutex
	byKey map[memSourceKey]*list.Element // of *memPushSource
	order *list.List
}

var _ PushSources = (*memPushSources)(nil)

type memSourceKey struct{ agent, taskID string }

type memPushSource struct {
	key   memSourceKey
	s     PushSource
	until time.Time
}

func newMemPushSources(maxEntries int) *memPushSources {
	return &memPushSources{max: maxEntries, byKey: map[memSourceKey]*list.Element{}, order: list.New()}
}

func (m *memPushSources) Get(_ context.Context, agent, taskID string) (PushSource, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[memSourceKey{agent, taskID}]
	if !ok {
		return PushSource{}, false, nil
	}
	rec := el.Value.(*memPushSource)
	if !time.Now().Before(rec.until) {
		m.remove(el)
		return PushSource{}, false, nil
	}
	s := rec.s
	s.SecretHash = append([]byte(nil), s.SecretHash...)
	if len(s.SecretHash) == 0 {
		s.SecretHash = nil
	}
	return s, true, nil
}

func (m *memPushSources) Put(_ context.Context, s PushSource, ttl time.Duration) error {
	k := memSourceKey{s.Agent, s.TaskID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[k]; ok {
		m.remove(el)
	}
	for m.order.Len() >= m.max {
		m.remove(m.order.Front())
	}
	m.byKey[k] = m.order.PushBack(&memPushSource{key: k, s: s, until: time.Now().Add(ttl)})
	return nil
}

func (m *memPushSources) Delete(_ context.Context, agent, taskID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[memSourceKey{agent, taskID}]; ok {
		m.remove(el)
	}
	return nil
}

func (m *memPushSources) remove(el *list.Element) {
	rec := m.order.Remove(el).(*memPushSource)
	delete(m.byKey, rec.key)
}

func (m *memPushSources) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for el := m.order.Front(); el != nil; {
		next := el.Next()
		if !now.Before(el.Value.(*memPushSource).until) {
			m.remove(el)
		}
		el = next
	}
}
