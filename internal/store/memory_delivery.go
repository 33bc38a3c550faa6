package store

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// memDeliveryMaxBytes bounds the payload bytes the memory store holds in
// queues and dead letters together.
const memDeliveryMaxBytes = 512 << 20

// memDelivery keeps one FIFO per endpoint, a heap of the endpoints with
// queued deliveries by due time, the dead letters in listing order, and a
// log of the ids that left a queue, in the order they left, for their
// retention. The bound counts queued deliveries, dead letters and
// remembered ids together; at the bound, remembered ids go first, then the
// oldest dead letters, and only then is an enqueue refused.
type memDelivery struct {
	max      int
	maxBytes int

	mu        sync.Mutex
	queues    map[string]*memQueue
	due       indexedHeap[*memQueue]
	dead      map[memDeliveryRef]*memDead
	deadOrder []string // members, sorted
	byMember  map[string]*memDead
	doneLog   []memDone // may hold ids remembered again since; checked on use
	entries   int
	bytes     int
}

var _ DeliveryStore = (*memDelivery)(nil)

type memDeliveryRef struct{ endpoint, id string }

type memQueue struct {
	endpoint string
	items    []Delivery
	queued   map[string]struct{}
	done     map[string]time.Time // ids that left the queue, and when
	attempts map[string][]Attempt
	due      time.Time
	dueAt    int // position in the due heap, -1 when absent

	holder      string
	leaseExpiry time.Time
	offReason   string
	offUntil    time.Time
}

type memDead struct {
	dl     DeadLetter
	member string
}

type memDone struct {
	ref memDeliveryRef
	at  time.Time
}

func newMemDelivery(maxEntries int) *memDelivery {
	return &memDelivery{
		max: maxEntries, maxBytes: memDeliveryMaxBytes,
		queues:   map[string]*memQueue{},
		due:      indexedHeap[*memQueue]{less: dueBefore, at: func(q *memQueue) *int { return &q.dueAt }},
		dead:     map[memDeliveryRef]*memDead{},
		byMember: map[string]*memDead{},
	}
}

// queue returns the endpoint's queue, creating it when create is set.
func (m *memDelivery) queue(endpoint string, create bool) *memQueue {
	q := m.queues[endpoint]
	if q == nil && create {
		q = &memQueue{
			endpoint: strings.Clone(endpoint), dueAt: -1,
			queued: map[string]struct{}{}, done: map[string]time.Time{}, attempts: map[string][]Attempt{},
		}
		m.queues[q.endpoint] = q
	}
	return q
}

func (q *memQueue) disabled(now time.Time) bool {
	return q.offReason != "" && now.Before(q.offUntil)
}

func (q *memQueue) leased(now time.Time) bool {
	return q.holder != "" && now.Before(q.leaseExpiry)
}

func copyDelivery(d Delivery) Delivery {
	d.Payload = bytes.Clone(d.Payload)
	if d.Payload == nil {
		d.Payload = []byte{}
	}
	return d
}

func (m *memDelivery) EnqueueAll(_ context.Context, ds []Delivery) ([]bool, []error) {
	queued, errs := make([]bool, len(ds)), make([]error, len(ds))
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, d := range ds {
		_, queued[i], errs[i] = m.enqueue(d, now)
	}
	return queued, errs
}

func (m *memDelivery) EnqueueClaim(_ context.Context, d Delivery, holder string, ttl time.Duration) (bool, bool, Delivery, []Attempt, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	q, queued, err := m.enqueue(d, now)
	if err != nil || !queued || !m.claim(q, holder, ttl, now) {
		return queued, false, Delivery{}, nil, err
	}
	head, atts, _ := q.head()
	return true, true, head, atts, nil
}

// enqueue enqueues d with m.mu held; q is d's queue.
func (m *memDelivery) enqueue(d Delivery, now time.Time) (q *memQueue, queued bool, err error) {
	if d.Enqueued.IsZero() {
		d.Enqueued = now.Round(0).UTC()
	}
	q = m.queue(d.Endpoint, true)
	if q.disabled(now) {
		return q, false, fmt.Errorf("%w: %.64q", ErrEndpointDisabled, d.Endpoint)
	}
	if _, ok := q.queued[d.ID]; ok {
		return q, false, nil
	}
	if at, ok := q.done[d.ID]; ok && now.Sub(at) < DeliveryIDRetention {
		return q, false, nil
	}
	if len(q.items) >= MaxQueueLength {
		return q, false, fmt.Errorf("%w: endpoint %.64q holds %d deliveries", ErrQueueFull, d.Endpoint, MaxQueueLength)
	}
	m.forget(q, d.ID)
	if err := m.makeRoom(1, len(d.Payload), now); err != nil {
		return q, false, err
	}
	d.ID, d.TaskID = strings.Clone(d.ID), strings.Clone(d.TaskID)
	d.Endpoint = q.endpoint
	d.Payload = copyDelivery(d).Payload
	m.push(q, d, now)
	return q, true, nil
}

