package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// holdOpen keeps an upstream stream open until the gateway lets go of it
// (released is closed then) or the test ends.
func holdOpen(u *upstream, r *http.Request, released chan<- struct{}) {
	select {
	case <-r.Context().Done():
		close(released)
	case <-u.done:
	}
}

// keepAlive sends keep-alive comments, and nothing else, until the gateway
// lets go of the stream (released is closed then) or the test ends.
func keepAlive(u *upstream, w http.ResponseWriter, r *http.Request, released chan<- struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			writeFlush(w, ": keep-alive\n\n")
		case <-r.Context().Done():
			close(released)
			return
		case <-u.done:
			return
		}
	}
}

// dialect is a binding and version a stream is requested in, with the
// request that opens it.
type dialect struct {
	name string
	rpc  bool
	v    a2a.Version
	rq   request
}

// event is the nth status event of a stream, in d's binding and version
// (see event for JSON-RPC 1.0).
func (d dialect) event(n int) string {
	switch {
	case d.rpc && d.v == a2a.V10:
		return event(n)
	case d.rpc:
		return `data: {"jsonrpc":"2.0","id":"s-1","result":{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"working"},"final":false,"metadata":{"n":` +
			itoa(n) + `}}}` + "\n\n"
	}
	return `data: {"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"},"metadata":{"n":` + itoa(n) + `}}}` + "\n\n"
}

// streamDialects open a streaming send in every binding and version.
func streamDialects() []dialect {
	return []dialect{
		{"rpc 1.0", true, a2a.V10, streamRequest()},
		{"rpc 0.3", true, a2a.V03, request{method: http.MethodPost, path: "/", body: rpcBody(a2a.MethodStream, a2a.V03, `"s-1"`, sendParams)}},
		{"rest 1.0", false, a2a.V10, request{method: http.MethodPost, path: "/message:stream", header: v10(), body: []byte(sendParams)}},
		{"rest 0.3", false, a2a.V03, request{method: http.MethodPost, path: "/v1/message:stream", body: []byte(sendParams)}},
	}
}

// wantErrorEvent reads the stream's next event carrying data (keep-alives
// are relayed and skipped here): it must be want as the SDK servers end a
// failing stream in d's binding and version, and the stream must end right
// after it.
func (s *stream) wantErrorEvent(t *testing.T, d dialect, want *a2a.Error, restStatus string) {
	t.Helper()
	ev := s.next(t)
	for ev.KeepAlive() {
		ev = s.next(t)
	}
	switch {
	case d.rpc:
		if ev.Event != "" {
			t.Fatalf("JSON-RPC error event of type %q: %q", ev.Event, ev.Raw)
		}
		wantRPCErrorBody(t, ev.Data, d.v, `"s-1"`, want)
	case ev.Event != "error":
		t.Fatalf("REST error event of type %q, want \"error\": %q", ev.Event, ev.Raw)
	case d.v == a2a.V10:
		wantRESTErrorBody(t, ev.Data, want, restStatus)
	default:
		wantREST03ErrorBody(t, ev.Data, want)
	}
	s.wantCleanEnd(t)
}

// TestStreamFlushesEachEvent proves events are not buffered: the caller
// reads event 1 while the agent is still waiting to write event 2.
func TestStreamFlushesEachEvent(t *testing.T) {
	second := make(chan struct{})
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		select {
		case <-second:
		case <-r.Context().Done():
			return
		case <-u.done:
			return
		}
		writeFlush(w, event(2))
	})
	e := start(t, up.url)
	s := e.open(t, streamRequest())
	h := s.resp.Header
	if h.Get("Cache-Control") != "no-cache" || h.Get("Content-Length") != "" || s.resp.ContentLength != -1 {
		t.Fatalf("stream headers %v (length %d)", h, s.resp.ContentLength)
	}
	// Were event 1 held back, this read would wait for the client timeout.
	if got := s.next(t); string(got.Raw) != event(1) {
		t.Fatalf("event 1 = %q", got.Raw)
	}
	close(second)
	if got := s.next(t); string(got.Raw) != event(2) {
		t.Fatalf("event 2 = %q", got.Raw)
	}
	s.wantCleanEnd(t)
	e.wantCounter(t, "requests_total", map[string]string{"agent": agentName, "operation": "stream", "result": "ok"}, 1)
}

