package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
)

// redisMaxRetries lets go-redis retry a command once, which absorbs a pooled
// connection the server closed, while bounding a request's worst case to
// about twice the configured timeouts.
const redisMaxRetries = 1

// newRedisClient builds the go-redis client r describes. The password is read
// from the environment here and goes nowhere but the client.
func newRedisClient(r RedisOptions) (redis.UniversalClient, error) {
	var password string
	if r.PasswordEnv != "" {
		password = os.Getenv(r.PasswordEnv)
		if password == "" {
			return nil, fmt.Errorf("store.redis.password_env: environment variable %q is unset or empty", r.PasswordEnv)
		}
	}
	var tlsConfig *tls.Config
	if r.TLS {
		// ServerName stays empty: go-redis dials with the node's host name,
		// which is what each node's certificate is checked against.
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:         r.Addrs,
		MasterName:    r.MasterName,
		IsClusterMode: r.ClusterMode,
		Username:      r.Username,
		Password:      password,
		DB:            r.DB,
		TLSConfig:     tlsConfig,
		DialTimeout:   r.DialTimeout.D(),
		ReadTimeout:   r.ReadTimeout.D(),
		WriteTimeout:  r.WriteTimeout.D(),
		PoolSize:      r.PoolSize,
		MaxRetries:    redisMaxRetries,
		// One dial per attempt: the default of five would multiply
		// dial_timeout and delay the "unavailable" answer.
		DialerRetries: 1,
		// Request deadlines bound Redis calls as well as the timeouts above.
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
	})
	// Spans for the commands of traced requests only, without the commands'
	// text: keys name tenants and values hold tokens and payloads. Without
	// tracing the hook is left out: it allocates on every command.
	if !telemetry.Recording() {
		return client, nil
	}
	if err := redisotel.InstrumentTracing(client,
		redisotel.WithTracerProvider(telemetry.ChildrenOnly(otel.GetTracerProvider())),
		redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false)); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("store.redis: tracing: %w", err)
	}
	return client, nil
}

// redisConn is what every Redis concern shares: the client, the key layout
// and the error mapping.
type redisConn struct {
	client redis.UniversalClient
	// cluster is set in cluster mode; see fail.
	cluster *redis.ClusterClient
	keys    keyspace
	gate    *gate
	// pipes batches the commands of concurrent calls; see newPipelines.
	// relay batches the push relay's (its event log, queues and leases)
	// apart, so that a request's calls never wait behind a relay batch.
	pipes, relay *coalescer[piped, struct{}]
	// budget bounds each request's total wait (see piped and budgetHook).
	budget requestBudget
}

// acted reads the reply of a script that answers 1 when it acted and 0
// when it did not.
func (c *redisConn) acted(op string, cmd *redis.Cmd) (bool, error) {
	n, err := cmd.Int64()
	if err != nil {
		return false, c.fail(op, err)
	}
	return n == 1, nil
}