// push appends d to q and makes q due now unless it is due already.
func (m *memDelivery) push(q *memQueue, d Delivery, now time.Time) {
	q.items = append(q.items, d)
	q.queued[d.ID] = struct{}{}
	m.entries++
	m.bytes += len(d.Payload)
	if q.dueAt < 0 {
		q.due = now
		m.due.place(q, true)
	}
}

// forget drops a remembered id of q.
func (m *memDelivery) forget(q *memQueue, id string) {
	if _, ok := q.done[id]; ok {
		delete(q.done, id)
		m.entries--
	}
}

// makeRoom frees space for n more entries holding size payload bytes.
func (m *memDelivery) makeRoom(n, size int, now time.Time) error {
	for m.entries+n > m.max && len(m.doneLog) > 0 {
		m.popDone()
	}
	for (m.entries+n > m.max || m.bytes+size > m.maxBytes) && len(m.deadOrder) > 0 {
		m.dropDead(m.byMember[m.deadOrder[0]])
	}
	if m.entries+n > m.max || m.bytes+size > m.maxBytes {
		return fmt.Errorf("%w: the memory store holds %d entries and %d payload bytes", ErrQueueFull, m.entries, m.bytes)
	}
	return nil
}

// popDone takes the oldest entry off the done log and forgets its id,
// unless the id left a queue again since.
func (m *memDelivery) popDone() {
	e := m.doneLog[0]
	m.doneLog[0] = memDone{}
	m.doneLog = m.doneLog[1:]
	if q := m.queues[e.ref.endpoint]; q != nil {
		if at, ok := q.done[e.ref.id]; ok && at.Equal(e.at) {
			m.forget(q, e.ref.id)
		}
	}
}

// head returns copies of q's head and its attempt log; false when q is nil
// or empty.
func (q *memQueue) head() (Delivery, []Attempt, bool) {
	if q == nil || len(q.items) == 0 {
		return Delivery{}, nil, false
	}
	return copyDelivery(q.items[0]), slices.Clone(q.attempts[q.items[0].ID]), true
}

// isHead checks that id is q's head: nil and false when id is not queued
// (nothing to do), ErrNotHead when it is queued behind the head.
func (m *memDelivery) isHead(q *memQueue, id string) (bool, error) {
	if q == nil {
		return false, nil
	}
	if len(q.items) > 0 && q.items[0].ID == id {
		return true, nil
	}
	if _, ok := q.queued[id]; ok {
		return false, fmt.Errorf("%w: %.64q", ErrNotHead, id)
	}
	return false, nil
}

// pop removes q's head, remembering its id.
func (m *memDelivery) pop(q *memQueue, now time.Time) Delivery {
	d := q.items[0]
	q.items[0] = Delivery{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil
	} else if cap(q.items) > 64 && len(q.items) < cap(q.items)/4 {
		q.items = slices.Clone(q.items)
	}
	delete(q.queued, d.ID)
	delete(q.attempts, d.ID)
	m.bytes -= len(d.Payload)
	// The queued entry becomes the remembered id: entries stay the same.
	q.done[d.ID] = now
	m.doneLog = append(m.doneLog, memDone{ref: memDeliveryRef{q.endpoint, d.ID}, at: now})
	if len(q.items) == 0 && q.dueAt >= 0 {
		m.due.place(q, false)
	}
	return d
}

func (m *memDelivery) AckHeads(_ context.Context, endpoint string, ids []string, holder string, limit int) ([]Queued, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, false)
	for _, id := range ids {
		ok, err := m.isHead(q, id)
		if err != nil {
			return nil, err
		}
		if ok {
			m.pop(q, now)
		}
	}
	if q == nil || len(q.items) == 0 {
		if q != nil && holder != "" && q.leased(now) && q.holder == holder {
			q.holder, q.leaseExpiry = "", time.Time{}
		}
		return nil, nil
	}
	var next []Queued
	for i, bytes := 0, 0; i < min(limit, len(q.items)) && (i == 0 || bytes+len(q.items[i].Payload) <= MaxHeadBytesPerRead); i++ {
		bytes += len(q.items[i].Payload)
		next = append(next, Queued{copyDelivery(q.items[i]), slices.Clone(q.attempts[q.items[i].ID])})
	}
	return next, nil
}

