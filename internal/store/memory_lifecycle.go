package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// memLifecycle keeps lifecycle records per agent, and two heaps over them:
// records that may be evicted (not under legal hold) by LastActivity, for
// the size bound, and records that expire by expiry, for the janitor. List
// sorts an agent's matching records on demand.
type memLifecycle struct {
	max int

	mu     sync.RWMutex
	agents map[string]map[string]*memLCEntry // agent -> task id -> record
	n      int
	idle   indexedHeap[*memLCEntry]    // evictable records, least recent activity first
	expiry indexedHeap[*memLCEntry]    // records with an expiry, soonest first
	rev    int64                       // the last revision issued: revisions never repeat
	leases *memRecords[string, string] // lease name -> holder
}

var _ Lifecycle = (*memLifecycle)(nil)

type memLCEntry struct {
	rec     TaskLifecycle
	pos     lifecyclePos
	expires time.Time // zero: never

	idleAt, expiryAt int // positions in the heaps, -1 when absent
}

func (e *memLCEntry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

// copyOut returns the record as callers see it; the history is copied so
// that neither side can change the other's.
func (e *memLCEntry) copyOut() TaskLifecycle {
	rec := e.rec
	rec.History = slices.Clone(e.rec.History)
	return rec
}

func newMemLifecycle(maxEntries int) *memLifecycle {
	return &memLifecycle{
		max:    maxEntries,
		agents: map[string]map[string]*memLCEntry{},
		idle: indexedHeap[*memLCEntry]{
			less: func(a, b *memLCEntry) bool { return a.pos.before(b.pos) },
			at:   func(e *memLCEntry) *int { return &e.idleAt },
		},
		expiry: indexedHeap[*memLCEntry]{
			less: func(a, b *memLCEntry) bool { return a.expires.Before(b.expires) },
			at:   func(e *memLCEntry) *int { return &e.expiryAt },
		},
		leases: newMemRecords[string, string](maxEntries),
	}
}

func (m *memLifecycle) Get(_ context.Context, agent, taskID string) (TaskLifecycle, bool, error) {
	now := time.Now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.agents[agent][taskID]
	if !ok || e.expired(now) {
		return TaskLifecycle{}, false, nil
	}
	return e.copyOut(), true, nil
}

func (m *memLifecycle) Save(_ context.Context, stored TaskLifecycle, ttl time.Duration) (int64, bool, error) {
	// Copied before locking, so a record never pins a request's buffers.
	stored.Tenant, stored.Subject, stored.ContextID = strings.Clone(stored.Tenant), strings.Clone(stored.Subject), strings.Clone(stored.ContextID)
	pos := lifecyclePos{score: activityScore(stored.LastActivity), member: escape(stored.TaskID)}
	now := time.Now()

	m.mu.Lock()
	defer m.mu.Unlock()
	// An expired record is taken over as if it were gone; the sweep would
	// have dropped it.
	e := m.agents[stored.Agent][stored.TaskID]
	var current int64
	if e != nil && !e.expired(now) {
		current = e.rec.Rev
	}
	if current != stored.Rev {
		return 0, false, nil
	}
	if e == nil {
		if err := m.makeRoom(now); err != nil {
			return 0, false, err
		}
		e = &memLCEntry{rec: TaskLifecycle{Agent: strings.Clone(stored.Agent), TaskID: strings.Clone(stored.TaskID)}, idleAt: -1, expiryAt: -1}
		tasks := m.agents[stored.Agent]
		if tasks == nil {
			tasks = map[string]*memLCEntry{}
			m.agents[e.rec.Agent] = tasks
		}
		tasks[e.rec.TaskID] = e
		m.n++
	}
	stored.Agent, stored.TaskID = e.rec.Agent, e.rec.TaskID
	m.rev++
	stored.Rev = m.rev
	e.rec = stored
	e.pos = pos
	e.expires = time.Time{}
	if ttl > 0 && !stored.LegalHold {
		e.expires = now.Add(ttl)
	}
	m.idle.place(e, !stored.LegalHold)
	m.expiry.place(e, !e.expires.IsZero())
	return stored.Rev, true, nil
}

func (m *memLifecycle) List(_ context.Context, f LifecycleFilter, cursor string, limit int) ([]TaskLifecycle, string, error) {
	after, paged, err := decodeLifecycleCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	now := time.Now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	var found []*memLCEntry
	for _, e := range m.agents[f.Agent] {
		if !e.expired(now) && (!paged || after.before(e.pos)) && f.matches(&e.rec) {
			found = append(found, e)
		}
	}
	slices.SortFunc(found, func(a, b *memLCEntry) int { return a.pos.compare(b.pos) })
	next := ""
	if len(found) > limit {
		found = found[:limit]
		next = encodeLifecycleCursor(found[limit-1].pos)
	}
	out := make([]TaskLifecycle, len(found))
	for i, e := range found {
		out[i] = e.copyOut()
	}
	return out, next, nil
}

func (m *memLifecycle) CountByState(_ context.Context, agent string) (map[string]int, error) {
	now := time.Now()
	counts := map[string]int{}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, e := range m.agents[agent] {
		if !e.expired(now) {
			counts[e.rec.State]++
		}
	}
	return counts, nil
}

func (m *memLifecycle) Delete(_ context.Context, agent, taskID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.agents[agent][taskID]
	if e == nil || e.expired(time.Now()) || e.rec.LegalHold {
		return false, nil
	}
	m.remove(e)
	return true, nil
}

func (m *memLifecycle) Lease(_ context.Context, name, holder string, ttl time.Duration) (bool, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.leases.get(name, now); ok && h != holder {
		return false, nil
	}
	m.leases.put(strings.Clone(name), strings.Clone(holder), now.Add(ttl))
	return true, nil
}

func (m *memLifecycle) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.expiry.Len() > 0 && m.expiry.items[0].expired(now) {
		m.remove(m.expiry.items[0])
	}
	m.leases.sweep(now)
}

// makeRoom frees a place for a new record: expired records go first, then
// the least recently active one not under legal hold. The caller holds the
// write lock.
func (m *memLifecycle) makeRoom(now time.Time) error {
	for m.n >= m.max {
		switch {
		case m.expiry.Len() > 0 && m.expiry.items[0].expired(now):
			m.remove(m.expiry.items[0])
		case m.idle.Len() > 0:
			m.remove(m.idle.items[0])
		default:
			// Evicting a held record would break the hold; exceeding the
			// bound would break max_entries. Refusing new records keeps both.
			return fmt.Errorf("store: lifecycle save: all %d records of the memory store are under legal hold; raise store.memory.max_entries", m.n)
		}
	}
	return nil
}

func (m *memLifecycle) remove(e *memLCEntry) {
	m.idle.place(e, false)
	m.expiry.place(e, false)
	tasks := m.agents[e.rec.Agent]
	delete(tasks, e.rec.TaskID)
	if len(tasks) == 0 {
		delete(m.agents, e.rec.Agent)
	}
	m.n--
}
