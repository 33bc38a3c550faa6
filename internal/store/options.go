package store

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// Defaults applied to zero-valued options.
const (
	DefaultKeyPrefix    = "a2agw"
	DefaultOwnershipTTL = 720 * time.Hour
	DefaultDialTimeout  = 2 * time.Second
	DefaultReadTimeout  = time.Second
	DefaultWriteTimeout = time.Second
	DefaultMaxEntries   = 1_000_000
	// DefaultRequestBudget is about two read timeouts: one command and its
	// retry.
	DefaultRequestBudget = 2 * time.Second
)

// Options is the `store:` section of the configuration.
type Options struct {
	// Redis locates the shared Redis. With no addrs the gateway uses an
	// embedded in-memory store, which is only correct for a single replica.
	Redis RedisOptions `yaml:"redis"`
	// KeyPrefix starts every Redis key, so several gateways can share one
	// Redis. Letters, digits and ". _ -" only, at most 64 bytes. Default "a2agw".
	KeyPrefix string `yaml:"key_prefix"`
	// OwnershipTTL is how long the owner of a task or context is remembered
	// after it was first seen. Requests for older ids are refused as unknown.
	// Default 720h.
	OwnershipTTL duration.Duration `yaml:"ownership_ttl"`
	// RequestBudget bounds how long one request may wait for Redis in all,
	// across every store call it makes, their retries and dials included,
	// before the agent answers, and again for each answer or stream event
	// it observes; when it is spent the request is answered UNAVAILABLE.
	// Background work keeps the Redis timeouts only. Default 2s.
	RequestBudget duration.Duration `yaml:"request_budget"`
	// Memory tunes the embedded store; ignored when Redis is configured.
	Memory MemoryOptions `yaml:"memory"`
}

// RedisOptions configures the connection to Redis.
type RedisOptions struct {
	// Addrs lists host:port seeds: one address for a standalone server, the
	// Sentinel addresses with MasterName, or any number of Cluster nodes.
	// Two or more addresses without MasterName mean Cluster.
	Addrs []string `yaml:"addrs"`
	// MasterName is the Sentinel master set name; setting it selects Sentinel.
	MasterName string `yaml:"master_name"`
	// Username is the Redis ACL user (empty for the default user).
	Username string `yaml:"username"`
	// PasswordEnv names the environment variable that holds the password.
	// The password itself never appears in the configuration file.
	PasswordEnv string `yaml:"password_env"`
	// DB selects the database of a standalone or Sentinel deployment; it must
	// be 0 in cluster mode.
	DB int `yaml:"db"`
	// TLS connects with TLS 1.2 or later, verifying the server against the
	// system roots.
	TLS bool `yaml:"tls"`
	// DialTimeout bounds establishing a connection. Default 2s.
	DialTimeout duration.Duration `yaml:"dial_timeout"`
	// ReadTimeout bounds waiting for a reply. Default 1s.
	ReadTimeout duration.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds sending a command. Default 1s.
	WriteTimeout duration.Duration `yaml:"write_timeout"`
	// PoolSize is the connection pool size per node; 0 means the go-redis
	// default of 10 per CPU.
	PoolSize int `yaml:"pool_size"`
	// ClusterMode forces Redis Cluster even with a single seed address
	// (a managed service's configuration endpoint, for example).
	ClusterMode bool `yaml:"cluster_mode"`
}

// MemoryOptions configures the embedded in-memory store.
type MemoryOptions struct {
	// MaxEntries bounds the records each concern keeps; the oldest are
	// evicted first. Default 1000000.
	MaxEntries int `yaml:"max_entries"`
}

// Limits on option values.
const (
	maxKeyPrefixLen = 64
	maxPoolSize     = 10_000
)

