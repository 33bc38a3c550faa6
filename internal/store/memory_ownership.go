package store

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"
)

// memOwnership keeps owner records in a map plus a list in creation order.
// Every record lives for the same TTL, so creation order is also expiry
// order: the janitor and the size bound both work from the front.
type memOwnership struct {
	ttl time.Duration
	max int

	mu    sync.RWMutex
	byRef map[memRef]*list.Element // of *memOwnRecord
	order *list.List               // oldest first
}

var _ Ownership = (*memOwnership)(nil)

// memRef needs no escaping: the fields stay apart in a struct.
type memRef struct {
	agent string
	kind  RefKind
	id    string
}

type memOwnRecord struct {
	ref     memRef
	owner   Owner
	expires time.Time
}

func newMemOwnership(ttl time.Duration, maxEntries int) *memOwnership {
	return &memOwnership{ttl: ttl, max: maxEntries, byRef: map[memRef]*list.Element{}, order: list.New()}
}

func (m *memOwnership) Claim(_ context.Context, agent string, refs []Ref, owner Owner) ([]Owner, error) {
	out := make([]Owner, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	// Stored strings are copied so a record never pins a request's buffers.
	stored := Owner{Tenant: strings.Clone(owner.Tenant), Subject: strings.Clone(owner.Subject)}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range refs {
		key := memRef{agent: agent, kind: r.Kind, id: r.ID}
		if el, ok := m.byRef[key]; ok {
			rec := el.Value.(*memOwnRecord)
			if now.Before(rec.expires) {
				out[i] = rec.owner
				continue
			}
			m.remove(el)
		}
		for m.order.Len() >= m.max {
			m.remove(m.order.Front())
		}
		key.agent, key.id = strings.Clone(agent), strings.Clone(r.ID)
		m.byRef[key] = m.order.PushBack(&memOwnRecord{ref: key, owner: stored, expires: now.Add(m.ttl)})
		out[i] = owner
	}
	return out, nil
}

func (m *memOwnership) Lookup(_ context.Context, agent string, refs []Ref) ([]Owner, error) {
	out := make([]Owner, len(refs))
	now := time.Now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, r := range refs {
		if el, ok := m.byRef[memRef{agent: agent, kind: r.Kind, id: r.ID}]; ok {
			if rec := el.Value.(*memOwnRecord); now.Before(rec.expires) {
				out[i] = rec.owner
			}
		}
	}
	return out, nil
}

// Resolve needs no round trip in memory: it is Lookup then Claim.
func (m *memOwnership) Resolve(ctx context.Context, agent string, lookups, claims []Ref, owner Owner) ([]Owner, []Owner, error) {
	found, _ := m.Lookup(ctx, agent, lookups)
	if len(claims) == 0 {
		return found, nil, nil
	}
	claimed, _ := m.Claim(ctx, agent, claims, owner)
	return found, claimed, nil
}

func (m *memOwnership) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for el := m.order.Front(); el != nil && !now.Before(el.Value.(*memOwnRecord).expires); el = m.order.Front() {
		m.remove(el)
	}
}

func (m *memOwnership) remove(el *list.Element) {
	rec := m.order.Remove(el).(*memOwnRecord)
	delete(m.byRef, rec.ref)
}
