// Package goagent is the interop suite's agent built with
// github.com/a2aproject/a2a-go: its default request handler served over
// one binding, JSON-RPC or gRPC (A2A 0.3, the only version that SDK
// speaks), with the SDK's HTTP push sender, plus an out-of-band probe under
// /interop/ that the cases read.
package goagent

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2agrpc"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/a2asrv/push"
)

// JSONRPCPath is where the agent serves JSON-RPC, relative to its base URL.
const JSONRPCPath = "/jsonrpc"

const pushTimeout = 5 * time.Second

// Agent is the agent's servers: HTTP (the card, the probe, and JSON-RPC
// when that is its binding) and, when its binding is gRPC, a gRPC server
// (the a2a.v1 service).
type Agent struct {
	HTTP http.Handler
	// GRPC is nil for an agent over JSON-RPC.
	GRPC *grpc.Server
}

// New returns the agent serving one binding, JSON-RPC or gRPC, and
// advertising only it: at the given base URL, or at the gRPC host:port.
// It serves one interface so that the gateway in front of it bridges every
// other.
func New(baseURL string, transport a2a.TransportProtocol, grpcAddress string, log *slog.Logger) *Agent {
	st := newState()
	handler := a2asrv.NewHandler(
		&executor{st: st},
		a2asrv.WithLogger(log),
		a2asrv.WithEventQueueManager(countingQueues{Manager: eventqueue.NewInMemoryManager(), st: st}),
		a2asrv.WithPushNotifications(
			recordingPushStore{PushConfigStore: push.NewInMemoryStore(), st: st},
			push.NewHTTPPushSender(&push.HTTPSenderConfig{Timeout: pushTimeout}),
		),
	)
	mux := http.NewServeMux()
	agent := &Agent{HTTP: mux}
	url := grpcAddress
	if transport == a2a.TransportProtocolGRPC {
		agent.GRPC = grpc.NewServer()
		a2agrpc.NewHandler(handler).RegisterWith(agent.GRPC)
	} else {
		url = strings.TrimRight(baseURL, "/") + JSONRPCPath
		mux.Handle("POST "+JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	}
	mux.Handle("GET "+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card(url, transport)))
	st.mount(mux)
	return agent
}

// card lists the agent's one interface; a gRPC one by its bare host:port,
// which the SDKs dial as is.
func card(url string, transport a2a.TransportProtocol) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:                 "interop-go-agent",
		Description:          "Agent built with a2a-go for the a2a-gateway interoperability suite.",
		URL:                  url,
		PreferredTransport:   transport,
		AdditionalInterfaces: []a2a.AgentInterface{{URL: url, Transport: transport}},
		ProtocolVersion:      "0.3.0",
		Version:              "1.0.0",
		Capabilities:         a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:    []string{"text/plain"},
		DefaultOutputModes:   []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID:          "scenarios",
			Name:        "Scenarios",
			Description: "The first word of the text picks the task lifecycle: complete, stream N, hold, input.",
			Tags:        []string{"interop"},
			Examples:    []string{"complete hello", "stream 3", "hold", "input"},
		}},
	}
}
