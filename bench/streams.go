package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Metric names read from the gateway's admin listener.
const (
	heapInuseMetric  = "go_memstats_heap_inuse_bytes"
	stackInuseMetric = "go_memstats_stack_inuse_bytes"
	goroutinesMetric = "go_goroutines"
)

// StreamResult is the memory an idle stream costs the gateway.
type StreamResult struct {
	Streams       int `json:"streams"`
	WarmupStreams int `json:"warmup_streams"`
	// Opened streams delivered their first event; Errors did not.
	Opened     int              `json:"opened"`
	Errors     int              `json:"errors"`
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	// EndedEarly streams closed before the harness closed them.
	EndedEarly  int64   `json:"ended_early"`
	OpenSeconds float64 `json:"open_seconds"`

	RSSBeforeKiB    int64   `json:"rss_before_kib"`
	RSSAfterKiB     int64   `json:"rss_after_kib"`
	RSSPerStreamKiB float64 `json:"rss_per_stream_kib"`

	HeapBeforeBytes  float64 `json:"heap_inuse_before_bytes"`
	HeapAfterBytes   float64 `json:"heap_inuse_after_bytes"`
	HeapPerStreamKiB float64 `json:"heap_inuse_per_stream_kib"`

	// Goroutine stacks live outside the heap but inside RSS.
	StackBeforeBytes  float64 `json:"stack_inuse_before_bytes"`
	StackAfterBytes   float64 `json:"stack_inuse_after_bytes"`
	StackPerStreamKiB float64 `json:"stack_inuse_per_stream_kib"`

	GoroutinesBefore    float64 `json:"goroutines_before"`
	GoroutinesAfter     float64 `json:"goroutines_after"`
	GoroutinesPerStream float64 `json:"goroutines_per_stream"`
}

// memSample is one reading of the gateway's memory.
type memSample struct {
	rssKiB     int64
	heap       float64
	stack      float64
	goroutines float64
}

func sampleMemory(ctx context.Context, gw *runningGateway) (memSample, error) {
	rss, err := rssKiB(gw.proc.Pid())
	if err != nil {
		return memSample{}, err
	}
	m, err := scrapeMetrics(ctx, gw.admin+"/metrics", heapInuseMetric, stackInuseMetric, goroutinesMetric)
	if err != nil {
		return memSample{}, err
	}
	return memSample{rssKiB: rss, heap: m[heapInuseMetric], stack: m[stackInuseMetric], goroutines: m[goroutinesMetric]}, nil
}

// streamSet holds open streams until closeAll.
type streamSet struct {
	wire    *wire
	url     string
	apiKey  string
	client  *http.Client
	tr      *http.Transport
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool
	early   atomic.Int64
	seq     atomic.Uint64
}

func newStreamSet(w *wire, url, apiKey string) *streamSet {
	tr := &http.Transport{
		Proxy:                 nil,
		MaxIdleConnsPerHost:   16,
		DisableCompression:    true,
		ResponseHeaderTimeout: 30 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &streamSet{wire: w, url: url, apiKey: apiKey, client: &http.Client{Transport: tr}, tr: tr, ctx: ctx, cancel: cancel}
}

// open opens n streams, at most parallel at a time, and returns once each
// has delivered its first event or failed. Failures are counted by kind.
func (s *streamSet) open(ctx context.Context, n, parallel int) (opened int, kinds map[string]int64, err error) {
	results := make(chan error, n)
	sem := make(chan struct{}, parallel)
	kinds = map[string]int64{}
	for range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return opened, kinds, fmt.Errorf("opening streams: %w", ctx.Err())
		}
		s.wg.Add(1)
		go s.hold(sem, results)
	}
	for range n {
		select {
		case err := <-results:
			if err == nil {
				opened++
			} else if _, ok := kinds[err.Error()]; ok || len(kinds) < maxErrorKinds {
				kinds[err.Error()]++
			}
		case <-ctx.Done():
			return opened, kinds, fmt.Errorf("opening streams: %w", ctx.Err())
		}
	}
	return opened, kinds, nil
}

