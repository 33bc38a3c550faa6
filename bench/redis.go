package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"
)

// redisServer is the run's own redis-server: loopback only, a fresh port,
// nothing written to disk, stopped with every other child.
type redisServer struct {
	addr    string
	version string
	proc    *proc
}

// redisBinary resolves the -redis-server option: a path, "" for PATH
// look-up, or "off". It returns "" with a reason when the rows that need
// Redis are to be skipped.
func redisBinary(opt string) (bin, skip string) {
	switch opt {
	case "off":
		return "", "disabled with -redis-server off"
	case "":
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return "", "redis-server is not on PATH"
		}
		return p, ""
	}
	p, err := exec.LookPath(opt)
	if err != nil {
		return "", fmt.Sprintf("redis-server binary %s: %v", opt, err)
	}
	return p, ""
}

// redisVersion is the "v=" part of `redis-server --version`, for the report.
func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return ""
}

// startRedis runs redis-server in the foreground in dir. Persistence is
// off: the run's records are worthless afterwards, and snapshots would
// steal CPU from the measurement. extra settings come last, so they win
// (the push-relay run turns the append-only file on).
func startRedis(ctx context.Context, ps *procSet, bin, dir string, extra ...string) (*redisServer, error) {
	var addr string
	p, err := startWithRetry(ctx, func(ctx context.Context) (*proc, error) {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("redis address %s: %w", a, err)
		}
		cmd := exec.Command(bin, append([]string{
			"--bind", host, "--port", port, "--protected-mode", "yes",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--daemonize", "no", "--loglevel", "warning"}, extra...)...)
		// The working directory ties the process to the run's temp dir,
		// which is how a leftover one is recognised.
		cmd.Dir = dir
		p, err := ps.start("redis-server", cmd)
		if err != nil {
			return nil, err
		}
		if err := waitReady(ctx, p, startupWait, redisReady(a)); err != nil {
			p.stop()
			return nil, err
		}
		addr = a
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return &redisServer{addr: addr, version: redisVersion(bin), proc: p}, nil
}

// redisReady succeeds once addr answers PING with PONG, which Redis does
// only after it has loaded and can serve commands.
func redisReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if dl, ok := ctx.Deadline(); ok {
			_ = c.SetDeadline(dl)
		} else {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		}
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return fmt.Errorf("redis ping: %w", err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return fmt.Errorf("redis ping: %w", err)
		}
		if strings.TrimSpace(line) != "+PONG" {
			return fmt.Errorf("redis ping: answered %q", strings.TrimSpace(line))
		}
		return nil
	}
}
