package proxy

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A dial that fails reaches the caller as a request that never left
// (NotSent), which is safe to answer as unavailable or to try elsewhere.
func TestAgentPoolDialFailureNotSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := agentPool(&url.URL{Scheme: "http", Host: addr}, &net.Dialer{}, time.Second, 1024)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a closed port answered")
	}
	if !NotSent(upstreamError(t.Context(), t.Context(), err)) {
		t.Fatalf("dial failure %v is not NotSent", err)
	}
}
