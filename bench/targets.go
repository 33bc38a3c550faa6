package bench

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Names of the throughput targets, as they appear in the report.
const (
	TargetDirect    = "direct"
	TargetBare      = "httputil"
	TargetBareTuned = "httputil-tuned"
	TargetNginx     = "nginx"
	// TargetGateway is the passthrough run: API key, embedded store, no
	// dedupe. What it costs over a bare proxy is recognising the protocol.
	TargetGateway = "a2a-gateway"
	// TargetJWTRedis authenticates a bearer JWT and keeps ownership in
	// Redis, under the passthrough run's load: sends that name no task or
	// context, so the two rows differ only in what the gateway does.
	TargetJWTRedis = "gw-jwt-redis"
	// TargetJWTRedisContext is TargetJWTRedis with every request naming a
	// new context of the caller's choosing, which the gateway reserves for
	// the caller before the agent sees it.
	TargetJWTRedisContext = "gw-jwt-redis-context"
	// TargetJWTRedisFollowUp is the same gateway setup with every request a
	// follow-up in the caller's own task and context: the lookup path.
	TargetJWTRedisFollowUp = "gw-jwt-redis-followup"
	// TargetJWTRedisDedupe is TargetJWTRedis, same load, with messageId
	// dedupe on: every policy the gateway has, the full-policy row.
	TargetJWTRedisDedupe = "gw-jwt-redis-dedupe"
	// TargetBridge is TargetJWTRedisDedupe with a 0.3 JSON-RPC client in
	// front of the same 1.0 JSON-RPC upstream, which the agent's bridge
	// section opts into: what bridging adds is the difference between the
	// two rows. They are the bridged row and its unbridged twin.
	TargetBridge = "gw-bridge"
	// TargetBridgeTo03 is the bridge the other way: a 1.0 JSON-RPC client
	// in front of an upstream that speaks 0.3 JSON-RPC.
	TargetBridgeTo03 = "gw-bridge-to-03"

	requestTimeout   = 10 * time.Second
	streamsParallel  = 32
	streamsOpenLimit = 2 * time.Minute
)

// TargetResult is one target's load result, or why it was not measured.
type TargetResult struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Skipped string `json:"skipped,omitempty"`
	// Load says which task and context the requests named.
	Load   string      `json:"load,omitempty"`
	Result *LoadResult `json:"result,omitempty"`
	// Gateway is what a gateway row cost its store and its token issuer.
	Gateway *GatewayUsage `json:"gateway,omitempty"`
}

// target starts one server in front of the upstream, or says why it is
// skipped.
type target struct {
	name, label string
	start       func(ctx context.Context) (run *targetRun, skip string, err error)
}

// targetRun is a started target: where and how to load it.
type targetRun struct {
	url  string
	stop func()
	// creds authenticate the clients; shape says what their requests name.
	creds []credential
	shape requestShape
	// Gateway rows only: the gateway, whose metrics are read, the store it
	// uses, and, for JWT rows, its JWKS fetches so far.
	gw    *runningGateway
	store string
	jwks  func() int64
	// Bridged rows only: the clients' version, when not 1.0, and that the
	// answers are translated.
	client     *wire
	translated bool
}

