package store

import (
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
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

// Options is the `store:` section of the configuration; the store takes
// it as package config defines and validates it.
type Options = config.StoreOptions

// RedisOptions locates the shared Redis.
type RedisOptions = config.RedisOptions

// MemoryOptions tunes the embedded store.
type MemoryOptions = config.MemoryOptions

// withDefaults replaces zero values with the documented defaults. Negative
// values, which Validate refuses, are treated the same way so that a
// constructor given unvalidated options still cannot misbehave.
func withDefaults(o Options) Options {
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

// mode names the deployment the options select, for logs.
func redisMode(r RedisOptions) string {
	switch {
	case len(r.Addrs) == 0:
		return "none"
	case r.MasterName != "":
		return "sentinel"
	case r.IsCluster():
		return "cluster"
	}
	return "standalone"
}
