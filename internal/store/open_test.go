package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// testTimeout only keeps a broken test from hanging; nothing asserts on time.
const testTimeout = 60 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// logLines decodes the JSON log lines written to buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func open(t *testing.T, o store.Options) (store.Store, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	s, err := store.Open(testContext(t), o, slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, &buf
}

func TestOpenMemory(t *testing.T) {
	s, buf := open(t, store.Options{})
	if s.Kind() != store.KindMemory {
		t.Fatalf("Kind() = %q, want memory", s.Kind())
	}
	lines := logLines(t, buf)
	if len(lines) != 1 || lines[0]["kind"] != store.KindMemory || lines[0]["level"] != "INFO" {
		t.Fatalf("log = %v, want one INFO line with kind=memory", lines)
	}
}

func TestOpenRedisWithPassword(t *testing.T) {
	const password = "s3cret-Redis-pw"
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", password))
	t.Setenv("STORE_TEST_REDIS_PASSWORD", password)
	s, buf := open(t, store.Options{Redis: store.RedisOptions{Addrs: []string{srv.Addr()}, PasswordEnv: "STORE_TEST_REDIS_PASSWORD"}})

	if s.Kind() != store.KindRedis {
		t.Fatalf("Kind() = %q, want redis", s.Kind())
	}
	if _, err := s.Ownership().Claim(testContext(t), "a", []store.Ref{{Kind: store.RefTask, ID: "t"}}, store.Owner{Tenant: "x"}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	lines := logLines(t, buf)
	if len(lines) != 1 || lines[0]["kind"] != store.KindRedis || lines[0]["mode"] != "standalone" {
		t.Fatalf("log = %v, want one line with kind=redis mode=standalone", lines)
	}
	if strings.Contains(buf.String(), password) {
		t.Fatal("the log contains the Redis password")
	}
}

func TestOpenErrors(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", "right"))
	t.Setenv("STORE_TEST_WRONG_PASSWORD", "wrong")
	tests := []struct {
		name string
		o    store.Options
		want string
	}{
		{name: "invalid options", o: store.Options{KeyPrefix: "{bad}"}, want: "store.key_prefix"},
		{name: "password variable unset", o: store.Options{Redis: store.RedisOptions{Addrs: []string{srv.Addr()}, PasswordEnv: "STORE_TEST_UNSET_VARIABLE"}},
			want: `store.redis.password_env: environment variable "STORE_TEST_UNSET_VARIABLE" is unset or empty`},
		{name: "wrong password", o: store.Options{Redis: store.RedisOptions{Addrs: []string{srv.Addr()}, PasswordEnv: "STORE_TEST_WRONG_PASSWORD"}},
			want: "WRONGPASS"},
		{name: "no password", o: store.Options{Redis: store.RedisOptions{Addrs: []string{srv.Addr()}}}, want: "NOAUTH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := store.Open(testContext(t), tt.o, nil)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v, want it to contain %q", err, tt.want)
			}
			// Configuration faults must not pass for outages, or they would be
			// retried forever instead of reported.
			if errors.Is(err, store.ErrUnavailable) {
				t.Errorf("Open: %v satisfies ErrUnavailable", err)
			}
		})
	}
}

func TestOpenBeforeRedisIsUp(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop(t)
	s, buf := open(t, store.Options{Redis: store.RedisOptions{Addrs: []string{srv.Addr()}}})
	// go-redis's own notices (log=redis) come as JSON lines too; the store
	// says once that Redis is not up yet.
	var lines []map[string]any
	for _, l := range logLines(t, buf) {
		if l["log"] != "redis" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || lines[0]["level"] != "WARN" {
		t.Fatalf("log = %v, want one WARN line", lines)
	}
	if err := s.Ping(testContext(t)); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Ping with Redis down: %v, want ErrUnavailable", err)
	}
	srv.Restart(t)
	eventually(t, func() error { return s.Ping(testContext(t)) })
}

// TestOutage checks that an unreachable Redis is reported as ErrUnavailable
// by the store's own timeouts, not the caller's deadline, and that the store
// recovers once Redis is back.
func TestOutage(t *testing.T) {
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name          string
		start, finish func(*redistest.Server, testing.TB)
	}{
		{name: "killed", start: (*redistest.Server).Stop, finish: (*redistest.Server).Restart},
		{name: "frozen", start: (*redistest.Server).Pause, finish: (*redistest.Server).Resume},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			s, _ := open(t, store.Options{Redis: store.RedisOptions{
				Addrs:       []string{srv.Addr()},
				DialTimeout: duration.Duration(timeout), ReadTimeout: duration.Duration(timeout), WriteTimeout: duration.Duration(timeout),
			}})
			own := s.Ownership()
			refs := []store.Ref{{Kind: store.RefTask, ID: "t1"}, {Kind: store.RefContext, ID: "c1"}}
			owner := store.Owner{Tenant: "acme", Subject: "alice"}
			if _, err := own.Claim(testContext(t), "agent", refs, owner); err != nil {
				t.Fatalf("Claim before the outage: %v", err)
			}

			tt.start(srv, t)
			ops := map[string]func(context.Context) error{
				"Claim": func(ctx context.Context) error {
					_, err := own.Claim(ctx, "agent", []store.Ref{{Kind: store.RefTask, ID: "t2"}}, owner)
					return err
				},
				"Lookup": func(ctx context.Context) error { _, err := own.Lookup(ctx, "agent", refs); return err },
				"Ping":   s.Ping,
			}
			for name, op := range ops {
				err := op(testContext(t))
				if !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s during the outage: err = %v, want ErrUnavailable", name, err)
				}
				if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
					t.Errorf("%s during the outage: err = %v came from the caller's context, not the store's timeouts", name, err)
				}
			}

			tt.finish(srv, t)
			eventually(t, func() error {
				_, err := own.Claim(testContext(t), "agent", refs, owner)
				return err
			})
		})
	}
}

// eventually retries f until it succeeds, failing the test after testTimeout.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", testTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