func (r *runner) targets() []target {
	upHost := hostOf(r.upstreamURL)
	keyed := []credential{apiKeyCredential(r.apiKey)}
	plain := func(url string, stop func()) *targetRun {
		return &targetRun{url: url + agentPath(), stop: stop, creds: keyed}
	}
	bare := func(args ...string) func(ctx context.Context) (*targetRun, string, error) {
		return func(ctx context.Context) (*targetRun, string, error) {
			u, p, err := r.startSelf(ctx, "bareproxy", append([]string{"-target", r.upstreamURL}, args...)...)
			if err != nil {
				return nil, "", err
			}
			return plain(u, p.stop), "", nil
		}
	}
	how := "binary"
	if r.o.ProfileDir != "" {
		how = "in-process, CPU profiler on"
	}
	return []target{
		{TargetDirect, "upstream directly", func(context.Context) (*targetRun, string, error) {
			return plain(r.upstreamURL, func() {}), "", nil
		}},
		{TargetBare, "httputil.ReverseProxy, DefaultTransport", bare()},
		{TargetBareTuned, fmt.Sprintf("httputil.ReverseProxy, %d idle conns/host", r.o.Concurrency), bare("-idle-per-host", strconv.Itoa(r.o.Concurrency))},
		{TargetNginx, "nginx, upstream keepalive", func(ctx context.Context) (*targetRun, string, error) {
			bin, skip := nginxBinary(r.o.Nginx)
			if skip != "" {
				return nil, skip, nil
			}
			r.nginxVersion = nginxVersion(bin)
			u, p, err := startNginx(ctx, r.ps, bin, r.dir, upHost, r.o.Concurrency)
			if err != nil {
				return nil, "", err
			}
			return plain(u, p.stop), "", nil
		}},
		{TargetGateway, "a2a-gateway " + how + ", API key, embedded store, dedupe off", func(ctx context.Context) (*targetRun, string, error) {
			gw, err := r.launchGateway(ctx, "gateway-load", r.o.Concurrency+64, r.o.ProfileDir != "", gatewaySetup{dedupeOff: true})
			if err != nil {
				return nil, "", err
			}
			return &targetRun{url: gw.url, stop: gw.proc.stop, creds: keyed, gw: gw, store: storeEmbedded}, "", nil
		}},
		r.jwtRedisTarget(TargetJWTRedis, "JWT, Redis, one-shot sends, dedupe off", shapeOneShot, true),
		r.jwtRedisTarget(TargetJWTRedisContext, "JWT, Redis, new context per request, dedupe off", shapeNewContext, true),
		r.jwtRedisTarget(TargetJWTRedisFollowUp, "JWT, Redis, follow-ups in own task, dedupe off", shapeFollowUp, true),
		r.jwtRedisTarget(TargetJWTRedisDedupe, "JWT, Redis, one-shot sends, dedupe on", shapeOneShot, false),
		r.bridgeTarget(TargetBridge, "gw-jwt-redis-dedupe, 0.3 JSON-RPC client, bridge to a 1.0 JSON-RPC agent", a2a.V03, a2a.V10),
		r.bridgeTarget(TargetBridgeTo03, "gw-jwt-redis-dedupe, 1.0 JSON-RPC client, bridge to a 0.3 JSON-RPC agent", a2a.V10, a2a.V03),
	}
}

// jwtRedisTarget is a gateway that authenticates bearer JWTs against the
// harness's JWKS and keeps its state in the run's Redis, under a key
// prefix of its own so that rows cannot see each other's records.
func (r *runner) jwtRedisTarget(name, label string, shape requestShape, dedupeOff bool) target {
	return r.redisGatewayTarget(name, label, shape, dedupeOff, nil)
}

// bridgeTarget is the full-policy row (JWT, Redis, dedupe, one-shot sends)
// with clients of version client in front of an upstream of version agent,
// which the gateway bridges.
func (r *runner) bridgeTarget(name, label string, client, agent a2a.Version) target {
	return r.redisGatewayTarget(name, label, shapeOneShot, false, func(ctx context.Context, setup *gatewaySetup, run *targetRun) error {
		w, err := newWire(client)
		if err != nil {
			return err
		}
		run.client, run.translated = w, true
		setup.agentSpeaks = agent
		if agent == a2a.V03 {
			setup.upstreamURL, err = r.upstream03(ctx)
		}
		return err
	})
}

// redisGatewayTarget is a gateway with JWT authentication and Redis; bridge,
// when set, turns it into a bridged row before the gateway starts.
func (r *runner) redisGatewayTarget(name, label string, shape requestShape, dedupeOff bool,
	bridge func(ctx context.Context, setup *gatewaySetup, run *targetRun) error) target {
	if r.o.ProfileDir != "" {
		label += " (in-process, CPU profiler on)"
	}
	return target{name, label, func(ctx context.Context) (*targetRun, string, error) {
		rs, skip, err := r.redisServer(ctx)
		if err != nil || skip != "" {
			return nil, skip, err
		}
		is, creds, err := r.tokenIssuer()
		if err != nil {
			return nil, "", err
		}
		setup := gatewaySetup{
			jwksURL: is.url(name), algorithm: is.algorithm,
			redisAddr: rs.addr, keyPrefix: "a2abench." + name, dedupeOff: dedupeOff,
		}
		run := &targetRun{creds: creds, shape: shape, store: storeRedis, jwks: func() int64 { return is.fetchCount(name) }}
		if bridge != nil {
			if err := bridge(ctx, &setup, run); err != nil {
				return nil, "", err
			}
		}
		gw, err := r.launchGateway(ctx, name, r.o.Concurrency+64, r.o.ProfileDir != "", setup)
		if err != nil {
			return nil, "", err
		}
		run.url, run.stop, run.gw = gw.url, gw.proc.stop, gw
		return run, "", nil
	}}
}

