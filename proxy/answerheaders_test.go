package proxy_test

import (
	"net/http"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// An agent's response headers reach the caller only by name: those that
// describe the body, caching, retrying and the protocol. Any other header,
// which could carry another tenant's task id, is dropped, on a JSON answer
// and on a stream alike.
func TestAnswerHeadersAllowedByName(t *testing.T) {
	const foreign = "task-of-another-tenant"
	allowed := map[string]string{
		"Cache-Control": "no-store", "Content-Language": "en", "Retry-After": "3", "Vary": "Accept",
		"Etag": `"v1"`, "A2a-Version": "1.0", "A2a-Extensions": "https://example.com/ext/v1",
	}
	dropped := []string{"X-Task-Id", "Location", "Link", "Set-Cookie", "Content-Location", "X-Request-Id", "Www-Authenticate", "Refresh"}
	answer := func(w http.ResponseWriter, contentType string) {
		for k, v := range allowed {
			w.Header().Set(k, v)
		}
		for _, k := range dropped {
			w.Header().Set(k, foreign)
		}
		w.Header().Set("Content-Type", contentType)
	}
	for _, tc := range []struct {
		name string
		rq   request
		sse  bool
	}{
		{"json", request{method: http.MethodPost, path: "/", header: v10(), body: rpcBody(a2a.MethodSend, a2a.V10, `"s-1"`, sendParams)}, false},
		{"stream", streamRequest(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(u *upstream, w http.ResponseWriter, r *http.Request) {
				if tc.sse {
					answer(w, a2a.SSEContentType)
					writeFlush(w, event(1))
					return
				}
				answer(w, "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"s-1","result":{"task":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}}`))
			})
			e := start(t, up.url)
			resp, body := e.do(t, tc.rq)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d %s", resp.StatusCode, body)
			}
			for k, v := range allowed {
				if tc.sse && k == "Cache-Control" {
					v = "no-cache" // a stream is never cached
				}
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for k, vs := range resp.Header {
				for _, v := range vs {
					if v == foreign {
						t.Errorf("the agent's %s reached the caller", k)
					}
				}
			}
		})
	}
}