// TestStreamUpstreamDrop cuts the agent's connection at different points:
// the caller gets every complete event, never a fragment, then an error
// event saying the stream broke, and a properly ended response.
func TestStreamUpstreamDrop(t *testing.T) {
	cases := []struct {
		name string
		tail string // written after event 1, before the connection drops
	}{
		{"between events", ""},
		{"mid line", `data: {"jsonrpc":"2.0","id":"s-1","res`},
		{"mid event", "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":{}}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				writeFlush(w, event(1))
				if tc.tail != "" {
					writeFlush(w, tc.tail)
				}
				// Abort closes the connection without ending the response.
				panic(http.ErrAbortHandler)
			})
			e := start(t, up.url)
			s := e.open(t, streamRequest())
			if got := s.next(t); string(got.Raw) != event(1) {
				t.Fatalf("event 1 = %q", got.Raw)
			}
			s.wantErrorEvent(t, streamDialects()[0], a2a.ErrUpstreamFailed, "")
			e.logs.wantLog(t, "WARN", "agent exchange failed", map[string]any{"agent": agentName, "reason": "unreachable"})
		})
	}
}

// TestStreamClientDisconnectReleasesUpstream: when the caller leaves, the
// gateway must hang up on the agent too, or every abandoned stream would
// hold an upstream connection forever.
func TestStreamClientDisconnectReleasesUpstream(t *testing.T) {
	released := make(chan struct{})
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		holdOpen(u, r, released)
	})
	e := start(t, up.url)
	s := e.open(t, streamRequest())
	s.next(t)
	if n := e.gw.OpenStreams(); n != 1 {
		t.Fatalf("open streams = %d, want 1", n)
	}
	s.close()
	waitUntil(t, "the agent's request is cancelled", released)
	eventually(t, "the stream is released", func() bool { return e.gw.OpenStreams() == 0 })
	e.logs.wantLog(t, "DEBUG", "stream ended by the caller", nil)
}

// TestStreamLineEndings relays LF, CRLF and mixed streams byte for byte,
// keep-alive comments and multi-line data included.
func TestStreamLineEndings(t *testing.T) {
	working := `{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`
	lf := "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":" + working + "}\n\n" +
		": keep-alive\n\n" +
		"id: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":\"s-1\",\"result\":" + working + "}\n\n"
	cases := []struct {
		name, body string
	}{
		{"LF", lf},
		{"CRLF", strings.ReplaceAll(lf, "\n", "\r\n")},
		{"mixed", strings.TrimSuffix(event(1), "\n") + "\r\n" + event(2) + ": ping\r\n\r\nid: 3\r\n" + event(3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				writeFlush(w, tc.body)
			})
			e := start(t, up.url)
			resp, body := e.do(t, streamRequest())
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, a2a.SSEContentType) {
				t.Fatalf("HTTP %d %s", resp.StatusCode, ct)
			}
			if string(body) != tc.body {
				t.Fatalf("relayed\n%q\nwant\n%q", body, tc.body)
			}
		})
	}
}

