package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkDedupedSend makes, on a real redis-server, the store calls of a
// deduplicated one-shot send that creates a task, as the gateway makes
// them: the dedupe claim, the ownership records of the answer's task and
// context, the task's lifecycle record with its indexes, and the stored
// answer. It reports the server's CPU per send (INFO used_cpu_sys and
// used_cpu_user, which include reading requests and writing replies) and
// its time in commands per send (INFO commandstats); with -v it logs the
// commands' share, the figure the gateway's Redis CPU per deduplicated send
// is made of. Many sends run at once, so the shared pipelines and the
// batched lifecycle saves fill as they do under load.
func BenchmarkDedupedSend(b *testing.B) {
	ctx := context.Background()
	client := redistest.Start(b).Client(b)
	s := NewRedis(client, Options{})
	b.Cleanup(func() { _ = s.Close() })
	dd, own, lc := s.Dedupe(), s.Ownership(), s.Lifecycle()
	answer := bytes.Repeat([]byte("a"), 1100)
	owner := Owner{Tenant: "bench", Subject: "client-0"}
	fp := strings.Repeat("f", 64)
	type step func(n string) error
	claim := func(n string) error {
		if _, out, err := dd.Claim(ctx, "bench", "load-"+n, fp, "holder-"+n+"-0123456789", 30*time.Second, 24*time.Hour); err != nil || out != ClaimNew {
			return fmt.Errorf("claim: %v, %v", out, err)
		}
		return nil
	}
	ownership := func(n string) error {
		_, err := own.Claim(ctx, "bench", []Ref{{Kind: RefTask, ID: "task-" + n}, {Kind: RefContext, ID: "ctx-" + n}}, owner)
		return err
	}
	save := func(n string) error {
		now := time.Now().UTC()
		rec := TaskLifecycle{Agent: "bench", TaskID: "task-" + n, Tenant: "bench", Subject: "client-0", ContextID: "ctx-" + n, Version: "1.0",
			State: "completed", StateSince: now, Created: now, LastActivity: now,
			History: []TaskTransition{{From: "unknown", To: "completed", At: now}}, EndedBy: EndedByAgent}
		if _, ok, err := lc.Save(ctx, rec, 0); err != nil || !ok {
			return fmt.Errorf("lifecycle save: %v, %v", ok, err)
		}
		return nil
	}
	complete := func(n string) error {
		if ok, err := dd.Complete(ctx, "bench", "load-"+n, "holder-"+n+"-0123456789", answer, 24*time.Hour); err != nil || !ok {
			return fmt.Errorf("complete: %v, %v", ok, err)
		}
		return nil
	}
	var seq atomic.Int64
	run := func(b *testing.B, steps ...step) {
		do := func() error {
			n := strconv.FormatInt(seq.Add(1), 10)
			for _, st := range steps {
				if err := st(n); err != nil {
					return err
				}
			}
			return nil
		}
		// A first send loads the scripts, so their EVALs are not counted.
		if err := do(); err != nil {
			b.Fatal(err)
		}
		resetStats(b, client)
		cpu0 := redistest.ServerCPU(b, client)
		b.SetParallelism(32)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := do(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		cpu1 := redistest.ServerCPU(b, client)
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "redis-cpu-µs/op")
		logCommandStats(b, client)
	}
	b.Run("send", func(b *testing.B) { run(b, claim, ownership, save, complete) })
	b.Run("send-no-dedupe", func(b *testing.B) { run(b, ownership, save) })
	b.Run("claim", func(b *testing.B) { run(b, claim) })
	b.Run("ownership", func(b *testing.B) { run(b, ownership) })
	b.Run("lifecycle-save", func(b *testing.B) { run(b, save) })
	b.Run("claim+complete", func(b *testing.B) { run(b, claim, complete) })
}

// logCommandStats logs, with -v, the calls and µs per op of each command
// (a script's µs include the commands it runs).
func logCommandStats(b *testing.B, client *redis.Client) {
	b.Helper()
	b.Logf("per op (N=%d):%s", b.N, redistest.PerUnit(redistest.CommandStats(b, client), float64(b.N)))
}
