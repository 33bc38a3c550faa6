package store

import (
	"context"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/redis/go-redis/v9"
)

// Background writes that many goroutines make at once (lifecycle saves from
// the tracker's workers, dedupe completions after the answers) are cheaper
// in batches: one pipeline costs the gateway and Redis about what one
// command does, in system calls and wake-ups. A coalescer sends the calls
// that arrive while a batch is in flight as the next batch, so a lone call
// goes out at once and batches grow with the load, without a timer (but
// for the calls that may wait for company: see ride and gather).
// maxBatch bounds the calls of one batch, and so one pipeline's size.
const maxBatch = 128

// batchCall is one call waiting in a coalescer: its request, and its reply
// once done is closed.
type batchCall[Req, Res any] struct {
	ctx  context.Context
	req  Req
	res  Res
	done chan struct{}
	// taken is set, under the coalescer's lock, once a batch holds the call.
	taken bool
	mode  callMode
}

// callMode is when a queued call may go out.
type callMode uint8

const (
	// callNow: at once, in the next batch (do).
	callNow callMode = iota
	// callRiding: only with a call of another mode, or after riderWait (ride).
	callRiding
	// callGathering: in the next batch while one is in flight, else after
	// riderWait, with the calls that came meanwhile (gather).
	callGathering
)

// coalescer runs calls in batches, at most inFlight batches at a time. run
// must set res of every call it is given.
type coalescer[Req, Res any] struct {
	run      func(ctx context.Context, calls []*batchCall[Req, Res])
	inFlight int

	mu      sync.Mutex
	running int
	queue   []*batchCall[Req, Res]
	// armed is set while a flush of riding calls is due; flushing from the
	// flush until a loop has taken the riding calls.
	armed, flushing bool
}

// newCoalescer returns a coalescer running at most inFlight batches at a
// time: 1 makes the largest batches, for work no caller waits for; more
// let a call go out at once while fewer are in flight, for calls a request
// waits for.
func newCoalescer[Req, Res any](inFlight int, run func(context.Context, []*batchCall[Req, Res])) *coalescer[Req, Res] {
	return &coalescer[Req, Res]{run: run, inFlight: inFlight}
}

// do queues req and waits for its reply. A caller whose ctx ends first gets
// ctx's error: if its call was already sent, it may still take effect, as
// with any command whose reply is lost.
func (c *coalescer[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	return c.call(ctx, req, callNow)
}

// ride is do for a call nobody's latency waits on (an acknowledgement of
// what was delivered, a log entry): it goes with the next batch that goes
// out for another call, or after riderWait when none does, so it costs no
// round trip of its own while the store is in use.
func (c *coalescer[Req, Res]) ride(ctx context.Context, req Req) (Res, error) {
	return c.call(ctx, req, callRiding)
}

// gather is do for calls of one kind that many goroutines make, none of
// whose callers' latency waits on them (the lifecycle tracker's saves): a
// call that finds the coalescer idle waits up to riderWait for others to go
// with it, instead of taking a round trip of its own, so a lightly loaded
// store still gets batches. While a batch is in flight it goes with the
// next one, as do's calls would, so a busy store waits for no timer.
func (c *coalescer[Req, Res]) gather(ctx context.Context, req Req) (Res, error) {
	return c.call(ctx, req, callGathering)
}

// riderWait bounds how long a riding or gathering call waits for a batch
// to go with.
const riderWait = time.Millisecond

func (c *coalescer[Req, Res]) call(ctx context.Context, req Req, mode callMode) (Res, error) {
	call := &batchCall[Req, Res]{ctx: ctx, req: req, done: make(chan struct{}), mode: mode}
	c.mu.Lock()
	if mode == callNow && c.running < c.inFlight && len(c.queue) == 0 {
		// Alone: sent from this goroutine, with no hand-off to a loop and
		// back, which costs an idle store two wake-ups per call.
		c.running++
		c.mu.Unlock()
		res := c.alone(call)
		if err := ctx.Err(); err != nil {
			// As a caller that stopped waiting: the call may have acted.
			var zero Res
			return zero, err
		}
		return res, nil
	}
	c.queue = append(c.queue, call)
	switch {
	case c.running >= c.inFlight:
		// A running loop takes it when its batch is back.
	case mode == callNow:
		c.running++
		go c.loop()
	case c.running == 0 && !c.armed:
		// With a loop running the call goes with its next batch.
		c.armed = true
		time.AfterFunc(riderWait, c.flush)
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.res, nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	if !call.taken {
		for i, q := range c.queue {
			if q == call {
				c.queue = append(c.queue[:i], c.queue[i+1:]...)
				break
			}
		}
	}
	c.mu.Unlock()
	var zero Res
	return zero, ctx.Err()
}

// alone runs call as a batch of its own on the caller's goroutine, within
// the caller's context (and so its budget, as a direct call would be), then
// leaves the calls that arrived meanwhile to a loop.
func (c *coalescer[Req, Res]) alone(call *batchCall[Req, Res]) Res {
	ctx := call.ctx
	if !request.IsOnPath(ctx) {
		ctx = request.OffPath(ctx)
	}
	c.run(ctx, []*batchCall[Req, Res]{call})
	c.mu.Lock()
	if len(c.queue) > 0 {
		go c.loop()
	} else {
		c.running--
	}
	c.mu.Unlock()
	return call.res
}

// flush sends the riding calls that found no batch to go with.
func (c *coalescer[Req, Res]) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	if c.running == 0 && len(c.queue) > 0 {
		c.flushing = true
		c.running++
		go c.loop()
	}
}

// loop sends batches until no call is waiting. The last loop running
// leaves calls that only ride to the next call, or to riderWait: sent on
// their own they would cost the round trip that riding saves.
func (c *coalescer[Req, Res]) loop() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxBatch)
		if n == 0 || (c.running == 1 && !c.flushing && c.onlyRiders()) {
			c.running--
			switch {
			case n == 0 && c.running == 0:
				c.queue = nil
			case n > 0 && !c.armed:
				c.armed = true
				time.AfterFunc(riderWait, c.flush)
			}
			c.mu.Unlock()
			return
		}
		batch := make([]*batchCall[Req, Res], n)
		copy(batch, c.queue)
		for _, call := range batch {
			call.taken = true
		}
		c.flushing = false
		c.queue = append(c.queue[:0], c.queue[n:]...)
		c.mu.Unlock()

		c.run(batchContext(batch), batch)
		for _, call := range batch {
			close(call.done)
		}
	}
}

