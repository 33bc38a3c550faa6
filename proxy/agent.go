package proxy

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/h1"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
)

// Agent is one upstream agent as the gateway serves it.
type Agent struct {
	// Name is the mount name: metrics and log lines say it.
	Name string
	// RecordKey is what the agent's ownership and dedupe records and
	// open-task counts are kept under, shared by every mount of the same
	// agent (config.RecordKeys): state that keeps tenants apart belongs to
	// the agent, not to a mount.
	RecordKey string
	// Upstream is the agent's base URL.
	Upstream *url.URL
	// PublicBase is the gateway URL the agent is mounted at (no trailing slash).
	PublicBase string
	cfg        config.Agent
	// transport carries request/answer exchanges, streams the event
	// streams; each is its pool below with a client span per call.
	transport, streams http.RoundTripper
	pools              [2]*h1.Pool
	// upstreamAuth is the Authorization value sent to the agent, if configured.
	upstreamAuth string
	// grpc reaches the agent's gRPC service; nil without a grpc section.
	grpc *grpcUpstream
	// Bridge says the one form the agent speaks and the forms served in
	// front of it; nil when callers must speak the agent's own.
	Bridge *Bridge
}

// newAgent builds an Agent with its own connection pools.
func newAgent(c config.Agent, publicURL, recordKey string) (*Agent, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", c.Name, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	dialer := &net.Dialer{Timeout: c.Timeouts.Connect.D(), KeepAlive: 30 * time.Second}
	a := &Agent{
		Name:       c.Name,
		RecordKey:  recordKey,
		Upstream:   u,
		PublicBase: strings.TrimSuffix(publicURL, "/") + "/agents/" + c.Name,
		cfg:        c,
		// The stream pool reads with a small buffer, because thousands of
		// idle streams each hold one connection and its buffer.
		pools: [2]*h1.Pool{agentPool(u, dialer, c.Timeouts.Connect.D(), 4096), agentPool(u, dialer, c.Timeouts.Connect.D(), 1024)},
	}
	a.transport = telemetry.Transport(a.pools[0], "call "+c.Name)
	a.streams = telemetry.Transport(a.pools[1], "call "+c.Name)
	if a.Bridge, err = ParseBridge(c.Bridge); err != nil {
		return nil, fmt.Errorf("agent %s: %w", c.Name, err)
	}
	if c.UpstreamAuthEnv != "" {
		a.upstreamAuth = os.Getenv(c.UpstreamAuthEnv)
	}
	return a, nil
}

// Limits of each agent pool: idle connections kept, and what is read before
// an answer's headers end (Transport's default).
const (
	maxIdlePerAgent    = 512
	maxAnswerHeadBytes = 10 << 20
)

// agentPool is a pool of connections to the agent at u; the dialer bounds
// the TCP handshake, connect the TLS one.
func agentPool(u *url.URL, dialer *net.Dialer, connect time.Duration, readBuffer int) *h1.Pool {
	return h1.NewPool(u, h1.Options{
		Dial: dialer.DialContext, Handshake: connect, ReadBuffer: readBuffer,
		MaxIdle: maxIdlePerAgent, MaxHeadBytes: maxAnswerHeadBytes,
	})
}

// Config returns the agent's configuration, to read only.
func (a *Agent) Config() *config.Agent { return &a.cfg }

// upstreamURL joins the agent's base with a path below it (escaped form
// kept, so the agent sees the ids exactly as the caller sent them).
func (a *Agent) upstreamURL(escapedPath, rawQuery string) *url.URL {
	u := *a.Upstream
	u.RawPath = a.Upstream.EscapedPath() + escapedPath
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		p = u.RawPath
	}
	u.Path = p
	u.RawQuery = rawQuery
	return &u
}

func (a *Agent) close() {
	for _, p := range a.pools {
		p.CloseIdle()
	}
	a.grpc.close()
}
