package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// memPushConfigs keeps each task's configs in registration order and the
// watched index as a map of first registration times. Watched sorts on
// every call: the embedded store serves one replica and few watched tasks.
type memPushConfigs struct {
	max int

	mu      sync.Mutex
	tasks   map[TaskRef]*memTaskConfigs
	watched map[TaskRef]time.Time
}

var _ PushConfigs = (*memPushConfigs)(nil)

type memTaskConfigs struct {
	configs []PushConfig
	expires time.Time
}

func newMemPushConfigs(maxEntries int) *memPushConfigs {
	return &memPushConfigs{max: maxEntries, tasks: map[TaskRef]*memTaskConfigs{}, watched: map[TaskRef]time.Time{}}
}

// live returns the task's configs unless they expired; the caller holds mu.
func (m *memPushConfigs) live(ref TaskRef, now time.Time) *memTaskConfigs {
	t := m.tasks[ref]
	if t != nil && !now.Before(t.expires) {
		delete(m.tasks, ref)
		delete(m.watched, ref)
		return nil
	}
	return t
}

func (m *memPushConfigs) Put(_ context.Context, c PushConfig) (bool, error) {
	now := time.Now()
	ref := TaskRef{Agent: c.Agent, TaskID: c.TaskID}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.live(ref, now)
	if t == nil {
		if len(m.tasks) >= m.max {
			m.sweepLocked(now)
		}
		if len(m.tasks) >= m.max {
			return false, fmt.Errorf("store: push config put: the memory store holds its maximum of %d tasks with push configs; raise store.memory.max_entries", m.max)
		}
		t = &memTaskConfigs{}
		m.tasks[ref] = t
	}
	i := slices.IndexFunc(t.configs, func(old PushConfig) bool { return old.ID == c.ID })
	if i < 0 && len(t.configs) >= MaxPushConfigsPerTask {
		return false, ErrTooManyPushConfigs
	}
	t.expires = now.Add(PushConfigRetention)
	if _, ok := m.watched[ref]; !ok {
		m.watched[ref] = c.Created
	}
	if i >= 0 {
		c.Created = t.configs[i].Created
		t.configs[i] = c
		return false, nil
	}
	t.configs = append(t.configs, c)
	return true, nil
}

func (m *memPushConfigs) Get(_ context.Context, agent, taskID, id string) (PushConfig, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.live(TaskRef{agent, taskID}, time.Now()); t != nil {
		for _, c := range t.configs {
			if c.ID == id {
				return c, true, nil
			}
		}
	}
	return PushConfig{}, false, nil
}

func (m *memPushConfigs) List(_ context.Context, agent, taskID string) ([]PushConfig, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.live(TaskRef{agent, taskID}, time.Now())
	if t == nil {
		return nil, nil
	}
	out := slices.Clone(t.configs)
	slices.SortStableFunc(out, func(a, b PushConfig) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

func (m *memPushConfigs) Delete(_ context.Context, agent, taskID, id string) (bool, error) {
	ref := TaskRef{agent, taskID}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.live(ref, time.Now())
	if t == nil {
		return false, nil
	}
	i := slices.IndexFunc(t.configs, func(c PushConfig) bool { return c.ID == id })
	if i < 0 {
		return false, nil
	}
	t.configs = slices.Delete(t.configs, i, i+1)
	if len(t.configs) == 0 {
		delete(m.tasks, ref)
	}
	return true, nil
}

func (m *memPushConfigs) Watched(_ context.Context, limit int) ([]TaskRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	refs := slices.SortedFunc(maps.Keys(m.watched), func(a, b TaskRef) int {
		return cmp.Or(m.watched[a].Compare(m.watched[b]), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.TaskID, b.TaskID))
	})
	return slices.Clip(refs[:min(limit, len(refs))]), nil
}

func (m *memPushConfigs) Finish(_ context.Context, agent, taskID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.watched, TaskRef{agent, taskID})
	return nil
}

func (m *memPushConfigs) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
}

// sweepLocked drops expired configs with their watched entries, and
// watched entries older than the retention (their configs were deleted).
func (m *memPushConfigs) sweepLocked(now time.Time) {
	for ref, t := range m.tasks {
		if !now.Before(t.expires) {
			delete(m.tasks, ref)
			delete(m.watched, ref)
		}
	}
	cutoff := now.Add(-PushConfigRetention)
	for ref, at := range m.watched {
		if at.Before(cutoff) && m.tasks[ref] == nil {
			delete(m.watched, ref)
		}
	}
}