// TestStreamEventOverLimit ends the stream at an event larger than
// limits.max_event_bytes with an error event in the caller's binding and
// version; what came before it still reaches the caller. Over the limit
// from the first event, the error is the whole answer.
func TestStreamEventOverLimit(t *testing.T) {
	const limit = 1024
	cases := []struct {
		name, big string
	}{
		{"one long line", "data: \"" + strings.Repeat("x", 4*limit) + "\"\n\n"},
		{"many short lines", strings.Repeat("data: 0123456789012345678901234567890123456789\n", 100) + "\n"},
		{"unterminated line", "data: " + strings.Repeat("y", 4*limit)},
		{"comment lines", strings.Repeat(": 0123456789012345678901234567890123456789\n", 100) + "\n"},
	}
	for _, d := range streamDialects() {
		for _, first := range []bool{false, true} {
			for _, tc := range cases {
				name := d.name + "/" + tc.name
				if first {
					name += " first"
				}
				t.Run(name, func(t *testing.T) {
					released := make(chan struct{})
					up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
						sseHeader(w)
						if !first {
							writeFlush(w, d.event(1))
						}
						writeFlush(w, tc.big)
						writeFlush(w, d.event(3))
						holdOpen(u, r, released)
					})
					e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.MaxEventBytes = limit }))
					if first {
						resp, body := e.do(t, d.rq)
						switch {
						case d.rpc:
							wantRPCStreamError(t, resp, body, d.v, `"s-1"`, a2a.ErrInvalidAgentResponse)
						case d.v == a2a.V10:
							wantRESTError(t, resp, body, a2a.ErrInvalidAgentResponse, "UNAVAILABLE")
						default:
							wantREST03Error(t, resp, body, a2a.ErrInvalidAgentResponse)
						}
					} else {
						s := e.open(t, d.rq)
						if got := s.next(t); string(got.Raw) != d.event(1) {
							t.Fatalf("event 1 = %q", got.Raw)
						}
						s.wantErrorEvent(t, d, a2a.ErrInvalidAgentResponse, "UNAVAILABLE")
					}
					waitUntil(t, "the agent's connection is released", released)
					rec := e.logs.wantLog(t, "WARN", "agent exchange failed", map[string]any{"reason": "invalid_response"})
					if msg, _ := rec["err"].(string); !strings.Contains(msg, "max_event_bytes") {
						t.Fatalf("the log does not say why: %v", rec)
					}
					e.wantCounter(t, "upstream_errors_total", map[string]string{"agent": agentName, "reason": "invalid_response"}, 1)
				})
			}
		}
	}
}

// TestDrainStreamsEndsOpenStreams: shutdown ends every open stream cleanly,
// releases the agents' connections and admits no new stream.
func TestDrainStreamsEndsOpenStreams(t *testing.T) {
	var releasedCh = make(chan chan struct{}, 4)
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		released := make(chan struct{})
		releasedCh <- released
		sseHeader(w)
		writeFlush(w, event(1))
		holdOpen(u, r, released)
	})
	e := start(t, up.url)
	streams := []*stream{e.open(t, streamRequest()), e.open(t, streamRequest())}
	for _, s := range streams {
		s.next(t)
	}
	e.gw.DrainStreams()
	for _, s := range streams {
		s.wantCleanEnd(t)
	}
	for range streams {
		waitUntil(t, "the agent's connection is released", <-releasedCh)
	}
	if n := e.gw.OpenStreams(); n != 0 {
		t.Fatalf("open streams after drain = %d", n)
	}
	e.logs.wantLog(t, "INFO", "stream ended: gateway shutting down", map[string]any{"agent": agentName})

	resp, body := e.do(t, streamRequest())
	wantRPCStreamError(t, resp, body, a2a.V10, `"s-1"`, a2a.ErrUnavailable)
}

// TestMaxStreams refuses the stream over limits.max_streams with the
// rate-limited error in the caller's binding, and admits one again once a
// stream has closed.
func TestMaxStreams(t *testing.T) {
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		holdOpen(u, r, make(chan struct{}))
	})
	e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.MaxStreams = 1 }))
	first := e.open(t, streamRequest())
	first.next(t)

	resp, body := e.do(t, streamRequest())
	wantRPCStreamError(t, resp, body, a2a.V10, `"s-1"`, a2a.ErrRateLimited)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After on %s", body)
	}
	resp, body = e.do(t, request{method: http.MethodPost, path: "/message:stream", header: v10(), body: []byte(sendParams)})
	wantRESTError(t, resp, body, a2a.ErrRateLimited, "RESOURCE_EXHAUSTED")
	e.logs.wantLog(t, "INFO", "request refused", map[string]any{"reason": a2a.ErrRateLimited.Reason})
	e.wantCounter(t, "requests_total", map[string]string{"agent": agentName, "operation": "stream", "result": a2a.ErrRateLimited.Reason}, 2)

	first.close()
	eventually(t, "the first stream is released", func() bool { return e.gw.OpenStreams() == 0 })
	again := e.open(t, streamRequest())
	if got := again.next(t); string(got.Raw) != event(1) {
		t.Fatalf("event 1 = %q", got.Raw)
	}
}

