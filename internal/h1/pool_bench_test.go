package h1

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExchange compares one JSON-RPC sized exchange (a 200-byte
// request, a 1,024-byte answer) on a Pool with the same exchange
// on the http.Transport it replaced, 16 callers at a time. cpu-ns/op is
// the process's CPU time, the agent's included, per exchange: on a shared
// machine it moves less than the wall-clock ns/op.
func BenchmarkExchange(b *testing.B) {
	answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1024\r\n\r\n" + strings.Repeat("x", 1024)
	a := newRawAgent(b, func(_ int, c net.Conn, br *bufio.Reader) {
		bw := bufio.NewWriter(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = bw.WriteString(answer)
			if bw.Flush() != nil {
				return
			}
		}
	})
	body := bytes.Repeat([]byte("y"), 200)
	dialer := &net.Dialer{Timeout: testTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 512, DisableCompression: true, ReadBufferSize: 4096, WriteBufferSize: 512}
	pool := newPool(a.url, dialer, 4096)
	// The agent's connections end once the pools close theirs.
	b.Cleanup(func() { transport.CloseIdleConnections(); pool.CloseIdle() })
	for _, rt := range []struct {
		name string
		rt   http.RoundTripper
	}{{"transport", transport}, {"pool", pool}} {
		b.Run(rt.name, func(b *testing.B) {
			b.SetParallelism(8)
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, a.url.String()+"/", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := rt.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
