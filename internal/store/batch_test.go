package store

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
)

// TestCoalescerBatchesWhatArrivesDuringABatch holds the first batch until
// every other call is queued: those must go out together, each caller
// getting its own reply.
func TestCoalescerBatchesWhatArrivesDuringABatch(t *testing.T) {
	const calls = 50
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	c := newCoalescer(1, func(ctx context.Context, batch []*batchCall[int, int]) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(batch))
		mu.Unlock()
		if first {
			<-release
		}
		for _, call := range batch {
			call.res = call.req * 2
		}
	})
	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([]int, calls)
	errs := make([]error, calls)
	wg.Add(1)
	go func() {
		defer wg.Done()
		got[0], errs[0] = c.do(ctx, 0)
	}()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	for i := 1; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = c.do(ctx, i)
		}()
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == calls-1 })
	close(release)
	wg.Wait()
	for i := range calls {
		if errs[i] != nil || got[i] != 2*i {
			t.Errorf("call %d = %d, %v; want %d", i, got[i], errs[i], 2*i)
		}
	}
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != calls-1 {
		t.Errorf("batch sizes = %v, want [1 %d]", sizes, calls-1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != 0 || len(c.queue) != 0 {
		t.Errorf("coalescer still running (%v) or holding %d calls after the last batch", c.running, len(c.queue))
	}
}

// TestCoalescerInFlight checks that calls go out at once while fewer than
// inFlight batches run, and wait to go together once that many do.
func TestCoalescerInFlight(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	c := newCoalescer(2, func(ctx context.Context, batch []*batchCall[int, int]) {
		mu.Lock()
		held := len(sizes) < 2
		sizes = append(sizes, len(batch))
		mu.Unlock()
		if held {
			<-release
		}
	})
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.do(context.Background(), i)
		}()
		if i < 2 {
			want := i + 1
			waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == want })
		}
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == 8 })
	close(release)
	wg.Wait()
	if len(sizes) != 3 || sizes[0] != 1 || sizes[1] != 1 || sizes[2] != 8 {
		t.Errorf("batch sizes = %v, want [1 1 8]", sizes)
	}
}

// TestCoalescerBoundsBatches checks that a long queue goes out in batches
// of at most maxBatch.
func TestCoalescerBoundsBatches(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	c := newCoalescer(1, func(ctx context.Context, batch []*batchCall[int, int]) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(batch))
		mu.Unlock()
		if first {
			<-release
		}
	})
	var wg sync.WaitGroup
	calls := 2*maxBatch + 2
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.do(context.Background(), 0)
		}()
		// The first call must be the lone first batch.
		waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == calls-1 })
	close(release)
	wg.Wait()
	want := []int{1, maxBatch, maxBatch, 1}
	if len(sizes) != len(want) {
		t.Fatalf("batch sizes = %v, want %v", sizes, want)
	}
	for i := range want {
		if sizes[i] != want[i] {
			t.Fatalf("batch sizes = %v, want %v", sizes, want)
		}
	}
}

// TestCoalescerCancelledCallIsNotSent checks that a caller who gives up
// while its call is still queued takes the call out of the queue.
func TestCoalescerCancelledCallIsNotSent(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sent []int
	c := newCoalescer(1, func(ctx context.Context, batch []*batchCall[int, int]) {
		mu.Lock()
		first := len(sent) == 0
		for _, call := range batch {
			sent = append(sent, call.req)
		}
		mu.Unlock()
		if first {
			<-release
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := c.do(context.Background(), 1)
		done <- err
	}()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sent) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := c.do(ctx, 2)
		cancelled <- err
	}()
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == 1 })
	cancel()
	if err := <-cancelled; err != context.Canceled {
		t.Fatalf("cancelled call = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first call = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 {
		t.Errorf("sent %v, want only the first call", sent)
	}
}

// TestBatchContext checks what a batch runs on: not cancelled by its
// callers, on the request path if any caller waits there.
func TestBatchContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(request.OnPath(context.Background()))
	cancel()
	for _, tt := range []struct {
		name      string
		ctxs      []context.Context
		onRequest bool
	}{
		{"background", []context.Context{context.Background(), request.OffPath(context.Background())}, false},
		{"request path", []context.Context{context.Background(), cancelled}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Helper()
			batch := make([]*batchCall[int, int], len(tt.ctxs))
			for i, ctx := range tt.ctxs {
				batch[i] = &batchCall[int, int]{ctx: ctx}
			}
			ctx := batchContext(batch)
			if got := request.IsOnPath(ctx); got != tt.onRequest {
				t.Errorf("on the request path = %v, want %v", got, tt.onRequest)
			}
			if ctx.Err() != nil {
				t.Error("a caller's cancellation reached the batch")
			}
		})
	}
}

