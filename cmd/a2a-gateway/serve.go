package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/a2a-gateway/a2a-gateway/config"
	"github.com/a2a-gateway/a2a-gateway/gateway"
)

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "gateway.yaml", "path of the YAML configuration file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	log := newLogger(os.Stderr, cfg.Log.Level, cfg.Log.Format)
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	gw, err := gateway.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer gw.Close()
	return gw.Run(ctx)
}

func runCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	path := fs.String("config", "gateway.yaml", "path of the YAML configuration file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(out, "%s: warning: %s\n", *path, w)
	}
	fmt.Fprintf(out, "%s: ok (%d agents)\n", *path, len(cfg.Agents))
	return nil
}