func (m *memDelivery) DeadLetter(_ context.Context, endpoint, id, reason string, atts []Attempt) error {
	reason = strings.Clone(reason)
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, false)
	ok, err := m.isHead(q, id)
	if !ok {
		return err
	}
	now := time.Now()
	m.bury(m.pop(q, now), atts, reason, now)
	return nil
}

// bury adds a dead letter of d. pop counted d's id, remembered, as the
// entry d was, so the dead letter is one more entry and may evict the
// oldest others. Should the store be full of queued deliveries, the dead
// letter is kept anyway, a little over the bound: refusing it would stop
// the endpoint's queue.
func (m *memDelivery) bury(d Delivery, atts []Attempt, reason string, now time.Time) {
	ref := memDeliveryRef{d.Endpoint, d.ID}
	if old := m.dead[ref]; old != nil {
		m.dropDead(old)
	}
	_ = m.makeRoom(1, len(d.Payload), now)
	at := now.Round(0).UTC()
	e := &memDead{dl: DeadLetter{Delivery: d, Attempts: atts, At: at, Reason: reason}, member: deadMember(at, d.Endpoint, d.ID)}
	m.dead[ref] = e
	m.byMember[e.member] = e
	i, _ := slices.BinarySearch(m.deadOrder, e.member)
	m.deadOrder = slices.Insert(m.deadOrder, i, e.member)
	m.entries++
	m.bytes += len(d.Payload)
}

func (m *memDelivery) dropDead(e *memDead) {
	delete(m.dead, memDeliveryRef{e.dl.Endpoint, e.dl.ID})
	delete(m.byMember, e.member)
	if i, ok := slices.BinarySearch(m.deadOrder, e.member); ok {
		m.deadOrder = slices.Delete(m.deadOrder, i, i+1)
	}
	m.entries--
	m.bytes -= len(e.dl.Payload)
}

func (m *memDelivery) DisableEndpoint(_ context.Context, endpoint, reason string) (int, error) {
	reason = strings.Clone(reason)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, true)
	q.offReason, q.offUntil = reason, now.Add(DisabledEndpointTTL)
	moved := 0
	for len(q.items) > 0 {
		atts := q.attempts[q.items[0].ID]
		m.bury(m.pop(q, now), atts, reason, now)
		moved++
	}
	return moved, nil
}

func (m *memDelivery) RecordAttempt(_ context.Context, endpoint, id string, a Attempt) error {
	a.Err = strings.Clone(a.Err)
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, false)
	var queued bool
	if q != nil {
		_, queued = q.queued[id]
	}
	if !queued {
		return fmt.Errorf("%w: delivery %.64q is not queued", ErrNotFound, id)
	}
	log := append(q.attempts[id], a)
	q.attempts[id] = log[max(0, len(log)-MaxDeliveryAttempts):]
	return nil
}

func (m *memDelivery) ClaimEndpoint(_ context.Context, endpoint, holder string, ttl time.Duration) (bool, error) {
	ok, _, _, _, err := m.ClaimHead(context.Background(), endpoint, holder, ttl)
	return ok, err
}

func (m *memDelivery) ClaimHead(_ context.Context, endpoint, holder string, ttl time.Duration) (bool, Delivery, []Attempt, bool, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, true)
	if !m.claim(q, holder, ttl, now) {
		return false, Delivery{}, nil, false, nil
	}
	d, atts, ok := q.head()
	return true, d, atts, ok, nil
}

// claim gives q's lease to holder for ttl unless another holds it, and
// then keeps q from being due before the lease runs out.
func (m *memDelivery) claim(q *memQueue, holder string, ttl time.Duration, now time.Time) bool {
	if q.leased(now) && q.holder != holder {
		return false
	}
	if q.holder != holder {
		q.holder = strings.Clone(holder)
	}
	q.leaseExpiry = now.Add(ttl)
	if q.dueAt >= 0 && q.due.Before(q.leaseExpiry) {
		q.due = q.leaseExpiry
		m.due.place(q, true)
	}
	return true
}

func (m *memDelivery) ReleaseEndpoint(_ context.Context, endpoint, holder string, next time.Time) error {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, false)
	if q == nil || !q.leased(now) || q.holder != holder {
		return nil
	}
	q.holder, q.leaseExpiry = "", time.Time{}
	if len(q.items) == 0 {
		return nil
	}
	q.due = next
	m.due.place(q, true)
	return nil
}

