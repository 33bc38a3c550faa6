package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
)

// Each agent with a grpc section has a gRPC listener of its own: a gRPC
// method path names no agent, 0.3 messages carry no tenant, and routing by
// :authority would need a DNS name per agent. The listener is a net/http
// server speaking HTTP/2 only (TLS, or h2c on loopback), whose handler is
// the proxy's pipeline with the agent fixed, and which answers the
// grpc.health.v1 service itself.

// grpcServices are the services a gRPC listener reports the health of:
// the server as a whole ("") and both A2A services.
var grpcServices = map[string]bool{"": true, "lf.a2a.v1.A2AService": true, "a2a.v1.A2AService": true}

const (
	healthCheckPath = "/grpc.health.v1.Health/Check"
	healthWatchPath = "/grpc.health.v1.Health/Watch"
	// healthRecheck is how often a Watch looks at the readiness again.
	healthRecheck = 5 * time.Second
	// maxHealthRequest bounds a health request message (a service name).
	maxHealthRequest = 4 << 10
)

// grpcServer is the server of one agent's gRPC listener.
func (g *Gateway) grpcServer(a config.Agent) (*http.Server, error) {
	pipeline := g.proxy.GRPCHandler(a.Name)
	h := telemetry.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case healthCheckPath, healthWatchPath:
			g.serveHealth(w, r)
		default:
			pipeline.ServeHTTP(w, r)
		}
	}), "a2a-gateway")
	l := g.cfg.Limits
	srv := newServer(h, l, 2*l.MaxHeaderBytes, g.log)
	srv.IdleTimeout = l.GRPC.IdleTimeout.D()
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP2(true)
	srv.HTTP2 = &http.HTTP2Config{
		MaxConcurrentStreams: l.GRPC.MaxConcurrentStreams,
		SendPingTimeout:      l.GRPC.PingInterval.D(),
		PingTimeout:          l.GRPC.PingTimeout.D(),
	}
	if a.GRPC.TLS == nil {
		srv.Protocols.SetUnencryptedHTTP2(true)
		return srv, nil
	}
	cert, err := tls.LoadX509KeyPair(a.GRPC.TLS.CertFile, a.GRPC.TLS.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("agent %s: grpc.tls: %w", a.Name, err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return srv, nil
}

// checkGRPCTLS loads every gRPC listener's certificate and key, for Check.
func checkGRPCTLS(cfg *config.Config) error {
	var errs []error
	for i, a := range cfg.Agents {
		if a.GRPC == nil || a.GRPC.TLS == nil {
			continue
		}
		if _, err := tls.LoadX509KeyPair(a.GRPC.TLS.CertFile, a.GRPC.TLS.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("agents[%d].grpc.tls: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// serveGRPC serves one gRPC listener: over TLS when it has a certificate.
func serveGRPC(srv *http.Server, l net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(l, "", "")
	}
	return srv.Serve(l)
}

// grpcListeners opens the gRPC listeners Serve was not given.
func (g *Gateway) grpcListeners(given map[string]net.Listener) (map[string]net.Listener, error) {
	out := make(map[string]net.Listener, len(given))
	for _, a := range g.cfg.Agents {
		if a.GRPC == nil {
			continue
		}
		if l, ok := given[a.Name]; ok {
			out[a.Name] = l
			continue
		}
		l, err := net.Listen("tcp", a.GRPC.Listen)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, fmt.Errorf("agent %s: grpc.listen: %w", a.Name, err)
		}
		out[a.Name] = l
	}
	return out, nil
}

// servingStatus is the health the gRPC listeners report: SERVING while
// the gateway is ready (its store answers) and not shutting down.
func (g *Gateway) servingStatus(ctx context.Context) healthpb.HealthCheckResponse_ServingStatus {
	select {
	case <-g.draining:
		return healthpb.HealthCheckResponse_NOT_SERVING
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := g.store.Ping(ctx); err != nil {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}

// serveHealth answers grpc.health.v1.Health: Check with the status now,
// Watch with the status and each change of it, until the caller leaves or
// the gateway ends its streams. It needs no credential, as health checks
// of load balancers carry none.
func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHealthRequest+5))
	var req healthpb.HealthCheckRequest
	if err == nil {
		var msg []byte
		if msg, err = grpcwire.ReadMessage(bytes.NewReader(body), maxHealthRequest); err == nil {
			err = proto.Unmarshal(msg, &req)
		}
	}
	if err != nil {
		writeGRPCStatus(w, codes.InvalidArgument, "the health check request cannot be read")
		return
	}
	known := grpcServices[req.GetService()]
	if r.URL.Path == healthCheckPath {
		if !known {
			writeGRPCStatus(w, codes.NotFound, "unknown service")
			return
		}
		w.Header().Set("Content-Type", grpcwire.ContentType)
		w.WriteHeader(http.StatusOK)
		writeHealth(w, g.servingStatus(r.Context()))
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
		return
	}
	g.watchHealth(w, r, known)
}

// watchHealth streams the status of a service: SERVICE_UNKNOWN for one
// the listener does not serve, as the protocol asks.
func (g *Gateway) watchHealth(w http.ResponseWriter, r *http.Request, known bool) {
	w.Header().Set("Content-Type", grpcwire.ContentType)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	status := healthpb.HealthCheckResponse_SERVICE_UNKNOWN
	if known {
		status = g.servingStatus(r.Context())
	}
	if writeHealth(w, status) != nil || rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(healthRecheck)
	defer tick.Stop()
	draining := g.draining
	for {
		select {
		case <-r.Context().Done():
			return
		case <-g.proxy.StreamsDrained():
			w.Header().Set(http.TrailerPrefix+"Grpc-Status", strconv.Itoa(int(codes.Unavailable)))
			w.Header().Set(http.TrailerPrefix+"Grpc-Message", "the gateway is shutting down")
			return
		case <-draining:
			draining = nil // once
		case <-tick.C:
		}
		if !known {
			continue
		}
		if now := g.servingStatus(r.Context()); now != status {
			status = now
			if writeHealth(w, status) != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

func writeHealth(w io.Writer, s healthpb.HealthCheckResponse_ServingStatus) error {
	msg, err := proto.Marshal(&healthpb.HealthCheckResponse{Status: s})
	if err != nil {
		return err
	}
	_, err = w.Write(grpcwire.AppendMessage(nil, msg))
	return err
}

// writeGRPCStatus answers a health call with a status alone.
func writeGRPCStatus(w http.ResponseWriter, c codes.Code, msg string) {
	h := w.Header()
	h.Set("Content-Type", grpcwire.ContentType)
	h.Set("Grpc-Status", strconv.Itoa(int(c)))
	h.Set("Grpc-Message", msg)
	w.WriteHeader(http.StatusOK)
}