// TestRefusedStreamIsNotForwarded: a stream refused for capacity must not
// reach the agent. A SendStreamingMessage the agent has accepted starts a
// task; telling the caller to retry later would then start it twice.
func TestRefusedStreamIsNotForwarded(t *testing.T) {
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
		holdOpen(u, r, make(chan struct{}))
	})
	e := start(t, up.url, withConfig(func(c *config.Config) { c.Limits.MaxStreams = 1 }))
	first := e.open(t, streamRequest())
	first.next(t)
	before := up.count()
	resp, body := e.do(t, streamRequest())
	wantRPCStreamError(t, resp, body, a2a.V10, `"s-1"`, a2a.ErrRateLimited)
	if got := up.count(); got != before {
		t.Fatalf("the refused stream reached the agent: %d requests, want %d", got, before)
	}
}

// TestStreamIdle ends a stream on which the agent sends no event for
// timeouts.stream_idle with a timeout error event, and releases the agent's
// connection. Keep-alive comments are relayed but do not count: an agent
// sending only comments is as idle as a silent one, or it could hold the
// caller and a stream slot forever.
func TestStreamIdle(t *testing.T) {
	for _, comments := range []bool{false, true} {
		for _, d := range streamDialects() {
			name := d.name + "/silent"
			if comments {
				name = d.name + "/comments only"
			}
			t.Run(name, func(t *testing.T) {
				released := make(chan struct{})
				up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
					sseHeader(w)
					writeFlush(w, d.event(1))
					if comments {
						keepAlive(u, w, r, released)
					} else {
						holdOpen(u, r, released)
					}
				})
				e := start(t, up.url, withConfig(func(c *config.Config) {
					c.Agents[0].Timeouts.StreamIdle = duration.Duration(250 * time.Millisecond)
				}))
				s := e.open(t, d.rq)
				if got := s.next(t); string(got.Raw) != d.event(1) {
					t.Fatalf("event 1 = %q", got.Raw)
				}
				s.wantErrorEvent(t, d, a2a.ErrUpstreamTimeout, "DEADLINE_EXCEEDED")
				waitUntil(t, "the agent's connection is released", released)
				eventually(t, "the stream is released", func() bool { return e.gw.OpenStreams() == 0 })
				rec := e.logs.wantLog(t, "WARN", "agent exchange failed", map[string]any{"reason": "timeout"})
				if msg, _ := rec["err"].(string); !strings.Contains(msg, "stream_idle") {
					t.Fatalf("the log does not say why: %v", rec)
				}
				e.wantCounter(t, "requests_total", map[string]string{"agent": agentName, "operation": "stream", "result": a2a.ErrUpstreamTimeout.Reason}, 1)
			})
		}
	}
}

// TestStreamHeadersWaitIsBounded: an agent that accepts a stream request
// and then sends nothing at all, not even the response headers, is as
// silent as one that stops mid-stream. stream_idle, when set, must end that
// wait, and timeouts.request must bound it otherwise, with a timeout error
// the caller can act on; without either, a hung agent holds the caller and
// a stream slot for as long as the caller waits.
func TestStreamHeadersWaitIsBounded(t *testing.T) {
	cases := []struct {
		name string
		set  func(*config.AgentTimeouts)
	}{
		{"stream_idle", func(to *config.AgentTimeouts) { to.StreamIdle = duration.Duration(100 * time.Millisecond) }},
		{"request timeout", func(to *config.AgentTimeouts) { to.Request = duration.Duration(100 * time.Millisecond) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			released := make(chan struct{})
			up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
				holdOpen(u, r, released)
			})
			e := start(t, up.url, withConfig(func(c *config.Config) { tc.set(&c.Agents[0].Timeouts) }))
			rq := streamRequest()
			// Generous next to the 100ms limit; it only keeps the test from hanging.
			rq.timeout = 10 * time.Second
			resp, body := e.do(t, rq)
			wantRPCStreamError(t, resp, body, a2a.V10, `"s-1"`, a2a.ErrUpstreamTimeout)
			waitUntil(t, "the agent's connection is released", released)
		})
	}
}