func (m *memDelivery) Endpoints(_ context.Context, limit int) ([]string, error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	// The due heap's smallest entries, found by walking it from the root
	// with a frontier ordered the same way: O(limit log limit).
	var out []string
	frontier := indexedHeap[*memQueue]{less: dueBefore}
	if m.due.Len() > 0 {
		frontier.items = append(frontier.items, m.due.items[0])
	}
	for frontier.Len() > 0 && len(out) < limit {
		q := heap.Pop(&frontier).(*memQueue)
		if q.due.After(now) {
			break
		}
		out = append(out, q.endpoint)
		for _, c := range []int{2*q.dueAt + 1, 2*q.dueAt + 2} {
			if c < m.due.Len() {
				heap.Push(&frontier, m.due.items[c])
			}
		}
	}
	return out, nil
}

func (m *memDelivery) Depth(_ context.Context, endpoint string) (int, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(endpoint, false)
	if q == nil || len(q.items) == 0 {
		return 0, time.Time{}, nil
	}
	return len(q.items), q.items[0].Enqueued, nil
}

func (m *memDelivery) Backlog(context.Context) (int, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	var oldest time.Time
	for _, q := range m.due.items {
		n += len(q.items)
		if at := q.items[0].Enqueued; oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	return n, oldest.Truncate(time.Millisecond), nil
}

func (m *memDelivery) DeadLetters(_ context.Context, cursor string, limit int) ([]DeadLetter, string, error) {
	after, err := decodeDeadCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	if after != "" {
		var found bool
		if i, found = slices.BinarySearch(m.deadOrder, after); found {
			i++
		}
	}
	page := m.deadOrder[i:min(i+limit, len(m.deadOrder))]
	out := make([]DeadLetter, len(page))
	for j, member := range page {
		out[j] = m.byMember[member].copyOut()
	}
	if i+limit < len(m.deadOrder) {
		return out, encodeCursor(page[len(page)-1]), nil
	}
	return out, "", nil
}

func (e *memDead) copyOut() DeadLetter {
	dl := e.dl
	dl.Delivery = copyDelivery(dl.Delivery)
	dl.Attempts = slices.Clone(dl.Attempts)
	return dl
}

func (m *memDelivery) GetDeadLetter(_ context.Context, endpoint, id string) (DeadLetter, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.dead[memDeliveryRef{endpoint, id}]
	if e == nil {
		return DeadLetter{}, false, nil
	}
	return e.copyOut(), true, nil
}

func (m *memDelivery) Redeliver(_ context.Context, endpoint, id string) error {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.dead[memDeliveryRef{endpoint, id}]
	if e == nil {
		return fmt.Errorf("%w: no dead letter %.64q for endpoint %.64q", ErrNotFound, id, endpoint)
	}
	q := m.queue(endpoint, true)
	if _, queued := q.queued[id]; !queued {
		if len(q.items) >= MaxQueueLength {
			return fmt.Errorf("%w: endpoint %.64q holds %d deliveries", ErrQueueFull, endpoint, MaxQueueLength)
		}
		// The dead letter's entry and bytes move back to the queue.
		m.forget(q, id)
		d := e.dl.Delivery
		m.dropDead(e)
		delete(q.attempts, id)
		m.push(q, d, now)
	} else {
		m.dropDead(e)
	}
	q.offReason, q.offUntil = "", time.Time{}
	return nil
}

// sweep forgets ids past their retention, drops dead letters past theirs,
// and removes queues that hold nothing any more.
func (m *memDelivery) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.doneLog) > 0 && now.Sub(m.doneLog[0].at) >= DeliveryIDRetention {
		m.popDone()
	}
	if len(m.doneLog) == 0 {
		m.doneLog = nil
	}
	cutoff := deadCutoff(now)
	for len(m.deadOrder) > 0 && m.deadOrder[0] < cutoff {
		m.dropDead(m.byMember[m.deadOrder[0]])
	}
	for ep, q := range m.queues {
		if q.offReason != "" && !q.disabled(now) {
			q.offReason, q.offUntil = "", time.Time{}
		}
		if q.holder != "" && !q.leased(now) {
			q.holder, q.leaseExpiry = "", time.Time{}
		}
		if len(q.items) == 0 && len(q.done) == 0 && q.holder == "" && q.offReason == "" {
			delete(m.queues, ep)
		}
	}
}

func dueBefore(a, b *memQueue) bool { return a.due.Before(b.due) }
