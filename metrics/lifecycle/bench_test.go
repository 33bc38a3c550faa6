package lifecycle_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

// BenchmarkRecordAndApply measures an event from the observer to its saved
// record on the embedded store: the request path pays only the enqueue,
// the workers the rest.
func BenchmarkRecordAndApply(b *testing.B) {
	st := store.NewMemory(store.Options{})
	b.Cleanup(func() { _ = st.Close() })
	o := lifecycle.Options{
		Store: st.Lifecycle(), Agents: []lifecycle.Agent{{Name: agentName}},
		Metrics: metrics.New(prometheus.NewRegistry()).Lifecycle, Logger: slog.New(slog.DiscardHandler),
	}
	o.Config.ApplyDefaults()
	o.Config.QueueSize = 1 << 16
	tr, err := lifecycle.New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tr.Close)
	states := []a2a.State{a2a.StateSubmitted, a2a.StateWorking, a2a.StateUnknown, a2a.StateCompleted}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ev := lifecycle.TaskEvent{Agent: agentName, TaskID: "t" + strconv.Itoa(i/len(states)), Tenant: "acme", Version: a2a.V10, State: states[i%len(states)]}
		for tr.Record(context.Background(), ev) != nil {
			// The queue is full: let the workers catch up, as a real
			// gateway's would between bursts.
			if err := tr.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tr.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
}
