package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

func TestTaskResultIsExactlyResponseSize(t *testing.T) {
	w, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", maxIDBytes)
	tests := []struct {
		name string
		id   string
		seq  uint64
		refs msgRefs
	}{
		{"small number", "1", 1, msgRefs{}},
		{"large number", "18446744073709551615", 18446744073709551615, msgRefs{}},
		{"string id", `"req-abc"`, 42, msgRefs{}},
		{"longest ids named", "18446744073709551615", 9, msgRefs{taskID: long, contextID: long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := w.appendTaskResult(nil, []byte(tt.id), tt.seq, tt.refs, w.completed, true)
			if len(body) != ResponseSize {
				t.Fatalf("body is %d bytes, want %d", len(body), ResponseSize)
			}
			var v struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					Task struct {
						ID        string                 `json:"id"`
						ContextID string                 `json:"contextId"`
						Status    struct{ State string } `json:"status"`
					} `json:"task"`
				} `json:"result"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if string(v.ID) != tt.id || v.Result.Task.Status.State != w.completed {
				t.Fatalf("id %s state %q, want %s %q", v.ID, v.Result.Task.Status.State, tt.id, w.completed)
			}
			if tt.refs.taskID != "" && (v.Result.Task.ID != tt.refs.taskID || v.Result.Task.ContextID != tt.refs.contextID) {
				t.Fatalf("task %q context %q, want the named ones", v.Result.Task.ID, v.Result.Task.ContextID)
			}
		})
	}
}

func TestCheckResult(t *testing.T) {
	w, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	conv := msgRefs{taskID: "task-9", contextID: "load-1-conversation"}
	good := w.appendTaskResult(nil, []byte("7"), 7, msgRefs{}, w.completed, true)
	named := w.appendTaskResult(nil, []byte("7"), 7, conv, w.inputRequired, true)
	tests := []struct {
		name string
		body []byte
		seq  uint64
		refs msgRefs
		ok   bool
	}{
		{"matching", good, 7, msgRefs{}, true},
		{"other id", good, 8, msgRefs{}, false},
		{"prefix id", w.appendTaskResult(nil, []byte("77"), 77, msgRefs{}, w.completed, true), 7, msgRefs{}, false},
		{"truncated", good[:ResponseSize-1], 7, msgRefs{}, false},
		{"error body", []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603}}`), 7, msgRefs{}, false},
		{"named task and context", named, 7, conv, true},
		{"context only", named, 7, msgRefs{contextID: conv.contextID}, true},
		{"new task instead of the named one", good, 7, conv, false},
		{"context id is a prefix", named, 7, msgRefs{contextID: "load-1-conv"}, false},
		{"task id is a prefix", named, 7, msgRefs{taskID: "task-"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkResult(tt.body, ResponseSize, tt.seq, tt.refs); (err == nil) != tt.ok {
				t.Fatalf("checkResult = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestTaskIDOf(t *testing.T) {
	w, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"task answer", w.appendTaskResult(nil, []byte("1"), 5, msgRefs{}, w.completed, true), "task-5"},
		{"error answer", []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603}}`), ""},
		{"not json", []byte("{"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := taskIDOf(tt.body)
			if got != tt.want || (err == nil) != (tt.want != "") {
				t.Fatalf("taskIDOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestUpstreamAnswersAndRefuses(t *testing.T) {
	w, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newUpstream(w))
	defer srv.Close()
	conv := msgRefs{taskID: "task-1", contextID: "ctx-a"}
	tests := []struct {
		name   string
		body   []byte
		refs   msgRefs
		status int
		state  string
	}{
		{"one-shot send", w.appendRequest(nil, w.send, "m-", 3, msgRefs{}), msgRefs{}, http.StatusOK, w.completed},
		{"send in a new context", w.appendRequest(nil, w.send, "m-", 3, msgRefs{contextID: "ctx-a"}), msgRefs{contextID: "ctx-a"}, http.StatusOK, w.inputRequired},
		{"follow-up", w.appendRequest(nil, w.send, "m-", 3, conv), conv, http.StatusOK, w.inputRequired},
		{"other method", w.appendRequest(nil, a2a.RPCMethodName(a2a.MethodGetTask, a2a.V10), "m-", 4, msgRefs{}), msgRefs{}, http.StatusNotFound, ""},
		{"not json", []byte("{"), msgRefs{}, http.StatusBadRequest, ""},
		{"no id", []byte(`{"jsonrpc":"2.0","method":"` + w.send + `"}`), msgRefs{}, http.StatusBadRequest, ""},
		{"context id with a quote", []byte(`{"jsonrpc":"2.0","id":3,"method":"` + w.send + `","params":{"message":{"messageId":"m","contextId":"a\"b"}}}`), msgRefs{}, http.StatusBadRequest, ""},
		{"overlong task id", w.appendRequest(nil, w.send, "m-", 3, msgRefs{taskID: strings.Repeat("t", maxIDBytes+1)}), msgRefs{}, http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			_, _ = got.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, got.String())
			}
			if tt.status != http.StatusOK {
				return
			}
			if err := checkResult(got.Bytes(), ResponseSize, 3, tt.refs); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(got.Bytes(), []byte(`"state":"`+tt.state+`"`)) {
				t.Fatalf("answer is not in state %s: %s", tt.state, got.Bytes()[:200])
			}
		})
	}
}

func TestRunLoadCountsErrors(t *testing.T) {
	w, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	good := httptest.NewServer(newUpstream(w))
	defer good.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Error(rw, "no", http.StatusBadGateway)
	}))
	defer bad.Close()
	tests := []struct {
		name      string
		url       string
		wantError bool
	}{
		{"healthy upstream", good.URL, false},
		{"failing upstream", bad.URL, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := newLoader(w, loadSpec{URL: tt.url, Creds: []credential{apiKeyCredential("k")}, Concurrency: 2, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.close()
			for _, warmup := range []time.Duration{50 * time.Millisecond, 0} {
				if _, err := l.run(context.Background(), warmup, 150*time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			res := l.result()
			if len(res.RoundRPS) != 2 || res.Seconds < 0.29 {
				t.Fatalf("rounds %v over %.2fs, want 2 windows of 0.15s", res.RoundRPS, res.Seconds)
			}
			if tt.wantError {
				if res.Errors == 0 || res.Requests != 0 || res.ErrorKinds["status "+strconv.Itoa(http.StatusBadGateway)] == 0 {
					t.Fatalf("errors %d %v, requests %d; want only 502s", res.Errors, res.ErrorKinds, res.Requests)
				}
				return
			}
			if res.Errors != 0 || res.Requests == 0 || res.P99 < res.P50 || res.Max < res.P99 {
				t.Fatalf("requests %d errors %d %v p50 %v p99 %v max %v", res.Requests, res.Errors, res.ErrorKinds, res.P50, res.P99, res.Max)
			}
		})
	}
}

// TestLoadShapes runs each request shape against the upstream, which
// answers in the task and context a request names: the loader's own
// check of every answer then proves that the ids went out and came back.
func TestLoadShapes(t *testing.T) {
	w, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newUpstream(w))
	defer srv.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task not found"}}`))
	}))
	defer refusing.Close()
	tests := []struct {
		name      string
		url       string
		shape     requestShape
		wantStart bool
	}{
		{"one-shot", srv.URL, shapeOneShot, true},
		{"new context per request", srv.URL, shapeNewContext, true},
		{"follow-ups", srv.URL, shapeFollowUp, true},
		{"follow-ups to an agent that refuses", refusing.URL, shapeFollowUp, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := newLoader(w, loadSpec{URL: tt.url, Creds: []credential{apiKeyCredential("a"), apiKeyCredential("b")}, Shape: tt.shape, Concurrency: 3, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.close()
			if l.workers[2].cred.value != "a" {
				t.Fatalf("client 2 uses credential %q, want the first again", l.workers[2].cred.value)
			}
			if tt.shape == shapeFollowUp {
				err := l.startConversations(context.Background())
				if (err == nil) != tt.wantStart {
					t.Fatalf("startConversations error %v, want ok=%v", err, tt.wantStart)
				}
				if err != nil {
					return
				}
				for _, wk := range l.workers {
					if wk.conversation.taskID == "" || wk.conversation.contextID != wk.prefix+"conversation" {
						t.Fatalf("conversation %+v", wk.conversation)
					}
				}
			}
			if _, err := l.run(context.Background(), 0, 150*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if res := l.result(); res.Errors != 0 || res.Requests == 0 {
				t.Fatalf("requests %d errors %d %v", res.Requests, res.Errors, res.ErrorKinds)
			}
		})
	}
}
