package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// loadSpec describes closed-loop load on one target: Concurrency clients,
// each sending its next request as soon as the previous answer is read.
type loadSpec struct {
	URL string
	// Creds are the clients' credentials: client i sends Creds[i%len].
	Creds       []credential
	Shape       requestShape
	Concurrency int
	// Timeout bounds one exchange, so a stuck target cannot hang the run.
	Timeout time.Duration
	// IDPrefix starts the clients' message and context ids, so that two
	// loads of one target never send the same id. Default "load".
	IDPrefix string
	// Translated says the answers come translated from the agent's version
	// into the client's, so they are checked by content: their size
	// depends on the translation.
	Translated bool
}

// credential is the header a client authenticates with.
type credential struct{ header, value string }

func apiKeyCredential(key string) credential { return credential{header: apiKeyHeader, value: key} }

func bearerCredential(token string) credential {
	return credential{header: "Authorization", value: "Bearer " + token}
}

// requestShape says which task and context each request names, which
// decides what authorization has to look up or reserve in the store.
type requestShape int

const (
	// shapeOneShot names neither: a new task in a new context.
	shapeOneShot requestShape = iota
	// shapeNewContext names a context of the client's choosing, new for
	// every request, which the gateway reserves for the caller.
	shapeNewContext
	// shapeFollowUp names the client's own task and its context, started
	// by startConversations before the load.
	shapeFollowUp
)

// String names the shape in the report.
func (s requestShape) String() string {
	switch s {
	case shapeOneShot:
		return "one-shot"
	case shapeNewContext:
		return "new context"
	case shapeFollowUp:
		return "follow-up"
	}
	return fmt.Sprintf("shape %d", int(s))
}

// LoadResult is what one target achieved over its measured windows.
type LoadResult struct {
	// Requests answered correctly, and Errors of every other kind, among the
	// requests started inside the measured windows.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// ErrorKinds counts errors by kind (at most a few kinds are kept).
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	Seconds    float64          `json:"seconds"`
	RPS        float64          `json:"requests_per_second"`
	// RoundRPS is the rate of each measured window, to show the noise.
	RoundRPS []float64 `json:"round_requests_per_second"`
	P50      Millis    `json:"p50_ms"`
	P90      Millis    `json:"p90_ms"`
	P99      Millis    `json:"p99_ms"`
	Max      Millis    `json:"max_ms"`
	Mean     Millis    `json:"mean_ms"`
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

// loadWorker is one client's loop and its statistics over every round.
type loadWorker struct {
	prefix string // of its message and context ids, unique per worker
	cred   credential
	// conversation is the task and context a follow-up names.
	conversation msgRefs
	seq          uint64
	hist         *Histogram
	errors       int64
	kinds        map[string]int64
	body         []byte
	resp         bytes.Buffer
	// translatedSize is the size of every translated answer, learnt from
	// the first one, which was checked in full.
	translatedSize int
}

// fullCheckEvery is how often a translated answer is decoded and checked in
// full; the others are checked as cheaply as an untranslated one (size,
// id), so that the client of a bridged row does no more work than its
// twin's and the two rows run at rates set by the gateway alone.
const fullCheckEvery = 64

// checkTranslated checks the translated answer in wk.resp: the upstream's
// answers all have one size, so their translations do too.
func (wk *loadWorker) checkTranslated(w *wire, seq uint64, refs msgRefs) error {
	body := wk.resp.Bytes()
	if wk.translatedSize != 0 && seq%fullCheckEvery != 0 {
		return checkResult(body, wk.translatedSize, seq, refs)
	}
	if err := w.checkTranslated(body, seq, refs); err != nil {
		return err
	}
	if wk.translatedSize == 0 {
		wk.translatedSize = len(body)
	} else if len(body) != wk.translatedSize {
		return fmt.Errorf("translated answer of %d bytes, the first was %d", len(body), wk.translatedSize)
	}
	return nil
}

// loader drives one target over several measured windows. Its clients and
// their keep-alive connections persist between windows, so only the first
// window needs a warm-up, and windows of different targets can alternate.
type loader struct {
	wire     *wire
	spec     loadSpec
	tr       *http.Transport
	client   *http.Client
	workers  []*loadWorker
	seconds  float64
	roundRPS []float64
}

func newLoader(w *wire, spec loadSpec) (*loader, error) {
	if spec.Concurrency < 1 {
		return nil, fmt.Errorf("load needs at least one client")
	}
	if len(spec.Creds) == 0 {
		return nil, fmt.Errorf("load needs at least one credential")
	}
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        2 * spec.Concurrency,
		MaxIdleConnsPerHost: 2 * spec.Concurrency,
		IdleConnTimeout:     5 * time.Minute,
		DisableCompression:  true,
	}
	l := &loader{wire: w, spec: spec, tr: tr, client: &http.Client{Transport: tr, Timeout: spec.Timeout}}
	prefix := cmp.Or(spec.IDPrefix, "load")
	l.workers = make([]*loadWorker, spec.Concurrency)
	for i := range l.workers {
		l.workers[i] = &loadWorker{prefix: fmt.Sprintf("%s-%d-", prefix, i), cred: spec.Creds[i%len(spec.Creds)], hist: NewHistogram(), kinds: map[string]int64{}}
	}
	return l, nil
}

