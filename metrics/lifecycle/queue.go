package lifecycle

import (
	"context"
	"hash/fnv"
	"sync"
)

// item is one unit of work for a worker: an event to apply (with a reply
// channel when the sender waits for the outcome), or a flush barrier.
type item struct {
	ev      TaskEvent
	reply   chan<- applied
	barrier chan struct{}
}

// applied is the outcome of one event for a waiting sender.
type applied struct {
	accepted bool
	err      error
}

// queue is a bounded set of FIFO shards, one worker each. Every event of a
// task hashes to the same shard, so a task's events are applied in the
// order they were queued while different tasks proceed in parallel.
type queue struct {
	shards []chan item
	// mu orders sends against close: senders hold it shared, close
	// exclusively, so nothing is sent on a closed channel.
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

func newQueue(workers, size int, handle func(item)) *queue {
	q := &queue{shards: make([]chan item, workers)}
	for i := range q.shards {
		ch := make(chan item, size)
		q.shards[i] = ch
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			for it := range ch {
				if it.barrier != nil {
					close(it.barrier)
					continue
				}
				handle(it)
			}
		}()
	}
	return q
}

func (q *queue) shard(agent, taskID string) chan item {
	h := fnv.New64a()
	_, _ = h.Write([]byte(agent))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(taskID))
	return q.shards[h.Sum64()%uint64(len(q.shards))]
}

// tryPut queues it without waiting.
func (q *queue) tryPut(it item) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrClosed
	}
	select {
	case q.shard(it.ev.Agent, it.ev.TaskID) <- it:
		return nil
	default:
		return ErrQueueFull
	}
}

// put queues it, waiting for room until ctx ends.
func (q *queue) put(ctx context.Context, it item) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return ErrClosed
	}
	select {
	case q.shard(it.ev.Agent, it.ev.TaskID) <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush waits until every shard has worked through what was queued before
// the call: a barrier behind it in each shard.
func (q *queue) flush(ctx context.Context) error {
	barriers, err := q.putBarriers(ctx)
	if err != nil {
		return err
	}
	for _, b := range barriers {
		select {
		case <-b:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (q *queue) putBarriers(ctx context.Context) ([]chan struct{}, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return nil, ErrClosed
	}
	barriers := make([]chan struct{}, len(q.shards))
	for i, ch := range q.shards {
		barriers[i] = make(chan struct{})
		select {
		case ch <- item{barrier: barriers[i]}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return barriers, nil
}

// close stops accepting work and waits until the workers have applied
// everything queued.
func (q *queue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		for _, ch := range q.shards {
			close(ch)
		}
	}
	q.mu.Unlock()
	q.wg.Wait()
}
