package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMasterName is the master set name the sentinels monitor.
const SentinelMasterName = "a2agw-test"

// sentinelDownAfter (ms) is how long a silent master takes to be declared
// down; sentinelFailoverTimeout (ms) bounds one failover attempt. Short, so
// tests fail over in a few seconds, as a cluster's node timeout does.
const (
	sentinelDownAfter       = "1000"
	sentinelFailoverTimeout = "5000"
)

// Sentinel is a Redis master with replicas and the sentinels that watch
// them, all real processes on loopback. Clients find the master through
// the sentinels (go-redis FailoverClient, or a UniversalClient with a
// master name), as they would in production.
type Sentinel struct {
	data      []*Server // data[0] is the master at start
	sentinels []*Server
	admins    []*redis.SentinelClient // one per sentinel
}

// StartSentinel launches a master, replicas replicas of it and sentinels
// sentinels monitoring it with a quorum of a majority, and waits until every
// replica is in sync and every sentinel knows the master, its replicas and
// the other sentinels. Cleanup kills every process.
func StartSentinel(t testing.TB, replicas, sentinels int) *Sentinel {
	t.Helper()
	if replicas < 0 || sentinels < 1 {
		t.Fatalf("redistest: StartSentinel(%d, %d): need at least one sentinel and no negative replica count", replicas, sentinels)
	}
	// Replicas sync at once instead of after the default 5 s batching delay.
	master := Start(t, WithArgs("--repl-diskless-sync-delay", "0"))
	s := &Sentinel{data: []*Server{master}}
	for range replicas {
		s.data = append(s.data, Start(t, WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.port), "--repl-diskless-sync-delay", "0")))
	}
	quorum := sentinels/2 + 1
	for range sentinels {
		sn := launchSentinel(t, master.port, quorum)
		s.sentinels = append(s.sentinels, sn)
		a := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), DisableIdentity: true, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
		s.admins = append(s.admins, a)
		t.Cleanup(func() { _ = a.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := waitUntil(ctx, func(ctx context.Context) error { return s.check(ctx, master.Addr()) }); err != nil {
		t.Fatalf("redistest: sentinel set-up not ready: %v", err)
	}
	return s
}

// launchSentinel starts `redis-server <conf> --sentinel` on a free port.
// Sentinel insists on a writable configuration file, where it records what
// it learns, so each gets one in its own directory.
func launchSentinel(t testing.TB, masterPort, quorum int) *Server {
	t.Helper()
	bin := lookupRedis(t)
	dir, err := os.MkdirTemp("", "redistest-sentinel-")
	if err != nil {
		t.Fatalf("redistest: temp dir: %v", err)
	}
	s := &Server{dir: dir}
	t.Cleanup(func() { s.cleanup(t) })
	conf := filepath.Join(dir, "sentinel.conf")
	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.port = port
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d %d\n"+
			"sentinel down-after-milliseconds %s %s\n"+
			"sentinel failover-timeout %s %s\n"+
			"sentinel parallel-syncs %s 1\n",
			port, dir, SentinelMasterName, masterPort, quorum,
			SentinelMasterName, sentinelDownAfter, SentinelMasterName, sentinelFailoverTimeout, SentinelMasterName)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatalf("redistest: write %s: %v", conf, err)
		}
		s.proc = &process{
			bin:     bin,
			args:    []string{conf, "--sentinel", "--daemonize", "no", "--logfile", ""},
			dir:     dir,
			logPath: filepath.Join(dir, "redis.log"),
		}
		if lastErr = s.proc.start(); lastErr != nil {
			break
		}
		if lastErr = s.proc.waitReady(s.addr, readyTimeout); lastErr == nil {
			return s
		}
		s.proc.kill()
		if !errors.Is(lastErr, errExited) {
			break
		}
	}
	t.Fatalf("redistest: redis sentinel did not start: %v\n--- log %s ---\n%s", lastErr, s.proc.logPath, s.proc.logTail())
	return nil
}

