// Package dedupe makes each (tenant, messageId) reach an agent at most
// once. The first arrival claims a record in the store, forwards, and
// stores the answer; a duplicate that arrives later gets the answer
// replayed, a streaming duplicate is attached to the running task through
// subscribe, and a duplicate that arrives while the first is in flight
// waits for it within a bound. A claim whose holder died expires after a
// lease and is taken over by the next retry.
package dedupe

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	requestctx "github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

const (
	// IdempotencyKeyHeader, when present, is the key instead of the
	// message id (a later A2A version may adopt it).
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayHeader marks an answer replayed from the dedupe record.
	ReplayHeader = "A2A-Gateway-Replayed"
	maxKeyBytes  = 256
	// cleanupTimeout bounds the store calls made after the answer, which
	// run on a context the caller's disconnect cannot cancel.
	cleanupTimeout = 5 * time.Second
	pollInterval   = 100 * time.Millisecond
)

// Deduper is the dedupe stage.
type Deduper struct {
	st         store.Dedupe
	o          config.DedupeOptions
	m          *metrics.Metrics
	log        *slog.Logger
	perSubject func(agent string) bool
}

// New builds the stage. perSubject tells whether an agent's tasks belong
// to subjects rather than tenants; records are then kept per subject too.
func New(st store.Dedupe, o config.DedupeOptions, m *metrics.Metrics, log *slog.Logger, perSubject func(agent string) bool) *Deduper {
	return &Deduper{st: st, o: o, m: m, log: log, perSubject: perSubject}
}

// request is one send under deduplication.
type request struct {
	scope, key, fingerprint, holder string
}

// Stage deduplicates send and stream operations; others pass through.
func (d *Deduper) Stage(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		if d.o.Disabled || (s.Op.Method != a2a.MethodSend && s.Op.Method != a2a.MethodStream) {
			return next(w, r, s)
		}
		id := idempotencyKey(r, s.Op)
		if id == "" {
			// Legacy sends carry no message id: nothing to key on.
			return next(w, r, s)
		}
		if len(id) > maxKeyBytes || !utf8.ValidString(id) {
			return a2a.ErrInvalidRequest.WithMessage("the idempotency key must be valid UTF-8 of at most 256 bytes")
		}
		fp, err := fingerprint(s.Op, s.Body)
		if err != nil {
			return a2a.ErrInvalidParams
		}
		if s.Agent.Bridge != nil {
			// Callers of a bridged agent send in several forms, and a
			// replay is the answer as the first caller got it, in its
			// form: the form goes with the fingerprint, so that a retry in
			// another form is told which one to use.
			fp = a2a.FormOf(s.Op).String() + formSeparator + fp
		}
		// Tenant and subject names never hold control characters, so NUL
		// separates them unambiguously; record keys are plain.
		scope := s.Principal.Tenant
		if d.perSubject(s.Agent.Name) {
			scope += "\x00" + s.Principal.Subject
		}
		if len(scope) > store.MaxNameBytes {
			// Long tenant and subject names together: their digest is as unique.
			sum := sha256.Sum256([]byte(scope))
			scope = hex.EncodeToString(sum[:])
		}
		// Keyed by the agent's record key, not the mount: a retry through
		// another mount of the same agent is the same send.
		req := request{scope: scope, key: s.Agent.RecordKey + "\x00" + id, fingerprint: fp, holder: newToken()}
		return d.serve(w, r, s, next, req)
	}
}

// idempotencyKey is the header's key, or else the message id.
func idempotencyKey(r *http.Request, op *a2a.Operation) string {
	if k := r.Header.Get(IdempotencyKeyHeader); k != "" {
		return k
	}
	return op.MessageID
}

// Covers reports whether the stage checks the store for this request before
// it is forwarded, refusing it when the store cannot answer.
func (d *Deduper) Covers(r *http.Request, op *a2a.Operation) bool {
	return !d.o.Disabled && d.o.OnStoreError == config.DedupeRefuse &&
		(op.Method == a2a.MethodSend || op.Method == a2a.MethodStream) && idempotencyKey(r, op) != ""
}