// TestStreamEndsWithErrorEvent: whatever ends a started stream other than
// the agent, the caller or a drain reaches the caller as the stream's last
// event, in its binding and version, and is logged and counted: a lone CR
// the gateway will not read as the caller might, and an event the pipeline
// cannot record (whose answer must be withheld).
func TestStreamEndsWithErrorEvent(t *testing.T) {
	unrecordable := proxy.Stage(func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			n := 0
			s.AddObserver(proxy.ObserverFunc(func(context.Context, *proxy.Scope, a2a.Event, []byte) error {
				if n++; n == 2 {
					return a2a.ErrUnavailable
				}
				return nil
			}))
			return next(w, r, s)
		}
	})
	cases := []struct {
		name   string
		second string // "" for the dialect's own second event
		opts   []option
		want   *a2a.Error
		status string
		level  string
		log    string
	}{
		{"lone CR", "id: 2\rdata: {}\n\n", nil, a2a.ErrInvalidAgentResponse, "UNAVAILABLE", "WARN", "agent exchange failed"},
		{"unrecordable event", "", []option{withStage(unrecordable)}, a2a.ErrUnavailable, "UNAVAILABLE", "INFO", "request refused"},
	}
	for _, tc := range cases {
		for _, d := range streamDialects() {
			t.Run(tc.name+"/"+d.name, func(t *testing.T) {
				released := make(chan struct{})
				up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
					sseHeader(w)
					writeFlush(w, d.event(1))
					if second := tc.second; second != "" {
						writeFlush(w, second)
					} else {
						writeFlush(w, d.event(2))
					}
					writeFlush(w, d.event(3))
					holdOpen(u, r, released)
				})
				e := start(t, up.url, tc.opts...)
				s := e.open(t, d.rq)
				if got := s.next(t); string(got.Raw) != d.event(1) {
					t.Fatalf("event 1 = %q", got.Raw)
				}
				s.wantErrorEvent(t, d, tc.want, tc.status)
				waitUntil(t, "the agent's connection is released", released)
				e.logs.wantLog(t, tc.level, tc.log, map[string]any{"agent": agentName})
				e.wantCounter(t, "requests_total", map[string]string{"agent": agentName, "operation": "stream", "result": tc.want.Reason}, 1)
			})
		}
	}
}

// An agent that answers a JSON-RPC streaming method with one JSON object
// instead of a stream has it delivered as the stream's only event: its
// error as the SDK servers send a refused stream, its result as one event,
// so a client that reads any 200 as a stream never sees an empty one.
func TestJSONAnswerToAStream(t *testing.T) {
	for _, d := range streamDialects() {
		if !d.rpc {
			continue
		}
		id := `"s-1"`
		result := `{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`
		if d.v == a2a.V03 {
			result = `{"kind":"status-update","taskId":"t-1","contextId":"c-1","status":{"state":"working"},"final":false}`
		}
		for _, tc := range []struct {
			name, answer string
		}{
			{"error", `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32001,"message":"task t-9 not found"}}`},
			{"result", "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": " + id + ",\n  \"result\": " + result + "\n}"},
		} {
			t.Run(d.name+"/"+tc.name, func(t *testing.T) {
				up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, tc.answer)
				})
				e := start(t, up.url)
				resp, body := e.do(t, d.rq)
				if tc.name == "error" {
					wantRPCStreamError(t, resp, body, d.v, id, a2a.AgentError(-32001))
					return
				}
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
					t.Fatalf("HTTP %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
				events := sdkEvents(t, body)
				if len(events) != 1 {
					t.Fatalf("%d events, want 1: %q", len(events), body)
				}
				var got, want bytes.Buffer
				_ = json.Compact(&want, []byte(tc.answer))
				_ = json.Compact(&got, events[0])
				if got.String() != want.String() {
					t.Fatalf("event %s, want %s", got.String(), want.String())
				}
			})
		}
	}
}
