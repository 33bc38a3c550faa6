package proxy

import (
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
)

// grpcUpstream is how an agent's gRPC service is reached: HTTP/2, over
// TLS or h2c, on a connection pool of the agent's own. HTTP/2 multiplexes
// every call, unary or streaming, onto few connections.
type grpcUpstream struct {
	// base is scheme://host:port of the agent's gRPC service.
	base      string
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
		base:      scheme + "://" + c.GRPC.Upstream,
		pool:      pool,
		transport: telemetry.Transport(pool, "call "+c.Name),
	}
}

func (u *grpcUpstream) close() {
	if u != nil {
		u.pool.CloseIdleConnections()
	}
}
