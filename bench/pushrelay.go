package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The push-relay run: clients stream tasks through a gateway (bearer JWT,
// state and the delivery queue in a Redis that persists with an
// append-only file) from an agent that writes each task's events at a
// steady pace, so the gateway is offered clients/interval events a second;
// every send carries a push config for a receiver on loopback, so
// the gateway's relay turns each event into a signed, queued webhook
// delivery. The receiver times every notification against the time the
// agent wrote into the event, and counts every event of every task: any
// event a client's stream carried that never reached the receiver is
// missing, and a run with one missing fails.
//
// The saturation run that follows is the same measurement on fresh
// processes, with a number of tasks of its own whose events the agent
// writes back to back: the relay's rate when nothing paces it.

// Defaults and bounds of the push-relay run.
const (
	defaultPushTasks           = 480
	defaultPushSaturationTasks = 240
	defaultPushEvents          = 100
	defaultPushClients         = 24
	defaultPushInterval        = 10 * time.Millisecond
	maxPushEvents              = 10_000
	maxPushInterval            = time.Second
	// pushDrainWait is how long the receiver may go without a new
	// notification, after the streams ended, before what has not arrived
	// counts as missing.
	pushDrainWait = 30 * time.Second
	pushToken     = "a2abench-push"
	// pushRedisPersistence is how the run's Redis keeps the queue.
	pushRedisPersistence = "appendonly yes, appendfsync everysec"
)

// PushResult is what one push-relay run measured.
type PushResult struct {
	Tasks         int `json:"tasks"`
	EventsPerTask int `json:"events_per_task"`
	Clients       int `json:"clients"`
	// Interval is the time between two events of a task, zero when the
	// agent writes them back to back.
	Interval Millis `json:"interval_ms"`
	// Offered is the rate the agent writes events at: clients/interval,
	// zero when back to back.
	Offered float64 `json:"offered_per_second"`
	Redis   string  `json:"redis_persistence"`
	// Streamed are the events the clients' streams carried: each must be
	// delivered. StreamErrors are streams that broke or carried an event
	// without an SSE id.
	Streamed     int64            `json:"streamed"`
	StreamErrors int64            `json:"stream_errors"`
	ErrorKinds   map[string]int64 `json:"error_kinds,omitempty"`
	// Received counts every acknowledged notification; Delivered the
	// streamed events among them, once each; Duplicates the repeats;
	// Extra the notifications of events no client stream carried (task
	// snapshots the relay's own subscription to the agent starts with).
	Received   int64 `json:"received"`
	Delivered  int64 `json:"delivered"`
	Duplicates int64 `json:"duplicates"`
	Extra      int64 `json:"extra"`
	Missing    int64 `json:"missing"`
	// StreamSeconds is how long the clients took to stream every task.
	StreamSeconds float64 `json:"stream_seconds"`
	// Seconds runs from the first event the agent wrote to the last
	// streamed event the receiver acknowledged.
	Seconds             float64 `json:"seconds"`
	DeliveriesPerSecond float64 `json:"deliveries_per_second"`
	// Latency from the time the agent wrote an event to the receiver's
	// receipt of its notification.
	P50 Millis `json:"p50_ms"`
	P90 Millis `json:"p90_ms"`
	P99 Millis `json:"p99_ms"`
	Max Millis `json:"max_ms"`
	// The same split in two: from the agent to the client's stream (the
	// gateway logs and queues each event before the client sees it), and
	// from the client's stream to the webhook.
	StreamP50 Millis `json:"stream_p50_ms"`
	StreamP99 Millis `json:"stream_p99_ms"`
	QueueP50  Millis `json:"queue_p50_ms"`
	QueueP99  Millis `json:"queue_p99_ms"`
	// CPU per delivered event, of the gateway and of Redis.
	GatewayCPUMicros float64 `json:"gateway_cpu_us"`
	RedisCPUMicros   float64 `json:"redis_cpu_us"`
	// RoundTrips are the gateway's Redis round trips per delivered event,
	// in all and by command: the streams, the relay, the deliveries.
	RoundTrips     float64            `json:"round_trips"`
	RoundTripsByOp map[string]float64 `json:"round_trips_by_op,omitempty"`
}

// pushPhase is one push-relay measurement: the name of its processes and
// files, its label in the progress, and its tasks and their pace.
type pushPhase struct {
	name, label string
	tasks       int
	interval    time.Duration
}

// pushPhases are the paced run and the saturation run, in that order.
func (o Options) pushPhases() (paced, saturation pushPhase) {
	return pushPhase{name: "push-relay", label: "push relay", tasks: o.PushTasks, interval: o.PushInterval},
		pushPhase{name: "push-saturation", label: "push saturation", tasks: o.PushSaturationTasks}
}

// push runs one push-relay phase; it is nil when the phase is skipped.
func (r *runner) push(ctx context.Context, ph pushPhase) (*PushResult, error) {
	if ph.tasks <= 0 {
		return nil, nil
	}
	res, skip, err := r.pushRelay(ctx, ph)
	if err != nil {
		return nil, err
	}
	if skip != "" {
		r.progress("%-15s skipped: %s", ph.label, skip)
		return nil, nil
	}
	return &res, nil
}

// pushRelay runs one push-relay measurement, or says why it is skipped.
func (r *runner) pushRelay(ctx context.Context, ph pushPhase) (res PushResult, skip string, err error) {
	o := r.o
	res = PushResult{Tasks: ph.tasks, EventsPerTask: o.PushEvents, Clients: o.PushClients, Interval: Millis(ph.interval), Redis: pushRedisPersistence}
	if ph.interval > 0 {
		res.Offered = float64(o.PushClients) / ph.interval.Seconds()
	}
	bin, skip := redisBinary(o.RedisServer)
	if skip != "" {
		return res, skip, nil
	}
	dir := filepath.Join(r.dir, ph.name+"-redis")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return res, "", fmt.Errorf("push relay: %w", err)
	}
	rs, err := startRedis(ctx, r.ps, bin, dir, "--appendonly", "yes", "--appendfsync", "everysec")
	if err != nil {
		return res, "", fmt.Errorf("push relay: %w", err)
	}
	defer rs.proc.stop()
	if err := checkPersistence(ctx, rs.addr); err != nil {
		return res, "", fmt.Errorf("push relay: %w", err)
	}
	r.pushRedisVersion = rs.version
	is, _, err := r.tokenIssuer()
	if err != nil {
		return res, "", err
	}
	creds, err := is.tokens(o.PushClients)
	if err != nil {
		return res, "", err
	}
	agentURL, agent, err := r.startSelf(ctx, "pushagent", "-events", strconv.Itoa(o.PushEvents), "-interval", ph.interval.String())
	if err != nil {
		return res, "", fmt.Errorf("push relay: %w", err)
	}
	defer agent.stop()
	rcv, err := startReceiver()
	if err != nil {
		return res, "", err
	}
	defer func() {
		if cerr := rcv.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	gw, err := r.launchPushGateway(ctx, ph.name, agentURL, is.url(ph.name), is.algorithm, rs.addr)
	if err != nil {
		return res, "", fmt.Errorf("push relay: %w", err)
	}
	defer gw.proc.stop()

	r.progress("%-15s %s, Redis %s", ph.label, res.load(), pushRedisPersistence)
	gw0, rd0, err := pushCPU(gw, rs)
	if err != nil {
		return res, "", err
	}
	before, err := snapshotGateway(ctx, gw, nil)
	if err != nil {
		return res, "", err
	}
	start := time.Now()
	want, streamed, errs := streamPushTasks(ctx, r.wire, gw.url, creds, rcv.url, ph.tasks)
	res.StreamSeconds = time.Since(start).Seconds()
	res.Streamed, res.ErrorKinds = int64(len(want)), errs
	for _, n := range errs {
		res.StreamErrors += n
	}
	if len(errs) == 0 {
		res.ErrorKinds = nil
	}
	missing := waitDelivered(ctx, rcv, want)
	gw1, rd1, err := pushCPU(gw, rs)
	if err != nil {
		return res, "", err
	}
	after, err := settledSnapshot(ctx, gw, nil)
	if err != nil {
		return res, "", err
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	res.Missing = int64(missing)
	res.Delivered = res.Streamed - res.Missing
	res.Received, res.Extra = rcv.total, rcv.extra+rcv.unreadable
	for k, n := range rcv.seen {
		if _, ok := want[k]; ok {
			res.Duplicates += int64(n - 1)
		} else {
			res.Extra += int64(n)
		}
	}
	if span := rcv.last.Sub(rcv.first); span > 0 {
		res.Seconds = span.Seconds()
		res.DeliveriesPerSecond = float64(res.Delivered) / res.Seconds
	}
	res.P50, res.P90, res.P99, res.Max = Millis(rcv.hist.Quantile(0.5)), Millis(rcv.hist.Quantile(0.9)), Millis(rcv.hist.Quantile(0.99)), Millis(rcv.hist.Max())
	queued := NewHistogram()
	for k, at := range want {
		if got, ok := rcv.firstAt[k]; ok {
			queued.Record(got.Sub(at))
		}
	}
	res.StreamP50, res.StreamP99 = Millis(streamed.Quantile(0.5)), Millis(streamed.Quantile(0.99))
	res.QueueP50, res.QueueP99 = Millis(queued.Quantile(0.5)), Millis(queued.Quantile(0.99))
	if res.Delivered > 0 {
		res.GatewayCPUMicros = float64((gw1 - gw0).Microseconds()) / float64(res.Delivered)
		res.RedisCPUMicros = float64((rd1 - rd0).Microseconds()) / float64(res.Delivered)
		u := usageBetween(storeRedis, true, res.Delivered, before, after)
		res.RoundTrips, res.RoundTripsByOp = u.PerRequest, u.PerRequestByOp
	}
	r.progress("%-15s %d events streamed in %.1fs; %d delivered (%d missing, %d duplicates, %d extra) in %.1fs: %.0f/s, p50 %v, p99 %v",
		ph.label, res.Streamed, res.StreamSeconds, res.Delivered, res.Missing, res.Duplicates, res.Extra, res.Seconds, res.DeliveriesPerSecond, res.P50, res.P99)
	return res, "", nil
}

// load says what a run streamed: its tasks, the pace the agent writes
// their events at, and how many are streamed at a time.
func (p *PushResult) load() string {
	pace := "back to back"
	if p.Interval > 0 {
		pace = fmt.Sprintf("one every %v (%.0f events/s offered)", p.Interval, p.Offered)
	}
	return fmt.Sprintf("%d tasks of %d events, %s, %d at a time", p.Tasks, p.EventsPerTask, pace, p.Clients)
}

// launchPushGateway starts the gateway of a push-relay phase in front of
// the push agent: the run's JWT issuer, its state and queue in Redis, the
// relay on with loopback webhooks allowed, and the relay's subscriber
// following tasks by stream.
func (r *runner) launchPushGateway(ctx context.Context, name, agentURL, jwksURL, alg, redisAddr string) (*runningGateway, error) {
	key, err := writeSigningKey(filepath.Join(r.dir, name+"-signing.pem"))
	if err != nil {
		return nil, err
	}
	gl := gatewayLaunch{
		bin: r.gatewayBin, self: r.o.Self, dir: r.dir, name: name,
		upstreamURL: agentURL, apiKey: r.apiKey, maxStreams: r.o.PushClients + 64,
		setup: gatewaySetup{
			jwksURL: jwksURL, algorithm: alg, redisAddr: redisAddr, keyPrefix: "a2abench.push",
			extra: map[string]any{
				"agents": []any{map[string]any{"name": agentName, "url": agentURL, "push": map[string]any{"source": "stream"}}},
				"push": map[string]any{
					"enabled":   true,
					"signing":   map[string]any{"key_files": []string{key}},
					"allowlist": []string{"127.0.0.1:*"},
				},
			},
		},
	}
	if r.o.ProfileDir != "" {
		gl.bin = ""
		gl.cpuProfile = filepath.Join(r.o.ProfileDir, name+"-cpu.pprof")
	}
	return startGateway(ctx, r.ps, gl)
}

// writeSigningKey writes a fresh Ed25519 key for the relay's signatures.
func writeSigningKey(path string) (string, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("signing key: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", fmt.Errorf("signing key: %w", err)
	}
	return path, nil
}

// checkPersistence asks the run's Redis whether it keeps what it
// acknowledged as the report says: appendonly yes, appendfsync everysec.
func checkPersistence(ctx context.Context, addr string) error {
	for setting, want := range map[string]string{"appendonly": "yes", "appendfsync": "everysec"} {
		got, err := redisConfigGet(ctx, addr, setting)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("redis %s is %q, want %q", setting, got, want)
		}
	}
	return nil
}

// redisConfigGet reads one setting with CONFIG GET, in plain RESP.
func redisConfigGet(ctx context.Context, addr, setting string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(setting), setting); err != nil {
		return "", fmt.Errorf("redis config get: %w", err)
	}
	// The answer is an array of two bulk strings: the name and the value.
	rd := bufio.NewReader(c)
	var lines []string
	for range 5 {
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("redis config get %s: %w", setting, err)
		}
		lines = append(lines, strings.TrimRight(line, "\r\n"))
	}
	if lines[0] != "*2" || lines[2] != setting {
		return "", fmt.Errorf("redis config get %s: answered %q", setting, lines)
	}
	return lines[4], nil
}

