package config

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// AgentGRPC is one agent's `grpc:` section: the gateway's gRPC listener
// for the agent and how the agent's own gRPC service is reached. A gRPC
// method path names no agent, so each agent has a listener of its own.
type AgentGRPC struct {
	// Listen is the host:port of the gateway's gRPC listener for this
	// agent. Without TLS it must be a loopback address (h2c).
	Listen string `yaml:"listen"`
	// PublicAddress is the host:port written into the rewritten card's
	// gRPC interface. Default: Listen.
	PublicAddress string `yaml:"public_address"`
	// Upstream is the host:port of the agent's gRPC service. Default: the
	// gRPC interface the agent's card names, read when first needed.
	Upstream string `yaml:"upstream"`
	// UpstreamTLS reaches the agent over TLS (HTTP/2 by ALPN) instead of
	// h2c.
	UpstreamTLS bool `yaml:"upstream_tls"`
	// TLS serves the listener over TLS; without it the listener speaks h2c
	// (HTTP/2 with prior knowledge) and must be on loopback.
	TLS *ListenerTLS `yaml:"tls"`
}

// ListenerTLS is a listener's certificate and key, PEM files.
type ListenerTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// GRPCLimits bound the gRPC listeners' connections and messages.
type GRPCLimits struct {
	// MaxRequestBytes bounds one request message. Default
	// limits.max_body_bytes.
	MaxRequestBytes int64 `yaml:"max_request_bytes"`
	// MaxAnswerBytes bounds one answer message of an agent, unary or
	// streamed. Default limits.max_event_bytes.
	MaxAnswerBytes int64 `yaml:"max_answer_bytes"`
	// MaxConcurrentStreams caps the calls open at once on one connection
	// (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). Default 100.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// PingInterval is how long a connection may be silent before the
	// gateway sends a keep-alive PING. Default 2m.
	PingInterval duration.Duration `yaml:"ping_interval"`
	// PingTimeout closes a connection whose PING is not answered in this
	// time. Default 20s.
	PingTimeout duration.Duration `yaml:"ping_timeout"`
	// IdleTimeout closes a connection without open calls for this long.
	// Default limits.idle_timeout.
	IdleTimeout duration.Duration `yaml:"idle_timeout"`
}

// applyGRPCDefaults fills limits.grpc from the limits it defaults to; it
// runs after those have their defaults.
func (c *Config) applyGRPCDefaults() {
	g := &c.Limits.GRPC
	if g.MaxRequestBytes == 0 {
		g.MaxRequestBytes = c.Limits.MaxBodyBytes
	}
	if g.MaxAnswerBytes == 0 {
		g.MaxAnswerBytes = int64(c.Limits.MaxEventBytes)
	}
	if g.MaxConcurrentStreams == 0 {
		g.MaxConcurrentStreams = 100
	}
	if g.PingInterval == 0 {
		g.PingInterval = duration.Duration(2 * time.Minute)
	}
	if g.PingTimeout == 0 {
		g.PingTimeout = duration.Duration(20 * time.Second)
	}
	if g.IdleTimeout == 0 {
		g.IdleTimeout = c.Limits.IdleTimeout
	}
	for i := range c.Agents {
		if a := c.Agents[i].GRPC; a != nil && a.PublicAddress == "" {
			a.PublicAddress = a.Listen
		}
	}
}

// validateGRPC checks limits.grpc and every agent's grpc section: each
// listener on an address of its own, h2c only on loopback.
func (c *Config) validateGRPC(add func(field, format string, args ...any)) {
	g := c.Limits.GRPC
	// A limit defaulted from a bad one is that one's problem, reported
	// under its name.
	if g.MaxRequestBytes < 1024 && g.MaxRequestBytes != c.Limits.MaxBodyBytes {
		add("limits.grpc.max_request_bytes", "must be at least 1024")
	}
	if g.MaxAnswerBytes < 1024 && g.MaxAnswerBytes != int64(c.Limits.MaxEventBytes) {
		add("limits.grpc.max_answer_bytes", "must be at least 1024")
	}
	if g.MaxConcurrentStreams < 1 || g.MaxConcurrentStreams > 10000 {
		add("limits.grpc.max_concurrent_streams", "must be between 1 and 10000")
	}
	if d := g.PingInterval.D(); d < time.Second {
		add("limits.grpc.ping_interval", "must be at least 1s")
	}
	if d := g.PingTimeout.D(); d < 100*time.Millisecond || d > g.PingInterval.D() {
		add("limits.grpc.ping_timeout", "must be between 100ms and limits.grpc.ping_interval")
	}
	if g.IdleTimeout.D() < time.Second && g.IdleTimeout != c.Limits.IdleTimeout {
		add("limits.grpc.idle_timeout", "must be at least 1s")
	}
	used := map[string]string{c.Listen: "listen", c.AdminListen: "admin_listen"}
	for i, a := range c.Agents {
		if a.GRPC == nil {
			continue
		}
		f := fmt.Sprintf("agents[%d].grpc", i)
		host, ok := checkHostPort(a.GRPC.Listen)
		switch {
		case !ok:
			add(f+".listen", "want host:port, got %q", a.GRPC.Listen)
		case used[a.GRPC.Listen] != "":
			add(f+".listen", "%q is already %s", a.GRPC.Listen, used[a.GRPC.Listen])
		case a.GRPC.TLS == nil && !loopbackHost(host):
			add(f+".listen", "h2c (no tls) is served on loopback only, got %q: set tls for any other address", a.GRPC.Listen)
		}
		used[a.GRPC.Listen] = f + ".listen"
		if _, ok := checkHostPort(a.GRPC.PublicAddress); !ok {
			add(f+".public_address", "want host:port, got %q", a.GRPC.PublicAddress)
		}
		if _, ok := checkHostPort(a.GRPC.Upstream); !ok && a.GRPC.Upstream != "" {
			add(f+".upstream", "want the agent's gRPC host:port, got %q", a.GRPC.Upstream)
		}
		if t := a.GRPC.TLS; t != nil && (t.CertFile == "" || t.KeyFile == "") {
			add(f+".tls", "cert_file and key_file are both required")
		}
	}
}

// checkHostPort reports whether s is host:port with a host and a port
// number, and returns the host.
func checkHostPort(s string) (string, bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", false
	}
	n, err := strconv.Atoi(port)
	return host, err == nil && n >= 0 && n <= 65535
}

// loopbackHost reports whether host names the loopback interface.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
