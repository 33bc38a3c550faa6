package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// demoUpstream starts a demo agent and a proxy in front of it.
func demoUpstream(t *testing.T, o demoagent.Options, opts ...option) (*demoagent.Agent, *env) {
	t.Helper()
	o.StepDelay = 5 * time.Millisecond
	agent := demoagent.New(o)
	srv := httptest.NewServer(agent)
	agent.SetBaseURL(srv.URL)
	t.Cleanup(func() { agent.Close(); srv.Close() })
	return agent, start(t, srv.URL, opts...)
}

// startTask starts a task through the proxy's own Call and returns its id.
func startTask(t *testing.T, gw *proxy.Gateway, text string) string {
	t.Helper()
	params := map[string]any{
		"message":       map[string]any{"messageId": "m-" + text, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}},
		"configuration": map[string]any{"returnImmediately": true},
	}
	res, err := gw.Call(context.Background(), agentName, a2a.V10, a2a.MethodSend, params)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := a2a.ParseResult(res)
	if err != nil || ev.TaskID == "" {
		t.Fatalf("send answered %s", res)
	}
	return ev.TaskID
}

// collect subscribes to the task and returns the kinds and states seen.
func collect(ctx context.Context, gw *proxy.Gateway, v a2a.Version, taskID string) ([]a2a.Event, error) {
	var got []a2a.Event
	err := gw.CallStream(ctx, agentName, v, a2a.MethodSubscribe, a2a.TaskParams{ID: taskID}, func(ev a2a.Event, res []byte) error {
		if parsed, err := a2a.ParseResult(res); err != nil || parsed.Kind != ev.Kind {
			return errors.New("the result handed over is not the event's")
		}
		got = append(got, ev)
		return nil
	})
	return got, err
}

func TestCallStreamFollowsATask(t *testing.T) {
	_, e := demoUpstream(t, demoagent.Options{})
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		t.Run(v.String(), func(t *testing.T) {
			id := startTask(t, e.gw, "parts 3")
			got, err := collect(context.Background(), e.gw, v, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < 2 || got[0].Kind != a2a.EventTask || got[0].TaskID != id {
				t.Fatalf("events %+v", got)
			}
			last := got[len(got)-1]
			if last.Kind != a2a.EventStatusUpdate || last.State != a2a.StateCompleted {
				t.Fatalf("last event %+v", last)
			}
		})
	}
}

func TestCallStreamErrors(t *testing.T) {
	agent, e := demoUpstream(t, demoagent.Options{})
	_, plain := demoUpstream(t, demoagent.Options{NoStreaming: true})
	_, idle := demoUpstream(t, demoagent.Options{}, withConfig(func(c *config.Config) {
		c.Agents[0].Timeouts.StreamIdle = duration.Duration(100 * time.Millisecond)
	}))
	var ae *a2a.Error

	done := startTask(t, e.gw, "complete")
	deadline := time.Now().Add(testTimeout)
	for {
		_, err := collect(context.Background(), e.gw, a2a.V10, done)
		if errors.As(err, &ae) && ae.Code == a2a.ErrUnsupportedOperation.Code {
			break // a finished task has nothing to stream
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscribing to a finished task: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	if _, err := collect(context.Background(), e.gw, a2a.V10, "no-such-task"); !errors.As(err, &ae) || ae.Code != a2a.ErrTaskNotFound.Code {
		t.Fatalf("unknown task: %v", err)
	}
	if _, err := collect(context.Background(), plain.gw, a2a.V03, startTask(t, plain.gw, "wait")); !errors.As(err, &ae) || ae.Code != a2a.ErrUnsupportedOperation.Code {
		t.Fatalf("agent without streaming: %v", err)
	}
	if err := e.gw.CallStream(context.Background(), "nope", a2a.V10, a2a.MethodSubscribe, a2a.TaskParams{ID: "x"}, nil); err == nil {
		t.Fatal("unknown agent accepted")
	}

	// A silent stream ends after stream_idle.
	if _, err := collect(context.Background(), idle.gw, a2a.V10, startTask(t, idle.gw, "never")); !errors.Is(err, proxy.ErrStreamEnded) {
		t.Fatalf("silent stream: %v", err)
	}

	// A stream the agent ends early ends without an error; one the
	// caller's yield refuses ends with its error.
	waiting := startTask(t, e.gw, "wait")
	opened := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		n := 0
		ended <- e.gw.CallStream(context.Background(), agentName, a2a.V10, a2a.MethodSubscribe, a2a.TaskParams{ID: waiting}, func(a2a.Event, []byte) error {
			if n++; n == 1 {
				close(opened)
			}
			return nil
		})
	}()
	<-opened
	for agent.DropStreams() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := <-ended; err != nil {
		t.Fatalf("stream the agent ended: %v", err)
	}
	stop := errors.New("stop")
	err := e.gw.CallStream(context.Background(), agentName, a2a.V10, a2a.MethodSubscribe, a2a.TaskParams{ID: waiting}, func(a2a.Event, []byte) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("yield's error: %v", err)
	}
}

// TestCallStreamCommentsAreIdle: an agent that answers the gateway's own
// subscription with keep-alive comments only is idle, and the stream ends
// after stream_idle with the deadline as its cause; otherwise it would hold
// the push relay's subscription forever.
func TestCallStreamCommentsAreIdle(t *testing.T) {
	released := make(chan struct{})
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		keepAlive(u, w, r, released)
	})
	e := start(t, up.url, withConfig(func(c *config.Config) {
		c.Agents[0].Timeouts.StreamIdle = duration.Duration(250 * time.Millisecond)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := collect(ctx, e.gw, a2a.V10, "t-1")
	if !errors.Is(err, proxy.ErrStreamEnded) || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("comments-only stream: %v", err)
	}
	waitUntil(t, "the agent's connection is released", released)
}
