package proxy

import (
	"context"
	"net/http"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

func TestReframe(t *testing.T) {
	for _, tc := range []struct {
		name, raw, data, want string
	}{
		{"data replaced, other fields kept", "id: 7\nevent: message\ndata: {\"a\":1}\n\n", `{"a":1,"b":2}`, "id: 7\nevent: message\ndata: {\"a\":1,\"b\":2}\n\n"},
		{"several data lines become one", ": hi\ndata: {\"a\":\ndata: 1}\nretry: 5\n\n", `{"a":2}`, ": hi\ndata: {\"a\":2}\nretry: 5\n\n"},
		{"data with line breaks keeps them, one data line each", "data: {\"a\":\ndata: 1}\n\n", "{\"a\":\n1,\"m\":{}}", "data: {\"a\":\ndata: 1,\"m\":{}}\n\n"},
		{"CRLF lines", "id: x\r\ndata:{}\r\n\r\n", `{"c":3}`, "id: x\r\ndata: {\"c\":3}\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(reframe([]byte(tc.raw), []byte("old"), []byte(tc.data))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	raw := []byte("data: {}\n\n")
	data := raw[6:8]
	if got := reframe(raw, data, data); &got[0] != &raw[0] {
		t.Fatal("unchanged data did not keep the event as received")
	}
}

type addHeader struct{ name string }

func (a addHeader) Observe(context.Context, *Scope, a2a.Event, []byte) error { return nil }

func (a addHeader) Rewrite(_ context.Context, _ *Scope, _ a2a.Event, p []byte) ([]byte, error) {
	return append(append([]byte(nil), p...), a.name...), nil
}

// Rewriters run in the observers' order, each on the previous result;
// plain observers do not rewrite.
func TestRewriteChain(t *testing.T) {
	plain := ObserverFunc(func(context.Context, *Scope, a2a.Event, []byte) error { return nil })
	g := &Gateway{observers: []Observer{addHeader{"1"}, plain, addHeader{"2"}}}
	got, err := g.rewrite(context.Background(), &Scope{}, a2a.Event{}, []byte("p"))
	if err != nil || string(got) != "p12" {
		t.Fatalf("got %q %v", got, err)
	}
}

func TestUpstreamHeaders(t *testing.T) {
	ctx := WithUpstreamHeader(context.Background(), "Authorization", "Bearer a")
	ctx2 := WithUpstreamHeader(ctx, "X-Token", "b")
	req, _ := http.NewRequest(http.MethodPost, "http://agent/", nil)
	req.Header.Set("Authorization", "Bearer upstream")
	setUpstreamHeaders(req, ctx2)
	if req.Header.Get("Authorization") != "Bearer a" || req.Header.Get("X-Token") != "b" {
		t.Fatalf("headers: %v", req.Header)
	}
	// The first context is not changed by the second.
	req2, _ := http.NewRequest(http.MethodPost, "http://agent/", nil)
	setUpstreamHeaders(req2, ctx)
	if req2.Header.Get("X-Token") != "" {
		t.Fatal("a derived context changed its parent's headers")
	}
}
