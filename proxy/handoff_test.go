package proxy_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// endRecorder is a stage that records when the request ends, and with
// which error, as every stage with work at the end does (Scope.OnEnd).
type endRecorder struct {
	mu    sync.Mutex
	ended int
	errs  []error
}

func (e *endRecorder) stage(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		s.OnEnd(func(err error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.ended++
			e.errs = append(e.errs, err)
		})
		return next(w, r, s)
	}
}

func (e *endRecorder) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

// goroutinesIn counts the goroutines whose stack has fn in it.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// TestIdleStreamsHoldNoHandler: once its first event is out, an idle
// stream of an HTTP/1.1 caller is relayed off its handler. No goroutine
// sits in the pipeline for it, net/http no longer reads its connection,
// and it holds one goroutine, the relay's; one more, shared by all, peeks
// at their connections to notice callers leaving. The stages' end work
// waits for the stream to end.
func TestIdleStreamsHoldNoHandler(t *testing.T) {
	const n = 20
	released := make(chan struct{}, n)
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		<-r.Context().Done()
		released <- struct{}{}
	})
	ends := &endRecorder{}
	e := start(t, up.url, withStage(ends.stage))
	streams := make([]*stream, n)
	for i := range streams {
		streams[i] = e.open(t, streamRequest())
		streams[i].next(t)
	}
	eventually(t, "every stream is relayed off its handler", func() bool {
		return goroutinesIn("proxy.(*Gateway).serveAgent") == 0 && goroutinesIn("proxy.relayRest") == n
	})
	// A poller of streams that ended before may still be on its way out.
	eventually(t, "one goroutine watches every stream's caller", func() bool { return goroutinesIn("proxy.(*callerPoll).run") == 1 })
	// Only the agent's connections are still read by net/http's server.
	if got := goroutinesIn("net/http.(*connReader).backgroundRead"); got != n {
		t.Fatalf("%d net/http background reads for %d streams through the gateway: the gateway's connections should have none", got, n)
	}
	if got := ends.count(); got != 0 {
		t.Fatalf("%d requests ended while their streams are open", got)
	}
	if got := e.gw.OpenStreams(); got != n {
		t.Fatalf("open streams = %d, want %d", got, n)
	}

	for _, s := range streams {
		s.close()
	}
	for range n {
		select {
		case <-released:
		case <-time.After(testTimeout):
			t.Fatal("the agent's requests were not all cancelled after the callers left")
		}
	}
	eventually(t, "every stream ended and its request finished", func() bool {
		return ends.count() == n && e.gw.OpenStreams() == 0 && goroutinesIn("proxy.relayRest") == 0
	})
	e.logs.wantLog(t, "DEBUG", "stream ended by the caller", nil)
	e.wantCounter(t, "requests_total", map[string]string{"agent": agentName, "operation": "stream", "result": "ok"}, n)
}

// TestHandedOffStreamEnds: events after the hand-off reach the caller one
// by one, the body ends with its last chunk when the agent ends the stream,
// the connection is not reused, and the request is accounted for as a
// whole: its end work, its access line with every byte, its metric.
func TestHandedOffStreamEnds(t *testing.T) {
	next := make(chan struct{})
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		for i := 1; i <= 3; i++ {
			writeFlush(w, event(i))
			select {
			case <-next:
			case <-u.done:
				return
			}
		}
	})
	ends := &endRecorder{}
	e := start(t, up.url, withStage(ends.stage))
	s := e.open(t, streamRequest())
	if got := s.resp.Header.Get("Connection"); got != "close" && !s.resp.Close {
		t.Fatalf("Connection = %q: a client could send another request on a connection the stream closes", got)
	}
	bytes := 0
	for i := 1; i <= 3; i++ {
		if got := s.next(t); string(got.Raw) != event(i) {
			t.Fatalf("event %d = %q", i, got.Raw)
		}
		bytes += len(event(i))
		if i == 1 {
			eventually(t, "the stream is relayed off its handler", func() bool { return goroutinesIn("proxy.relayRest") == 1 })
		}
		if ends.count() != 0 {
			t.Fatalf("the request ended after event %d of 3", i)
		}
		next <- struct{}{}
	}
	s.wantCleanEnd(t)
	eventually(t, "the request finished", func() bool { return ends.count() == 1 && e.gw.OpenStreams() == 0 })
	if err := ends.errs[0]; err != nil {
		t.Fatalf("the request ended with %v", err)
	}
	line := e.logs.wantLog(t, "INFO", "request", map[string]any{"log": "access", "agent": agentName, "op": "stream", "status": float64(http.StatusOK)})
	if got := line["bytes_out"]; got != float64(bytes) {
		t.Fatalf("access line bytes_out = %v, want %d", got, bytes)
	}
	e.wantCounter(t, "requests_total", map[string]string{"agent": agentName, "operation": "stream", "result": "ok"}, 1)
}

// TestHandedOffStreamsDrain: shutdown ends handed-off streams cleanly, and
// WaitStreams returns once they have finished.
func TestHandedOffStreamsDrain(t *testing.T) {
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		holdOpen(u, r, make(chan struct{}))
	})
	ends := &endRecorder{}
	e := start(t, up.url, withStage(ends.stage))
	s := e.open(t, streamRequest())
	s.next(t)
	eventually(t, "the stream is relayed off its handler", func() bool { return goroutinesIn("proxy.relayRest") == 1 })
	e.gw.DrainStreams()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := e.gw.WaitStreams(ctx); err != nil {
		t.Fatal(err)
	}
	if ends.count() != 1 {
		t.Fatal("WaitStreams returned before the stream's request finished")
	}
	s.wantCleanEnd(t)
}
