package scaletest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// giveUpAfter bounds how long the load retries one message; a failover
// takes seconds, so a message still failing after this is a real failure.
const giveUpAfter = 60 * time.Second

// attempt is one try of a send.
type attempt struct {
	via        string
	start, end time.Time
	r          reply
}

// message is one message the load sent, with every try.
type message struct {
	id       string
	owner    caller
	attempts []attempt // of the first send, until it succeeded
	taskID   string    // from the answer that succeeded; "" if it never did
	// retries are the tries of the retry through another replica.
	retries []attempt
	// retryTaskID is the task a later retry of the message through another
	// replica answered with ("" when not retried).
	retryTaskID string
}

// lostAttempt reports whether some try may have reached the agent without
// the client learning its outcome: the replica died or the exchange broke.
func (m *message) lostAttempt() bool {
	for _, a := range append(m.attempts, m.retries...) {
		if a.r.out == lost {
			return true
		}
	}
	return false
}

// load is a closed-loop workload spread round-robin over the replicas:
// each worker sends a new message (retrying it, with the same message id,
// through the next replica until it succeeds), reads its task through
// another replica, tries to read a task of the other tenant, and every
// third message retries it through another replica to check the replay.
type load struct {
	w       *world
	callers [2]caller
	stop    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	messages []*message
	tasks    [2][]string // recent task ids per caller, targets of the other's probes
	requests int
	failures map[string]int // by kind
	failedAt []time.Time
	leaks    []string
	// pushTasks are the streamed tasks with a push config (runPush).
	pushTasks []*pushTask
}

// startLoad starts workers closed-loop clients, alternately a and b, and,
// with a receiver, one client of a streaming tasks with push configs.
func startLoad(w *world, a, b caller, workers int, rcv *receiver) *load {
	l := &load{w: w, callers: [2]caller{a, b}, stop: make(chan struct{}), failures: map[string]int{}}
	for i := range workers {
		l.wg.Go(func() { l.run(i) })
	}
	if rcv != nil {
		l.wg.Go(func() { l.runPush(a, rcv) })
	}
	return l
}

func (l *load) stopAndWait() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// lastFailure is when the last request failed (zero if none did).
func (l *load) lastFailure() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failedAt) == 0 {
		return time.Time{}
	}
	return l.failedAt[len(l.failedAt)-1]
}

// record counts one request; good says whether its answer is the one the
// request should get.
func (l *load) record(r reply, good bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if good {
		return
	}
	kind := "other"
	switch {
	case r.out == refused:
		kind = "refused (replica down)"
	case r.out == lost:
		kind = "lost (no answer)"
	case r.is(a2a.ErrUnavailable):
		kind = "UNAVAILABLE (store)"
	case r.is(a2a.ErrInProgress):
		kind = "IN_PROGRESS (dedupe)"
	case r.ev.Kind == a2a.EventError:
		kind = fmt.Sprintf("error %d", r.ev.ErrorCode)
	}
	l.failures[kind]++
	l.failedAt = append(l.failedAt, time.Now())
}

func (l *load) run(worker int) {
	me, foe := worker%2, (worker+1)%2
	c := l.callers[me]
	// One worker sends slower tasks, so some sends are in flight on the
	// replica when it is killed.
	text := "complete load"
	if worker == 0 {
		text = "slow 300ms"
	}
	for n := 0; !l.stopped(); n++ {
		m := &message{id: newID(fmt.Sprintf("w%d", worker)), owner: c}
		m.attempts = l.send(m, text, nil)
		if last := m.attempts[len(m.attempts)-1]; last.r.ok() {
			m.taskID = last.r.ev.TaskID
		}
		l.mu.Lock()
		l.messages = append(l.messages, m)
		l.mu.Unlock()
		if m.taskID == "" {
			continue
		}
		l.mu.Lock()
		l.tasks[me] = append(l.tasks[me], m.taskID)
		var victim string
		if k := len(l.tasks[foe]); k > 0 {
			victim = l.tasks[foe][k-1]
		}
		l.mu.Unlock()

		r := l.w.call(l.w.next(), c, a2a.MethodGetTask, map[string]any{"id": m.taskID})
		l.record(r, r.ok() && r.ev.TaskID == m.taskID)
		if victim != "" {
			g := l.w.next()
			r := l.w.call(g, c, a2a.MethodGetTask, map[string]any{"id": victim})
			if r.ok() {
				l.mu.Lock()
				l.leaks = append(l.leaks, fmt.Sprintf("%s read %s's task %s via %s: %s", c.tenant, l.callers[foe].tenant, victim, g.name, r))
				l.mu.Unlock()
			}
			l.record(r, r.is(a2a.ErrTaskNotFound))
		}
		if n%3 == 0 {
			var skip []string
			if k := len(m.attempts); k > 0 {
				skip = []string{m.attempts[k-1].via}
			}
			m.retries = l.send(m, text, skip)
			if last := m.retries[len(m.retries)-1]; last.r.ok() {
				m.retryTaskID = last.r.ev.TaskID
			}
		}
	}
}

// send tries m through the next replica (not one named in skip) until an
// answer carries a task or giveUpAfter passes, and returns the tries.
func (l *load) send(m *message, text string, skip []string) []attempt {
	var tries []attempt
	deadline := time.Now().Add(giveUpAfter)
	for time.Now().Before(deadline) {
		g := l.w.next()
		if len(skip) > 0 && g.name == skip[0] && len(l.w.live()) > 1 {
			g = l.w.next()
		}
		a := attempt{via: g.name, start: time.Now()}
		a.r = l.w.call(g, m.owner, a2a.MethodSend, sendParams(m.id, text, "", ""))
		a.end = time.Now()
		tries = append(tries, a)
		good := a.r.ok() && a.r.ev.TaskID != ""
		l.record(a.r, good)
		if good {
			return tries
		}
		time.Sleep(100 * time.Millisecond)
	}
	return tries
}

// failureSummary describes the failures: how many of which kind, and over
// which span relative to t0.
func (l *load) failureSummary(t0 time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failedAt) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(l.failures))
	for k, n := range l.failures {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	first, last := l.failedAt[0], l.failedAt[len(l.failedAt)-1]
	return fmt.Sprintf("%d (%s), from %s to %s after the first kill (%s)", len(l.failedAt), strings.Join(kinds, ", "),
		first.Sub(t0).Round(time.Millisecond), last.Sub(t0).Round(time.Millisecond), last.Sub(first).Round(time.Millisecond))
}