// upstream03 is the URL of an upstream speaking 0.3, started on first use;
// the run's own upstream speaks 1.0.
func (r *runner) upstream03(ctx context.Context) (string, error) {
	if r.upstream03URL == "" {
		u, _, err := r.startSelf(ctx, "upstream", "-version", a2a.V03.String())
		if err != nil {
			return "", fmt.Errorf("the 0.3 upstream: %w", err)
		}
		r.upstream03URL = u
	}
	return r.upstream03URL, nil
}

// redisServer starts the run's Redis on first use, or says why the rows
// that need it are skipped.
func (r *runner) redisServer(ctx context.Context) (*redisServer, string, error) {
	if r.redis != nil || r.redisSkip != "" {
		return r.redis, r.redisSkip, nil
	}
	bin, skip := redisBinary(r.o.RedisServer)
	if skip != "" {
		r.redisSkip = skip
		return nil, skip, nil
	}
	rs, err := startRedis(ctx, r.ps, bin, r.dir)
	if err != nil {
		return nil, "", err
	}
	r.progress("redis-server    %s listening on %s", rs.version, rs.addr)
	r.redis = rs
	return rs, "", nil
}

// tokenIssuer starts the run's JWKS server and mints the clients' tokens
// on first use.
func (r *runner) tokenIssuer() (*issuer, []credential, error) {
	if r.issuer != nil {
		return r.issuer, r.tokens, nil
	}
	is, err := startIssuer()
	if err != nil {
		return nil, nil, err
	}
	creds, err := is.tokens(r.o.Concurrency)
	if err != nil {
		_ = is.close()
		return nil, nil, err
	}
	r.issuer, r.tokens = is, creds
	return is, creds, nil
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

// live is a started target under load.
type live struct {
	idx    int
	name   string
	run    *targetRun
	loader *loader
	before gatewaySnapshot
	// CPU the gateway and Redis used inside the measured windows.
	gatewayCPU, redisCPU time.Duration
}

// throughput starts every target, then loads them in turn, round after
// round, each round giving each target an equal slice of the measured
// time. Alternating spreads the noise of a shared machine over all
// targets instead of letting it land on whichever ran at a bad moment.
// Only the target being loaded (and the upstream, and Redis for the rows
// that use it) does any work. A gateway row's counters are read after its
// warm-up and again once the last round is over.
//
// The open-loop measurement follows on the same started targets, once the
// closed-loop counters have been read.
func (r *runner) throughput(ctx context.Context) ([]TargetResult, *OpenLoopResult, error) {
	var lives []*live
	out := []TargetResult{}
	ts := r.targets()
	selected, err := selectTargets(ts, r.o.Targets)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range ts {
		if !selected[t.name] {
			out = append(out, TargetResult{Name: t.name, Label: t.label, Skipped: "not among -targets"})
			continue
		}
		run, skip, err := t.start(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.name, err)
		}
		out = append(out, TargetResult{Name: t.name, Label: t.label, Skipped: skip})
		if skip != "" {
			r.progress("%-21s skipped: %s", t.name, skip)
			continue
		}
		out[len(out)-1].Load = run.shape.String()
		defer run.stop()
		l, err := newLoader(cmp.Or(run.client, r.wire), loadSpec{URL: run.url, Creds: run.creds, Shape: run.shape, Concurrency: r.o.Concurrency, Timeout: requestTimeout, Translated: run.translated})
		if err != nil {
			return nil, nil, err
		}
		defer l.close()
		if run.shape == shapeFollowUp {
			if err := l.startConversations(ctx); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", t.name, err)
			}
		}
		lives = append(lives, &live{idx: len(out) - 1, name: t.name, run: run, loader: l})
	}
	window := r.o.Duration / time.Duration(r.o.Rounds)
	r.progress("%d targets, %d clients, %v warm-up, then %d rounds of %v each", len(lives), r.o.Concurrency, r.o.Warmup, r.o.Rounds, window)
	for round := range r.o.Rounds {
		var line strings.Builder
		for k := range lives {
			// Rotate who goes first, so no target always follows the same one.
			lv := lives[(k+round)%len(lives)]
			if round == 0 {
				if err := r.warm(ctx, lv); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", lv.name, err)
				}
			}
			gw0, rd0, err := r.sampleCPU(lv)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", lv.name, err)
			}
			rps, err := lv.loader.run(ctx, 0, window)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", lv.name, err)
			}
			gw1, rd1, err := r.sampleCPU(lv)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", lv.name, err)
			}
			lv.gatewayCPU += gw1 - gw0
			lv.redisCPU += rd1 - rd0
			fmt.Fprintf(&line, "  %s %.0f/s", lv.name, rps)
		}
		r.progress("round %d/%d:%s", round+1, r.o.Rounds, line.String())
	}
	for _, lv := range lives {
		res := lv.loader.result()
		out[lv.idx].Result = &res
		r.progress("%-21s %.0f req/s, p50 %v, p99 %v, %d errors", lv.name, res.RPS, res.P50, res.P99, res.Errors)
		if lv.run.gw == nil {
			continue
		}
		after, err := settledSnapshot(ctx, lv.run.gw, lv.run.jwks)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", lv.name, err)
		}
		u := usageBetween(lv.run.store, lv.run.jwks != nil, res.Requests, lv.before, after)
		if res.Requests > 0 {
			u.GatewayCPUMicros = float64(lv.gatewayCPU.Microseconds()) / float64(res.Requests)
			u.RedisCPUMicros = float64(lv.redisCPU.Microseconds()) / float64(res.Requests)
		}
		out[lv.idx].Gateway = u
		if u.Store == storeRedis {
			r.progress("%-21s Redis round trips/request: %.2f on the request path (%s), %.2f in the background (%s); %d JWKS fetches while measured",
				lv.name, u.RequestPath.PerRequest, formatOps(u.RequestPath.ByOp),
				u.Background.PerRequest, formatOps(u.Background.ByOp), u.JWKSFetchesMeasured)
		}
	}
	if r.o.OpenRate < 0 {
		return out, nil, nil
	}
	ol, err := r.openLoop(ctx, lives)
	if err != nil {
		return nil, nil, err
	}
	return out, ol, nil
}

