package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gateway"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
)

// ChildCommand is the hidden first argument with which the harness runs
// itself as one of its servers, so that each server is a separate process
// whose CPU time is not shared with the load generator.
const ChildCommand = "__a2abench-child"

// IsChild reports whether args (os.Args[1:]) ask for a child role.
func IsChild(args []string) bool { return len(args) > 0 && args[0] == ChildCommand }

// RunChild runs the child role named in args (os.Args[1:]) until ctx ends.
func RunChild(ctx context.Context, args []string) error {
	if !IsChild(args) || len(args) < 2 {
		return fmt.Errorf("usage: %s upstream|bareproxy|gateway|pushagent|grpcupstream|grpcproxy [flags]", ChildCommand)
	}
	role, rest := args[1], args[2:]
	switch role {
	case "upstream":
		return runUpstreamChild(ctx, rest)
	case "bareproxy":
		return runBareProxyChild(ctx, rest)
	case "gateway":
		return runGatewayChild(ctx, rest)
	case "pushagent":
		return runPushAgentChild(ctx, rest)
	case "grpcupstream":
		return runGRPCUpstreamChild(ctx, rest)
	case "grpcproxy":
		return runGRPCProxyChild(ctx, rest)
	}
	return fmt.Errorf("unknown child role %q", role)
}

func runUpstreamChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	version := fs.String("version", a2a.V10.String(), "the A2A version the upstream speaks: 1.0, or 0.3 for the bridged row in front of a 0.3 agent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v, ok := a2a.ParseVersionName(*version)
	if !ok {
		return fmt.Errorf("-version: want 1.0 or 0.3, got %q", *version)
	}
	w, err := newWire(v)
	if err != nil {
		return err
	}
	return serveUntil(ctx, *addr, newUpstream(w))
}

// runBareProxyChild is the baseline: httputil's single-host reverse proxy
// as its documentation shows it. With -idle-per-host it gets a transport
// that keeps that many idle connections instead of DefaultTransport's two.
func runBareProxyChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bareproxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	target := fs.String("target", "", "upstream base URL")
	idle := fs.Int("idle-per-host", 0, "idle connections kept per host (0: http.DefaultTransport)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-target: want an absolute URL, got %q", *target)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	if *idle > 0 {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 2 * *idle
		tr.MaxIdleConnsPerHost = *idle
		rp.Transport = tr
	}
	return serveUntil(ctx, *addr, rp)
}

// runGatewayChild runs the gateway in this process with the CPU profiler
// on, for the harness's -pprof mode; the built binary has no profiler.
func runGatewayChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "gateway configuration file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile here")
	debugAddr := fs.String("debug-addr", "", "serve heap and goroutine profiles on this address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Tracing as the binary sets it up (off unless OTEL_* asks for it), so
	// that the profile does not count instrumentation the binary leaves out.
	tracing, err := telemetry.Setup(ctx)
	if err != nil {
		return err
	}
	tracing.Install()
	defer func() { _ = tracing.Shutdown(context.WithoutCancel(ctx)) }()
	gw, err := gateway.New(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	defer gw.Close()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *debugAddr != "" {
		l, err := net.Listen("tcp", *debugAddr)
		if err != nil {
			return fmt.Errorf("debug listener: %w", err)
		}
		dctx, stop := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- serve(dctx, l, profileHandler()) }()
		defer func() { stop(); <-errc }()
	}
	return gw.Run(ctx)
}

// profileHandler serves /heap and /goroutine in the pprof format. The heap
// profile follows a collection so it shows live memory only.
func profileHandler() http.Handler {
	mux := http.NewServeMux()
	for _, name := range []string{"heap", "goroutine"} {
		mux.HandleFunc("GET /"+name, func(w http.ResponseWriter, r *http.Request) {
			if name == "heap" {
				runtime.GC()
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			if err := pprof.Lookup(name).WriteTo(w, 0); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		})
	}
	return mux
}

// serveUntil serves h on addr until ctx ends.
func serveUntil(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return serve(ctx, l, h)
}

// serve serves h on l until ctx ends.
func serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Streams never finish by themselves: close rather than drain.
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
