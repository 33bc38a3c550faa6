package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/a2a"
)

// loadSpec is one closed-loop load run: Concurrency clients, each sending
// its next request as soon as the previous answer is read.
type loadSpec struct {
	URL         string
	APIKey      string
	Concurrency int
	Warmup      time.Duration
	Duration    time.Duration
	// Timeout bounds one exchange, so a stuck target cannot hang the run.
	Timeout time.Duration
}

// LoadResult is what one target achieved in the measured window.
type LoadResult struct {
	// Requests answered correctly, and Errors of every other kind, among the
	// requests started inside the measured window.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// ErrorKinds counts errors by kind (at most a few kinds are kept).
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	Seconds    float64          `json:"seconds"`
	RPS        float64          `json:"requests_per_second"`
	P50        Millis           `json:"p50_ms"`
	P90        Millis           `json:"p90_ms"`
	P99        Millis           `json:"p99_ms"`
	Max        Millis           `json:"max_ms"`
	Mean       Millis           `json:"mean_ms"`
}

// Millis is a duration that reads as milliseconds in JSON.
type Millis time.Duration

// MarshalJSON writes the duration in milliseconds with microsecond precision.
func (m Millis) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.3f", float64(m)/float64(time.Millisecond))), nil
}

func (m Millis) String() string { return fmt.Sprintf("%.2fms", float64(m)/float64(time.Millisecond)) }

// maxErrorKinds bounds the distinct error texts kept per worker.
const maxErrorKinds = 8

// loadWorker is one client's loop and its private statistics.
type loadWorker struct {
	id     int
	hist   *Histogram
	errors int64
	kinds  map[string]int64
	body   []byte
	resp   bytes.Buffer
}

// runLoad drives spec against its URL: warm-up first (not recorded), then
// the measured window. Only requests started inside the window count.
func runLoad(ctx context.Context, w *wire, spec loadSpec) (LoadResult, error) {
	if spec.Concurrency < 1 || spec.Duration <= 0 {
		return LoadResult{}, fmt.Errorf("load needs at least one client and a positive duration")
	}
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        2 * spec.Concurrency,
		MaxIdleConnsPerHost: 2 * spec.Concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: spec.Timeout}

	measureFrom := time.Now().Add(spec.Warmup)
	end := measureFrom.Add(spec.Duration)
	workers := make([]*loadWorker, spec.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		workers[i] = &loadWorker{id: i, hist: NewHistogram(), kinds: map[string]int64{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			workers[i].loop(ctx, client, w, spec, measureFrom, end)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return LoadResult{}, fmt.Errorf("load interrupted: %w", err)
	}

	all := NewHistogram()
	res := LoadResult{ErrorKinds: map[string]int64{}, Seconds: spec.Duration.Seconds()}
	for _, wk := range workers {
		all.Merge(wk.hist)
		res.Errors += wk.errors
		for k, n := range wk.kinds {
			res.ErrorKinds[k] += n
		}
	}
	res.ErrorKinds = topKinds(res.ErrorKinds, maxErrorKinds)
	res.Requests = int64(all.Count())
	res.RPS = float64(res.Requests) / res.Seconds
	res.P50 = Millis(all.Quantile(0.50))
	res.P90 = Millis(all.Quantile(0.90))
	res.P99 = Millis(all.Quantile(0.99))
	res.Max = Millis(all.Max())
	res.Mean = Millis(all.Mean())
	return res, nil
}

func (wk *loadWorker) loop(ctx context.Context, client *http.Client, w *wire, spec loadSpec, measureFrom, end time.Time) {
	var seq uint64
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(end) {
			return
		}
		seq++
		err := wk.exchange(ctx, client, w, spec, seq)
		if start.Before(measureFrom) {
			continue
		}
		if err != nil {
			wk.errors++
			if _, ok := wk.kinds[err.Error()]; ok || len(wk.kinds) < maxErrorKinds {
				wk.kinds[err.Error()]++
			}
			continue
		}
		wk.hist.Record(time.Since(start))
	}
}

// exchange sends one SendMessage and checks the answer.
func (wk *loadWorker) exchange(ctx context.Context, client *http.Client, w *wire, spec loadSpec, seq uint64) error {
	wk.body = w.appendRequest(wk.body[:0], w.send, wk.id, seq)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.URL, bytes.NewReader(wk.body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	setRequestHeaders(req.Header, w, spec.APIKey)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("transport: %s", errorKind(err))
	}
	wk.resp.Reset()
	_, err = wk.resp.ReadFrom(io.LimitReader(resp.Body, 4*ResponseSize))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the answer: %s", errorKind(err))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return checkResult(wk.resp.Bytes(), seq)
}

func setRequestHeaders(h http.Header, w *wire, apiKey string) {
	h.Set("Content-Type", "application/json")
	h.Set(a2a.VersionHeader, w.version)
	h.Set(apiKeyHeader, apiKey)
}

// errorKind shortens a transport error to its last, most specific part,
// so errors that differ only in ports or ids count as one kind.
func errorKind(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// topKinds keeps the n most frequent error kinds.
func topKinds(kinds map[string]int64, n int) map[string]int64 {
	if len(kinds) <= n {
		if len(kinds) == 0 {
			return nil
		}
		return kinds
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return kinds[names[i]] > kinds[names[j]] })
	out := make(map[string]int64, n)
	for _, k := range names[:n] {
		out[k] = kinds[k]
	}
	return out
}
