package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// namedEvents records what the id hook was shown and names each event by
// its kind and result.
type namedEvents struct {
	mu   sync.Mutex
	seen []string
}

func (n *namedEvents) id(_ *proxy.Scope, ev a2a.Event, result []byte) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = append(n.seen, ev.Kind.String()+" "+string(result))
	if result == nil {
		return ""
	}
	return fmt.Sprintf("%s-%d", ev.Kind, len(result))
}

func withEventID(f proxy.StreamEventID) option { return func(s *setup) { s.eventID = f } }

// TestStreamEventIDs: every event with a result carries the hook's id as
// its only id field, the agent's own ids dropped; what has no result (an
// error response, a keep-alive) is relayed without one, an error as the
// gateway's error for the agent's code.
func TestStreamEventIDs(t *testing.T) {
	status := `{"statusUpdate":{"taskId":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`
	rpcErr := `{"jsonrpc":"2.0","id":"s-1","error":{"code":-32603,"message":"boom"}}`
	cases := []struct {
		name     string
		rq       request
		upstream string
		want     string
		seen     []string
	}{
		{
			name:     "JSON-RPC",
			rq:       streamRequest(),
			upstream: "id: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":" + status + "}\r\n\r\n: keep-alive\n\nid: 2\nevent: error\ndata: " + rpcErr + "\n\n",
			want:     "id: status_update-" + itoa(len(status)) + "\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":" + status + "}\r\n\r\n: keep-alive\n\nid: 2\nevent: error\ndata: " + string(a2a.ErrInternal.RPCErrorBody(a2a.V10, []byte(`"s-1"`))) + "\n\n",
			seen:     []string{"status_update " + status, "error "},
		},
		{
			name:     "REST",
			rq:       request{method: http.MethodPost, path: "/message:stream", header: v10(), body: []byte(`{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`)},
			upstream: "data: " + status + "\n\n",
			want:     "id: status_update-" + itoa(len(status)) + "\ndata: " + status + "\n\n",
			seen:     []string{"status_update " + status},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				writeFlush(w, tc.upstream)
			})
			names := &namedEvents{}
			e := start(t, up.url, withEventID(names.id))
			resp, body := e.do(t, tc.rq)
			if resp.StatusCode != http.StatusOK || string(body) != tc.want {
				t.Fatalf("HTTP %d\n%q\nwant\n%q", resp.StatusCode, body, tc.want)
			}
			if strings.Join(names.seen, "\n") != strings.Join(tc.seen, "\n") {
				t.Fatalf("hook saw %q, want %q", names.seen, tc.seen)
			}
		})
	}
}

// TestStreamEventIDUnsafe: an id that would end its line is not written;
// the event goes out as received.
func TestStreamEventIDUnsafe(t *testing.T) {
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeFlush(w, event(1))
	})
	forged := func(*proxy.Scope, a2a.Event, []byte) string { return "x\ndata: {\"forged\":true}" }
	e := start(t, up.url, withEventID(forged))
	_, body := e.do(t, streamRequest())
	if string(body) != event(1) {
		t.Fatalf("relayed %q, want %q", body, event(1))
	}
	e.logs.wantLog(t, "WARN", "stream event id unusable; event relayed without it", nil)
}

// TestStreamGate: a stage's gate sees every event's id after the status
// line, may write first and may drop the event.
func TestStreamGate(t *testing.T) {
	up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		for n := 1; n <= 3; n++ {
			writeFlush(w, event(n))
		}
	})
	byN := func(_ *proxy.Scope, _ a2a.Event, result []byte) string {
		return "n" + string(result[len(result)-4:len(result)-3])
	}
	var gated []string
	gate := proxy.Stage(func(next proxy.Handler) proxy.Handler {
		return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
			s.SetStreamGate(func(w io.Writer, id string) (bool, error) {
				gated = append(gated, id)
				if id == "n1" {
					_, err := io.WriteString(w, "id: n0\ndata: {}\n\n")
					return true, err
				}
				return id != "n2", nil
			})
			return next(w, r, s)
		}
	})
	e := start(t, up.url, withEventID(byN), withStage(gate))
	resp, body := e.do(t, streamRequest())
	want := "id: n0\ndata: {}\n\n" + "id: n1\n" + event(1) + "id: n3\n" + event(3)
	if resp.StatusCode != http.StatusOK || string(body) != want {
		t.Fatalf("HTTP %d\n%q\nwant\n%q", resp.StatusCode, body, want)
	}
	if strings.Join(gated, ",") != "n1,n2,n3" {
		t.Fatalf("gate saw %q", gated)
	}
}