// check returns nil when every live sentinel names master as the master,
// sees every live replica and every other live sentinel, and every live
// replica is in sync with master.
func (s *Sentinel) check(ctx context.Context, master string) error {
	replicas, sentinels := 0, 0
	for _, d := range s.data {
		if d.Running() && d.Addr() != master {
			replicas++
		}
	}
	for _, sn := range s.sentinels {
		if sn.Running() {
			sentinels++
		}
	}
	for i, a := range s.admins {
		if !s.sentinels[i].Running() {
			continue
		}
		addr, err := a.GetMasterAddrByName(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", s.sentinels[i].Addr(), err)
		}
		if got := net.JoinHostPort(addr[0], addr[1]); got != master {
			return fmt.Errorf("sentinel %s names %s as master, want %s", s.sentinels[i].Addr(), got, master)
		}
		rs, err := a.Replicas(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("sentinel %s: SENTINEL REPLICAS: %w", s.sentinels[i].Addr(), err)
		}
		if up := healthyReplicas(rs); up != replicas {
			return fmt.Errorf("sentinel %s sees %d healthy replicas, want %d", s.sentinels[i].Addr(), up, replicas)
		}
		others, err := a.Sentinels(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("sentinel %s: SENTINEL SENTINELS: %w", s.sentinels[i].Addr(), err)
		}
		if len(others) < sentinels-1 {
			return fmt.Errorf("sentinel %s knows %d other sentinels, want %d", s.sentinels[i].Addr(), len(others), sentinels-1)
		}
	}
	for _, d := range s.data {
		if !d.Running() || d.Addr() == master {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: d.Addr(), DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
		repl, err := infoFields(ctx, c, "INFO", "replication")
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", d.Addr(), err)
		}
		if repl["role"] != "slave" || net.JoinHostPort(repl["master_host"], repl["master_port"]) != master ||
			repl["master_link_status"] != "up" || repl["master_sync_in_progress"] != "0" {
			return fmt.Errorf("%s: role %s of %s:%s, link %s", d.Addr(), repl["role"], repl["master_host"], repl["master_port"], repl["master_link_status"])
		}
	}
	return nil
}

// healthyReplicas counts the replicas a sentinel considers usable.
func healthyReplicas(rs []map[string]string) int {
	n := 0
	for _, r := range rs {
		flags := strings.Split(r["flags"], ",")
		if r["master-link-status"] == "ok" && !slices.Contains(flags, "s_down") && !slices.Contains(flags, "disconnected") {
			n++
		}
	}
	return n
}

// MasterName is the master set name to configure clients with.
func (s *Sentinel) MasterName() string { return SentinelMasterName }

// Addrs lists the sentinels' addresses: what clients are seeded with.
func (s *Sentinel) Addrs() []string {
	out := make([]string, len(s.sentinels))
	for i, sn := range s.sentinels {
		out[i] = sn.Addr()
	}
	return out
}

// Master is the address the sentinels currently name as master.
func (s *Sentinel) Master(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, a := range s.admins {
		if !s.sentinels[i].Running() {
			continue
		}
		addr, err := a.GetMasterAddrByName(ctx, SentinelMasterName).Result()
		if err == nil {
			return net.JoinHostPort(addr[0], addr[1])
		}
	}
	t.Fatal("redistest: no sentinel names a master")
	return ""
}

// Client returns a client that finds the master through the sentinels,
// closed on cleanup.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMasterName, SentinelAddrs: s.Addrs(), DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// KillMaster kills the current master with SIGKILL and returns its address.
// WaitFailover then waits for the sentinels to promote a replica.
func (s *Sentinel) KillMaster(t testing.TB) string {
	t.Helper()
	master := s.Master(t)
	for _, d := range s.data {
		if d.Addr() == master && d.Running() {
			d.Stop(t)
			return master
		}
	}
	t.Fatalf("redistest: the master %s is not one of the started servers or is not running", master)
	return ""
}

// WaitFailover waits until every live sentinel names a live server other
// than old as master and the remaining replicas follow it; it fails the
// test after timeout and returns the new master's address.
func (s *Sentinel) WaitFailover(t testing.TB, old string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var master string
	err := waitUntil(ctx, func(ctx context.Context) error {
		master = ""
		for i, a := range s.admins {
			if !s.sentinels[i].Running() {
				continue
			}
			addr, err := a.GetMasterAddrByName(ctx, SentinelMasterName).Result()
			if err != nil {
				return err
			}
			master = net.JoinHostPort(addr[0], addr[1])
			break
		}
		if master == "" || master == old {
			return fmt.Errorf("the sentinels still name %s", old)
		}
		return s.check(ctx, master)
	})
	if err != nil {
		t.Fatalf("redistest: no failover after %s: %v", timeout, err)
	}
	return master
}

// waitUntil polls cond until it returns nil or ctx ends, and then reports
// the last reason the condition was not met.
func waitUntil(ctx context.Context, cond func(context.Context) error) error {
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last state: %w", ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}
