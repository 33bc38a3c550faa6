package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/a2a"
)

func TestTaskResultIsExactlyResponseSize(t *testing.T) {
	w, err := newWire()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   string
		seq  uint64
	}{
		{"small number", "1", 1},
		{"large number", "18446744073709551615", 18446744073709551615},
		{"string id", `"req-abc"`, 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := w.appendTaskResult(nil, []byte(tt.id), tt.seq, w.completed, true)
			if len(body) != ResponseSize {
				t.Fatalf("body is %d bytes, want %d", len(body), ResponseSize)
			}
			var v struct {
				ID     json.RawMessage `json:"id"`
				Result struct {
					Task struct {
						Status struct{ State string } `json:"status"`
					} `json:"task"`
				} `json:"result"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if string(v.ID) != tt.id || v.Result.Task.Status.State != w.completed {
				t.Fatalf("id %s state %q, want %s %q", v.ID, v.Result.Task.Status.State, tt.id, w.completed)
			}
		})
	}
}

func TestCheckResult(t *testing.T) {
	w, err := newWire()
	if err != nil {
		t.Fatal(err)
	}
	good := w.appendTaskResult(nil, []byte("7"), 7, w.completed, true)
	tests := []struct {
		name string
		body []byte
		seq  uint64
		ok   bool
	}{
		{"matching", good, 7, true},
		{"other id", good, 8, false},
		{"prefix id", w.appendTaskResult(nil, []byte("77"), 77, w.completed, true), 7, false},
		{"truncated", good[:ResponseSize-1], 7, false},
		{"error body", []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603}}`), 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkResult(tt.body, tt.seq); (err == nil) != tt.ok {
				t.Fatalf("checkResult = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestUpstreamAnswersAndRefuses(t *testing.T) {
	w, err := newWire()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newUpstream(w))
	defer srv.Close()
	tests := []struct {
		name   string
		body   []byte
		status int
	}{
		{"send", w.appendRequest(nil, w.send, "m-", 3), http.StatusOK},
		{"other method", w.appendRequest(nil, a2a.RPCMethodName(a2a.MethodGetTask, a2a.V10), "m-", 4), http.StatusNotFound},
		{"not json", []byte("{"), http.StatusBadRequest},
		{"no id", []byte(`{"jsonrpc":"2.0","method":"` + w.send + `"}`), http.StatusBadRequest},
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
			if tt.status == http.StatusOK {
				if err := checkResult(got.Bytes(), 3); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestRunLoadCountsErrors(t *testing.T) {
	w, err := newWire()
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
			l, err := newLoader(w, loadSpec{URL: tt.url, APIKey: "k", Concurrency: 2, Timeout: 10 * time.Second})
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