func (d *Deduper) count(s *proxy.Scope, outcome string) {
	d.m.Dedupe.WithLabelValues(s.Agent.Name, outcome).Inc()
}

// serve claims the key and acts on what the claim finds, polling while the
// first request is in flight.
func (d *Deduper) serve(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler, q request) error {
	deadline := time.Now().Add(d.o.Wait.D())
	waited := false
	for {
		rec, outcome, err := d.claim(r.Context(), q)
		if err != nil {
			return d.storeFailed(w, r, s, next, err)
		}
		switch outcome {
		case store.ClaimNew:
			d.count(s, "first_seen")
			return d.first(w, r, s, next, q)
		case store.ClaimTakeover:
			d.count(s, "expired_takeover")
			s.Log().Warn("dedupe: took over a claim whose holder stopped renewing it; the agent may see this message twice", "task_id", rec.TaskID)
			return d.first(w, r, s, next, q)
		}
		if rec.Fingerprint != q.fingerprint {
			d.count(s, "conflict")
			return conflict(rec.Fingerprint, q.fingerprint)
		}
		if rec.State == store.DedupeDone {
			return d.replay(w, r, s, next, rec)
		}
		if s.Op.Method == a2a.MethodStream && rec.TaskID != "" {
			d.count(s, "attached")
			return d.attach(w, r, s, next, rec.TaskID)
		}
		if !waited {
			waited = true
			d.count(s, "in_flight_wait")
		}
		if !time.Now().Before(deadline) {
			d.count(s, "in_progress")
			return a2a.ErrInProgress.WithRetryAfter(d.o.Lease.D() / 3)
		}
		if rec.LeaseExpired {
			continue
		}
		t := time.NewTimer(min(pollInterval, time.Until(deadline)))
		select {
		case <-r.Context().Done():
			t.Stop()
			return proxy.ErrClientGone
		case <-t.C:
		}
	}
}

// claim asks the store once, and once more with the same holder token if
// the reply was lost: a claim that landed is then recognised as ours.
func (d *Deduper) claim(ctx context.Context, q request) (store.DedupeRecord, store.ClaimOutcome, error) {
	rec, out, err := d.st.Claim(ctx, q.scope, q.key, q.fingerprint, q.holder, d.o.Lease.D(), d.o.TTL.D())
	if err != nil && errors.Is(err, store.ErrUnavailable) && ctx.Err() == nil {
		rec, out, err = d.st.Claim(ctx, q.scope, q.key, q.fingerprint, q.holder, d.o.Lease.D(), d.o.TTL.D())
	}
	return rec, out, err
}

func (d *Deduper) storeFailed(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler, err error) error {
	if d.o.OnStoreError == config.DedupeForward && errors.Is(err, store.ErrUnavailable) {
		d.count(s, "store_error_forwarded")
		s.Log().Warn("dedupe: store unavailable; forwarding without deduplication", "err", err)
		return next(w, r, s)
	}
	d.count(s, "store_error_refused")
	s.Log().Error("dedupe: store unavailable; refusing the send", "err", err)
	return a2a.ErrUnavailable.WithMessage("deduplication is temporarily unavailable; retry later").WithRetryAfter(time.Second)
}

// first forwards the claimed request, keeping the claim alive while it
// runs, noting the task id as soon as an event reveals it, and recording
// the answer (or giving the claim up) when the request ends.
func (d *Deduper) first(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler, q request) error {
	f := &firstSend{d: d, r: r, s: s, q: q, streaming: s.Op.Method.Streaming()}
	// A send runs to its end even if the caller leaves, so that the retry
	// finds the answer instead of sending again.
	s.DetachFromClient = !f.streaming
	f.stopRenew = d.renew(q)
	f.tee = &teeWriter{ResponseWriter: w, max: d.o.MaxResultBytes}
	// The answer is read once, by the proxy's observers.
	s.AddObserver(proxy.ObserverFunc(f.observe))
	s.OnEnd(f.settle)
	return next(f.tee, r, s)
}

