package push

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRelayEvent weighs one event through the relay as the gateway
// runs it: published (logged with the task's configs read, enqueued with
// the endpoint's claim), delivered signed to a loopback webhook, and
// acknowledged, on a real redis-server with the queue persisted (AOF,
// fsync every second). 24 tasks publish at once, each with one push config,
// each event after the one before it as a relayed stream does. It reports
// this process's CPU per event (relay, workers, and the webhook server,
// which is in the process too), redis-server's CPU per event, and the Redis
// round trips per event (a pipeline is one), and the scripts and commands
// Redis ran per event (INFO commandstats). "paced" publishes each task's
// events 10 ms apart, as the harness's agent does (2,400 events/s offered),
// "back-to-back" as fast as the relay takes them.
func BenchmarkRelayEvent(b *testing.B) {
	b.Run("paced", func(b *testing.B) { benchmarkRelayEvent(b, 10*time.Millisecond) })
	b.Run("back-to-back", func(b *testing.B) { benchmarkRelayEvent(b, 0) })
}

func benchmarkRelayEvent(b *testing.B, interval time.Duration) {
	const tasks = 24
	ctx := context.Background()
	srv := redistest.Start(b, redistest.WithAOF())
	client := srv.Client(b)
	st := store.NewRedis(client, store.Options{KeyPrefix: "bench"})
	var trips atomic.Int64
	store.Observe(st, func(string, bool, time.Duration, bool) { trips.Add(1) })

	var delivered atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		delivered.Add(1)
	}))
	b.Cleanup(hook.Close)
	policy, err := NewURLPolicy(Allowlist{"127.0.0.1:*"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	key, err := jose.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "push.pem")
	if err := jose.WritePrivateKeyPEM(path, key); err != nil {
		b.Fatal(err)
	}
	signer, err := NewSigner(SignerOptions{Issuer: testIssuer, KeyFiles: []string{path}})
	if err != nil {
		b.Fatal(err)
	}
	log, _ := store.OperatorConcerns(st)
	d := NewDeliverer(st.Delivery(), NewHTTPSender(policy, signer, 0), DeliveryOptions{Holder: "bench", Log: log}, nil, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	b.Cleanup(func() { cancel(); <-done })
	r, err := NewRelay(RelayOptions{Configs: st.PushConfigs(), Events: st.EventLog(), Queue: d})
	if err != nil {
		b.Fatal(err)
	}
	for i := range tasks {
		c := store.PushConfig{Agent: "bench", TaskID: "t" + strconv.Itoa(i), ID: "c", Tenant: "acme", Version: a2a.V10, URL: hook.URL + "/hook"}
		if _, err := st.PushConfigs().Put(ctx, c); err != nil {
			b.Fatal(err)
		}
	}

	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu0, redis0 := processCPU(b), redistest.ServerCPU(b, client)
	trips.Store(0)
	delivered.Store(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range tasks {
		wg.Go(func() {
			task := "t" + strconv.Itoa(i)
			tick := time.Now()
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				if interval > 0 {
					tick = tick.Add(interval)
					time.Sleep(time.Until(tick))
				}
				payload := fmt.Sprintf(`{"artifactUpdate":{"taskId":%q,"contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"%d"}]},"append":true}}`, task, n)
				if _, err := r.Publish(ctx, Event{Agent: "bench", TaskID: task, Version: a2a.V10, Kind: a2a.EventArtifactUpdate, Payload: []byte(payload), Live: true}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for delivered.Load() < int64(b.N) && !b.Failed() {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	events := float64(b.N)
	b.ReportMetric(float64(processCPU(b)-cpu0)/1e3/events, "gw-µs/event")
	b.ReportMetric(float64(redistest.ServerCPU(b, client)-redis0)/1e3/events, "redis-µs/event")
	b.ReportMetric(float64(trips.Load())/events, "round-trips/event")
	reportCommands(b, client, events)
}

// reportCommands reports the scripts run and the commands Redis executed
// (a script's own commands included) per event, from INFO commandstats,
// and logs, with -v, each command's calls and µs per event, costliest
// first.
func reportCommands(b *testing.B, c *redis.Client, events float64) {
	stats := redistest.CommandStats(b, c)
	var scripts, commands float64
	for _, st := range stats {
		if st.Name == "evalsha" || st.Name == "eval" {
			scripts += st.Calls
		} else {
			commands += st.Calls
		}
	}
	b.Logf("per event:%s", redistest.PerUnit(stats, events))
	b.ReportMetric(scripts/events, "scripts/event")
	b.ReportMetric(commands/events, "commands/event")
}

// processCPU is this process's user and system CPU so far.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