// TestCoalescerLoneCall: a call that finds nothing in flight and nothing
// queued is run on its caller's goroutine, within the caller's context (its
// values, path and deadline, as a direct call would be); off the request
// path it is counted as background. A caller whose context ends during it
// gets the context's error.
func TestCoalescerLoneCall(t *testing.T) {
	type key struct{}
	var seen context.Context
	var callers []int64
	c := newCoalescer(4, func(ctx context.Context, batch []*batchCall[int, int]) {
		seen = ctx
		callers = append(callers, goroutineID())
		for _, call := range batch {
			call.res = call.req * 2
		}
	})
	onPath := context.WithValue(request.OnPath(context.Background()), key{}, "mine")
	if got, err := c.do(onPath, 1); err != nil || got != 2 {
		t.Fatalf("do = %d, %v", got, err)
	}
	if seen.Value(key{}) != "mine" || !request.IsOnPath(seen) || request.BudgetOf(seen) != request.BudgetOf(onPath) {
		t.Error("a lone call did not run within its caller's context")
	}
	if len(callers) != 1 || callers[0] != goroutineID() {
		t.Errorf("a lone call ran on goroutine %v, not its caller's %d", callers, goroutineID())
	}
	if _, err := c.do(context.Background(), 2); err != nil || request.IsOnPath(seen) {
		t.Errorf("a background lone call: %v, on the request path %v", err, request.IsOnPath(seen))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancelling := newCoalescer(1, func(context.Context, []*batchCall[int, int]) { cancel() })
	if _, err := cancelling.do(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("a caller whose context ended got %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != 0 || len(c.queue) != 0 {
		t.Errorf("coalescer still running (%d) or holding %d calls", c.running, len(c.queue))
	}
}

// goroutineID is the current goroutine's id, from its stack header.
func goroutineID() int64 {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	id, _ := strconv.ParseInt(f[1], 10, 64)
	return id
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCoalescerRidersGoWithTheNextCall queues riding calls while nothing
// is in flight: none goes out on its own before a call that does, and all
// go in that call's batch; a rider alone still goes out, in time.
func TestCoalescerRidersGoWithTheNextCall(t *testing.T) {
	var l batchLog
	c := newCoalescer(4, func(ctx context.Context, batch []*batchCall[int, int]) { l.run(batch) })
	ctx := context.Background()
	// Held off its flush, so that only the call that goes at once can
	// send the riders.
	setArmed(c, true)
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			if got, err := c.ride(ctx, i); err != nil || got != 2*i {
				t.Errorf("rider %d = %d, %v", i, got, err)
			}
		})
	}
	waitFor(t, queued(c, 3))
	if got := l.sent(); len(got) != 0 {
		t.Errorf("riders went out on their own: %v", got)
	}
	if got, err := c.do(ctx, 4); err != nil || got != 8 {
		t.Fatalf("do = %d, %v", got, err)
	}
	wg.Wait()
	if got := l.sent(); len(got) != 1 || len(got[0]) != 4 || got[0][3] != 4 {
		t.Errorf("batches = %v, want the three riders and the call in one", got)
	}

	setArmed(c, false)
	if got, err := c.ride(ctx, 5); err != nil || got != 10 {
		t.Fatalf("lone rider = %d, %v", got, err)
	}
	if got := l.sent(); len(got) != 2 || len(got[1]) != 1 {
		t.Errorf("batches = %v, want the lone rider in a batch of its own", got)
	}
}

