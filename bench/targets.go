package bench

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Names of the throughput targets, as they appear in the report.
const (
	TargetDirect     = "direct"
	TargetBare       = "httputil"
	TargetBareTuned  = "httputil-tuned"
	TargetNginx      = "nginx"
	TargetGateway    = "a2a-gateway"
	requestTimeout   = 10 * time.Second
	streamsParallel  = 32
	streamsOpenLimit = 2 * time.Minute
)

// TargetResult is one target's load result, or why it was not measured.
type TargetResult struct {
	Name    string      `json:"name"`
	Label   string      `json:"label"`
	Skipped string      `json:"skipped,omitempty"`
	Result  *LoadResult `json:"result,omitempty"`
}

// target starts one server in front of the upstream. start returns the
// URL to load, a stop function, or a reason to skip the target.
type target struct {
	name, label string
	start       func(ctx context.Context) (url string, stop func(), skip string, err error)
}

func (r *runner) targets() []target {
	upHost := hostOf(r.upstreamURL)
	bare := func(args ...string) func(ctx context.Context) (string, func(), string, error) {
		return func(ctx context.Context) (string, func(), string, error) {
			u, p, err := r.startSelf(ctx, "bareproxy", append([]string{"-target", r.upstreamURL}, args...)...)
			if err != nil {
				return "", nil, "", err
			}
			return u + agentPath(), p.stop, "", nil
		}
	}
	gatewayLabel := "a2a-gateway binary, API key, protocol recognition"
	if r.o.ProfileDir != "" {
		gatewayLabel = "a2a-gateway in-process, CPU profiler on"
	}
	return []target{
		{TargetDirect, "upstream directly", func(context.Context) (string, func(), string, error) {
			return r.upstreamURL + agentPath(), func() {}, "", nil
		}},
		{TargetBare, "httputil.ReverseProxy, DefaultTransport", bare()},
		{TargetBareTuned, fmt.Sprintf("httputil.ReverseProxy, %d idle conns/host", r.o.Concurrency), bare("-idle-per-host", strconv.Itoa(r.o.Concurrency))},
		{TargetNginx, "nginx, upstream keepalive", func(ctx context.Context) (string, func(), string, error) {
			bin, skip := nginxBinary(r.o.Nginx)
			if skip != "" {
				return "", nil, skip, nil
			}
			r.nginxVersion = nginxVersion(bin)
			u, p, err := startNginx(ctx, r.ps, bin, r.dir, upHost, r.o.Concurrency)
			if err != nil {
				return "", nil, "", err
			}
			return u + agentPath(), p.stop, "", nil
		}},
		{TargetGateway, gatewayLabel, func(ctx context.Context) (string, func(), string, error) {
			gw, err := r.launchGateway(ctx, "gateway-load", r.o.Concurrency+64, r.o.ProfileDir != "")
			if err != nil {
				return "", nil, "", err
			}
			return gw.url, gw.proc.stop, "", nil
		}},
	}
}

// agentPath is the request path on every target; the gateway serves the
// agent there, the others pass it through to the upstream unchanged.
func agentPath() string { return "/agents/" + agentName + "/" }

// hostOf is the host:port of a URL the harness built itself.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

// throughput starts every target, then loads them in turn, round after
// round, each round giving each target an equal slice of the measured
// time. Alternating spreads the noise of a shared machine over all
// targets instead of letting it land on whichever ran at a bad moment.
// Only the target being loaded (and the upstream) does any work.
func (r *runner) throughput(ctx context.Context) ([]TargetResult, error) {
	type live struct {
		idx    int
		name   string
		loader *loader
	}
	var lives []live
	out := []TargetResult{}
	for _, t := range r.targets() {
		u, stop, skip, err := t.start(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		out = append(out, TargetResult{Name: t.name, Label: t.label, Skipped: skip})
		if skip != "" {
			r.progress("%-15s skipped: %s", t.name, skip)
			continue
		}
		defer stop()
		l, err := newLoader(r.wire, loadSpec{URL: u, APIKey: r.apiKey, Concurrency: r.o.Concurrency, Timeout: requestTimeout})
		if err != nil {
			return nil, err
		}
		defer l.close()
		lives = append(lives, live{idx: len(out) - 1, name: t.name, loader: l})
	}
	window := r.o.Duration / time.Duration(r.o.Rounds)
	r.progress("%d targets, %d clients, %v warm-up, then %d rounds of %v each", len(lives), r.o.Concurrency, r.o.Warmup, r.o.Rounds, window)
	for round := range r.o.Rounds {
		var line strings.Builder
		for k := range lives {
			// Rotate who goes first, so no target always follows the same one.
			lv := lives[(k+round)%len(lives)]
			warmup := time.Duration(0)
			if round == 0 {
				warmup = r.o.Warmup
			}
			rps, err := lv.loader.run(ctx, warmup, window)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", lv.name, err)
			}
			fmt.Fprintf(&line, "  %s %.0f/s", lv.name, rps)
		}
		r.progress("round %d/%d:%s", round+1, r.o.Rounds, line.String())
	}
	for _, lv := range lives {
		res := lv.loader.result()
		out[lv.idx].Result = &res
		r.progress("%-15s %.0f req/s, p50 %v, p99 %v, %d errors", lv.name, res.RPS, res.P50, res.P99, res.Errors)
	}
	return out, nil
}

// streams measures idle-stream memory on a fresh gateway process, so the
// heap left by the throughput phase does not blur the numbers.
func (r *runner) streams(ctx context.Context) (StreamResult, error) {
	gw, err := r.launchGateway(ctx, "gateway-streams", r.o.Streams+r.o.WarmupStreams+64, r.o.ProfileDir != "")
	if err != nil {
		return StreamResult{}, err
	}
	defer gw.proc.stop()
	r.progress("streams         opening %d warm-up + %d idle SSE streams through the gateway", r.o.WarmupStreams, r.o.Streams)
	res, err := measureStreams(ctx, r.wire, gw, r.apiKey, streamSpec{
		Streams: r.o.Streams, Warmup: r.o.WarmupStreams, Parallel: streamsParallel, OpenTimeout: streamsOpenLimit,
		ProfileDir: r.o.ProfileDir, Progress: r.progress,
	})
	if err != nil {
		return res, fmt.Errorf("streams: %w", err)
	}
	r.progress("streams         %d open in %.1fs, RSS %+.1f KiB/stream, heap %+.1f KiB/stream",
		res.Opened, res.OpenSeconds, res.RSSPerStreamKiB, res.HeapPerStreamKiB)
	return res, nil
}