// pushCPU reads the CPU time the gateway and Redis have used so far.
func pushCPU(gw *runningGateway, rs *redisServer) (gateway, redis time.Duration, err error) {
	if gateway, err = cpuTime(gw.proc.Pid()); err != nil {
		return 0, 0, err
	}
	if redis, err = cpuTime(rs.proc.Pid()); err != nil {
		return 0, 0, err
	}
	return gateway, redis, nil
}

// streamPushTasks streams tasks through the gateway, len(creds) at a time,
// each send with a push config for hook, and returns every event the
// streams carried with the time the client read it, the latency from the
// agent to the client, and the kinds of the streams' failures.
func streamPushTasks(ctx context.Context, w *wire, url string, creds []credential, hook string, tasks int) (map[pushKey]time.Time, *Histogram, map[string]int64) {
	tr := &http.Transport{MaxIdleConnsPerHost: len(creds), DisableCompression: true, ResponseHeaderTimeout: requestTimeout}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var (
		next atomic.Int64
		mu   sync.Mutex
		wg   sync.WaitGroup
	)
	want, hist, errs := map[pushKey]time.Time{}, NewHistogram(), map[string]int64{}
	for _, cred := range creds {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(tasks) || ctx.Err() != nil {
					return
				}
				evs, err := streamPushTask(ctx, client, w, url, cred, hook, i)
				mu.Lock()
				for _, e := range evs {
					want[e.key] = e.read
					hist.Record(e.read.Sub(e.written))
				}
				if err != nil && (errs[err.Error()] > 0 || len(errs) < maxErrorKinds) {
					errs[err.Error()]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return want, hist, errs
}

// streamedEvent is one event a client's stream carried: when the agent
// wrote it and when the client read it.
type streamedEvent struct {
	key           pushKey
	written, read time.Time
}

// streamPushTask streams one task and returns the events its stream
// carried. Every event must carry an SSE id.
func streamPushTask(ctx context.Context, client *http.Client, w *wire, url string, cred credential, hook string, i int64) ([]streamedEvent, error) {
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"message":{"messageId":"push-%d","role":"ROLE_USER","parts":[{"text":"push relay"}]},"configuration":{"taskPushNotificationConfig":{"url":%q,"token":%q}}}}`,
		i, w.stream, i, hook, pushToken)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	setRequestHeaders(req.Header, w, cred)
	req.Header.Set("Accept", a2a.SSEContentType)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("transport: %s", errorKind(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var keys []streamedEvent
	rd := a2a.NewSSEReader(resp.Body, 1<<20)
	for {
		ev, err := rd.Next()
		read := time.Now()
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, fmt.Errorf("stream: %s", errorKind(err))
		}
		if len(ev.Data) == 0 {
			continue
		}
		if ev.ID == "" {
			return keys, errors.New("stream event without an SSE id")
		}
		res, _, err := a2a.UnwrapRPC(ev.Data)
		var n pushNote
		if err != nil || res == nil || json.Unmarshal(res, &n) != nil {
			return keys, fmt.Errorf("unreadable stream event: %.120s", ev.Data)
		}
		var obj *pushObject
		switch {
		case n.Task != nil:
			n.Task.TaskID = n.Task.ID
			obj = n.Task
		case n.StatusUpdate != nil:
			obj = n.StatusUpdate
		case n.ArtifactUpdate != nil:
			obj = n.ArtifactUpdate
		}
		if obj == nil || obj.Metadata.Bench == nil {
			return keys, fmt.Errorf("stream event without the agent's stamp: %.120s", ev.Data)
		}
		b := obj.Metadata.Bench
		keys = append(keys, streamedEvent{key: pushKey{obj.TaskID, b.Seq}, written: time.Unix(0, b.At), read: read})
	}
}

// waitDelivered waits until the receiver has every event of want, or has
// gone pushDrainWait without one more, and returns how many it lacks.
func waitDelivered(ctx context.Context, rcv *receiver, want map[pushKey]time.Time) int {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	missing, since := rcv.missing(want), time.Now()
	for missing > 0 && time.Since(since) < pushDrainWait {
		select {
		case <-ctx.Done():
			return missing
		case <-tick.C:
		}
		if m := rcv.missing(want); m < missing {
			missing, since = m, time.Now()
		}
	}
	return missing
}

// evaluatePush adds the push-relay phases' verdicts: the paced run's
// rate, latency and cost per delivered event, the saturation run's rate,
// and for both that every streamed event was delivered once. A phase that
// streamed nothing has no verdicts, and latency and costs need a delivery.
func (r *Report) evaluatePush() {
	if p := r.Push; p != nil && p.Streamed > 0 {
		r.Verdicts = append(r.Verdicts, Verdict{Name: "push relay deliveries/s", Value: p.DeliveriesPerSecond,
			Limit: fmt.Sprintf(">= %.0f", MinPushDeliveriesPerSecond), Met: p.DeliveriesPerSecond >= MinPushDeliveriesPerSecond,
			Detail: p.load()})
		if p.Delivered > 0 {
			r.Verdicts = append(r.Verdicts,
				Verdict{Name: "push relay p99 event to webhook (ms)", Value: p.P99.ms(),
					Limit: fmt.Sprintf("<= %d ms", MaxPushP99.Milliseconds()), Met: time.Duration(p.P99) <= MaxPushP99},
				Verdict{Name: "push relay gateway CPU per event (µs)", Value: p.GatewayCPUMicros,
					Limit: fmt.Sprintf("<= %.0f µs", MaxPushGatewayCPUMicros), Met: p.GatewayCPUMicros <= MaxPushGatewayCPUMicros},
				Verdict{Name: "push relay Redis CPU per event (µs)", Value: p.RedisCPUMicros,
					Limit: fmt.Sprintf("<= %.0f µs", MaxPushRedisCPUMicros), Met: p.RedisCPUMicros <= MaxPushRedisCPUMicros},
				Verdict{Name: "push relay Redis round trips per event", Value: p.RoundTrips,
					Limit: fmt.Sprintf("<= %.2f", MaxPushRoundTrips), Met: p.RoundTrips <= MaxPushRoundTrips,
					Detail: orNone(formatOps(p.RoundTripsByOp))},
			)
		}
		r.Verdicts = append(r.Verdicts, pushDelivered("push relay", p)...)
	}
	if p := r.PushSaturation; p != nil && p.Streamed > 0 {
		r.Verdicts = append(r.Verdicts, Verdict{Name: "push saturation deliveries/s", Value: p.DeliveriesPerSecond,
			Limit: fmt.Sprintf(">= %.0f", MinPushSaturationPerSecond), Met: p.DeliveriesPerSecond >= MinPushSaturationPerSecond,
			Detail: p.load()})
		r.Verdicts = append(r.Verdicts, pushDelivered("push saturation", p)...)
	}
}

// pushDelivered judges that a phase delivered every streamed event, none
// twice, and adds its streams' failures.
func pushDelivered(name string, p *PushResult) []Verdict {
	vs := []Verdict{
		{Name: name + " events missing", Value: float64(p.Missing), Limit: "== 0", Met: p.Missing == 0,
			Detail: fmt.Sprintf("%d streamed, %d delivered, %d extra", p.Streamed, p.Delivered, p.Extra)},
		{Name: name + " events duplicated", Value: float64(p.Duplicates), Limit: "== 0", Met: p.Duplicates == 0},
	}
	if p.StreamErrors > 0 {
		vs = append(vs, Verdict{Name: name + " stream errors", Value: float64(p.StreamErrors),
			Limit: "0", Detail: formatKinds(p.ErrorKinds)})
	}
	return vs
}

// pushRun is a push-relay phase's result under its name in the report.
type pushRun struct {
	name string
	p    *PushResult
}

// pushRuns are the push-relay phases measured, the paced run first.
func (r *Report) pushRuns() []pushRun {
	var runs []pushRun
	for _, x := range []pushRun{{"paced", r.Push}, {"saturation", r.PushSaturation}} {
		if x.p != nil {
			runs = append(runs, x)
		}
	}
	return runs
}

// writePushTable shows the push-relay phases, a row each.
func (r *Report) writePushTable(b *strings.Builder) {
	runs := r.pushRuns()
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(b, "\npush relay: tasks streamed through the gateway (JWT, Redis with %s), each event relayed to a loopback\n", runs[0].p.Redis)
	b.WriteString("webhook that acknowledges at once; latency from the agent writing the event to its receipt; CPU per delivered event\n")
	for _, x := range runs {
		fmt.Fprintf(b, "  %-11s %s\n", x.name+":", x.p.load())
	}
	const row = "  %-10s %12s %9s %9s %8s %6s %6s %8s %9s %9s %9s %7s %9s %11s\n"
	fmt.Fprintf(b, row, "run", "deliveries/s", "streamed", "delivered", "missing", "dupes", "extra", "seconds", "p50", "p90", "p99", "gw CPU", "redis CPU", "round trips")
	for _, x := range runs {
		p := x.p
		fmt.Fprintf(b, row, x.name, fmt.Sprintf("%.0f", p.DeliveriesPerSecond), strconv.FormatInt(p.Streamed, 10), strconv.FormatInt(p.Delivered, 10),
			strconv.FormatInt(p.Missing, 10), strconv.FormatInt(p.Duplicates, 10), strconv.FormatInt(p.Extra, 10), fmt.Sprintf("%.1f", p.Seconds),
			p.P50, p.P90, p.P99, fmt.Sprintf("%.0fus", p.GatewayCPUMicros), fmt.Sprintf("%.0fus", p.RedisCPUMicros), fmt.Sprintf("%.2f", p.RoundTrips))
	}
	for _, x := range runs {
		p := x.p
		fmt.Fprintf(b, "  %s: agent to the client's stream (logged and queued on the way): p50 %v, p99 %v; client's stream to webhook: p50 %v, p99 %v\n",
			x.name, p.StreamP50, p.StreamP99, p.QueueP50, p.QueueP99)
		fmt.Fprintf(b, "  %s: streamed in %.1fs; Redis round trips per delivered event by command: %s\n", x.name, p.StreamSeconds, orNone(formatOps(p.RoundTripsByOp)))
		if p.StreamErrors > 0 {
			fmt.Fprintf(b, "  %s: stream errors: %d (%s)\n", x.name, p.StreamErrors, formatKinds(p.ErrorKinds))
		}
	}
}