// TestCoalescerRiderQueuedDuringABatch queues a riding call while a batch
// is in flight: when that batch is back, the rider does not go out alone
// at once but with the next call; and a rider that no call comes for is
// still sent by the flush, after the loop that left it has ended.
func TestCoalescerRiderQueuedDuringABatch(t *testing.T) {
	var l batchLog
	c, hold := heldCoalescer(&l)
	ctx := context.Background()
	sent := l.sent
	idle := func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.running == 0 }

	// A call held in flight, a rider queued behind it, the flush held off.
	release := make(chan struct{})
	hold <- release
	var wg sync.WaitGroup
	wg.Go(func() {
		if got, err := c.do(ctx, 1); err != nil || got != 2 {
			t.Errorf("do 1 = %d, %v", got, err)
		}
	})
	waitFor(t, func() bool { return len(hold) == 0 })
	setArmed(c, true)
	wg.Go(func() {
		if got, err := c.ride(ctx, 2); err != nil || got != 4 {
			t.Errorf("rider 2 = %d, %v", got, err)
		}
	})
	waitFor(t, queued(c, 1))
	close(release)
	waitFor(t, idle)
	if got := sent(); len(got) != 1 {
		t.Fatalf("batches = %v, want only the first: the rider went out alone", got)
	}
	if got, err := c.do(ctx, 3); err != nil || got != 6 {
		t.Fatalf("do 3 = %d, %v", got, err)
	}
	wg.Wait()
	if got := sent(); len(got) != 2 || len(got[1]) != 2 || got[1][0] != 2 || got[1][1] != 3 {
		t.Fatalf("batches = %v, want the rider with the next call", got)
	}

	// The same, with the flush let run: the rider goes once no call came.
	setArmed(c, false)
	release = make(chan struct{})
	hold <- release
	wg.Go(func() {
		if got, err := c.do(ctx, 4); err != nil || got != 8 {
			t.Errorf("do 4 = %d, %v", got, err)
		}
	})
	waitFor(t, func() bool { return len(hold) == 0 })
	wg.Go(func() {
		if got, err := c.ride(ctx, 5); err != nil || got != 10 {
			t.Errorf("rider 5 = %d, %v", got, err)
		}
	})
	waitFor(t, queued(c, 1))
	close(release)
	wg.Wait()
	if got := sent(); len(got) != 4 || len(got[3]) != 1 || got[3][0] != 5 {
		t.Errorf("batches = %v, want the lone rider flushed in a batch of its own", got)
	}
	waitFor(t, idle)
}

// batchLog answers each call with twice its request and records the
// requests of each batch.
type batchLog struct {
	mu      sync.Mutex
	batches [][]int
}

func (l *batchLog) run(batch []*batchCall[int, int]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := make([]int, len(batch))
	for i, call := range batch {
		b[i] = call.req
		call.res = call.req * 2
	}
	l.batches = append(l.batches, b)
}

func (l *batchLog) sent() [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]int(nil), l.batches...)
}

// TestCoalescerGathers checks gathering calls: made while nothing is in
// flight, they wait for the flush and go together, not one by one; queued
// while a batch is in flight, they go with the next batch once it is back,
// with no wait for a flush (a rider would stay); and a lone one still goes
// out, in time.
func TestCoalescerGathers(t *testing.T) {
	var l batchLog
	c, hold := heldCoalescer(&l)
	ctx := context.Background()
	gather := func(wg *sync.WaitGroup, i int) {
		wg.Go(func() {
			if got, err := c.gather(ctx, i); err != nil || got != 2*i {
				t.Errorf("gather %d = %d, %v", i, got, err)
			}
		})
	}

	// Idle, with the flush held off: the calls wait, then go as one batch.
	setArmed(c, true)
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		gather(&wg, i)
	}
	waitFor(t, queued(c, 3))
	if got := l.sent(); len(got) != 0 {
		t.Fatalf("gathering calls went out before the flush: %v", got)
	}
	c.flush()
	wg.Wait()
	if got := l.sent(); len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("batches = %v, want the three calls in one", got)
	}

	// A batch in flight, a gathering call queued behind it, the flush held
	// off: the call goes as soon as the batch is back.
	release := make(chan struct{})
	hold <- release
	wg.Go(func() {
		if got, err := c.do(ctx, 4); err != nil || got != 8 {
			t.Errorf("do 4 = %d, %v", got, err)
		}
	})
	waitFor(t, func() bool { return len(hold) == 0 })
	setArmed(c, true)
	gather(&wg, 5)
	waitFor(t, queued(c, 1))
	close(release)
	wg.Wait()
	if got := l.sent(); len(got) != 3 || len(got[2]) != 1 || got[2][0] != 5 {
		t.Fatalf("batches = %v, want the gathering call sent after the batch it waited behind", got)
	}

	// Alone, with the flush let run.
	setArmed(c, false)
	if got, err := c.gather(ctx, 6); err != nil || got != 12 {
		t.Fatalf("lone gathering call = %d, %v", got, err)
	}
	if got := l.sent(); len(got) != 4 || len(got[3]) != 1 {
		t.Errorf("batches = %v, want the lone call in a batch of its own", got)
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.running == 0 && len(c.queue) == 0 })
}

// heldCoalescer returns a coalescer of one batch in flight that records its
// batches in l. A channel sent on hold holds the next batch until it is
// closed.
func heldCoalescer(l *batchLog) (*coalescer[int, int], chan chan struct{}) {
	hold := make(chan chan struct{}, 1)
	return newCoalescer(1, func(ctx context.Context, batch []*batchCall[int, int]) {
		select {
		case release := <-hold:
			<-release
		default:
		}
		l.run(batch)
	}), hold
}

// setArmed holds the coalescer's flush off (true: as if one were due) or
// lets it run.
func setArmed(c *coalescer[int, int], armed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = armed
}

// queued reports whether n calls wait in c.
func queued(c *coalescer[int, int], n int) func() bool {
	return func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == n }
}
