package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/proxy/card"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// Sources is where the relay's events come from besides the callers'
// own requests: the upstream subscriber, which follows every task with a
// push config at its agent, and the native webhook agents push to.
type Sources struct {
	sub     *push.Subscriber
	configs store.PushConfigs
	inbound http.Handler
	orphan  time.Duration
	log     *slog.Logger
	stop    context.CancelFunc
	done    chan struct{}
}

// maxScanInterval bounds how long a task with a push config waits for a
// replica to follow it.
const maxScanInterval = time.Second

// StartSources starts the subscriber, which publishes through p; Close
// stops it. observe, when set, sees every event the sources publish, which
// never passed through the proxy's observers.
func StartSources(cfg *config.Config, st store.Store, px *proxy.Gateway, p *Relay, tracker push.Acceptor, observe func(context.Context, push.Event), log *slog.Logger) (*Sources, error) {
	scan := maxScanInterval
	agents := make([]push.SourceAgent, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		ps := a.Push.PushSource
		var v a2a.Version
		if pa, ok := px.Agent(a.Name); ok && pa.Bridge != nil {
			v = pa.Bridge.Agent.Version
		}
		agents = append(agents, push.SourceAgent{
			Name: a.Name, Mode: push.SourceMode(ps.Source), Version: v, TenantRouting: a.TenantRouting,
			LeaseTTL: ps.LeaseTTL.D(), MaxBackoff: ps.ResubscribeMaxBackoff.D(), MaxStreamFailures: ps.MaxStreamFailures,
			PollInterval: ps.PollInterval.D(), ReconcileInterval: ps.ReconcileInterval.D(),
		})
		// A dead holder's tasks are found soon after its lease runs out.
		scan = min(scan, ps.LeaseTTL.D()/3)
	}
	cards := &cardCapabilities{px: px, client: &http.Client{Transport: telemetry.Transport(nil, "fetch card"), Timeout: cfg.Limits.CardFetchTimeout.D(), CheckRedirect: card.NoRedirects}, maxBytes: cfg.Limits.MaxCardBytes, seen: map[string]cachedCapabilities{}}
	sub, err := push.NewSubscriber(push.SubscriberOptions{
		Relay:        p.relay,
		Configs:      st.PushConfigs(),
		Sources:      st.PushSources(),
		Leases:       st.Lifecycle(),
		Tracker:      tracker,
		Upstream:     px,
		Capabilities: cards.get,
		Agents:       agents,
		InboundURL:   cfg.PublicURL + strings.TrimSuffix(push.InboundPath, "/"),
		Holder:       replicaName(),
		ScanInterval: scan,
		Observe:      observe,
		Metrics:      sourceMetrics{p.m},
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	// What the proxy observes goes through the subscriber, which publishes
	// it again when the store fails to take it.
	p.sink = sub.Publish
	ctx, cancel := context.WithCancel(context.Background())
	ps := &Sources{
		sub: sub, configs: st.PushConfigs(), inbound: sub.Inbound(int64(cfg.Limits.MaxEventBytes)), orphan: cfg.Lifecycle.OrphanAfter.D(),
		log: log, stop: cancel, done: make(chan struct{}),
	}
	go func() {
		defer close(ps.done)
		sub.Run(ctx)
	}()
	return ps, nil
}

// Close stops following tasks; their leases run out and other replicas
// take them over.
func (ps *Sources) Close() {
	ps.stop()
	<-ps.done
}

// ServeInbound serves the native webhook, the paths under
// push.InboundPath on the public listener.
func (ps *Sources) ServeInbound(w http.ResponseWriter, r *http.Request) {
	ps.inbound.ServeHTTP(w, r)
}

// Followed is the lifecycle tracker's Followed hook: the sources follow
// every task with a push config at its agent, so the tracker's sweep need
// not read those.
func (ps *Sources) Followed(ctx context.Context, agent, taskID string) (bool, error) {
	configs, err := ps.configs.List(ctx, agent, taskID)
	return len(configs) > 0, err
}

// OnWatchdog is the lifecycle tracker's OnWatchdog hook: the consumers of
// a watched task hear that it was orphaned or escalated.
func (ps *Sources) OnWatchdog(ctx context.Context, agent, taskID, action string, state a2a.State) {
	n := push.WatchdogNotice{Action: action, State: state}
	if action == lifecycle.WatchdogOrphaned {
		n.Reason = fmt.Sprintf("the agent reported no activity for %s and the task has not ended", ps.orphan)
		n.LetGo = true
	} else {
		n.Reason = "the task stayed " + state.String() + " for longer than the agent's watchdog budget"
	}
	if err := ps.sub.Watchdog(ctx, agent, taskID, n); err != nil {
		ps.log.Warn("push: watchdog notification not published", "agent", agent, "task_id", taskID, "action", action, "err", err)
	}
}

// sourceMetrics feeds the subscriber's events to the push metrics.
type sourceMetrics struct{ m *metrics.Push }

func (s sourceMetrics) Subscriptions(agent string, delta int) {
	s.m.Subscriptions.WithLabelValues(agent).Add(float64(delta))
}

func (s sourceMetrics) Resubscribed(agent string) {
	s.m.Resubscribes.WithLabelValues(agent).Inc()
}

func (s sourceMetrics) PollingFallback(agent string) {
	s.m.PollingFallbacks.WithLabelValues(agent).Inc()
}

func (s sourceMetrics) TakenOver(agent string) {
	s.m.LeaseTakeovers.WithLabelValues(agent).Inc()
}

// replicaName names this process in subscription leases: unique per
// process, readable in Redis.
func replicaName() string {
	host, _ := os.Hostname()
	if len(host) > 64 {
		host = host[:64]
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// cardCapabilities reads what each agent's own card says it can do, for
// push.SourceAuto, and remembers it for the agent's card_ttl.
type cardCapabilities struct {
	px       *proxy.Gateway
	client   *http.Client
	maxBytes int64 // limits.max_card_bytes
	mu       sync.Mutex
	seen     map[string]cachedCapabilities
}

type cachedCapabilities struct {
	caps  push.Capabilities
	until time.Time
}

func (c *cardCapabilities) get(ctx context.Context, agent string) (push.Capabilities, error) {
	c.mu.Lock()
	hit, ok := c.seen[agent]
	c.mu.Unlock()
	if ok && time.Now().Before(hit.until) {
		return hit.caps, nil
	}
	a, ok := c.px.Agent(agent)
	if !ok {
		return push.Capabilities{}, fmt.Errorf("unknown agent %q", agent)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.Upstream.String()+a.Config().CardPath, nil)
	if err != nil {
		return push.Capabilities{}, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return push.Capabilities{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes))
	if err != nil {
		return push.Capabilities{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return push.Capabilities{}, fmt.Errorf("agent card: HTTP %d", resp.StatusCode)
	}
	// Both versions spell these two capabilities alike.
	var card struct {
		Capabilities struct {
			Streaming         bool `json:"streaming"`
			PushNotifications bool `json:"pushNotifications"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		return push.Capabilities{}, fmt.Errorf("agent card: %w", err)
	}
	caps := push.Capabilities{Streaming: card.Capabilities.Streaming, PushNotifications: card.Capabilities.PushNotifications}
	c.mu.Lock()
	c.seen[agent] = cachedCapabilities{caps: caps, until: time.Now().Add(a.Config().CardTTL.D())}
	c.mu.Unlock()
	return caps, nil
}
