package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 60 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestStopRestartLosesDataWithoutAOF(t *testing.T) {
	ctx := testContext(t)
	s := Start(t)
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	s.Stop(t)
	if s.Running() {
		t.Fatal("Running() = true after Stop")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded while the server was stopped")
	}

	s.Restart(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after restart without AOF: err = %v, want redis.Nil", err)
	}
}

func TestAOFKeepsDataAcrossRestart(t *testing.T) {
	ctx := testContext(t)
	// fsync always: the test writes and kills at once, which everysec may lose.
	s := Start(t, WithAOF(), WithArgs("--appendfsync", "always"))
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	s.Stop(t)
	s.Restart(t)
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("GET after restart with AOF = %q, %v; want \"v\"", got, err)
	}
}

func TestWithArgsPassword(t *testing.T) {
	ctx := testContext(t)
	s := Start(t, WithArgs("--requirepass", "test-password"))

	if err := s.Client(t).Ping(ctx).Err(); !redis.IsAuthError(err) {
		t.Fatalf("PING without password: err = %v, want an authentication error", err)
	}
	authed := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "test-password", DisableIdentity: true})
	t.Cleanup(func() { _ = authed.Close() })
	if err := authed.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with password: %v", err)
	}
}

func TestPauseCausesTimeouts(t *testing.T) {
	ctx := testContext(t)
	s := Start(t)
	c := redis.NewClient(&redis.Options{
		Addr: s.Addr(), DisableIdentity: true, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	s.Pause(t)
	err := c.Ping(ctx).Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		s.Resume(t)
		t.Fatalf("PING while paused: err = %v, want a network timeout", err)
	}

	s.Resume(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six redis-server processes and waits for a failover")
	}
	ctx := testContext(t)
	c := StartCluster(t, 3, 1)
	if got := len(c.Addrs()); got != 6 {
		t.Fatalf("len(Addrs()) = %d, want 6", got)
	}
	client := c.Client(t)

	const keys = 200
	for i := range keys {
		if err := client.Set(ctx, fmt.Sprintf("key-%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET before failover: %v", err)
		}
	}
	// Every master must own some of the keys, or the failover below would
	// not be exercised by the writes.
	var owners atomic.Int32
	err := client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if n > 0 {
			owners.Add(1)
		}
		return err
	})
	if err != nil || owners.Load() != 3 {
		t.Fatalf("keys spread over %d masters (err %v), want 3", owners.Load(), err)
	}

	c.KillMaster(t, 0)
	c.WaitHealthy(t, testTimeout)

	// go-redis refreshes its slot map only periodically or on MOVED, so a
	// long-lived client keeps dialing the dead master until told to reload,
	// as the store does when a cluster command fails for want of a node.
	for i := range keys {
		key := fmt.Sprintf("key-%d", i)
		err := eventually(ctx, func() error {
			err := client.Set(ctx, key, "after", 0).Err()
			if err != nil {
				client.ReloadState(ctx)
			}
			return err
		})
		if err != nil {
			t.Fatalf("SET %s after failover: %v", key, err)
		}
	}
	fresh := c.Client(t)
	for i := range keys {
		got, err := fresh.Get(ctx, fmt.Sprintf("key-%d", i)).Result()
		if err != nil || got != "after" {
			t.Fatalf("GET key-%d from a new client = %q, %v; want \"after\"", i, got, err)
		}
	}
}

func TestClusterSingleMaster(t *testing.T) {
	ctx := testContext(t)
	c := StartCluster(t, 1, 0)
	client := c.Client(t)
	if err := client.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := client.Set(ctx, "b", "2", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
}

func eventually(ctx context.Context, f func() error) error {
	var err error
	for range 50 {
		if err = f(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

func TestFreeClusterPortLeavesRoomForTheBus(t *testing.T) {
	for range 20 {
		p, err := freeClusterPort()
		if err != nil {
			t.Fatal(err)
		}
		if p <= 0 || p+clusterBusOffset >= 65535 {
			t.Fatalf("freeClusterPort() = %d: bus port %d out of range", p, p+clusterBusOffset)
		}
	}
}

func TestParseClusterNodes(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []nodeInfo
		wantErr bool
	}{
		{
			name: "master and replica",
			in: "07c3 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 5462 [5461->-e7d1]\n" +
				"e7d1 127.0.0.1:30002@40002,host.example slave 07c3 0 1426238317239 2 connected\n",
			want: []nodeInfo{
				{id: "07c3", port: 30001, flags: map[string]bool{"myself": true, "master": true}, masterID: "-", link: "connected",
					slots: []slotRange{{0, 5460}, {5462, 5462}}},
				{id: "e7d1", port: 30002, flags: map[string]bool{"slave": true}, masterID: "07c3", link: "connected"},
			},
		},
		{name: "failed master", in: "a 127.0.0.1:1@10001 master,fail - 0 0 1 disconnected\n",
			want: []nodeInfo{{id: "a", port: 1, flags: map[string]bool{"master": true, "fail": true}, masterID: "-", link: "disconnected"}}},
		{name: "empty", in: "\n", wantErr: true},
		{name: "short line", in: "a 127.0.0.1:1@2 master\n", wantErr: true},
		{name: "bad address", in: "a nowhere master - 0 0 1 connected\n", wantErr: true},
		{name: "bad slot", in: "a 127.0.0.1:1@2 master - 0 0 1 connected x-1\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseClusterNodes(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			assertNodes(t, got, tt.want)
		})
	}
}

func assertNodes(t *testing.T, got, want []nodeInfo) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d nodes, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.id != w.id || g.port != w.port || g.masterID != w.masterID || g.link != w.link ||
			fmt.Sprint(g.flags) != fmt.Sprint(w.flags) || fmt.Sprint(g.slots) != fmt.Sprint(w.slots) {
			t.Errorf("node %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestServingMaster(t *testing.T) {
	view := []nodeInfo{
		{port: 1, flags: map[string]bool{"master": true, "fail": true}, slots: []slotRange{{0, 99}}},
		{port: 2, flags: map[string]bool{"master": true}, slots: []slotRange{{0, 99}}},
		{port: 3, flags: map[string]bool{"slave": true}, slots: nil},
		{port: 4, flags: map[string]bool{"master": true}, slots: []slotRange{{100, 200}}},
	}
	tests := []struct {
		slot     int
		wantPort int
		wantOK   bool
	}{
		{slot: 0, wantPort: 2, wantOK: true},
		{slot: 150, wantPort: 4, wantOK: true},
		{slot: 201, wantOK: false},
	}
	for _, tt := range tests {
		port, ok := servingMaster(view, tt.slot)
		if port != tt.wantPort || ok != tt.wantOK {
			t.Errorf("servingMaster(%d) = %d, %v; want %d, %v", tt.slot, port, ok, tt.wantPort, tt.wantOK)
		}
	}
}