// pipedEach sends n commands, queue(pipe, i) for each i, in one pipeline
// (split by node on Cluster) and returns their replies concatenated in
// order; any failed command fails operation op.
func pipedEach[T any, C interface{ Result() ([]T, error) }](ctx context.Context, c *redisConn, op string, n int, queue func(pipe redis.Pipeliner, i int) C) ([]T, error) {
	cmds := make([]C, n)
	pipe := c.client.Pipeline()
	for i := range n {
		cmds[i] = queue(pipe, i)
	}
	// Exec reports the first failed command; each one is examined below.
	_, _ = pipe.Exec(ctx)
	var out []T
	for _, cmd := range cmds {
		vs, err := cmd.Result()
		if err != nil {
			return nil, c.fail(op, err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

// readValue decodes the reply of a read of key for operation op; false
// when there is no such key.
func readValue[V, T any](c *redisConn, op, key string, cmd interface{ Result() (V, error) }, decode func(V) (T, error)) (T, bool, error) {
	var zero T
	v, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, c.fail(op, err)
	}
	t, err := decode(v)
	if err != nil {
		return zero, false, fmt.Errorf("store: %s: key %q: %w", op, key, err)
	}
	return t, true, nil
}

// readHash is readValue for an HGETALL, whose reply for no such hash is
// empty.
func readHash[T any](c *redisConn, op, key string, cmd *redis.MapStringStringCmd, decode func(map[string]string) (T, error)) (T, bool, error) {
	if h, err := cmd.Result(); err == nil && len(h) == 0 {
		var zero T
		return zero, false, nil
	}
	return readValue(c, op, key, cmd, decode)
}

// fail wraps err from operation op. Transport failures and the replies a
// server gives while it cannot serve become ErrUnavailable; anything else
// (a wrong password, a refused command) is a fault to report, not to retry.
// A nil err stays nil.
func (c *redisConn) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	// A caller that went away is neither a fault nor an outage.
	if errors.Is(err, context.Canceled) || !unavailable(err) {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if c.cluster != nil {
		// go-redis refreshes its slot map only every minute or on MOVED, so
		// after a failover it would keep dialing the dead master. The reload
		// runs in the background and go-redis coalesces concurrent requests.
		c.cluster.ReloadState(context.Background())
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// unavailable reports whether err means Redis could not serve the command
// now, as opposed to refusing it.
func unavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		// Not a server reply: dial and I/O errors, timeouts, an exhausted
		// pool, a closed client, failed cluster or Sentinel discovery.
		return true
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) || redis.IsMaxClientsError(err) ||
		redis.IsOOMError(err) || redis.IsNoReplicasError(err) || redis.HasErrorPrefix(err, "BUSY")
}

// redisStore is the Store backed by Redis.
type redisStore struct {
	conn      *redisConn
	owned     bool // Close closes the client only if Open created it
	ownership *redisOwnership
	dedupe    *redisDedupe
	active    *redisActive
	lifecycle *redisLifecycle
	delivery  *redisDelivery
	push      *redisPushConfigs
	events    redisEventLog
}

var _ Store = (*redisStore)(nil)

// NewRedis returns a Store on an existing client, which stays the caller's
// to close. o must have passed Validate; zero fields take their defaults and
// o.Redis is ignored.
func NewRedis(client redis.UniversalClient, o Options) Store {
	return newRedisStore(client, withDefaults(o), false)
}

func newRedisStore(client redis.UniversalClient, o Options, owned bool) *redisStore {
	budget := requestBudget(o.RequestBudget.D())
	// The hook bounds the client's own calls, piped the shared pipelines'
	// waits, whose batches no single request's budget may cut short.
	client.AddHook(budgetHook{budget})
	conn := &redisConn{client: client, keys: keyspace{prefix: o.KeyPrefix}, gate: &gate{}, pipes: newPipelines(client, pipelinesInFlight), relay: newPipelines(client, relayPipelinesInFlight), budget: budget}
	if cc, ok := client.(*redis.ClusterClient); ok {
		conn.cluster = cc
	}
	return &redisStore{
		conn:      conn,
		owned:     owned,
		ownership: &redisOwnership{conn: conn, ttl: o.OwnershipTTL.D()},
		dedupe:    newRedisDedupe(conn),
		active:    &redisActive{conn: conn},
		lifecycle: newRedisLifecycle(conn),
		delivery:  newRedisDelivery(conn),
		push:      &redisPushConfigs{conn: conn},
		events:    newRedisEventLog(conn),
	}
}

func (s *redisStore) Kind() string { return KindRedis }

func (s *redisStore) Ownership() Ownership { return checkedOwnership{s.conn.gate, s.ownership} }

func (s *redisStore) Dedupe() Dedupe { return checkedDedupe{s.conn.gate, s.dedupe} }

func (s *redisStore) ActiveTasks() ActiveTasks { return checkedActiveTasks{s.conn.gate, s.active} }

func (s *redisStore) Lifecycle() Lifecycle { return checkedLifecycle{s.conn.gate, s.lifecycle} }

func (s *redisStore) Delivery() DeliveryStore { return checkedDelivery{s.conn.gate, s.delivery} }

func (s *redisStore) PushConfigs() PushConfigs { return checkedPushConfigs{s.conn.gate, s.push} }

func (s *redisStore) EventLog() EventLog { return checkedEventLog{s.conn.gate, s.events} }

func (s *redisStore) Challenges() Challenges {
	return checkedChallenges{s.conn.gate, &redisChallenges{conn: s.conn}}
}

func (s *redisStore) PushSources() PushSources {
	return checkedPushSources{s.conn.gate, &redisPushSources{conn: s.conn}}
}

// minRedisMajor is the oldest Redis the store runs on: dedupe claims use
// SET with both NX and GET, which Redis 7.0 introduced.
const minRedisMajor = 7

// checkVersion refuses a server older than minRedisMajor (every master, on
// Cluster), before any request could fail on it. A server that does not
// say, or a user not allowed to ask, is let through.
func (s *redisStore) checkVersion(ctx context.Context) error {
	check := func(ctx context.Context, c redis.Cmdable) error {
		info, err := c.Info(ctx, "server").Result()
		if redis.HasErrorPrefix(err, "NOPERM") {
			return nil
		}
		if err != nil {
			return s.conn.fail("info", err)
		}
		return versionSupported(info)
	}
	if s.conn.cluster != nil {
		return s.conn.cluster.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return check(ctx, m) })
	}
	return check(ctx, s.conn.client)
}

// versionSupported reads redis_version from the server section of INFO.
func versionSupported(info string) error {
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !ok {
			continue
		}
		major, _, _ := strings.Cut(v, ".")
		if n, err := strconv.Atoi(major); err == nil && n < minRedisMajor {
			return fmt.Errorf("redis %s is too old: the gateway needs %d.0 or later (dedupe claims use SET NX GET)", v, minRedisMajor)
		}
		return nil
	}
	return nil
}