// close drops the loader's connections.
func (l *loader) close() { l.tr.CloseIdleConnections() }

// run loads the target for warmup (not recorded) and then window. Only
// requests started inside the window count. It returns the window's rate.
func (l *loader) run(ctx context.Context, warmup, window time.Duration) (float64, error) {
	if window <= 0 {
		return 0, fmt.Errorf("the measured window must be positive")
	}
	before := l.answered()
	measureFrom := time.Now().Add(warmup)
	if err := l.drive(ctx, measureFrom, measureFrom.Add(window)); err != nil {
		return 0, err
	}
	rps := float64(l.answered()-before) / window.Seconds()
	l.seconds += window.Seconds()
	l.roundRPS = append(l.roundRPS, rps)
	return rps, nil
}

// warm loads the target for d without recording anything.
func (l *loader) warm(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	return l.drive(ctx, end, end)
}

// drive runs every client until end, recording what starts after measureFrom.
func (l *loader) drive(ctx context.Context, measureFrom, end time.Time) error {
	var wg sync.WaitGroup
	for _, wk := range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.loop(ctx, l.client, l.wire, l.spec, measureFrom, end)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("load interrupted: %w", err)
	}
	return nil
}

// startConversations has every client start the conversation its
// follow-ups continue: one send in a context of its own, whose answer
// names the task.
func (l *loader) startConversations(ctx context.Context) error {
	errs := make(chan error, len(l.workers))
	for _, wk := range l.workers {
		go func() {
			wk.seq++
			refs := msgRefs{contextID: wk.prefix + "conversation"}
			if err := wk.exchange(ctx, l.client, l.wire, l.spec, wk.seq, refs); err != nil {
				errs <- fmt.Errorf("starting a conversation: %w", err)
				return
			}
			task, err := taskIDOf(wk.resp.Bytes())
			if err != nil {
				errs <- fmt.Errorf("starting a conversation: %w", err)
				return
			}
			if !plainID(task) {
				errs <- fmt.Errorf("starting a conversation: the agent issued task id %q, which a follow-up cannot name as it is", task)
				return
			}
			refs.taskID = task
			wk.conversation = refs
			errs <- nil
		}()
	}
	var first error
	for range l.workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (l *loader) answered() uint64 {
	var n uint64
	for _, wk := range l.workers {
		n += wk.hist.Count()
	}
	return n
}

// result summarises every window run so far.
func (l *loader) result() LoadResult {
	all := NewHistogram()
	res := LoadResult{ErrorKinds: map[string]int64{}, Seconds: l.seconds, RoundRPS: l.roundRPS}
	for _, wk := range l.workers {
		all.Merge(wk.hist)
		res.Errors += wk.errors
		for k, n := range wk.kinds {
			res.ErrorKinds[k] += n
		}
	}
	res.ErrorKinds = topKinds(res.ErrorKinds, maxErrorKinds)
	res.Requests = int64(all.Count())
	if l.seconds > 0 {
		res.RPS = float64(res.Requests) / l.seconds
	}
	res.P50 = Millis(all.Quantile(0.50))
	res.P90 = Millis(all.Quantile(0.90))
	res.P99 = Millis(all.Quantile(0.99))
	res.Max = Millis(all.Max())
	res.Mean = Millis(all.Mean())
	return res
}

func (wk *loadWorker) loop(ctx context.Context, client *http.Client, w *wire, spec loadSpec, measureFrom, end time.Time) {
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(end) {
			return
		}
		wk.seq++
		err := wk.exchange(ctx, client, w, spec, wk.seq, wk.refs(spec.Shape, wk.seq))
		if start.Before(measureFrom) {
			continue
		}
		if err != nil {
			wk.errors++
			countKind(wk.kinds, err)
			continue
		}
		wk.hist.Record(time.Since(start))
	}
}

// countKind counts err by its text, among at most maxErrorKinds kinds.
func countKind(kinds map[string]int64, err error) {
	if _, ok := kinds[err.Error()]; ok || len(kinds) < maxErrorKinds {
		kinds[err.Error()]++
	}
}

// refs are the task and context request seq names.
func (wk *loadWorker) refs(shape requestShape, seq uint64) msgRefs {
	switch shape {
	case shapeNewContext:
		return msgRefs{contextID: wk.prefix + "ctx-" + strconv.FormatUint(seq, 10)}
	case shapeFollowUp:
		return wk.conversation
	}
	return msgRefs{}
}

// exchange sends one SendMessage naming refs and checks the answer, which
// it leaves in wk.resp.
func (wk *loadWorker) exchange(ctx context.Context, client *http.Client, w *wire, spec loadSpec, seq uint64, refs msgRefs) error {
	wk.body = w.appendRequest(wk.body[:0], w.send, wk.prefix, seq, refs)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.URL, bytes.NewReader(wk.body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	setRequestHeaders(req.Header, w, wk.cred)
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
	if spec.Translated {
		return wk.checkTranslated(w, seq, refs)
	}
	return checkResult(wk.resp.Bytes(), ResponseSize, seq, refs)
}

func setRequestHeaders(h http.Header, w *wire, cred credential) {
	h.Set("Content-Type", "application/json")
	if w.version != "" {
		h.Set(a2a.VersionHeader, w.version)
	}
	h.Set(cred.header, cred.value)
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
