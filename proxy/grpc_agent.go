package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
)

// grpcUpstream is how an agent's gRPC service is reached: HTTP/2, over
// TLS or h2c, on a connection pool of the agent's own. HTTP/2 multiplexes
// every call, unary or streaming, onto few connections.
type grpcUpstream struct {
	// scheme is http (h2c) or https; fixed is grpc.upstream, "" when the
	// address is the one the agent's card names, read once when first
	// needed into resolved.
	scheme    string
	fixed     string
	resolved  atomic.Pointer[string]
	pool      *http.Transport
	transport http.RoundTripper
}

// newGRPCUpstream is the agent's gRPC pool, nil without a grpc section.
func newGRPCUpstream(c config.Agent, l config.GRPCLimits) *grpcUpstream {
	if c.GRPC == nil {
		return nil
	}
	dialer := &net.Dialer{Timeout: c.Timeouts.Connect.D(), KeepAlive: 30 * time.Second}
	protocols := new(http.Protocols)
	scheme := "http"
	if c.GRPC.UpstreamTLS {
		protocols.SetHTTP2(true)
		scheme = "https"
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	pool := &http.Transport{
		Proxy:               nil, // agents are reached directly
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: c.Timeouts.Connect.D(),
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		Protocols:           protocols,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: l.PingInterval.D(),
			PingTimeout:     l.PingTimeout.D(),
		},
	}
	return &grpcUpstream{
		scheme:    scheme,
		fixed:     c.GRPC.Upstream,
		pool:      pool,
		transport: telemetry.Transport(pool, "call "+c.Name),
	}
}

func (u *grpcUpstream) close() {
	if u != nil {
		u.pool.CloseIdleConnections()
	}
}

// grpcBase is scheme://host:port of a's gRPC service: grpc.upstream, or
// the address the agent's card names (Options.GRPCUpstream), read once.
func (g *Gateway) grpcBase(ctx context.Context, a *Agent) (string, error) {
	u := a.grpc
	addr := u.fixed
	if addr == "" {
		if p := u.resolved.Load(); p != nil {
			addr = *p
		} else {
			if g.grpcUpstream == nil {
				return "", fmt.Errorf("agent %s: no gRPC upstream configured", a.Name)
			}
			found, err := g.grpcUpstream(ctx, a)
			if err != nil {
				return "", fmt.Errorf("agent %s: the gRPC address of its card: %w", a.Name, err)
			}
			if _, _, err := net.SplitHostPort(found); err != nil || found == "" {
				return "", fmt.Errorf("agent %s: its card names no gRPC host:port (got %q); set grpc.upstream", a.Name, clip(found))
			}
			u.resolved.Store(&found)
			addr = found
		}
	}
	return u.scheme + "://" + addr, nil
}
