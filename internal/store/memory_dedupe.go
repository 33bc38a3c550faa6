package store

import (
	"bytes"
	"container/list"
	"context"
	"strings"
	"sync"
	"time"
)

// memDedupe keeps dedupe records in a map, a list in creation order for the
// size bound (the oldest is evicted first) and a heap in expiry order for
// the janitor: unlike ownership records, each record has its own ttl and
// Complete changes it, so creation order is not expiry order.
type memDedupe struct {
	max int

	mu     sync.RWMutex
	byKey  map[memDedupeKey]*memDedupeEntry
	order  *list.List // of *memDedupeEntry, oldest first
	expiry indexedHeap[*memDedupeEntry]
}

var _ Dedupe = (*memDedupe)(nil)

// memDedupeKey needs no escaping: the fields stay apart in a struct.
type memDedupeKey struct {
	tenant, key string
}

type memDedupeEntry struct {
	id          memDedupeKey
	state       DedupeState
	fingerprint string
	holder      string
	takenOver   bool      // the holder took the record over; while in flight
	lease       time.Time // while in flight
	taskID      string
	result      []byte
	expires     time.Time

	element   *list.Element
	heapIndex int // position in expiry, -1 when absent
}

func newMemDedupe(maxEntries int) *memDedupe {
	return &memDedupe{
		max: maxEntries, byKey: map[memDedupeKey]*memDedupeEntry{}, order: list.New(),
		expiry: indexedHeap[*memDedupeEntry]{
			less: func(a, b *memDedupeEntry) bool { return a.expires.Before(b.expires) },
			at:   func(e *memDedupeEntry) *int { return &e.heapIndex },
		},
	}
}

// record renders e as callers see it. The result is copied so that neither
// side can change the other's bytes.
func (e *memDedupeEntry) record(now time.Time) DedupeRecord {
	r := DedupeRecord{State: e.state, Fingerprint: e.fingerprint, Holder: e.holder, TaskID: e.taskID}
	if e.state == DedupeInFlight {
		r.LeaseExpired = !now.Before(e.lease)
	} else {
		r.Result = bytes.Clone(e.result)
		if r.Result == nil {
			r.Result = []byte{}
		}
	}
	return r
}

func (m *memDedupe) Claim(_ context.Context, tenant, key, fingerprint, holder string, lease, ttl time.Duration) (DedupeRecord, ClaimOutcome, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live(memDedupeKey{tenant: tenant, key: key}, now)
	switch {
	case e == nil:
		e = m.insert(memDedupeKey{tenant: strings.Clone(tenant), key: strings.Clone(key)}, now, now.Add(max(ttl, lease)))
		e.state = DedupeInFlight
		e.fingerprint = strings.Clone(fingerprint)
		e.holder = strings.Clone(holder)
		e.lease = now.Add(lease)
		return e.record(now), ClaimNew, nil
	case e.state == DedupeInFlight && e.holder == holder:
		if e.takenOver {
			return e.record(now), ClaimTakeover, nil
		}
		return e.record(now), ClaimNew, nil
	case e.state == DedupeInFlight && !now.Before(e.lease) && e.fingerprint == fingerprint:
		e.holder = strings.Clone(holder)
		e.takenOver = true
		e.lease = now.Add(lease)
		m.setExpiry(e, now.Add(max(ttl, lease)))
		return e.record(now), ClaimTakeover, nil
	}
	return e.record(now), ClaimExisting, nil
}

func (m *memDedupe) Get(_ context.Context, tenant, key string) (DedupeRecord, bool, error) {
	now := time.Now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.byKey[memDedupeKey{tenant: tenant, key: key}]
	if !ok || !now.Before(e.expires) {
		return DedupeRecord{}, false, nil
	}
	return e.record(now), true, nil
}

func (m *memDedupe) Renew(_ context.Context, tenant, key, holder string, lease time.Duration) (bool, error) {
	return m.held(tenant, key, holder, func(e *memDedupeEntry, now time.Time) {
		e.lease = now.Add(lease)
		if e.expires.Before(e.lease) {
			m.setExpiry(e, e.lease)
		}
	}), nil
}

func (m *memDedupe) SetTask(_ context.Context, tenant, key, holder, taskID string) (bool, error) {
	return m.held(tenant, key, holder, func(e *memDedupeEntry, _ time.Time) {
		e.taskID = strings.Clone(taskID)
	}), nil
}

func (m *memDedupe) Complete(_ context.Context, tenant, key, holder string, result []byte, ttl time.Duration) (bool, error) {
	// Copied before locking: the result may be large.
	stored := bytes.Clone(result)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live(memDedupeKey{tenant: tenant, key: key}, now)
	if e == nil || e.holder != holder {
		return false, nil
	}
	if e.state == DedupeDone {
		return true, nil
	}
	e.state = DedupeDone
	e.result = stored
	e.takenOver = false
	e.lease = time.Time{}
	m.setExpiry(e, now.Add(ttl))
	return true, nil
}

func (m *memDedupe) Release(_ context.Context, tenant, key, holder string) (bool, error) {
	return m.held(tenant, key, holder, func(e *memDedupeEntry, _ time.Time) {
		m.remove(e)
	}), nil
}

// held runs act under the lock if holder holds the in-flight record, and
// reports whether it did.
func (m *memDedupe) held(tenant, key, holder string, act func(*memDedupeEntry, time.Time)) bool {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.live(memDedupeKey{tenant: tenant, key: key}, now)
	if e == nil || e.state != DedupeInFlight || e.holder != holder {
		return false
	}
	act(e, now)
	return true
}

// live returns the unexpired record of id, dropping an expired one. The
// caller holds the write lock.
func (m *memDedupe) live(id memDedupeKey, now time.Time) *memDedupeEntry {
	e, ok := m.byKey[id]
	if !ok {
		return nil
	}
	if !now.Before(e.expires) {
		m.remove(e)
		return nil
	}
	return e
}

// insert adds an empty record for id, making room first: expired records go
// before live ones, then the oldest. The caller holds the write lock.
func (m *memDedupe) insert(id memDedupeKey, now, expires time.Time) *memDedupeEntry {
	for len(m.byKey) >= m.max && len(m.expiry.items) > 0 && !now.Before(m.expiry.items[0].expires) {
		m.remove(m.expiry.items[0])
	}
	for len(m.byKey) >= m.max {
		m.remove(m.order.Front().Value.(*memDedupeEntry))
	}
	e := &memDedupeEntry{id: id, expires: expires, heapIndex: -1}
	e.element = m.order.PushBack(e)
	m.expiry.place(e, true)
	m.byKey[id] = e
	return e
}

func (m *memDedupe) setExpiry(e *memDedupeEntry, expires time.Time) {
	e.expires = expires
	m.expiry.place(e, true)
}

func (m *memDedupe) remove(e *memDedupeEntry) {
	m.order.Remove(e.element)
	m.expiry.place(e, false)
	delete(m.byKey, e.id)
}

func (m *memDedupe) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.expiry.items) > 0 && !now.Before(m.expiry.items[0].expires) {
		m.remove(m.expiry.items[0])
	}
}