// firstSend is a claimed send on its way to the agent.
type firstSend struct {
	d         *Deduper
	r         *http.Request
	s         *proxy.Scope
	q         request
	streaming bool
	stopRenew func()
	tee       *teeWriter
	// taskID is the task a stream revealed; agentError, whether the agent
	// answered with an error.
	taskID     string
	agentError bool
}

// observe notes whether the agent answered with an error and, for streams,
// records the task id as soon as it is known, since only a streaming retry
// can use it before the answer is stored (to attach).
func (f *firstSend) observe(ctx context.Context, _ *proxy.Scope, ev a2a.Event, _ []byte) error {
	if ev.Kind == a2a.EventError {
		f.agentError = true
	}
	if !f.streaming || ev.TaskID == "" || f.taskID != "" {
		return nil
	}
	f.taskID = ev.TaskID
	// A retry of a stream with a task attaches to the task; the stream's
	// bytes are never replayed, so they need not be kept (a stream may
	// stay open for hours).
	f.tee.stopKeeping()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := f.d.st.SetTask(cctx, f.q.scope, f.q.key, f.q.holder, f.taskID); err != nil {
		f.s.Log().Warn("dedupe: task id not recorded; a streaming retry will wait instead of attaching", "err", err)
	}
	return nil
}

// settle decides what becomes of the claim when the request ends, while the
// answer is at hand; the store call then runs on after the handler returns,
// so the connection can serve its next request, on a context the caller's
// disconnect cannot cancel.
func (f *firstSend) settle(err error) {
	d, s, q, tee := f.d, f.s, f.q, f.tee
	var settle func(ctx context.Context)
	switch {
	case err == nil && (tee.status() >= 300 || f.agentError && !f.streaming):
		// The agent refused the message: a retry may try again.
		settle = func(ctx context.Context) { d.release(ctx, s, q, "the agent refused the message") }
	case err == nil && f.streaming && f.taskID == "" && f.r.Context().Err() != nil:
		// The caller left before the stream revealed a task: leave the
		// claim to its lease, the agent may still be working on it.
	case err == nil && !tee.overflow:
		res := encodeResult(result{Status: tee.status(), ContentType: tee.Header().Get("Content-Type"), RPCID: s.Op.RPCID, Body: tee.buf.Bytes()})
		settle = func(ctx context.Context) {
			if ok, cerr := d.st.Complete(ctx, q.scope, q.key, q.holder, res, d.o.TTL.D()); cerr != nil || !ok {
				s.Log().Warn("dedupe: answer not recorded; a retry will wait for the lease", "err", cerr, "held", ok)
			}
		}
	case err != nil && proxy.NotSent(err):
		settle = func(ctx context.Context) { d.release(ctx, s, q, "the agent could not be reached") }
	case err != nil && !s.Sent() && tee.code == 0:
		// A later stage refused the send before it was forwarded: the retry
		// must get the same refusal, or the send once allowed, not a wait.
		// Once sent, an error (an answer that could not be recorded, for
		// one) leaves the claim held: the agent did the work.
		settle = func(ctx context.Context) { d.release(ctx, s, q, "refused before reaching the agent") }
	default:
		// Timeouts and dropped answers may have been processed: the claim
		// stays until its lease runs out, then a retry may take it over.
		s.Log().Info("dedupe: outcome unknown; the claim expires after its lease", "lease", d.o.Lease.D().String(), "overflow", tee.overflow)
	}
	go func() {
		defer f.stopRenew()
		if settle != nil {
			ctx, cancel := context.WithTimeout(requestctx.OffPath(context.WithoutCancel(f.r.Context())), cleanupTimeout)
			defer cancel()
			settle(ctx)
		}
	}()
}

