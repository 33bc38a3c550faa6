package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// The gRPC rows: unary A2A 1.0 SendMessage over gRPC through the gateway
// with the full policy (JWT, Redis, dedupe on), and through a transparent
// gRPC proxy of the same bytes, in alternating rounds of the same run.
const (
	TargetGRPCBare    = "grpc-bare"
	TargetGRPCGateway = "gw-grpc-jwt-redis-dedupe"
	// grpcConns is how many HTTP/2 connections the clients share: gRPC
	// clients multiplex their calls.
	grpcConns = 4
	// maxGRPCStreams bounds the idle gRPC streams of the memory sample.
	maxGRPCStreams = 2000
)

// grpcTargets are the gRPC rows, which grpcRows measures.
var grpcTargets = []string{TargetGRPCBare, TargetGRPCGateway}

func isGRPCTarget(name string) bool { return slices.Contains(grpcTargets, name) }

// GRPCResult is what the gRPC rows measured.
type GRPCResult struct {
	Rows []GRPCRow `json:"rows"`
	// IdleStreams were held open through the gateway's gRPC listener;
	// RSSPerStreamKiB is what each added to the gateway's resident memory.
	IdleStreams     int     `json:"idle_streams,omitempty"`
	RSSPerStreamKiB float64 `json:"rss_per_idle_stream_kib,omitempty"`
}

