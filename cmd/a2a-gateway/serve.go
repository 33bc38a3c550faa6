package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gateway"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/internal/version"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// printBridges says, one line per bridged agent, the form the agent speaks
// and the forms the gateway serves it in, as the gateway reads them.
func printBridges(out io.Writer, path string, cfg *config.Config) error {
	for i, a := range cfg.Agents {
		b, err := proxy.ParseBridge(a.Bridge)
		if err != nil {
			return fmt.Errorf("%s: agents[%d].%w", path, i, err)
		}
		if b == nil {
			continue
		}
		offer := make([]string, len(b.Offer))
		for j, f := range b.Offer {
			offer[j] = f.String()
		}
		fmt.Fprintf(out, "%s: agent %s speaks %s; bridged for %s\n", path, a.Name, b.Agent, strings.Join(offer, ", "))
	}
	return nil
}

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "gateway.yaml", "path of the YAML configuration file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if cfg == nil {
		return err
	}
	// The problems only the consuming packages find are reported with the
	// file's own, each at its line.
	if err := cfg.Locate(errors.Unwrap(err), gateway.Validate(cfg, config.ProcessEnv)); err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	log := newLogger(os.Stderr, cfg.Log.Level, cfg.Log.Format)
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	stopTracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	gw, err := gateway.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer gw.Close()
	return gw.Run(ctx)
}

// startTracing installs the tracing the OTEL_* environment asks for and
// logs the build and where spans go; stop flushes what is left, within a
// bound.
func startTracing(ctx context.Context, log *slog.Logger) (stop func(), err error) {
	tracing, err := telemetry.Setup(ctx)
	if err != nil {
		return nil, err
	}
	tracing.Install()
	b := version.Get()
	log.Info("starting", "version", b.Version, "revision", b.Revision, "go", b.GoVersion, "traces", tracing.Exporter)
	return func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(flushCtx); err != nil {
			log.Warn("spans not exported at exit", "err", err)
		}
	}, nil
}

// runCheck finds everything serve would refuse before it connects to
// anything: the file's problems, then the keys and secrets it names.
func runCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(out)
	path := fs.String("config", "gateway.yaml", "path of the YAML configuration file")
	skipEnv := fs.Bool("skip-env", false, "do not check the environment variables the file names (lint a file where the secrets are absent, in CI)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	env := config.ProcessEnv
	if *skipEnv {
		env = nil
	}
	cfg, err := config.LoadEnv(*path, env)
	if cfg == nil {
		return err
	}
	// The file's problems and those only the packages using it find come
	// first, at their lines; Check, which validates again before it reads
	// keys and secrets, adds no second report of a field already reported.
	problems := cfg.Locate(errors.Unwrap(err), gateway.Validate(cfg, env))
	if err := cfg.Locate(problems, gateway.Check(cfg, env)); err != nil {
		return fmt.Errorf("%s: %w", *path, err)
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(out, "%s: warning: %s\n", *path, w)
	}
	if err := printBridges(out, *path, cfg); err != nil {
		return err
	}
	note := ""
	if *skipEnv {
		note = "; environment variables not checked"
	}
	fmt.Fprintf(out, "%s: ok (%d agents%s)\n", *path, len(cfg.Agents), note)
	return nil
}