var (
	keyPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	envNamePattern   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// withDefaults replaces zero values with the documented defaults. Negative
// values, which Validate refuses, are treated the same way so that a
// constructor given unvalidated options still cannot misbehave.
func (o Options) withDefaults() Options {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	positive(&o.OwnershipTTL, DefaultOwnershipTTL)
	positive(&o.RequestBudget, DefaultRequestBudget)
	positive(&o.Redis.DialTimeout, DefaultDialTimeout)
	positive(&o.Redis.ReadTimeout, DefaultReadTimeout)
	positive(&o.Redis.WriteTimeout, DefaultWriteTimeout)
	if o.Memory.MaxEntries <= 0 {
		o.Memory.MaxEntries = DefaultMaxEntries
	}
	return o
}

func positive(d *duration.Duration, def time.Duration) {
	if *d <= 0 {
		*d = duration.Duration(def)
	}
}

// clusterMode reports whether the options select Redis Cluster, following
// go-redis's UniversalClient rules.
func (r RedisOptions) clusterMode() bool {
	return r.MasterName == "" && (r.ClusterMode || len(r.Addrs) > 1)
}

// mode names the deployment the options select, for logs.
func (r RedisOptions) mode() string {
	switch {
	case len(r.Addrs) == 0:
		return "none"
	case r.MasterName != "":
		return "sentinel"
	case r.clusterMode():
		return "cluster"
	}
	return "standalone"
}

// Validate reports every problem in o, each naming its field path. Zero
// values are valid: they take the defaults.
func (o *Options) Validate() error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("store.%s: %s", field, fmt.Sprintf(format, args...)))
	}

	if o.KeyPrefix != "" && (len(o.KeyPrefix) > maxKeyPrefixLen || !keyPrefixPattern.MatchString(o.KeyPrefix)) {
		add("key_prefix", "must be 1 to %d letters, digits, '.', '_' or '-'", maxKeyPrefixLen)
	}
	if o.OwnershipTTL < 0 {
		add("ownership_ttl", "must not be negative")
	} else if o.OwnershipTTL != 0 && o.OwnershipTTL.D() < time.Millisecond {
		add("ownership_ttl", "must be at least 1ms")
	}
	if o.RequestBudget < 0 {
		add("request_budget", "must not be negative")
	} else if o.RequestBudget != 0 && o.RequestBudget.D() < 10*time.Millisecond {
		add("request_budget", "must be at least 10ms")
	}
	if o.Memory.MaxEntries < 0 {
		add("memory.max_entries", "must not be negative")
	}

	r := o.Redis
	for i, a := range r.Addrs {
		if err := checkAddr(a); err != nil {
			add(fmt.Sprintf("redis.addrs[%d]", i), "%v", err)
		}
	}
	if len(r.Addrs) == 0 {
		// Anything Redis-specific without an address would silently fall back
		// to the single-replica memory store; refuse it instead.
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"master_name", r.MasterName != ""}, {"username", r.Username != ""}, {"password_env", r.PasswordEnv != ""},
			{"db", r.DB != 0}, {"tls", r.TLS}, {"pool_size", r.PoolSize != 0}, {"cluster_mode", r.ClusterMode},
		} {
			if f.set {
				add("redis."+f.name, "is set but store.redis.addrs is empty")
			}
		}
	}
	if r.MasterName != "" && r.ClusterMode {
		add("redis.cluster_mode", "cannot be combined with master_name (Sentinel)")
	}
	if r.PasswordEnv != "" && !envNamePattern.MatchString(r.PasswordEnv) {
		add("redis.password_env", "must be an environment variable name, not the password itself")
	}
	switch {
	case r.DB < 0:
		add("redis.db", "must not be negative")
	case r.DB != 0 && r.ClusterMode:
		add("redis.db", "must be 0 with cluster_mode")
	case r.DB != 0 && r.clusterMode():
		add("redis.db", "must be 0 in cluster mode (several addrs without master_name)")
	}
	for _, f := range []struct {
		name string
		d    duration.Duration
	}{{"dial_timeout", r.DialTimeout}, {"read_timeout", r.ReadTimeout}, {"write_timeout", r.WriteTimeout}} {
		if f.d < 0 {
			add("redis."+f.name, "must not be negative")
		}
	}
	if r.PoolSize < 0 || r.PoolSize > maxPoolSize {
		add("redis.pool_size", "must be between 0 and %d", maxPoolSize)
	}
	return errors.Join(errs...)
}

func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if host == "" {
		return errors.New("host is empty")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not a number between 1 and 65535", port)
	}
	return nil
}