// onlyRiders reports whether every queued call rides; c.mu is held.
func (c *coalescer[Req, Res]) onlyRiders() bool {
	for _, call := range c.queue {
		if call.mode != callRiding {
			return false
		}
	}
	return true
}

// batchContext is the context a batch runs on. No caller can cancel it:
// callers that give up stop waiting, and the store's read and write
// timeouts bound the batch. Its round trips count as the request path's if
// any caller waits on the request path.
func batchContext[Req, Res any](batch []*batchCall[Req, Res]) context.Context {
	for _, call := range batch {
		if request.IsOnPath(call.ctx) {
			// Counted as the request path's, bounded by no one request's
			// budget: each caller stops waiting at its own.
			return request.SharedPath(context.Background())
		}
	}
	return request.OffPath(context.Background())
}

// pipelinesInFlight bounds the shared pipelines in flight at once. A call
// goes out at once while fewer are in flight, so batching adds no wait
// until the store is busy. Two, not more: under load the calls of the
// many requests in flight then take about a third fewer round trips, each of
// which costs the gateway and Redis system calls and wake-ups, while a
// lightly loaded store seldom has both in flight. The lifecycle tracker's
// saves, which no request waits on, take pipelines of their own and never
// hold one of these.
const pipelinesInFlight = 2

// relayPipelinesInFlight bounds the push relay's pipelines in flight (see
// redisConn.relay). Fewer than the request path's: the relay makes small
// calls for every event (logged and enqueued, claimed, acknowledged), and
// with one pipeline in flight those made meanwhile go together in the
// next, for fewer round trips per event, at the cost of a wait of up to one
// round trip for the batch in flight.
const relayPipelinesInFlight = 1

// piped is one call's share of a shared pipeline: it queues the call's
// commands, whose replies the caller reads once the batch has run (and
// only then: a caller whose context ended first must not touch them).
type piped func(ctx context.Context, pipe redis.Pipeliner)

// newPipelines returns a coalescer that sends the commands of concurrent
// calls, of any kind, in one pipeline: the claims a request waits for and
// the answers dedupe records after it share their round trips, which cost
// the gateway and Redis more than the commands do.
func newPipelines(client redis.UniversalClient, inFlight int) *coalescer[piped, struct{}] {
	return newCoalescer(inFlight, func(ctx context.Context, calls []*batchCall[piped, struct{}]) {
		pipe := client.Pipeline()
		for _, c := range calls {
			c.req(ctx, pipe)
		}
		// Exec reports the first failed command; each caller examines its
		// own.
		_, _ = pipe.Exec(ctx)
	})
}

// runPiped queues s on the shared pipeline and waits for its reply.
func runPiped(ctx context.Context, conn *redisConn, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	return evalPiped(ctx, conn, s, []scriptCall{{keys, args}})[0]
}

// runRelayed is runPiped on the push relay's pipelines.
func runRelayed(ctx context.Context, conn *redisConn, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	return evalRelayed(ctx, conn, s, []scriptCall{{keys, args}})[0]
}

// rideRelayed is runRelayed for a call that rides (see coalescer.ride).
func rideRelayed(ctx context.Context, conn *redisConn, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	return evalOn(ctx, conn, conn.ridden, s, []scriptCall{{keys, args}})[0]
}

// evalPiped runs s once per call on the shared pipeline and waits for the
// replies. A node that has not cached the script answers NOSCRIPT; the call
// is then sent again on its own with Run, which loads it.
func evalPiped(ctx context.Context, conn *redisConn, s *redis.Script, calls []scriptCall) []*redis.Cmd {
	return evalOn(ctx, conn, conn.piped, s, calls)
}

// evalRelayed is evalPiped on the push relay's pipelines.
func evalRelayed(ctx context.Context, conn *redisConn, s *redis.Script, calls []scriptCall) []*redis.Cmd {
	return evalOn(ctx, conn, conn.relayed, s, calls)
}

func evalOn(ctx context.Context, conn *redisConn, send func(context.Context, piped) error, s *redis.Script, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if err := send(ctx, func(ctx context.Context, pipe redis.Pipeliner) {
		for i, c := range calls {
			cmds[i] = s.EvalSha(ctx, pipe, c.keys, c.args...)
		}
	}); err != nil {
		// cmds is the batch's to write until it has run: answer with others.
		failed := make([]*redis.Cmd, len(calls))
		for i := range failed {
			failed[i] = redis.NewCmd(ctx)
			failed[i].SetErr(err)
		}
		return failed
	}
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmds[i] = s.Run(ctx, conn.client, calls[i].keys, calls[i].args...)
		}
	}
	return cmds
}

// scriptCall is one run of a script: its keys and arguments.
type scriptCall struct {
	keys []string
	args []any
}