func (d *Deduper) release(ctx context.Context, s *proxy.Scope, q request, why string) {
	if _, err := d.st.Release(ctx, q.scope, q.key, q.holder); err != nil {
		s.Log().Warn("dedupe: claim not released; a retry will wait for the lease", "why", why, "err", err)
	}
}

// renew keeps the claim's lease fresh until the returned stop is called.
// A timer, not a goroutine, waits between renewals: most sends finish long
// before the first one is due, so the renewal's context is made only when
// one is.
func (d *Deduper) renew(q request) (stop func()) {
	r := &renewal{d: d, q: q}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = time.AfterFunc(d.o.Lease.D()/3, r.run)
	return r.stop
}

// renewal is one claim's lease renewal.
type renewal struct {
	d *Deduper
	q request

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	// cancel ends the renewal in flight, if there is one.
	cancel context.CancelFunc
}

func (r *renewal) run() {
	every := r.d.o.Lease.D() / 3
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), every)
	r.cancel = cancel
	r.mu.Unlock()
	ok, err := r.d.st.Renew(ctx, r.q.scope, r.q.key, r.q.holder, r.d.o.Lease.D())
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel = nil
	if r.stopped || (err == nil && !ok) {
		return // stopped, or taken over or finished: nothing left to renew
	}
	r.t.Reset(every)
}

func (r *renewal) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.t.Stop()
	if r.cancel != nil {
		r.cancel()
	}
}

// replay answers a duplicate from a completed record.
func (d *Deduper) replay(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler, rec store.DedupeRecord) error {
	if s.Op.Method == a2a.MethodStream && rec.TaskID != "" {
		d.count(s, "attached")
		return d.attach(w, r, s, next, rec.TaskID)
	}
	res, err := decodeResult(rec.Result)
	if err != nil {
		s.Log().Error("dedupe: stored answer unreadable", "err", err)
		return a2a.ErrInternal
	}
	d.count(s, "replayed")
	if s.Op.Binding == a2a.BindingGRPC {
		w.Header().Set(ReplayHeader, "true")
		proxy.WriteGRPCMessages(w, s.Op.Version, res.Body)
		return nil
	}
	body := res.Body
	if s.Op.Binding == a2a.BindingJSONRPC && !bytes.Equal(res.RPCID, s.Op.RPCID) && !s.Op.Method.Streaming() {
		// Same answer, but addressed to the retry's request id.
		if inner, _, err := a2a.UnwrapRPC(body); err == nil && inner != nil {
			body = a2a.RPCResult(s.Op.RPCID, inner)
		}
	}
	h := w.Header()
	if res.ContentType != "" {
		h.Set("Content-Type", res.ContentType)
	}
	h.Set(ReplayHeader, "true")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(res.Status)
	_, _ = w.Write(body)
	return nil
}