// Ping checks every master in cluster mode: one unreachable shard already
// fails the requests whose keys it holds.
func (s *redisStore) Ping(ctx context.Context) error {
	if err := s.conn.gate.check(); err != nil {
		return err
	}
	var err error
	if s.conn.cluster != nil {
		err = s.conn.cluster.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return m.Ping(ctx).Err()
		})
	} else {
		err = s.conn.client.Ping(ctx).Err()
	}
	return s.conn.fail("ping", err)
}

func (s *redisStore) Close() error {
	if s.conn.gate.closed.Swap(true) || !s.owned {
		return nil
	}
	if err := s.conn.client.Close(); err != nil {
		return fmt.Errorf("store: close redis client: %w", err)
	}
	return nil
}

// redisLogger puts go-redis's own messages (pool and failover notices) on
// the gateway's structured log instead of plain text on stderr, which
// would break a JSON log stream. go-redis holds one logger for the whole
// process; the last store opened sets it.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "log", "redis")
}

func routeRedisLog(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }

// RoundTripObserver is told about every round trip to Redis: the command
// name, or "pipeline" for a pipeline, whether a request waited for it (see
// request.OnPath), how long it took, and whether it failed. It must be
// cheap; it runs on the request path.
type RoundTripObserver func(op string, onRequestPath bool, d time.Duration, failed bool)

// Observe makes s report each Redis round trip to observe. The embedded
// store makes none, so it reports nothing.
func Observe(s Store, observe RoundTripObserver) {
	rs, ok := s.(*redisStore)
	if !ok {
		return
	}
	rs.conn.client.AddHook(roundTripHook{observe})
}

type roundTripHook struct{ observe RoundTripObserver }

func (h roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(cmd.Name(), request.IsOnPath(ctx), time.Since(start), err != nil && err != redis.Nil)
		return err
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.observe("pipeline", request.IsOnPath(ctx), time.Since(start), err != nil && err != redis.Nil)
		return err
	}
}

var _ redis.Hook = roundTripHook{}
