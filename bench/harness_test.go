package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play the harness's child roles, since the
// harness re-runs its own executable for the upstream and the bare proxy.
func TestMain(m *testing.M) {
	if IsChild(os.Args[1:]) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := RunChild(ctx, os.Args[1:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHarnessTiny runs the whole harness at toy size so it cannot rot:
// every target must answer every request correctly, every stream must
// open and both push-relay runs must deliver every event once. It asserts
// nothing about speed or memory.
func TestHarnessTiny(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress strings.Builder
	rep, err := Run(ctx, Options{
		Concurrency:         4,
		Warmup:              200 * time.Millisecond,
		Duration:            time.Second,
		Streams:             50,
		WarmupStreams:       4,
		PushTasks:           tinyPushTasks,
		PushSaturationTasks: tinyPushTasks,
		PushEvents:          tinyPushEvents,
		PushClients:         2,
		OpenRate:            200,
		OpenDuration:        600 * time.Millisecond,
		Progress:            &progress,
	})
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	t.Log("\n" + progress.String())

	_, redisErr := exec.LookPath("redis-server")
	for _, name := range []string{TargetDirect, TargetBare, TargetBareTuned, TargetNginx, TargetGateway, TargetJWTRedis, TargetJWTRedisContext, TargetJWTRedisFollowUp, TargetJWTRedisDedupe, TargetBridge, TargetBridgeTo03} {
		t.Run(name, func(t *testing.T) {
			tr := rep.Target(name)
			if tr == nil {
				t.Fatal("target missing from the report")
			}
			redisRow := strings.HasPrefix(name, "gw-")
			if tr.Skipped != "" {
				switch {
				case name == TargetNginx:
					t.Skipf("skipped: %s", tr.Skipped)
				case redisRow && redisErr != nil:
					t.Skipf("skipped, redis-server is not on PATH: %s", tr.Skipped)
				}
				t.Fatalf("skipped: %s", tr.Skipped)
			}
			checkLoad(t, tr.Result)
			switch {
			case name == TargetGateway:
				checkUsage(t, tr, false)
			case redisRow:
				checkUsage(t, tr, true)
			case tr.Gateway != nil:
				t.Fatalf("a bare target has gateway usage: %+v", tr.Gateway)
			}
		})
	}
	t.Run("dedupe row claims before forwarding and settles after the answer", func(t *testing.T) {
		du := rep.Target(TargetJWTRedisDedupe)
		if du == nil || du.Gateway == nil {
			t.Skip("the dedupe row was not measured")
		}
		// Every message id is new: each request is one first-seen claim,
		// which the caller waits for, settled once after its answer.
		// Claims and settlements made at the same time share pipelines
		// (with ownership records too).
		g := du.Gateway
		jr := rep.Target(TargetJWTRedis)
		if !near(g.DedupeWaited, 1) || !near(g.DedupeAfterAnswer, 1) || g.Background.ByOp["pipeline"] <= 0 ||
			jr == nil || jr.Gateway == nil || g.RequestPath.PerRequest <= jr.Gateway.RequestPath.PerRequest {
			t.Fatalf("dedupe round trips not counted by path: %+v", g)
		}
	})
	t.Run("rows load what they say", func(t *testing.T) {
		// The ratios compare rows on equal loads; the context row is the
		// one that makes the gateway reserve client-chosen contexts.
		for name, want := range map[string]requestShape{
			TargetGateway: shapeOneShot, TargetJWTRedis: shapeOneShot, TargetJWTRedisDedupe: shapeOneShot,
			TargetJWTRedisContext: shapeNewContext, TargetJWTRedisFollowUp: shapeFollowUp,
			TargetBridge: shapeOneShot, TargetBridgeTo03: shapeOneShot,
		} {
			if tr := rep.Target(name); tr != nil && tr.Skipped == "" && tr.Load != want.String() {
				t.Errorf("%s loaded with %q, want %q", name, tr.Load, want)
			}
		}
	})
	t.Run("streams", func(t *testing.T) {
		s := rep.Streams
		if s == nil {
			t.Fatal("no stream measurement in the report")
		}
		if s.Opened != 50 || s.Errors != 0 || s.EndedEarly != 0 {
			t.Fatalf("opened %d of 50 streams, %d errors %v, %d ended early", s.Opened, s.Errors, s.ErrorKinds, s.EndedEarly)
		}
		if s.RSSBeforeKiB <= 0 || s.HeapBeforeBytes <= 0 || s.GoroutinesAfter <= s.GoroutinesBefore {
			t.Fatalf("gateway samples not read: %+v", s)
		}
	})

	t.Run("push relay", func(t *testing.T) { checkPushRelay(t, rep.Push, defaultPushInterval, redisErr) })
	t.Run("push saturation", func(t *testing.T) { checkPushRelay(t, rep.PushSaturation, 0, redisErr) })
	t.Run("open loop", func(t *testing.T) { checkOpenLoop(t, rep) })

	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := []string{TargetGateway, "idle SSE streams", "open loop", "targets:", "throughput vs httputil-tuned", "goroutines per idle stream"}
	if redisErr == nil {
		want = append(want, "gateway rows", TargetJWTRedisContext, TargetJWTRedisDedupe, "request path", "JWKS fetches while measured",
			"bridge / gw-jwt-redis-dedupe", bridgeVerdict, "full policy / passthrough gateway CPU", "Redis CPU per deduplicated send",
			"push relay gateway CPU per event", "push saturation deliveries/s", "push saturation events duplicated")
	}
	for _, want := range want {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// checkOpenLoop checks that every open-loop target measured was sent every
// scheduled request and answered it, and that the rows behind the
// baseline are compared with it round by round.
func checkOpenLoop(t *testing.T, rep *Report) {
	t.Helper()
	ol := rep.OpenLoop
	if ol == nil || ol.Baseline != TargetDirect {
		t.Fatalf("no open-loop measurement against %s: %+v", TargetDirect, ol)
	}
	for _, name := range openLoopTargets {
		tr := rep.Target(name)
		ot := ol.target(name)
		if tr == nil || tr.Skipped != "" {
			if ot != nil {
				t.Errorf("%s measured open-loop but not closed-loop", name)
			}
			continue
		}
		if ot == nil {
			t.Errorf("%s missing from the open loop", name)
			continue
		}
		// 3 rounds of 200ms at 200 req/s.
		if ot.Scheduled != 120 || ot.Errors != 0 || len(ot.Rounds) != 3 || ot.P50 <= 0 {
			t.Errorf("%s: %d scheduled, %d errors %v, %d rounds, p50 %v; want 120, 0, 3 and a latency", name, ot.Scheduled, ot.Errors, ot.ErrorKinds, len(ot.Rounds), ot.P50)
		}
		if (name == TargetDirect) != (ot.Added == nil) {
			t.Errorf("%s: added latency %+v", name, ot.Added)
		}
	}
}

// checkUsage checks that a gateway row's counters were read: Redis rows
// made round trips and fetched their keys before the measurement, the
// embedded store made none. Fetching keys while measured is a gateway
// that does not cache them, whatever the machine's speed.
func checkUsage(t *testing.T, tr *TargetResult, redis bool) {
	t.Helper()
	u := tr.Gateway
	if u == nil {
		t.Fatal("no gateway usage in the report")
	}
	if u.Answered != tr.Result.Requests || u.GatewayRequests < float64(u.Answered) {
		t.Fatalf("answered %d, gateway counted %.0f, harness %d", u.Answered, u.GatewayRequests, tr.Result.Requests)
	}
	if !redis {
		if u.Store != storeEmbedded || u.RoundTrips != 0 || u.JWT {
			t.Fatalf("passthrough row: %+v", u)
		}
		return
	}
	if u.Store != storeRedis || !u.JWT || u.RoundTrips <= 0 || u.PerRequest <= 0 || u.RequestPath.PerRequest <= 0 {
		t.Fatalf("no round trips counted: %+v", u)
	}
	if d := u.RequestPath.PerRequest + u.Background.PerRequest - u.PerRequest; d > 1e-9 || d < -1e-9 {
		t.Fatalf("request path %.4f + background %.4f != %.4f in all", u.RequestPath.PerRequest, u.Background.PerRequest, u.PerRequest)
	}
	if u.JWKSFetchesBefore < 1 || u.JWKSFetchesMeasured != 0 {
		t.Fatalf("JWKS fetched %d times before and %d times while measured; want at least 1 and 0", u.JWKSFetchesBefore, u.JWKSFetchesMeasured)
	}
}

func checkLoad(t *testing.T, r *LoadResult) {
	t.Helper()
	if r == nil {
		t.Fatal("no load result")
	}
	if r.Requests == 0 || r.Errors != 0 {
		t.Fatalf("%d requests answered, %d errors: %v", r.Requests, r.Errors, r.ErrorKinds)
	}
}

// cancelOn cancels a run a moment after a progress line contains trigger.
type cancelOn struct {
	trigger string
	delay   time.Duration
	cancel  context.CancelFunc
	mu      sync.Mutex
	seen    strings.Builder
	armed   bool
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen.Write(p)
	if !c.armed && strings.Contains(c.seen.String(), c.trigger) {
		c.armed = true
		time.AfterFunc(c.delay, c.cancel)
	}
	return len(p), nil
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen.String()
}

// TestInterruptStopsEveryChild cancels runs in the middle of different
// phases and checks that no process the harness started outlives Run.
func TestInterruptStopsEveryChild(t *testing.T) {
	tests := []struct {
		name     string
		trigger  string
		delay    time.Duration
		duration time.Duration
		rounds   int
	}{
		{"in the middle of a load", "rounds of", 300 * time.Millisecond, time.Minute, 1},
		{"between rounds", "round 1/", 0, time.Second, 2},
		{"with streams open", "warm-up streams open", 0, 200 * time.Millisecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A run directory of this test's own, so that harnesses run by
			// other test binaries on the same machine are not counted.
			t.Setenv("TMPDIR", t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			progress := &cancelOn{trigger: tt.trigger, delay: tt.delay, cancel: cancel}
			_, err := Run(ctx, Options{
				Concurrency: 2, Warmup: 100 * time.Millisecond, Duration: tt.duration, Rounds: tt.rounds,
				Streams: 500, WarmupStreams: 1, Nginx: "off", OpenDuration: 300 * time.Millisecond, Progress: progress,
			})
			if err == nil {
				t.Fatalf("the run finished despite the cancellation\n%s", progress)
			}
			if !strings.Contains(progress.String(), tt.trigger) {
				t.Fatalf("the run ended before %q: %v\n%s", tt.trigger, err, progress)
			}
			if left := harnessChildren(t); len(left) > 0 {
				t.Fatalf("children still running after Run returned: %v", left)
			}
		})
	}
}

// harnessChildren lists running processes started by a harness in this
// test binary: its own child roles, anything run from its temp dirs, and
// anything working in them (redis-server renames its process).
func harnessChildren(t *testing.T) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(raw) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(strings.TrimRight(string(raw), "\x00"), "\x00", " ")
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		runDir := os.TempDir() + "/a2abench-"
		if (strings.Contains(cmd, self) && strings.Contains(cmd, ChildCommand)) || strings.Contains(cmd, runDir) || strings.HasPrefix(cwd, runDir) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie holds nothing and is reaped by its parent
			}
			found = append(found, fmt.Sprintf("%d: %s", pid, cmd))
		}
	}
	return found
}
