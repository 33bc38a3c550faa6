// Command a2abench measures the gateway against a bare upstream,
// net/http/httputil's ReverseProxy and nginx; what JWT authentication,
// ownership checks in Redis and dedupe cost it, in time, Redis round trips
// and JWKS fetches; the latency it adds at a fixed rate of requests; the
// memory each idle SSE stream costs it; and how fast and at what cost
// its push relay turns streamed events into webhook deliveries, at a
// steady pace and with the events sent back to back. Run from the module:
//
//	go run ./bench/cmd/a2abench [-duration 10s] [-concurrency 64] [-open-rate 1000] [-json out.json]
//
// Every server it starts listens on 127.0.0.1 and is stopped before it
// exits, including on interrupt.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/a2a-gateway/a2a-gateway/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if bench.IsChild(os.Args[1:]) {
		err = bench.RunChild(ctx, os.Args[1:])
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2abench:", err)
		os.Exit(1)
	}
}

// hiddenFlag names the diagnostic left out of -h.
const hiddenFlag = "pprof"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("a2abench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o bench.Options
	fs.IntVar(&o.Concurrency, "concurrency", 64, "closed-loop clients per throughput target")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "unrecorded warm-up before each target's window")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time per throughput target")
	fs.IntVar(&o.Rounds, "rounds", 5, "split the measured time into this many windows, alternating between targets")
	fs.Float64Var(&o.OpenRate, "open-rate", 1000, "requests a second per target in the open-loop measurement (0 skips it)")
	fs.DurationVar(&o.OpenDuration, "open-duration", 15*time.Second, "measured open-loop time per target")
	fs.IntVar(&o.OpenRounds, "open-rounds", 3, "split the open-loop time into this many windows, alternating between targets")
	fs.IntVar(&o.OpenSenders, "open-senders", 256, "open-loop requests that may be in flight at once")
	fs.IntVar(&o.Streams, "streams", 5000, "idle SSE streams for the memory measurement (0 skips it)")
	fs.IntVar(&o.WarmupStreams, "warmup-streams", 16, "streams opened before the baseline memory sample")
	fs.IntVar(&o.PushTasks, "push-tasks", 480, "tasks the paced push-relay run streams, each with a push config (0 skips it)")
	fs.IntVar(&o.PushSaturationTasks, "push-saturation-tasks", 240, "tasks the push-relay saturation run streams after the paced run, their events back to back (0 skips it)")
	fs.IntVar(&o.PushEvents, "push-events", 100, "events each push-relay task streams")
	fs.IntVar(&o.PushClients, "push-clients", 24, "push-relay tasks streamed at a time")
	fs.DurationVar(&o.PushInterval, "push-interval", 10*time.Millisecond, "time between two events of a task in the paced push-relay run (negative: back to back)")
	fs.BoolVar(&o.PushOnly, "push-only", false, "run the push-relay measurements alone: the paced run and the saturation run")
	fs.Func("targets", "comma-separated throughput targets to measure, the others skipped (default: all)", func(v string) error {
		o.Targets = nil
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				o.Targets = append(o.Targets, n)
			}
		}
		if len(o.Targets) == 0 {
			return errors.New("no target named")
		}
		return nil
	})
	fs.StringVar(&o.GatewayBin, "gateway-bin", "", "prebuilt a2a-gateway binary (by default the harness builds one)")
	fs.StringVar(&o.Nginx, "nginx", "", `nginx binary (by default looked up on PATH; "off" skips nginx)`)
	fs.StringVar(&o.RedisServer, "redis-server", "", `redis-server binary for the gw-jwt-redis rows (by default looked up on PATH; "off" skips them)`)
	fs.StringVar(&o.ProfileDir, "pprof", "", "run every gateway in-process with the CPU profiler, writing profiles to this directory")
	bridgeOnly := fs.Bool("bridge", false, "measure only the bridged rows and their unbridged twin, briefly (-duration 6s -warmup 1s unless given; no open loop, streams or push relay)")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	timeout := fs.Duration("timeout", 8*time.Minute, "abort the whole run after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: a2abench [flags]")
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == hiddenFlag {
				return
			}
			fmt.Fprintf(stderr, "  -%s\n    \t%s", f.Name, f.Usage)
			if f.DefValue != "" {
				fmt.Fprintf(stderr, " (default %s)", f.DefValue)
			}
			fmt.Fprintln(stderr)
		})
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *bridgeOnly {
		quickBridge(fs, &o)
	}
	if o.Streams == 0 {
		o.Streams = -1
	}
	if o.PushTasks == 0 {
		o.PushTasks = -1
	}
	if o.PushSaturationTasks == 0 {
		o.PushSaturationTasks = -1
	}
	if o.OpenRate == 0 {
		o.OpenRate = -1
	}
	o.Progress = stderr
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	// A failed run may still have a report: what it measured before it
	// failed (a push-relay run that lost notifications) is shown.
	rep, err := bench.Run(ctx, o)
	if rep == nil {
		return err
	}
	if werr := rep.WriteTable(stdout); werr != nil {
		return werr
	}
	if *jsonOut != "" {
		if werr := rep.WriteJSON(*jsonOut); werr != nil {
			return werr
		}
	}
	return err
}

// quickBridge narrows a run to the bridge target's rows, for working on
// the bridge: the full-policy row and the bridged rows in alternating
// rounds, with a short default duration, and no other phase.
func quickBridge(fs *flag.FlagSet, o *bench.Options) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["targets"] {
		o.Targets = []string{bench.TargetJWTRedisDedupe, bench.TargetBridge, bench.TargetBridgeTo03}
	}
	if !set["duration"] {
		o.Duration = 6 * time.Second
	}
	if !set["warmup"] {
		o.Warmup = time.Second
	}
	o.Streams, o.OpenRate, o.PushTasks, o.PushSaturationTasks = 0, 0, 0, 0
}
