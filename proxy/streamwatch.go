package proxy

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// streamWatch ends a relayed stream for the reasons its reader cannot see:
// the gateway draining, or timeouts.stream_idle without an event carrying
// data. It closes the agent's body, which unblocks the reader, and counts
// the stream among the open ones while it lasts.
type streamWatch struct {
	idled atomic.Bool
	idle  *time.Timer
	limit time.Duration
	stop  []func()
}

func (g *Gateway) watchStream(s *Scope, body io.Closer) *streamWatch {
	open := g.metrics.OpenStreams.WithLabelValues(s.Agent.Name)
	open.Inc()
	sw := &streamWatch{limit: s.Agent.cfg.Timeouts.StreamIdle.D()}
	drain := context.AfterFunc(g.drainCtx, func() { body.Close() })
	sw.stop = []func(){open.Dec, func() { drain() }}
	if sw.limit > 0 {
		sw.idle = time.AfterFunc(sw.limit, func() {
			sw.idled.Store(true)
			body.Close()
		})
		sw.stop = append(sw.stop, func() { sw.idle.Stop() })
	}
	return sw
}

// sawData restarts the idle clock.
func (sw *streamWatch) sawData() {
	if sw.idle != nil {
		sw.idle.Reset(sw.limit)
	}
}

// idledOut reports whether the stream was ended for being idle.
func (sw *streamWatch) idledOut() bool { return sw.idled.Load() }

// done releases the watch.
func (sw *streamWatch) done() {
	for _, f := range sw.stop {
		f()
	}
}
