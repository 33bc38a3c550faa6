package demoagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// noVersion sends no A2A-Version header.
const noVersion a2a.Version = 0

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 30 * time.Second

type env struct {
	agent  *demoagent.Agent
	url    string
	client *http.Client
	tr     *http.Transport
	ids    atomic.Int64
}

func newEnv(t *testing.T, o demoagent.Options) *env {
	t.Helper()
	if o.StepDelay == 0 {
		o.StepDelay = 2 * time.Millisecond
	}
	a := demoagent.New(o)
	srv := httptest.NewServer(a)
	a.SetBaseURL(srv.URL)
	tr := &http.Transport{}
	e := &env{agent: a, url: srv.URL, tr: tr, client: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		a.Close() // ends open streams, so the server can close
		tr.CloseIdleConnections()
		srv.Close()
	})
	return e
}

func (e *env) nextID(prefix string) string {
	return prefix + "-" + strconv.FormatInt(e.ids.Add(1), 10)
}

func versionHeader(h http.Header, v a2a.Version) http.Header {
	if h == nil {
		h = http.Header{}
	}
	if v == a2a.V10 {
		h.Set(a2a.VersionHeader, "1.0")
	}
	return h
}

// userMessage builds a client message in the shape of version v.
func (e *env) userMessage(v a2a.Version, text, taskID string) map[string]any {
	var m map[string]any
	switch v {
	case a2a.V10:
		m = map[string]any{"messageId": e.nextID("msg"), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	default:
		m = map[string]any{"kind": "message", "messageId": e.nextID("msg"), "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
	}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return m
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
	raw     []byte
}

func (e *env) rpcRequest(t *testing.T, ctx context.Context, v a2a.Version, method string, params any, h http.Header) *http.Request {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.nextID("req"), "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = versionHeader(h, v)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// rpc makes one unary JSON-RPC call with the method name of version v.
func (e *env) rpc(t *testing.T, v a2a.Version, m a2a.Method, params any, h http.Header) rpcResponse {
	t.Helper()
	return e.rpcNamed(t, v, a2a.RPCMethodName(m, v), params, h)
}

func (e *env) rpcNamed(t *testing.T, v a2a.Version, method string, params any, h http.Header) rpcResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := e.client.Do(e.rpcRequest(t, ctx, v, method, params, h))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", method, resp.StatusCode, b)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	r.raw = b
	return r
}

// mustResult returns the result of a call that must succeed.
func mustResult(t *testing.T, r rpcResponse) json.RawMessage {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("unexpected error %d %q", r.Error.Code, r.Error.Message)
	}
	return r.Result
}

func wantRPCError(t *testing.T, r rpcResponse, code int) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("want error %d, got %s", code, r.raw)
	}
	ev, err := a2a.ParseRPCEvent(r.raw)
	if err != nil || ev.Kind != a2a.EventError || ev.ErrorCode != code {
		t.Fatalf("package a2a reads %+v, %v from %s", ev, err, r.raw)
	}
}

// taskOf reads a send result or a task and fails unless it is a task.
func taskOf(t *testing.T, raw []byte) a2a.Event {
	t.Helper()
	ev, err := a2a.ParseResult(raw)
	if err != nil || ev.Kind != a2a.EventTask || ev.TaskID == "" {
		t.Fatalf("want a task, got %+v %v: %s", ev, err, raw)
	}
	return ev
}

// step is what a test asserts about one event.
type step struct {
	kind  a2a.EventKind
	state a2a.State
	final bool
}

func (s step) String() string {
	return fmt.Sprintf("%s/%s/final=%t", s.kind, s.state, s.final)
}

func taskStep(s a2a.State) step   { return step{kind: a2a.EventTask, state: s} }
func statusStep(s a2a.State) step { return step{kind: a2a.EventStatusUpdate, state: s} }

func artifactStep() step { return step{kind: a2a.EventArtifactUpdate} }
func messageStep() step  { return step{kind: a2a.EventMessage} }

// withFinal sets the 0.x final flag where the agent must set it.
func withFinal(v a2a.Version, steps []step) []step {
	out := append([]step(nil), steps...)
	if v == a2a.V10 {
		return out
	}
	for i := range out {
		if out[i].kind == a2a.EventStatusUpdate {
			out[i].final = out[i].state.Terminal() || out[i].state.Interrupted()
		}
	}
	return out
}

func equalSteps(t *testing.T, got, want []step) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
}

// sse reads one event stream.
type sse struct {
	resp   *http.Response
	r      *a2a.SSEReader
	rpc    bool
	n      int
	cancel context.CancelFunc
	events []a2a.Event
	data   [][]byte
}

func (e *env) openStream(t *testing.T, req *http.Request, rpc bool, cancel context.CancelFunc) *sse {
	t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != a2a.SSEContentType {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("want an event stream, got HTTP %d %s: %s", resp.StatusCode, ct, b)
	}
	s := &sse{resp: resp, r: a2a.NewSSEReader(resp.Body, 1<<20), rpc: rpc, cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (e *env) rpcStream(t *testing.T, v a2a.Version, m a2a.Method, params any, h http.Header) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	return e.openStream(t, e.rpcRequest(t, ctx, v, a2a.RPCMethodName(m, v), params, h), true, cancel)
}

func (s *sse) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next reads one event; io.EOF when the agent ended the stream.
func (s *sse) next(t *testing.T) (a2a.Event, error) {
	t.Helper()
	ev, err := s.r.Next()
	if err != nil {
		return a2a.Event{}, err
	}
	s.n++
	if ev.ID != strconv.Itoa(s.n) {
		t.Fatalf("event %d has id %q", s.n, ev.ID)
	}
	var parsed a2a.Event
	if s.rpc {
		parsed, err = a2a.ParseRPCEvent(ev.Data)
	} else {
		parsed, err = a2a.ParseResult(ev.Data)
	}
	if err != nil {
		t.Fatalf("event %d unreadable: %v: %s", s.n, err, ev.Data)
	}
	s.events = append(s.events, parsed)
	s.data = append(s.data, append([]byte(nil), ev.Data...))
	return parsed, nil
}

func (s *sse) mustNext(t *testing.T) a2a.Event {
	t.Helper()
	ev, err := s.next(t)
	if err != nil {
		t.Fatalf("stream ended early: %v", err)
	}
	return ev
}

// all reads to the end of the stream and returns every step.
func (s *sse) all(t *testing.T) []step {
	t.Helper()
	for {
		_, err := s.next(t)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream broke: %v", err)
		}
	}
	return s.steps()
}

func (s *sse) steps() []step {
	out := make([]step, len(s.events))
	for i, ev := range s.events {
		out[i] = step{kind: ev.Kind, state: ev.State, final: ev.Final}
	}
	return out
}

// rest makes one HTTP+JSON call.
func (e *env) rest(t *testing.T, method, path string, v a2a.Version, body any) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := e.client.Do(e.restRequest(t, ctx, method, path, v, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (e *env) restRequest(t *testing.T, ctx context.Context, method, path string, v a2a.Version, body any) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = versionHeader(nil, v)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func (e *env) restStream(t *testing.T, method, path string, v a2a.Version, body any) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	return e.openStream(t, e.restRequest(t, ctx, method, path, v, body), false, cancel)
}

// eventually polls cond until it holds or the test timeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// decode unmarshals JSON into a generic value for shape assertions.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// path walks a decoded JSON value: string keys index objects, ints arrays.
func path(t *testing.T, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("no object at %v in %v", k, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("no element %d in %v", k, v)
			}
			v = a[k]
		}
	}
	return v
}
