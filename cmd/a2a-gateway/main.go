// Command a2a-gateway runs the A2A gateway.
//
//	a2a-gateway serve -config gateway.yaml   run from a configuration file
//	a2a-gateway check -config gateway.yaml   validate a configuration and exit
//	a2a-gateway demo                         gateway + demo agent on loopback
//	a2a-gateway token -key dev.pem ...       mint a development token
//	a2a-gateway healthcheck                  ask a running gateway's /readyz
//	a2a-gateway version                      print the version and build
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"

	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/internal/version"
)

const usage = `usage: a2a-gateway <command> [flags]

commands:
  serve   run the gateway from a YAML configuration file
  check   validate a configuration file and exit
  demo    run the gateway and the demo agent on loopback, with an embedded store
  token   mint a development bearer token signed with a local key
  healthcheck ask the admin listener of a running gateway whether it is ready
  version print the version, revision and Go version (also --version)

Run "a2a-gateway <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve", "demo":
		if err := tuneGC(os.Getenv); err != nil {
			fmt.Fprintln(os.Stderr, "a2a-gateway:", err)
			os.Exit(2)
		}
	}
	switch os.Args[1] {
	case "serve":
		err = runServe(ctx, os.Args[2:])
	case "check":
		err = runCheck(os.Args[2:], os.Stdout)
	case "demo":
		err = runDemo(ctx, os.Args[2:], os.Stdout)
	case "token":
		err = runToken(os.Args[2:], os.Stdout)
	case "healthcheck":
		err = runHealthcheck(ctx, os.Args[2:], os.Stdout)
	case "version", "-version", "--version":
		runVersion(os.Stdout)
		return
	case "-h", "--help", "help":
		fmt.Fprint(os.Stdout, usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the command's flags were printed, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2a-gateway:", err)
		os.Exit(1)
	}
}

// runVersion prints the one-line version: release, VCS revision and Go
// version.
func runVersion(out io.Writer) { fmt.Fprintln(out, version.Get()) }

// newLogger builds the process logger.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(telemetry.LogHandler(h))
}

// The gateway's garbage collection. Its live heap is small next to what
// its requests allocate (tens of KiB each, nearly all of it garbage once
// the answer is sent), so with Go's default GOGC=100 a gateway serving a
// thousand requests a second collects more than once a second, and each
// cycle's stop-the-world pauses and mark work (a dedicated worker takes one
// of every four CPUs the process may use) land on the requests in flight.
// Unless the environment sets GOGC, the gateway keeps the heap goal at
// least a floor: it raises GOGC while the live heap is small and returns to
// 100 once the live heap is half the floor or more, so a gateway holding
// many streams uses the memory GOGC=100 would. Under a GOMEMLIMIT the floor
// is at most a quarter of the limit.
const (
	// gcFloorEnv sets the floor: bytes, or with a KiB, MiB or GiB suffix;
	// 0 turns the floor off.
	gcFloorEnv      = "A2AGW_GC_HEAP_FLOOR"
	defaultGCFloor  = 128 << 20
	liveHeapMetric  = "/gc/heap/live:bytes"
	gcPercentMetric = "/gc/gogc:percent"
)

// tuneGC starts the heap floor that getenv asks for.
func tuneGC(getenv func(string) string) error {
	floor, err := gcFloor(getenv(gcFloorEnv))
	if err != nil {
		return err
	}
	if getenv("GOGC") != "" || floor == 0 {
		return nil
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		floor = min(floor, uint64(limit)/4)
	}
	t := &gcTuner{floor: floor, sample: []metrics.Sample{{Name: liveHeapMetric}, {Name: gcPercentMetric}}}
	t.adjust()
	t.arm()
	return nil
}

// gcFloor reads the floor setting; empty is the default.
func gcFloor(v string) (uint64, error) {
	if v == "" {
		return defaultGCFloor, nil
	}
	num, unit := v, uint64(1)
	for suffix, u := range map[string]uint64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			num, unit = n, u
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%s=%q: want a size in bytes, KiB, MiB or GiB, such as 128MiB, or 0 for none", gcFloorEnv, v)
	}
	return n * unit, nil
}

// gcPercentFor is the GOGC whose heap goal, live*(1+GOGC/100), reaches
// floor, and 100 once the default's goal already does. A live heap below
// the runtime's 4 MiB minimum (none has been measured before the first
// collection) counts as that minimum, which the runtime scales by GOGC
// too; maxGCPercent keeps the result inside the runtime's range.
func gcPercentFor(live, floor uint64) int {
	const minHeap, maxGCPercent = 4 << 20, 10000
	live = max(live, minHeap)
	if 2*live >= floor {
		return 100
	}
	return int(min((floor-live)*100/live, maxGCPercent))
}

// gcTuner sets GOGC after every collection from the live heap it left.
type gcTuner struct {
	floor  uint64
	sample []metrics.Sample // live heap, GOGC
}

// arm runs adjust, and arms again, once the next collection has found an
// unreachable sentinel: once a cycle, without a goroutine of its own.
func (t *gcTuner) arm() {
	// 16 bytes keeps the sentinel out of the tiny allocator, whose blocks
	// can outlive any one of their objects.
	runtime.AddCleanup(new([16]byte), func(t *gcTuner) {
		t.adjust()
		t.arm()
	}, t)
}

func (t *gcTuner) adjust() {
	metrics.Read(t.sample)
	live, now := t.sample[0].Value, t.sample[1].Value
	if live.Kind() != metrics.KindUint64 || now.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(live.Uint64(), t.floor); uint64(p) != now.Uint64() {
		debug.SetGCPercent(p)
	}
}
