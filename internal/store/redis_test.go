package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// roundTrips counts what a client sends: single commands, pipelines and the
// commands inside pipelines.
type roundTrips struct {
	singles, pipelines, pipelined atomic.Int64
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.singles.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		h.pipelined.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func (h *roundTrips) reset() {
	h.singles.Store(0)
	h.pipelines.Store(0)
	h.pipelined.Store(0)
}

func TestRedisOwnershipIsOneRoundTrip(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	hook := &roundTrips{}
	client.AddHook(hook)
	s := NewRedis(client, Options{})
	refs := []Ref{{RefTask, "t1"}, {RefContext, "c1"}, {RefTask, "t2"}}
	// Open the pooled connections first (go-redis keeps a separate pool for
	// pipelines): their handshakes are not the store's.
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if _, err := client.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() }); err != nil {
		t.Fatalf("pipelined PING: %v", err)
	}

	tests := []struct {
		name          string
		call          func() error
		wantPipelined int64
	}{
		{name: "claim", wantPipelined: int64(len(refs)), call: func() error {
			_, err := s.Ownership().Claim(ctx, "agent", refs, Owner{Tenant: "acme"})
			return err
		}},
		{name: "claim of claimed refs", wantPipelined: int64(len(refs)), call: func() error {
			_, err := s.Ownership().Claim(ctx, "agent", refs, Owner{Tenant: "other"})
			return err
		}},
		{name: "lookup", wantPipelined: int64(len(refs)), call: func() error {
			_, err := s.Ownership().Lookup(ctx, "agent", refs)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hook.reset()
			if err := tt.call(); err != nil {
				t.Fatal(err)
			}
			if s, p, c := hook.singles.Load(), hook.pipelines.Load(), hook.pipelined.Load(); s != 0 || p != 1 || c != tt.wantPipelined {
				t.Errorf("sent %d single commands and %d pipelines with %d commands; want 0, 1 and %d", s, p, c, tt.wantPipelined)
			}
		})
	}
}

func TestRedisCorruptRecordIsAnErrorNotAnOutage(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	s := NewRedis(client, Options{KeyPrefix: "corrupt"})
	ref := Ref{RefTask, "t"}
	key := keyspace{prefix: "corrupt"}.refTagged(ownershipFamily, "agent", ref)
	if err := client.Set(ctx, key, "9|future|format", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	_, lookupErr := s.Ownership().Lookup(ctx, "agent", []Ref{ref})
	_, claimErr := s.Ownership().Claim(ctx, "agent", []Ref{ref}, Owner{Tenant: "acme"})
	for name, err := range map[string]error{"Lookup": lookupErr, "Claim": claimErr} {
		if err == nil || !strings.Contains(err.Error(), "unknown format version") {
			t.Errorf("%s of a corrupt record: err = %v, want an unknown-format error", name, err)
		}
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("%s of a corrupt record: %v satisfies ErrUnavailable", name, err)
		}
	}
}

func TestUnavailableClassification(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	if err := client.HSet(ctx, "hash", "f", "v").Err(); err != nil {
		t.Fatalf("HSET: %v", err)
	}
	wrongType := client.Get(ctx, "hash").Err()
	unknownCommand := client.Do(ctx, "NOSUCHCOMMAND").Err()

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"eof", io.EOF, true},
		{"closed client", redis.ErrClosed, true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"deadline", context.DeadlineExceeded, true},
		{"wrong type", wrongType, false},
		{"unknown command", unknownCommand, false},
		{"cross slot", redis.ErrCrossSlot, false},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Fatalf("%s: the server did not produce the error", tt.name)
		}
		if got := unavailable(tt.err); got != tt.want {
			t.Errorf("unavailable(%s: %v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
	conn := &redisConn{gate: &gate{}}
	if err := conn.fail("op", context.Canceled); errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("fail(context.Canceled) = %v, want a plain cancellation", err)
	}
}

func TestVersionSupported(t *testing.T) {
	tests := []struct {
		name, info string
		ok         bool
	}{
		{"7.0", "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n", true},
		{"8.2", "# Server\r\nredis_version:8.2.1\r\n", true},
		{"valkey, which reports a Redis version it is compatible with", "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n", true},
		{"6.2", "# Server\r\nredis_version:6.2.14\r\n", false},
		{"5.0", "redis_version:5.0.7\n", false},
		{"no version said", "# Server\r\nuptime_in_seconds:12\r\n", true},
		{"unreadable version", "redis_version:unknown\r\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := versionSupported(tt.info)
			if (err == nil) != tt.ok {
				t.Fatalf("versionSupported = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "7.0 or later") {
				t.Errorf("error %q does not say which version is needed", err)
			}
		})
	}
}
