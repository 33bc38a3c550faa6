package store

import (
	"context"
	"sync"
	"time"
)

// memActive keeps, per tenant, each active task's last activity.
type memActive struct {
	max int

	mu      sync.Mutex
	tenants map[string]map[TaskRef]time.Time
	n       int
}

func newMemActive(maxEntries int) *memActive {
	return &memActive{max: maxEntries, tenants: map[string]map[TaskRef]time.Time{}}
}

func (m *memActive) Track(_ context.Context, tenant, agent, taskID string, active bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.tenants[tenant]
	k := TaskRef{agent, taskID}
	if !active {
		if _, ok := set[k]; ok {
			delete(set, k)
			m.n--
			if len(set) == 0 {
				delete(m.tenants, tenant)
			}
		}
		return nil
	}
	if set == nil {
		set = map[TaskRef]time.Time{}
		m.tenants[tenant] = set
	}
	if _, ok := set[k]; !ok {
		if m.n >= m.max {
			// Full: the mark is dropped rather than an older one, so the
			// count can only err on the side of letting work through.
			return nil
		}
		m.n++
	}
	set[k] = time.Now()
	return nil
}

func (m *memActive) Count(_ context.Context, tenant string, window time.Duration) (int, error) {
	cutoff := time.Now().Add(-window)
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.tenants[tenant]
	for k, at := range set {
		if at.Before(cutoff) {
			delete(set, k)
			m.n--
		}
	}
	return len(set), nil
}
