package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkDeliveryScriptCalls weighs running the delivery scripts as they
// run (EVALSHA of a cached script) against one Redis Functions library
// (FCALL), on a real redis-server: the client's time per call and the
// server's CPU per call, from INFO commandstats. Both are one round trip.
func BenchmarkDeliveryScriptCalls(b *testing.B) {
	ctx := context.Background()
	client := redistest.Start(b).Client(b)
	r := NewRedis(client, Options{}).(*redisStore).delivery
	scripts := map[string]string{"head": deliveryAckHeadsLua, "enqueue": deliveryEnqueueLua, "ack": deliveryAckHeadsLua}
	var lib strings.Builder
	lib.WriteString("#!lua name=bench_delivery\n")
	for name, src := range scripts {
		fmt.Fprintf(&lib, "redis.register_function('%s', function(KEYS, ARGV)\n%s\nend)\n", name, src)
	}
	if err := client.FunctionLoadReplace(ctx, lib.String()).Err(); err != nil {
		b.Fatal(err)
	}
	k := r.endpointKeys("acme:agent:t1:cfg")
	type call func(name string, s *redis.Script, args []any) error
	modes := map[string]call{
		"evalsha": func(_ string, s *redis.Script, args []any) error {
			return s.Run(ctx, client, k.keys, args...).Err()
		},
		"fcall": func(name string, _ *redis.Script, args []any) error {
			return client.FCall(ctx, name, k.keys, args...).Err()
		},
	}
	for _, mode := range []string{"evalsha", "fcall"} {
		run := modes[mode]
		b.Run("head/"+mode, func(b *testing.B) {
			if _, errs := r.EnqueueAll(ctx, []Delivery{{ID: "e0", Endpoint: "acme:agent:t1:cfg", TaskID: "t1", Payload: []byte("payload")}}); errs[0] != nil {
				b.Fatal(errs[0])
			}
			resetStats(b, client)
			for b.Loop() {
				if err := run("head", r.ackHeads, k.args(time.Now(), millis(DeliveryIDRetention), "", 1, MaxHeadBytesPerRead)); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
			}
			reportServerCPU(b, client)
		})
		b.Run("enqueue+ack/"+mode, func(b *testing.B) {
			resetStats(b, client)
			i := 0
			for b.Loop() {
				i++
				id := mode + strconv.Itoa(i)
				now := time.Now()
				if err := run("enqueue", r.enqueue, k.args(now, id, "t1", now.UnixNano(), "payload", MaxQueueLength, millis(DeliveryIDRetention))); err != nil {
					b.Fatal(err)
				}
				if err := run("ack", r.ackHeads, k.args(now, millis(DeliveryIDRetention), "", 1, MaxHeadBytesPerRead, "e0")); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
				if err := run("ack", r.ackHeads, k.args(now, millis(DeliveryIDRetention), "", 1, MaxHeadBytesPerRead, id)); err != nil && err != redis.Nil {
					b.Fatal(err)
				}
			}
			reportServerCPU(b, client)
		})
	}
}

func resetStats(b *testing.B, c *redis.Client) {
	b.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
}

// reportServerCPU reports the server's CPU per script call, in µs, from
// INFO commandstats.
func reportServerCPU(b *testing.B, c *redis.Client) {
	b.Helper()
	var calls, usec float64
	for _, st := range redistest.CommandStats(b, c) {
		if st.Name == "evalsha" || st.Name == "fcall" || st.Name == "eval" {
			calls, usec = calls+st.Calls, usec+st.Usec
		}
	}
	if calls > 0 {
		b.ReportMetric(usec/calls, "server-µs/call")
	}
}
