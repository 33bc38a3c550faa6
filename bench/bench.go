// Package bench measures what the gateway costs: request throughput and
// latency against the bare upstream, net/http/httputil's ReverseProxy and
// nginx under the same A2A SendMessage load; what JWT authentication,
// ownership checks in Redis and messageId dedupe add, counted in Redis
// round trips and JWKS fetches as well as in time; the latency each row
// adds to the bare upstream's at a fixed request rate (open loop, measured
// from each request's scheduled time); and the memory each idle SSE stream
// holds in the gateway. Every server runs as its own process on
// loopback; the load generator and the JWKS endpoint run in the calling
// process.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Options size a run. Zero values take the defaults noted on each field,
// which fit a shared two-core machine and keep a whole run near 2 minutes.
type Options struct {
	// Concurrency is the number of closed-loop clients. Default 64.
	Concurrency int
	// Warmup runs before each measured window and is not recorded. Default 2s.
	Warmup time.Duration
	// Duration is the measured time per target. Default 10s.
	Duration time.Duration
	// Rounds splits Duration into that many windows per target, taken in
	// turn across targets. Default 5.
	Rounds int
	// Streams is the number of idle SSE streams held open through the
	// gateway for the memory measurement; negative skips it. Default 5000.
	Streams int
	// WarmupStreams are opened before the "before" sample. Default 16.
	WarmupStreams int
	// PushTasks is the number of tasks the paced push-relay run streams,
	// each with a push config; negative skips the run. Default 480.
	PushTasks int
	// PushSaturationTasks is the number of tasks the saturation run
	// streams after it, their events back to back; negative skips the
	// run. Default 240.
	PushSaturationTasks int
	// PushEvents is the number of events each of those tasks streams.
	// Default 100.
	PushEvents int
	// PushClients is the number of tasks streamed at a time. Default 24.
	PushClients int
	// PushInterval is the time between two events of a task in the paced
	// run, which offers PushClients/PushInterval events a second. Default
	// 10ms; negative streams them back to back.
	PushInterval time.Duration
	// OpenRate is the fixed rate of the open-loop measurement, in requests
	// a second per target; negative skips it. Default 1000.
	OpenRate float64
	// OpenDuration is the measured open-loop time per target. Default 15s.
	OpenDuration time.Duration
	// OpenRounds splits OpenDuration into that many windows, taken in
	// turn across the open-loop targets. Default 3.
	OpenRounds int
	// OpenSenders bounds the open-loop requests in flight at once.
	// Default 256.
	OpenSenders int
	// PushOnly runs the push-relay measurements alone: the paced run and
	// the saturation run.
	PushOnly bool
	// Targets, when set, names the throughput targets to measure; the
	// others are reported as skipped. Two rows measured alone alternate
	// their rounds more often, which is how a ratio between them is best
	// repeated many times. Default: every target.
	Targets []string
	// GatewayBin is a prebuilt a2a-gateway binary; empty builds one with
	// the go tool from the enclosing module.
	GatewayBin string
	// Nginx is the nginx binary: empty looks it up on PATH, "off" skips it.
	Nginx string
	// RedisServer is the redis-server binary for the rows that keep their
	// state in Redis: empty looks it up on PATH, "off" skips those rows.
	RedisServer string
	// Self is the executable re-run in the hidden child roles; it must
	// dispatch IsChild arguments to RunChild. Default os.Executable().
	Self string
	// ProfileDir, when set, runs every gateway in-process in a child of
	// the harness and writes there the CPU profile of each gateway row
	// under load (gateway-load-cpu.pprof for the passthrough row,
	// <row>-cpu.pprof for the others) and the heap and goroutine profiles
	// of the stream gateway with every stream open (streams-heap.pprof,
	// streams-goroutine.pprof).
	ProfileDir string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if o.Concurrency == 0 {
		o.Concurrency = 64
	}
	if o.Warmup == 0 {
		o.Warmup = 2 * time.Second
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Streams == 0 {
		o.Streams = 5000
	}
	if o.WarmupStreams == 0 {
		o.WarmupStreams = 16
	}
	if o.PushTasks == 0 {
		o.PushTasks = defaultPushTasks
	}
	if o.PushSaturationTasks == 0 {
		o.PushSaturationTasks = defaultPushSaturationTasks
	}
	if o.PushEvents == 0 {
		o.PushEvents = defaultPushEvents
	}
	if o.PushClients == 0 {
		o.PushClients = defaultPushClients
	}
	switch {
	case o.PushInterval == 0:
		o.PushInterval = defaultPushInterval
	case o.PushInterval < 0:
		o.PushInterval = 0
	}
	if o.OpenRate == 0 {
		o.OpenRate = defaultOpenRate
	}
	if o.OpenDuration == 0 {
		o.OpenDuration = defaultOpenDuration
	}
	if o.OpenRounds == 0 {
		o.OpenRounds = defaultOpenRounds
	}
	if o.OpenSenders == 0 {
		o.OpenSenders = defaultOpenSenders
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("locate the harness executable: %w", err)
		}
		o.Self = self
	}
	switch {
	case o.Concurrency < 1 || o.Concurrency > 10000:
		return o, fmt.Errorf("concurrency must be 1-10000, got %d", o.Concurrency)
	case o.Duration < 100*time.Millisecond || o.Duration > 10*time.Minute:
		return o, fmt.Errorf("duration must be 100ms-10m, got %v", o.Duration)
	case o.Rounds < 1 || o.Duration/time.Duration(o.Rounds) < 100*time.Millisecond:
		return o, fmt.Errorf("rounds must be at least 1 and leave windows of 100ms or more, got %d rounds of %v", o.Rounds, o.Duration)
	case o.Warmup < 0 || o.Warmup > time.Minute:
		return o, fmt.Errorf("warm-up must be 0-1m, got %v", o.Warmup)
	case o.Streams > 100000:
		return o, fmt.Errorf("streams must be at most 100000, got %d", o.Streams)
	case o.WarmupStreams < 1 || o.WarmupStreams > 1000:
		return o, fmt.Errorf("warm-up streams must be 1-1000, got %d", o.WarmupStreams)
	case o.PushTasks > 100000:
		return o, fmt.Errorf("push tasks must be at most 100000, got %d", o.PushTasks)
	case o.PushSaturationTasks > 100000:
		return o, fmt.Errorf("push saturation tasks must be at most 100000, got %d", o.PushSaturationTasks)
	case o.PushEvents < 2 || o.PushEvents > maxPushEvents:
		return o, fmt.Errorf("push events must be 2-%d, got %d", maxPushEvents, o.PushEvents)
	case o.PushClients < 1 || o.PushClients > 1000:
		return o, fmt.Errorf("push clients must be 1-1000, got %d", o.PushClients)
	case o.PushInterval > maxPushInterval:
		return o, fmt.Errorf("push interval must be at most %v, got %v", maxPushInterval, o.PushInterval)
	case o.OpenRate > 100000:
		return o, fmt.Errorf("open-loop rate must be at most 100000 req/s, got %g", o.OpenRate)
	case o.OpenRate > 0 && (o.OpenRounds < 1 || o.OpenDuration > 10*time.Minute ||
		o.OpenDuration/time.Duration(o.OpenRounds) < max(100*time.Millisecond, time.Duration(10*float64(time.Second)/o.OpenRate))):
		return o, fmt.Errorf("open-loop rounds must be at least 1 and leave windows of 100ms and 10 requests or more, in at most 10m; got %d rounds of %v at %g req/s", o.OpenRounds, o.OpenDuration, o.OpenRate)
	case o.OpenSenders < 1 || o.OpenSenders > 10000:
		return o, fmt.Errorf("open-loop senders must be 1-10000, got %d", o.OpenSenders)
	case o.PushOnly && o.PushTasks < 0 && o.PushSaturationTasks < 0:
		return o, fmt.Errorf("the push-relay runs alone need push tasks")
	}
	return o, nil
}

