package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// TestServeGracefulShutdown runs Serve on real listeners and cancels it
// while a stream is open and a slow request is in flight: the listener
// closes, the stream keeps flowing for the grace period and then ends
// cleanly, the slow request still gets its answer, and Serve returns nil.
func TestServeGracefulShutdown(t *testing.T) {
	env := gwtest.Start(t, func(c *config.Config) {
		c.Shutdown.Timeout = duration.Duration(30 * time.Second)
		c.Shutdown.StreamGrace = duration.Duration(1500 * time.Millisecond)
	})
	c := newCaller(t, env)
	pub, adm := listen(t), listen(t)
	base := "http://" + pub.Addr().String() + "/agents/demo"
	admin := "http://" + adm.Addr().String()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- env.GW.Serve(ctx, pub, adm) }()

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, body := c.do(t, request{method: http.MethodGet, path: admin + path, anonymous: true})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", path, resp.StatusCode, body)
		}
	}

	// A stream that would run for many seconds on its own.
	s := c.open(t, context.Background(), request{method: http.MethodPost, path: base + "/", header: v10(), rpc: true,
		body: rpcBody(a2a.MethodStream, a2a.V10, "long", `{"message":`+c.msg10("stream 1000")+`}`)})
	first, err := s.next(t)
	if err != nil || first.Kind != a2a.EventTask {
		t.Fatalf("the stream opens with %+v, %v", first, err)
	}

	// A request that is still at the agent when the shutdown begins.
	type slowAnswer struct {
		body []byte
		err  error
	}
	slow := make(chan slowAnswer, 1)
	slowBody := rpcBody(a2a.MethodSend, a2a.V10, "slow", `{"message":`+c.msg10("slow 2500ms")+`}`)
	slowCtx, cancelSlow := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancelSlow()
	slowReq := c.newRequest(t, slowCtx, request{method: http.MethodPost, path: base + "/", header: v10(), body: slowBody})
	go func() {
		resp, err := c.client.Do(slowReq)
		if err != nil {
			slow <- slowAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
		slow <- slowAnswer{b, err}
	}()
	eventually(t, "the slow request reaches the agent", func() bool {
		for _, r := range env.Agent.Requests() {
			if bytes.Equal(r.Body, slowBody) {
				return true
			}
		}
		return false
	})

	stop()
	eventually(t, "the public listener closes", func() bool {
		conn, err := net.DialTimeout("tcp", pub.Addr().String(), time.Second)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})

	// Chunks the agent produces from now on were relayed after the
	// shutdown began: the stream must carry at least one before it ends.
	produced := chunksProduced(t, env, first.TaskID)
	var after int
	for {
		ev, err := s.rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the stream did not end cleanly: %v", err)
		}
		if n := chunkNumber(ev.Data); n > produced {
			after++
		}
	}
	if after == 0 {
		t.Fatalf("no event was relayed after the shutdown began (chunk %d was the last before)", produced)
	}

	select {
	case a := <-slow:
		ev, err := a2a.ParseRPCEvent(a.body)
		if a.err != nil || err != nil || ev.Kind != a2a.EventTask || ev.State != a2a.StateCompleted {
			t.Fatalf("the in-flight request got %+v %v %v: %s", ev, a.err, err, a.body)
		}
	case <-time.After(2 * testTimeout):
		t.Fatal("the in-flight request got no answer")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(2 * testTimeout):
		t.Fatal("Serve did not return")
	}
	if _, err := net.DialTimeout("tcp", adm.Addr().String(), time.Second); err == nil {
		t.Fatal("the admin listener still accepts connections")
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var chunkText = regexp.MustCompile(`chunk (\d+) of`)

// chunkNumber is the chunk an artifact event carries; 0 for other events.
func chunkNumber(data []byte) int {
	var last int
	for _, m := range chunkText.FindAllSubmatch(data, -1) {
		last, _ = strconv.Atoi(string(m[1]))
	}
	return last
}

// chunksProduced asks the agent itself, bypassing the gateway, how many
// chunks the task has produced so far.
func chunksProduced(t *testing.T, env *gwtest.Env, taskID string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": a2a.RPCMethodName(a2a.MethodGetTask, a2a.V10), "params": map[string]any{"id": taskID}})
	req, err := http.NewRequest(http.MethodPost, env.AgentURL+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(a2a.VersionHeader, "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GetTask at the agent: HTTP %d %v: %s", resp.StatusCode, err, b)
	}
	return chunkNumber(b)
}
