package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Kinds reported by Store.Kind.
const (
	KindRedis  = "redis"
	KindMemory = "memory"
)

var (
	// ErrUnavailable means the back end cannot answer right now (connection
	// refused, timeout, cluster down, failover in progress, store closed).
	// Callers should fail closed with "temporarily unavailable".
	ErrUnavailable = errors.New("store: temporarily unavailable")
	// ErrInvalidArgument means an argument broke a documented limit.
	ErrInvalidArgument = errors.New("store: invalid argument")
)

// errClosed is returned by every operation after Close.
var errClosed = fmt.Errorf("%w: store is closed", ErrUnavailable)

// Store is the handle the gateway holds on its shared state.
type Store interface {
	// Ping reports whether the back end answers, for readiness checks.
	Ping(ctx context.Context) error
	// Close releases the store; later calls fail with ErrUnavailable.
	// Closing twice is harmless.
	Close() error
	// Kind is KindRedis or KindMemory, for the start-up log line.
	Kind() string
	// Ownership is the task and context ownership concern.
	Ownership() Ownership
	// ActiveTasks counts each tenant's open tasks.
	ActiveTasks() ActiveTasks
	// Dedupe is the concern of retried-message dedupe records.
	Dedupe() Dedupe
	// Lifecycle keeps a lifecycle record per task, and leader leases.
	Lifecycle() Lifecycle
	// Delivery is the durable queue of push-notification deliveries.
	Delivery() DeliveryStore
	// PushConfigs keeps the push configs registered through the gateway.
	PushConfigs() PushConfigs
	// EventLog keeps each task's recent events, with default bounds.
	EventLog() EventLog
	// Challenges keeps auth-required challenges and their sealed credentials.
	Challenges() Challenges
	// PushSources records how each watched task is followed at its agent.
	PushSources() PushSources
}

// cursorVersion starts every cursor the store hands out, so its format can
// change without misreading cursors handed out by older gateways.
const cursorVersion = "1|"

var errMalformedCursor = fmt.Errorf("%w: malformed cursor", ErrInvalidArgument)

// encodeCursor makes body an opaque page cursor.
func encodeCursor(body string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + body))
}

// decodeCursor returns the body of a cursor encodeCursor made, at most
// maxBytes long; "" stays "" (the first page).
func decodeCursor(c string, maxBytes int) (string, error) {
	if c == "" {
		return "", nil
	}
	if len(c) > maxBytes {
		return "", fmt.Errorf("%w: cursor is %d bytes, over the limit of %d", ErrInvalidArgument, len(c), maxBytes)
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	body, ok := strings.CutPrefix(string(raw), cursorVersion)
	if err != nil || !ok || !utf8.ValidString(body) {
		return "", errMalformedCursor
	}
	return body, nil
}

// gate makes every operation of a store fail once it is closed. Each
// concern is handed out in its checked wrapper, which opens every call with
// check before the back end, memory or Redis, sees it, so both refuse the
// same calls.
type gate struct {
	closed atomic.Bool
}

// check fails once the store is closed, and otherwise with the first of
// the argument checks' errors, so that every operation opens with one call.
func (g *gate) check(argErrs ...error) error {
	if g.closed.Load() {
		return errClosed
	}
	for _, err := range argErrs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Open validates o and opens the store it describes: Redis when
// o.Redis.Addrs is set, the embedded memory store otherwise. log receives
// one line saying which (nil discards it). An unreachable Redis is not an
// error here, so the gateway can start before Redis does and report not
// ready until then; a misconfiguration such as a wrong password is.
func Open(ctx context.Context, o Options, log *slog.Logger) (Store, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = withDefaults(o)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(o.Redis.Addrs) == 0 {
		log.Info("store: embedded in-memory store; state is not shared, so run a single replica or configure store.redis.addrs",
			"kind", KindMemory, "max_entries", o.Memory.MaxEntries)
		return NewMemory(o), nil
	}

	routeRedisLog(log)
	client, err := newRedisClient(o.Redis)
	if err != nil {
		return nil, err
	}
	s := newRedisStore(client, o, true)
	attrs := []any{"kind", KindRedis, "mode", redisMode(o.Redis), "addrs", o.Redis.Addrs, "tls", o.Redis.TLS, "key_prefix", o.KeyPrefix}
	if err := s.Ping(ctx); err != nil {
		if !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			_ = s.Close()
			return nil, fmt.Errorf("store: open redis %v: %w", o.Redis.Addrs, err)
		}
		log.Warn("store: redis is not reachable yet; readiness reports it until it is", append(attrs, "error", err)...)
		return s, nil
	}
	if err := s.checkVersion(ctx); err != nil && !errors.Is(err, ErrUnavailable) {
		_ = s.Close()
		return nil, fmt.Errorf("store: open redis %v: %w", o.Redis.Addrs, err)
	}
	log.Info("store: redis", attrs...)
	return s, nil
}
