package store_test

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

func TestOptionsValidate(t *testing.T) {
	one := []string{"redis:6379"}
	tests := []struct {
		name string
		o    store.Options
		want []string // substrings of the error; none means valid
	}{
		{name: "zero value is the memory store", o: store.Options{}},
		{name: "standalone", o: store.Options{Redis: store.RedisOptions{Addrs: one, DB: 3, Username: "gw", PasswordEnv: "REDIS_PASSWORD", TLS: true, PoolSize: 50}}},
		{name: "sentinel with db", o: store.Options{Redis: store.RedisOptions{Addrs: []string{"s1:26379", "s2:26379"}, MasterName: "mymaster", DB: 2}}},
		{name: "cluster", o: store.Options{Redis: store.RedisOptions{Addrs: []string{"n1:7000", "n2:7000"}}}},
		{name: "ipv6 address", o: store.Options{Redis: store.RedisOptions{Addrs: []string{"[::1]:6379"}}}},
		{name: "key prefix", o: store.Options{KeyPrefix: "gw-prod.eu_1"}},
		{name: "short ttl", o: store.Options{OwnershipTTL: duration.Duration(time.Millisecond)}},

		{name: "db with cluster_mode", o: store.Options{Redis: store.RedisOptions{Addrs: one, ClusterMode: true, DB: 1}},
			want: []string{"store.redis.db: must be 0 with cluster_mode"}},
		{name: "db with several addrs", o: store.Options{Redis: store.RedisOptions{Addrs: []string{"a:1", "b:1"}, DB: 1}},
			want: []string{"store.redis.db: must be 0 in cluster mode"}},
		{name: "negative db", o: store.Options{Redis: store.RedisOptions{Addrs: one, DB: -1}},
			want: []string{"store.redis.db: must not be negative"}},
		{name: "sentinel and cluster", o: store.Options{Redis: store.RedisOptions{Addrs: one, MasterName: "m", ClusterMode: true}},
			want: []string{"store.redis.cluster_mode: cannot be combined with master_name"}},
		{name: "address without port", o: store.Options{Redis: store.RedisOptions{Addrs: []string{"redis"}}},
			want: []string{"store.redis.addrs[0]: want host:port"}},
		{name: "address with bad port", o: store.Options{Redis: store.RedisOptions{Addrs: []string{"a:1", "b:99999"}}},
			want: []string{"store.redis.addrs[1]: port"}},
		{name: "address without host", o: store.Options{Redis: store.RedisOptions{Addrs: []string{":6379"}}},
			want: []string{"store.redis.addrs[0]: host is empty"}},
		{name: "password in password_env", o: store.Options{Redis: store.RedisOptions{Addrs: one, PasswordEnv: "hunter2!"}},
			want: []string{"store.redis.password_env: must be an environment variable name"}},
		{name: "redis settings without addrs", o: store.Options{Redis: store.RedisOptions{MasterName: "m", TLS: true, DB: 1}},
			want: []string{"store.redis.master_name: is set but store.redis.addrs is empty", "store.redis.tls:", "store.redis.db:"}},
		{name: "negative timeouts", o: store.Options{Redis: store.RedisOptions{Addrs: one,
			DialTimeout: -1, ReadTimeout: -1, WriteTimeout: -1}},
			want: []string{"store.redis.dial_timeout: must not be negative", "store.redis.read_timeout:", "store.redis.write_timeout:"}},
		{name: "pool size", o: store.Options{Redis: store.RedisOptions{Addrs: one, PoolSize: -1}},
			want: []string{"store.redis.pool_size: must be between 0 and"}},
		{name: "key prefix with hash tag", o: store.Options{KeyPrefix: "gw{1}"},
			want: []string{"store.key_prefix: must be 1 to 64 letters"}},
		{name: "key prefix with separator", o: store.Options{KeyPrefix: "gw:prod"},
			want: []string{"store.key_prefix:"}},
		{name: "key prefix too long", o: store.Options{KeyPrefix: strings.Repeat("a", 65)},
			want: []string{"store.key_prefix:"}},
		{name: "negative ttl", o: store.Options{OwnershipTTL: -1},
			want: []string{"store.ownership_ttl: must not be negative"}},
		{name: "sub-millisecond ttl", o: store.Options{OwnershipTTL: duration.Duration(time.Microsecond)},
			want: []string{"store.ownership_ttl: must be at least 1ms"}},
		{name: "negative request budget", o: store.Options{RequestBudget: -1},
			want: []string{"store.request_budget: must not be negative"}},
		{name: "tiny request budget", o: store.Options{RequestBudget: duration.Duration(time.Millisecond)},
			want: []string{"store.request_budget: must be at least 10ms"}},
		{name: "negative max entries", o: store.Options{Memory: store.MemoryOptions{MaxEntries: -5}},
			want: []string{"store.memory.max_entries: must not be negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestOptionsYAML(t *testing.T) {
	const doc = `
redis:
  addrs: ["10.0.0.1:6379", "10.0.0.2:6379"]
  username: gateway
  password_env: REDIS_PASSWORD
  tls: true
  dial_timeout: 500ms
  read_timeout: 250ms
  write_timeout: 250ms
  pool_size: 20
  cluster_mode: true
key_prefix: gw
ownership_ttl: 48h
memory:
  max_entries: 1000
`
	var o store.Options
	if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	want := store.Options{
		Redis: store.RedisOptions{
			Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379"}, Username: "gateway", PasswordEnv: "REDIS_PASSWORD", TLS: true,
			DialTimeout:  duration.Duration(500 * time.Millisecond),
			ReadTimeout:  duration.Duration(250 * time.Millisecond),
			WriteTimeout: duration.Duration(250 * time.Millisecond),
			PoolSize:     20, ClusterMode: true,
		},
		KeyPrefix: "gw", OwnershipTTL: duration.Duration(48 * time.Hour), Memory: store.MemoryOptions{MaxEntries: 1000},
	}
	if got, exp := yamlString(t, o), yamlString(t, want); got != exp {
		t.Fatalf("decoded options:\n%s\nwant:\n%s", got, exp)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func yamlString(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(b)
}
