// Command demo-agent serves the demo A2A agent: the upstream of the
// gateway's quickstart and integration tests.
//
//	demo-agent -addr 127.0.0.1:9001 [-grpc 127.0.0.1:50061] [-public-url URL] [-push=true] [-step-delay 50ms]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
)

// shutdownGrace bounds how long open requests may take to finish after a
// signal; streams are ended by closing the agent first.
const shutdownGrace = 10 * time.Second

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "demo-agent:", err)
		os.Exit(1)
	}
}

func run(args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	fs.SetOutput(logOut)
	addr := fs.String("addr", "127.0.0.1:9001", "listen address")
	publicURL := fs.String("public-url", "", "base URL written into the agent card (default: http://<listen address>)")
	push := fs.Bool("push", true, "advertise and send native push notifications")
	stepDelay := fs.Duration("step-delay", 50*time.Millisecond, "pause between streamed steps")
	name := fs.String("name", "Demo Agent", "agent card name")
	grpcAddr := fs.String("grpc", "", "also serve A2A over gRPC (both versions, h2c) on this listen address, listed in the card")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *stepDelay <= 0 {
		return errors.New("-step-delay must be positive")
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base := *publicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	agent := demoagent.New(demoagent.Options{Name: *name, BaseURL: base, StepDelay: *stepDelay, Push: *push, Logger: log})
	srv := &http.Server{
		Handler:           agent,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	var grpcSrv *grpc.Server
	grpcListening := ""
	if *grpcAddr != "" {
		gln, err := net.Listen("tcp", *grpcAddr)
		if err != nil {
			agent.Close()
			_ = srv.Close()
			return fmt.Errorf("listen gRPC: %w", err)
		}
		grpcListening = gln.Addr().String()
		agent.SetGRPCAddress(grpcListening)
		grpcSrv = agent.GRPCServer()
		go func() { served <- grpcSrv.Serve(gln) }()
	}
	log.Info("demo agent listening", "addr", ln.Addr().String(), "grpc", grpcListening, "card", base+"/.well-known/agent-card.json", "push", *push)

	select {
	case err := <-served:
		agent.Close()
		_ = srv.Close()
		if grpcSrv != nil {
			grpcSrv.Stop()
		}
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Closing the agent first ends its open streams, which Shutdown would
	// otherwise wait on until the grace period runs out.
	agent.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if grpcSrv != nil {
		stopGRPC(sctx, grpcSrv)
	}
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// stopGRPC lets open gRPC calls finish until ctx ends, then cuts them.
func stopGRPC(ctx context.Context, s *grpc.Server) {
	stopped := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.Stop()
		<-stopped
	}
}
