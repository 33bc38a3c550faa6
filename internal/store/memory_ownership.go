package store

import (
	"context"
	"strings"
	"sync"
	"time"
)

// memOwnership keeps owner records in creation order. Every record lives
// for the same TTL, so creation order is also expiry order: the janitor
// and the size bound both work from the front.
type memOwnership struct {
	ttl time.Duration

	mu   sync.RWMutex
	recs *memRecords[memRef, Owner]
}

var _ Ownership = (*memOwnership)(nil)

// memRef needs no escaping: the fields stay apart in a struct.
type memRef struct {
	agent string
	kind  RefKind
	id    string
}

func newMemOwnership(ttl time.Duration, maxEntries int) *memOwnership {
	m := &memOwnership{ttl: ttl, recs: newMemRecords[memRef, Owner](maxEntries)}
	m.recs.inOrder = true
	return m
}

func (m *memOwnership) Claim(_ context.Context, agent string, refs []Ref, owner Owner) ([]Owner, error) {
	out := make([]Owner, len(refs))
	// Stored strings are copied so a record never pins a request's buffers.
	stored := Owner{Tenant: strings.Clone(owner.Tenant), Subject: strings.Clone(owner.Subject)}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range refs {
		if o, ok := m.recs.get(memRef{agent: agent, kind: r.Kind, id: r.ID}, now); ok {
			out[i] = o
			continue
		}
		m.recs.put(memRef{agent: strings.Clone(agent), kind: r.Kind, id: strings.Clone(r.ID)}, stored, now.Add(m.ttl))
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
		out[i], _ = m.recs.get(memRef{agent: agent, kind: r.Kind, id: r.ID}, now)
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
	m.recs.sweep(now)
}