// selectTargets is the set of targets names selects, every one of ts when
// names is empty. A name that is not a target is an error, so a typo
// cannot silently measure nothing.
func selectTargets(ts []target, names []string) (map[string]bool, error) {
	known := map[string]bool{}
	var all []string
	for _, t := range ts {
		known[t.name] = true
		all = append(all, t.name)
	}
	if len(names) == 0 {
		return known, nil
	}
	selected := map[string]bool{}
	for _, n := range names {
		if !known[n] && !isGRPCTarget(n) {
			return nil, fmt.Errorf("unknown target %q (targets: %s)", n, strings.Join(append(all, grpcTargets...), ", "))
		}
		selected[n] = true
	}
	return selected, nil
}

// sampleCPU reads the CPU time a gateway row's process, and the Redis it
// uses, have consumed so far. Other targets read as zero.
func (r *runner) sampleCPU(lv *live) (gateway, redis time.Duration, err error) {
	if lv.run.gw == nil {
		return 0, 0, nil
	}
	if gateway, err = cpuTime(lv.run.gw.proc.Pid()); err != nil {
		return 0, 0, err
	}
	if lv.run.store == storeRedis && r.redis != nil {
		if redis, err = cpuTime(r.redis.proc.Pid()); err != nil {
			return 0, 0, err
		}
	}
	return gateway, redis, nil
}

// warm runs a target's unrecorded warm-up and then, for a gateway row,
// takes the reading its measured windows are compared with.
func (r *runner) warm(ctx context.Context, lv *live) error {
	if r.o.Warmup > 0 {
		if err := lv.loader.warm(ctx, r.o.Warmup); err != nil {
			return err
		}
	}
	if lv.run.gw == nil {
		return nil
	}
	before, err := settledSnapshot(ctx, lv.run.gw, lv.run.jwks)
	if err != nil {
		return err
	}
	lv.before = before
	return nil
}

// streams measures idle-stream memory on a fresh gateway process, so the
// heap left by the throughput phase does not blur the numbers.
func (r *runner) streams(ctx context.Context) (StreamResult, error) {
	gw, err := r.launchGateway(ctx, "gateway-streams", r.o.Streams+r.o.WarmupStreams+64, r.o.ProfileDir != "", gatewaySetup{})
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