// attach answers a streaming duplicate by subscribing to the task the
// first request created. If the task can no longer be subscribed to (it
// ended), the duplicate gets the task as it is now, as a one-event stream.
func (d *Deduper) attach(w http.ResponseWriter, r *http.Request, s *proxy.Scope, next proxy.Handler, taskID string) error {
	sub := derivedOp(s.Op, a2a.MethodSubscribe, taskID)
	r2, s2 := s.Derive(r, sub, a2a.RPCRequest(sub.Version, sub.Method, s.Op.RPCID, a2a.TaskParams{ID: taskID}))
	probe := &streamProbe{w: w}
	// An agent refuses to subscribe to an ended task with an error, which
	// reaches a JSON-RPC caller as a one-event stream: the probe must not
	// take that for the task's stream.
	s2.AddObserver(proxy.ObserverFunc(func(_ context.Context, _ *proxy.Scope, ev a2a.Event, _ []byte) error {
		if !probe.decided && ev.Kind == a2a.EventError {
			probe.refused = true
		}
		return nil
	}))
	if err := next(probe, r2, s2); err != nil || probe.streamed {
		return err
	}
	get := derivedOp(s.Op, a2a.MethodGetTask, taskID)
	r3, s3 := s.Derive(r, get, a2a.RPCRequest(get.Version, get.Method, s.Op.RPCID, a2a.TaskParams{ID: taskID}))
	rec := &bufferWriter{header: http.Header{}}
	if err := next(rec, r3, s3); err != nil {
		return err
	}
	if s.Op.Binding == a2a.BindingGRPC {
		return attachGRPC(w, s, get, rec)
	}
	task := rec.buf.Bytes()
	if s.Op.Binding == a2a.BindingJSONRPC {
		inner, _, err := a2a.UnwrapRPC(task)
		if err != nil || inner == nil {
			rec.copyTo(w)
			return nil
		}
		task = inner
	} else if rec.status != http.StatusOK {
		rec.copyTo(w)
		return nil
	}
	data := a2a.TaskEvent(s.Op.Version, task)
	if s.Op.Binding == a2a.BindingJSONRPC {
		data = a2a.RPCResult(s.Op.RPCID, data)
	}
	w.Header().Set("Content-Type", a2a.SSEContentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set(ReplayHeader, "true")
	w.WriteHeader(http.StatusOK)
	return a2a.WriteSSE(w, "", data)
}

// formSeparator ends the form a bridged send's fingerprint starts with.
const formSeparator = "|"

// conflict is the refusal of a send whose fingerprint is not the first
// one's: for a send first made in another form, naming that form.
func conflict(first, retry string) *a2a.Error {
	was, _, bridged := strings.Cut(first, formSeparator)
	is, _, _ := strings.Cut(retry, formSeparator)
	if bridged && was != is {
		return a2a.ErrIdempotencyConflict.WithMessage("this message id was first sent in " + was + "; a retry must be sent in the same version and binding")
	}
	return a2a.ErrIdempotencyConflict
}

func derivedOp(orig *a2a.Operation, m a2a.Method, taskID string) *a2a.Operation {
	return &a2a.Operation{
		Method: m, Version: orig.Version, VersionExplicit: orig.VersionExplicit, Binding: orig.Binding,
		RPCMethod: a2a.RPCMethodName(m, orig.Version), RPCID: orig.RPCID, TaskID: taskID, Tenant: orig.Tenant,
	}
}

// fingerprint identifies what a send asks for: the method and the
// canonical form of its params (JSON-RPC, without the envelope's id, which
// retries may change) or body (REST). Member order and white space do not
// count; numbers are compared as written.
func fingerprint(op *a2a.Operation, body []byte) (string, error) {
	// Every first-seen send needs one, so the canonical form's buffers and
	// the hash are reused: it is needed only until it is hashed.
	c := canonicalizers.Get().(*canonicalizer)
	defer releaseCanonicalizer(c)
	var canon []byte
	var err error
	switch op.Binding {
	case a2a.BindingJSONRPC:
		canon, err = c.canonicalParams(body)
	case a2a.BindingGRPC:
		canon, err = canonicalGRPC(op.Version, body)
	default:
		canon, err = c.canonicalValue(body)
	}
	if err != nil {
		return "", err
	}
	if c.sum == nil {
		c.sum = sha256.New()
	}
	c.sum.Reset()
	c.scratch = append(append(append(append(c.scratch[:0], op.Method.String()...), '\n'), op.Binding.String()...), '\n')
	c.sum.Write(c.scratch)
	c.sum.Write(canon)
	c.scratch = c.sum.Sum(c.scratch[:0])
	var digest [2 * sha256.Size]byte
	hex.Encode(digest[:], c.scratch)
	return string(digest[:]), nil
}

var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// maxPooledBytes bounds the buffers a pooled canonicalizer keeps, so that
// one large body does not stay in memory after its request.
const maxPooledBytes = 64 << 10

func releaseCanonicalizer(c *canonicalizer) {
	if cap(c.out)+cap(c.scratch)+cap(c.str)+cap(c.names) > maxPooledBytes {
		return
	}
	// The body is the request's; the pool must not keep it alive.
	c.src = nil
	canonicalizers.Put(c)
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
