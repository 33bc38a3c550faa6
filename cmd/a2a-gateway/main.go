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
	"os"
	"os/signal"
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
