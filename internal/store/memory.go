package store

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Bounds on how often the janitor sweeps expired records. Lookups never
// return an expired record, so sweeping only returns memory; it need not be
// frequent.
const (
	minSweepInterval = time.Second
	maxSweepInterval = time.Minute
)

// sweeper is implemented by each memory concern: drop what expired by now.
type sweeper interface {
	sweep(now time.Time)
}

// memoryStore is the Store of a single replica: everything lives in this
// process and is lost when it exits.
type memoryStore struct {
	gate      gate
	ownership *memOwnership
	dedupe    *memDedupe
	active    *memActive
	lifecycle *memLifecycle
	delivery  *memDelivery
	push      *memPushConfigs
	events    *memEventLogs
	challenge *memChallenges
	sources   *memPushSources
	sweepers  []sweeper
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ Store = (*memoryStore)(nil)

// NewMemory returns the embedded store and starts its janitor, which Close
// stops. o must have passed Validate; zero fields take their defaults.
func NewMemory(o Options) Store {
	o = withDefaults(o)
	s := &memoryStore{stop: make(chan struct{}), done: make(chan struct{})}
	s.ownership = newMemOwnership(o.OwnershipTTL.D(), o.Memory.MaxEntries)
	s.dedupe = newMemDedupe(o.Memory.MaxEntries)
	s.active = newMemActive(o.Memory.MaxEntries)
	s.lifecycle = newMemLifecycle(o.Memory.MaxEntries)
	s.delivery = newMemDelivery(o.Memory.MaxEntries)
	s.push = newMemPushConfigs(o.Memory.MaxEntries)
	s.events = newMemEventLogs(o.Memory.MaxEntries, s.push)
	s.challenge = newMemChallenges(o.Memory.MaxEntries)
	s.sources = newMemPushSources(o.Memory.MaxEntries)
	s.sweepers = []sweeper{s.ownership, s.dedupe, s.lifecycle, s.delivery, s.push, s.events, s.challenge, s.sources}
	go s.janitor(sweepInterval(o.OwnershipTTL.D()))
	return s
}

// sweepInterval sweeps twice per TTL, within the bounds above.
func sweepInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/2, minSweepInterval), maxSweepInterval)
}

func (s *memoryStore) janitor(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			for _, sw := range s.sweepers {
				sw.sweep(now)
			}
		}
	}
}

func (s *memoryStore) Kind() string { return KindMemory }

func (s *memoryStore) Ownership() Ownership { return checkedOwnership{&s.gate, s.ownership} }

func (s *memoryStore) Dedupe() Dedupe { return checkedDedupe{&s.gate, s.dedupe} }

func (s *memoryStore) ActiveTasks() ActiveTasks { return checkedActiveTasks{&s.gate, s.active} }

func (s *memoryStore) Lifecycle() Lifecycle { return checkedLifecycle{&s.gate, s.lifecycle} }

func (s *memoryStore) Delivery() DeliveryStore { return checkedDelivery{&s.gate, s.delivery} }

func (s *memoryStore) PushConfigs() PushConfigs { return checkedPushConfigs{&s.gate, s.push} }

func (s *memoryStore) EventLog() EventLog {
	return checkedEventLog{&s.gate, memEventLog{logs: s.events, o: EventLogOptions{}.withDefaults()}}
}

func (s *memoryStore) Challenges() Challenges { return checkedChallenges{&s.gate, s.challenge} }

func (s *memoryStore) PushSources() PushSources { return checkedPushSources{&s.gate, s.sources} }

func (s *memoryStore) Ping(context.Context) error { return s.gate.check() }

func (s *memoryStore) Close() error {
	s.closeOnce.Do(func() {
		s.gate.closed.Store(true)
		close(s.stop)
		<-s.done
	})
	return nil
}

// memRecords keeps records by key in the order they were put, each until
// its expiry, and at most max of them: a put beyond max drops the oldest.
// Expired records are not found, and go at the next sweep. The caller
// holds the lock that guards it.
type memRecords[K comparable, V any] struct {
	max   int
	byKey map[K]*list.Element // of *memRecord[K, V]
	order list.List           // oldest first
	// inOrder says records expire in the order they were put, so a sweep
	// stops at the first live one.
	inOrder bool
	// dropped, when set, is called with every record that goes.
	dropped func(V)
}

type memRecord[K comparable, V any] struct {
	key   K
	val   V
	until time.Time
}

func newMemRecords[K comparable, V any](maxEntries int) *memRecords[K, V] {
	return &memRecords[K, V]{max: maxEntries, byKey: map[K]*list.Element{}}
}

// get returns k's record unless it expired by now; the zero now finds
// expired records too.
func (r *memRecords[K, V]) get(k K, now time.Time) (V, bool) {
	if el, ok := r.byKey[k]; ok {
		if rec := el.Value.(*memRecord[K, V]); now.Before(rec.until) {
			return rec.val, true
		}
	}
	var zero V
	return zero, false
}

// put makes v the record of k until until, and the newest.
func (r *memRecords[K, V]) put(k K, v V, until time.Time) {
	r.remove(k)
	for r.order.Len() >= r.max {
		r.drop(r.order.Front())
	}
	r.byKey[k] = r.order.PushBack(&memRecord[K, V]{key: k, val: v, until: until})
}

func (r *memRecords[K, V]) remove(k K) {
	if el, ok := r.byKey[k]; ok {
		r.drop(el)
	}
}

func (r *memRecords[K, V]) drop(el *list.Element) {
	rec := r.order.Remove(el).(*memRecord[K, V])
	delete(r.byKey, rec.key)
	if r.dropped != nil {
		r.dropped(rec.val)
	}
}

func (r *memRecords[K, V]) sweep(now time.Time) {
	for el := r.order.Front(); el != nil; {
		next := el.Next()
		if !now.Before(el.Value.(*memRecord[K, V]).until) {
			r.drop(el)
		} else if r.inOrder {
			return
		}
		el = next
	}
}