// Run performs the whole benchmark and returns its report. Every child
// process is stopped before Run returns, whether it succeeds, fails or ctx
// is cancelled.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	limit, err := raiseFileLimit()
	if err != nil {
		return nil, err
	}
	if need := uint64(2*(max(o.Streams, 0)+o.WarmupStreams) + 2*o.Concurrency + 2*o.OpenSenders + 512); limit < need {
		return nil, fmt.Errorf("the open-file limit is %d, the run needs about %d: raise the hard limit (ulimit -Hn) or use fewer streams", limit, need)
	}
	dir, err := os.MkdirTemp("", "a2abench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	ps := newProcSet(dir)
	defer ps.closeAll()

	r := &runner{o: o, dir: dir, ps: ps}
	defer func() {
		if r.issuer != nil {
			if cerr := r.issuer.close(); cerr != nil {
				r.progress("%v", cerr)
			}
		}
	}()
	if r.wire, err = newWire(a2a.V10); err != nil {
		return nil, err
	}
	if r.apiKey, err = newAPIKey(); err != nil {
		return nil, err
	}
	r.gatewayBin = o.GatewayBin
	if r.gatewayBin == "" {
		r.progress("building the gateway (go build %s)", gatewayPkg)
		if r.gatewayBin, err = buildGateway(ctx, dir); err != nil {
			return nil, err
		}
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("profile dir: %w", err)
		}
	}
	upURL, upProc, err := r.startSelf(ctx, "upstream")
	if err != nil {
		return nil, err
	}
	r.upstreamURL, r.upstream = upURL, upProc

	rep := &Report{
		Machine:         machineInfo(),
		GatewayRevision: gatewayRevision(r.gatewayBin),
		Settings: Settings{
			Concurrency: o.Concurrency, WarmupSeconds: o.Warmup.Seconds(), DurationSeconds: o.Duration.Seconds(), Rounds: o.Rounds,
			ResponseBytes: ResponseSize, Streams: o.Streams, WarmupStreams: o.WarmupStreams,
			Profiled: o.ProfileDir != "",
		},
	}
	if !o.PushOnly {
		if rep.Targets, rep.OpenLoop, err = r.throughput(ctx); err != nil {
			return nil, err
		}
		if rep.GRPC, err = r.grpcRows(ctx); err != nil {
			return nil, fmt.Errorf("gRPC rows: %w", err)
		}
	}
	for _, t := range rep.Targets {
		if t.Name == TargetNginx && t.Skipped == "" {
			rep.Machine.Nginx = r.nginxVersion
		}
	}
	if r.redis != nil {
		rep.Machine.Redis = r.redis.version
	}
	if o.Streams > 0 && !o.PushOnly {
		sr, err := r.streams(ctx)
		if err != nil {
			return nil, err
		}
		rep.Streams = &sr
	}
	paced, saturation := o.pushPhases()
	if rep.Push, err = r.push(ctx, paced); err != nil {
		return nil, err
	}
	if rep.PushSaturation, err = r.push(ctx, saturation); err != nil {
		return nil, err
	}
	if r.pushRedisVersion != "" {
		rep.Machine.Redis = r.pushRedisVersion
	}
	rep.evaluate()
	for _, x := range rep.pushRuns() {
		if x.p.Missing > 0 || x.p.Streamed == 0 {
			// Losing a notification is a defect, not a slow run.
			return rep, fmt.Errorf("push relay, %s run: %d of %d streamed events never reached the webhook", x.name, x.p.Missing, x.p.Streamed)
		}
	}
	return rep, nil
}