// hold opens one stream, reports its first event, then keeps reading so
// that a stream the gateway ends is noticed.
func (s *streamSet) hold(sem chan struct{}, results chan<- error) {
	defer s.wg.Done()
	first := true
	report := func(err error) {
		if first {
			first = false
			results <- err
			<-sem
		}
	}
	body := s.wire.appendRequest(nil, s.wire.stream, "stream-", s.seq.Add(1), msgRefs{})
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		report(fmt.Errorf("build request: %w", err))
		return
	}
	setRequestHeaders(req.Header, s.wire, apiKeyCredential(s.apiKey))
	req.Header.Set("Accept", a2a.SSEContentType)
	resp, err := s.client.Do(req)
	if err != nil {
		report(fmt.Errorf("transport: %s", errorKind(err)))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		report(fmt.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type")))
		return
	}
	rd := a2a.NewSSEReader(resp.Body, 64<<10)
	ev, err := rd.Next()
	if err != nil {
		report(fmt.Errorf("first event: %s", errorKind(err)))
		return
	}
	if !bytes.Contains(ev.Data, []byte(s.wire.working)) {
		report(errors.New("first event is not the working task"))
		return
	}
	report(nil)
	for {
		if _, err := rd.Next(); err != nil {
			if !s.closing.Load() {
				s.early.Add(1)
			}
			return
		}
	}
}

// closeAll ends every stream and waits for their readers, within timeout.
func (s *streamSet) closeAll(timeout time.Duration) error {
	s.closing.Store(true)
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	defer s.tr.CloseIdleConnections()
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("streams still open %v after closing them", timeout)
	}
}

// streamSpec sizes the memory measurement.
type streamSpec struct {
	Streams, Warmup int
	// Parallel bounds how many streams are being opened at once, so the
	// listen backlog does not overflow.
	Parallel int
	// OpenTimeout bounds opening all streams.
	OpenTimeout time.Duration
	// Progress reports each step.
	Progress func(format string, args ...any)
	// ProfileDir receives the gateway's heap and goroutine profiles with
	// every stream open, when the gateway serves them.
	ProfileDir string
}

// measureStreams opens spec.Warmup streams, samples the gateway, opens
// spec.Streams more, samples again and closes everything.
func measureStreams(ctx context.Context, w *wire, gw *runningGateway, apiKey string, spec streamSpec) (res StreamResult, err error) {
	res = StreamResult{Streams: spec.Streams, WarmupStreams: spec.Warmup}
	set := newStreamSet(w, gw.url, apiKey)
	defer func() {
		if cerr := set.closeAll(30 * time.Second); cerr != nil && err == nil {
			err = cerr
		}
	}()
	openCtx, cancel := context.WithTimeout(ctx, spec.OpenTimeout)
	defer cancel()

	if n, kinds, err := set.open(openCtx, spec.Warmup, spec.Parallel); err != nil {
		return res, err
	} else if n != spec.Warmup {
		return res, fmt.Errorf("only %d of %d warm-up streams opened: %v", n, spec.Warmup, kinds)
	}
	before, err := sampleMemory(ctx, gw)
	if err != nil {
		return res, err
	}
	spec.Progress("streams         %d warm-up streams open; gateway RSS %d KiB, heap in use %.0f KiB", spec.Warmup, before.rssKiB, before.heap/1024)
	start := time.Now()
	opened, kinds, err := set.open(openCtx, spec.Streams, spec.Parallel)
	res.OpenSeconds = time.Since(start).Seconds()
	res.Opened, res.Errors, res.ErrorKinds = opened, spec.Streams-opened, kinds
	if len(kinds) == 0 {
		res.ErrorKinds = nil
	}
	if err != nil {
		return res, err
	}
	after, err := sampleMemory(ctx, gw)
	if err != nil {
		return res, err
	}
	if gw.debug != "" && spec.ProfileDir != "" {
		for _, name := range []string{"heap", "goroutine"} {
			if err := download(ctx, gw.debug+"/"+name, filepath.Join(spec.ProfileDir, "streams-"+name+".pprof")); err != nil {
				return res, err
			}
		}
	}
	res.EndedEarly = set.early.Load()
	res.RSSBeforeKiB, res.RSSAfterKiB = before.rssKiB, after.rssKiB
	res.HeapBeforeBytes, res.HeapAfterBytes = before.heap, after.heap
	res.StackBeforeBytes, res.StackAfterBytes = before.stack, after.stack
	res.GoroutinesBefore, res.GoroutinesAfter = before.goroutines, after.goroutines
	if opened > 0 {
		n := float64(opened)
		res.RSSPerStreamKiB = float64(after.rssKiB-before.rssKiB) / n
		res.HeapPerStreamKiB = (after.heap - before.heap) / 1024 / n
		res.StackPerStreamKiB = (after.stack - before.stack) / 1024 / n
		res.GoroutinesPerStream = (after.goroutines - before.goroutines) / n
	}
	return res, nil
}

// download saves what url answers to path.
func download(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: status %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save %s: %w", url, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("save %s: %w", url, err)
	}
	return f.Close()
}
