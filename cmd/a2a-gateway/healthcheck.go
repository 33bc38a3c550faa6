package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// runHealthcheck asks the admin listener of a gateway running next to it
// (in the same container) whether it is ready, for images without a shell
// or curl: it exits 0 when the answer is 200 and 1 otherwise. The address
// comes from the configuration's admin_listen, so it needs none of the
// secrets the configuration names.
func runHealthcheck(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(out)
	path := fs.String("config", "/etc/a2a-gateway/config.yaml", "path of the YAML configuration file whose admin_listen is asked")
	probe := fs.String("path", "/readyz", "path to ask on the admin listener (/readyz: ready to serve; /healthz: the process is alive)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected arguments %v", fs.Args())
	}
	if *probe != "/readyz" && *probe != "/healthz" {
		return fmt.Errorf("healthcheck: -path %q; want /readyz or /healthz", *probe)
	}
	if *timeout <= 0 {
		return fmt.Errorf("healthcheck: -timeout %s; want a positive duration", *timeout)
	}
	cfg, err := config.LoadEnv(*path, nil)
	if err != nil {
		return err
	}
	url, err := adminURL(cfg.AdminListen, *probe)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
	}
	fmt.Fprintf(out, "%s: %s\n", url, resp.Status)
	return nil
}

// adminURL is the URL of path on the admin listener at addr, reached over
// loopback when the listener binds every address.
func adminURL(addr, path string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("healthcheck: admin_listen %q: %w", addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	if port == "" || port == "0" {
		return "", errors.New("healthcheck: admin_listen has no fixed port to ask")
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}