// runner carries one run's shared pieces between its phases.
type runner struct {
	o           Options
	dir         string
	ps          *procSet
	wire        *wire
	apiKey      string
	gatewayBin  string
	upstreamURL string
	upstream    *proc
	// upstream03URL is the 0.3 upstream, started for the bridged row in
	// front of a 0.3 agent.
	upstream03URL string
	nginxVersion  string
	// Started on first use by the rows that need them.
	redis     *redisServer
	redisSkip string
	issuer    *issuer
	tokens    []credential

	// pushRedisVersion is the push-relay runs' Redis, for the report.
	pushRedisVersion string
}

func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.o.Progress, "a2abench: "+format+"\n", args...)
}

// startSelf runs the harness itself in a child role on a fresh port.
func (r *runner) startSelf(ctx context.Context, role string, args ...string) (string, *proc, error) {
	var url string
	p, err := startWithRetry(ctx, func(ctx context.Context) (*proc, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		argv := append([]string{ChildCommand, role, "-addr", addr}, args...)
		p, err := r.ps.start(role, exec.Command(r.o.Self, argv...))
		if err != nil {
			return nil, err
		}
		if err := waitReady(ctx, p, startupWait, dialReady(addr)); err != nil {
			p.stop()
			return nil, err
		}
		url = "http://" + addr
		return p, nil
	})
	return url, p, err
}

// launchGateway starts a gateway process for one phase or row.
func (r *runner) launchGateway(ctx context.Context, name string, maxStreams int, profile bool, setup gatewaySetup) (*runningGateway, error) {
	gl := gatewayLaunch{
		bin: r.gatewayBin, self: r.o.Self, dir: r.dir, name: name,
		upstreamURL: r.upstreamURL, apiKey: r.apiKey, maxStreams: maxStreams, setup: setup,
	}
	if profile {
		gl.bin = ""
		gl.cpuProfile = filepath.Join(r.o.ProfileDir, name+"-cpu.pprof")
		gl.debug = true
	}
	return startGateway(ctx, r.ps, gl)
}