// GRPCRow is one gRPC target's load result.
type GRPCRow struct {
	Name     string  `json:"name"`
	Label    string  `json:"label"`
	Skipped  string  `json:"skipped,omitempty"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	RPS      float64 `json:"requests_per_second"`
	// CPUMicros is the target process's CPU time per answered request.
	CPUMicros float64 `json:"cpu_us_per_request"`
	P50       Millis  `json:"p50_ms"`
	P99       Millis  `json:"p99_ms"`
}

// grpcTarget is a started gRPC row.
type grpcTarget struct {
	row   GRPCRow
	addr  string
	pid   int
	creds []credential
	conns []*grpc.ClientConn
	cpu   time.Duration
	hist  *Histogram
	ok    atomic.Int64
	bad   atomic.Int64
	seq   atomic.Uint64
}

// wantsGRPC reports whether -targets selects the gRPC row name.
func (r *runner) wantsGRPC(name string) bool {
	return len(r.o.Targets) == 0 || slices.Contains(r.o.Targets, name)
}

// grpcRows measures the gRPC rows the run selects; nil when it selects none.
func (r *runner) grpcRows(ctx context.Context) (*GRPCResult, error) {
	if !r.wantsGRPC(TargetGRPCBare) && !r.wantsGRPC(TargetGRPCGateway) {
		return nil, nil
	}
	upURL, _, err := r.startSelf(ctx, "grpcupstream")
	if err != nil {
		return nil, err
	}
	upAddr := strings.TrimPrefix(upURL, "http://")
	var targets []*grpcTarget
	defer func() {
		for _, t := range targets {
			for _, c := range t.conns {
				c.Close()
			}
		}
	}()
	res := &GRPCResult{}
	if r.wantsGRPC(TargetGRPCBare) {
		u, p, err := r.startSelf(ctx, "grpcproxy", "-target", upAddr)
		if err != nil {
			return nil, err
		}
		defer p.stop()
		targets = append(targets, &grpcTarget{row: GRPCRow{Name: TargetGRPCBare, Label: "grpc-go transparent proxy, raw codec"}, addr: strings.TrimPrefix(u, "http://"), pid: p.Pid(), creds: []credential{{}}})
	}
	var gw *runningGateway
	var gwAddr string
	if r.wantsGRPC(TargetGRPCGateway) {
		t, skip, err := r.startGRPCGateway(ctx, upAddr)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			res.Rows = append(res.Rows, GRPCRow{Name: TargetGRPCGateway, Skipped: skip})
			r.progress("%-21s skipped: %s", TargetGRPCGateway, skip)
		} else {
			gw, gwAddr = t.gw, t.addr
			defer gw.proc.stop()
			targets = append(targets, &t.grpcTarget)
		}
	}
	for _, t := range targets {
		t.hist = NewHistogram()
		for range grpcConns {
			c, err := grpc.NewClient(t.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return nil, err
			}
			t.conns = append(t.conns, c)
		}
		if err := t.drive(ctx, r.o.Concurrency, time.Now().Add(r.o.Warmup), false); err != nil {
			return nil, fmt.Errorf("%s warm-up: %w", t.row.Name, err)
		}
	}
	window := r.o.Duration / time.Duration(r.o.Rounds)
	for range r.o.Rounds {
		for _, t := range targets {
			before, err := cpuTime(t.pid)
			if err != nil {
				return nil, err
			}
			if err := t.drive(ctx, r.o.Concurrency, time.Now().Add(window), true); err != nil {
				return nil, fmt.Errorf("%s: %w", t.row.Name, err)
			}
			after, err := cpuTime(t.pid)
			if err != nil {
				return nil, err
			}
			t.cpu += after - before
		}
	}
	for _, t := range targets {
		row := t.row
		row.Requests, row.Errors = t.ok.Load(), t.bad.Load()
		row.RPS = float64(row.Requests) / r.o.Duration.Seconds()
		if row.Requests > 0 {
			row.CPUMicros = float64(t.cpu.Microseconds()) / float64(row.Requests)
		}
		row.P50, row.P99 = Millis(t.hist.Quantile(0.5)), Millis(t.hist.Quantile(0.99))
		r.progress("%-21s %8.0f req/s, %6.1f µs CPU/request, p99 %s, %d errors", row.Name, row.RPS, row.CPUMicros, row.P99, row.Errors)
		res.Rows = append(res.Rows, row)
	}
	if gw != nil && r.o.Streams > 0 {
		if err := r.grpcIdleStreams(ctx, gw, gwAddr, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// startedGRPCGateway is the gateway row with the gateway behind it.
type startedGRPCGateway struct {
	grpcTarget
	gw *runningGateway
}

// startGRPCGateway starts a gateway that serves the benchmark agent on a
// gRPC listener too, with bearer JWTs, Redis and dedupe on.
func (r *runner) startGRPCGateway(ctx context.Context, upAddr string) (*startedGRPCGateway, string, error) {
	rs, skip, err := r.redisServer(ctx)
	if err != nil || skip != "" {
		return nil, skip, err
	}
	is, creds, err := r.tokenIssuer()
	if err != nil {
		return nil, "", err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	setup := gatewaySetup{
		jwksURL: is.url(TargetGRPCGateway), algorithm: is.algorithm,
		redisAddr: rs.addr, keyPrefix: "a2abench." + TargetGRPCGateway,
		extra: map[string]any{"agents": []any{map[string]any{
			"name": agentName, "url": r.upstreamURL,
			"grpc": map[string]any{"listen": addr, "upstream": upAddr},
		}}},
	}
	gw, err := r.launchGateway(ctx, TargetGRPCGateway, r.o.Concurrency+64+min(max(r.o.Streams, 0), maxGRPCStreams), false, setup)
	if err != nil {
		return nil, "", err
	}
	if err := waitReady(ctx, gw.proc, startupWait, dialReady(addr)); err != nil {
		gw.proc.stop()
		return nil, "", err
	}
	t := &startedGRPCGateway{gw: gw}
	t.row = GRPCRow{Name: TargetGRPCGateway, Label: "a2a-gateway gRPC listener, JWT, Redis, dedupe on"}
	t.addr, t.pid, t.creds = addr, gw.proc.Pid(), creds
	return t, "", nil
}

// drive runs closed-loop SendMessage calls from n clients until end,
// each with a message id of its own; counted ones are recorded.
func (t *grpcTarget) drive(ctx context.Context, n int, end time.Time, count bool) error {
	var wg sync.WaitGroup
	var firstErr atomic.Value
	hists := make([]*Histogram, n)
	for i := range n {
		h := NewHistogram()
		hists[i] = h
		client := a2a10.NewA2AServiceClient(t.conns[i%len(t.conns)])
		cred := t.creds[i%len(t.creds)]
		cctx := ctx
		if cred.header != "" {
			cctx = metadata.AppendToOutgoingContext(ctx, strings.ToLower(cred.header), cred.value)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil {
				id := "g" + strconv.FormatUint(t.seq.Add(1), 36)
				start := time.Now()
				callCtx, cancel := context.WithTimeout(cctx, requestTimeout)
				res, err := client.SendMessage(callCtx, &a2a10.SendMessageRequest{Message: &a2a10.Message{
					MessageId: id, Role: a2a10.Role_ROLE_USER, Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: "benchmark"}}},
				}})
				cancel()
				if err == nil && res.GetTask().GetId() != "task-"+id {
					err = fmt.Errorf("answer names task %q", res.GetTask().GetId())
				}
				if !count {
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				if err != nil {
					t.bad.Add(1)
					continue
				}
				t.ok.Add(1)
				h.Record(time.Since(start))
			}
		}()
	}
	wg.Wait()
	for _, h := range hists {
		t.hist.Merge(h)
	}
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return nil
}

// grpcIdleStreams holds streams open through the gateway's gRPC listener
// and samples what each adds to the gateway's resident memory.
func (r *runner) grpcIdleStreams(ctx context.Context, gw *runningGateway, addr string, res *GRPCResult) error {
	n := min(r.o.Streams, maxGRPCStreams)
	_, creds, err := r.tokenIssuer()
	if err != nil {
		return err
	}
	// The listener takes limits.grpc.max_concurrent_streams (100) calls
	// per connection: a connection for every streamsPerConn streams.
	const streamsPerConn = 50
	var conns []*grpc.ClientConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	sctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, strings.ToLower(creds[0].header), creds[0].value))
	defer cancel()
	opened := 0
	open := func(k int) error {
		for range k {
			if opened%streamsPerConn == 0 {
				c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					return err
				}
				conns = append(conns, c)
			}
			opened++
			client := a2a10.NewA2AServiceClient(conns[len(conns)-1])
			st, err := client.SendStreamingMessage(sctx, &a2a10.SendMessageRequest{Message: &a2a10.Message{
				MessageId: "idle-" + strconv.Itoa(opened), Role: a2a10.Role_ROLE_USER, Parts: []*a2a10.Part{{Content: &a2a10.Part_Text{Text: "hold"}}},
			}})
			if err != nil {
				return err
			}
			if _, err := st.Recv(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := open(r.o.WarmupStreams); err != nil {
		return fmt.Errorf("gRPC warm-up streams: %w", err)
	}
	before, err := rssKiB(gw.proc.Pid())
	if err != nil {
		return err
	}
	if err := open(n); err != nil {
		return fmt.Errorf("idle gRPC streams: %w", err)
	}
	after, err := rssKiB(gw.proc.Pid())
	if err != nil {
		return err
	}
	res.IdleStreams = n
	res.RSSPerStreamKiB = float64(after-before) / float64(n)
	r.progress("idle gRPC streams: %d, %.1f KiB RSS each", n, res.RSSPerStreamKiB)
	return nil
}

// writeTable shows the gRPC rows next to each other, and the memory of an
// idle gRPC stream.
func (g *GRPCResult) writeTable(b *strings.Builder) {
	if g == nil {
		return
	}
	b.WriteString("\ngRPC: A2A 1.0 SendMessage, unary, the same clients and answers for both rows\n")
	const row = "  %-26s %10s %12s %9s %9s %8s  %s\n"
	fmt.Fprintf(b, row, "target", "req/s", "CPU/request", "p50", "p99", "errors", "")
	for _, r := range g.Rows {
		if r.Skipped != "" {
			fmt.Fprintf(b, row, r.Name, "-", "-", "-", "-", "-", "skipped: "+r.Skipped)
			continue
		}
		fmt.Fprintf(b, row, r.Name, fmt.Sprintf("%.0f", r.RPS), fmt.Sprintf("%.1f µs", r.CPUMicros), r.P50, r.P99, strconv.FormatInt(r.Errors, 10), r.Label)
	}
	if g.IdleStreams > 0 {
		fmt.Fprintf(b, "idle gRPC streams: %d through the gateway, %.1f KiB RSS per stream\n", g.IdleStreams, g.RSSPerStreamKiB)
	}
}
