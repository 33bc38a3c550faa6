package config

import (
	"slices"
	"strings"
	"testing"
)

// withAgent is minimal with its agent's members replaced by members.
func withAgent(members string) string {
	return strings.Replace(minimal, `{name: demo, url: "http://127.0.0.1:9001"}`, `{name: demo, url: "http://127.0.0.1:9001", `+members+`}`, 1)
}

const grpcSection = `grpc: {listen: "127.0.0.1:50051", upstream: "127.0.0.1:50061"}`

// An empty offer is every version over JSON-RPC and HTTP+JSON, and over
// gRPC too when the agent has a gRPC listener; a given offer is kept as
// written, in its order.
func TestBridgeDefaults(t *testing.T) {
	rpc10, rest10, grpc10 := BridgeInterface{"1.0", "JSONRPC"}, BridgeInterface{"1.0", "HTTP+JSON"}, BridgeInterface{"1.0", "GRPC"}
	rpc03, rest03, grpc03 := BridgeInterface{"0.3", "JSONRPC"}, BridgeInterface{"0.3", "HTTP+JSON"}, BridgeInterface{"0.3", "GRPC"}
	for _, tc := range []struct {
		name, yaml string
		want       []BridgeInterface
	}{
		{"http agent", withAgent(`bridge: {agent: {version: "0.3", binding: JSONRPC}}`), []BridgeInterface{rpc10, rest10, rpc03, rest03}},
		{"grpc agent", withAgent(grpcSection + `, bridge: {agent: {version: "1.0", binding: GRPC}}`), []BridgeInterface{rpc10, rest10, grpc10, rpc03, rest03, grpc03}},
		{"given offer", withAgent(`bridge: {agent: {version: "1.0", binding: HTTP+JSON}, offer: [{version: "0.3", binding: JSONRPC}, {version: "1.0", binding: HTTP+JSON}]}`), []BridgeInterface{rpc03, rest10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Agents[0].Bridge.Offer; !slices.Equal(got, tc.want) {
				t.Fatalf("offer %v, want %v", got, tc.want)
			}
		})
	}
	cfg, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].Bridge != nil {
		t.Fatalf("an agent without a bridge section got one: %+v", cfg.Agents[0].Bridge)
	}
}

func TestBridgeRejects(t *testing.T) {
	for _, tc := range []struct {
		name, members, want string
	}{
		{"unknown version", `bridge: {agent: {version: "0.2", binding: JSONRPC}}`, `agents[0].bridge.agent.version: want "1.0" or "0.3", got "0.2"`},
		{"full version", `bridge: {agent: {version: "1.0.1", binding: JSONRPC}}`, `agents[0].bridge.agent.version: want "1.0" or "0.3", got "1.0.1"`},
		{"unknown binding", `bridge: {agent: {version: "1.0", binding: jsonrpc}}`, `agents[0].bridge.agent.binding: want JSONRPC, HTTP+JSON or GRPC, got "jsonrpc"`},
		{"no agent", `bridge: {offer: [{version: "1.0", binding: JSONRPC}]}`, `agents[0].bridge.agent.version: want "1.0" or "0.3", got ""`},
		{"grpc agent without grpc", `bridge: {agent: {version: "1.0", binding: GRPC}}`, "agents[0].bridge.agent.binding: GRPC needs the agent's grpc section"},
		{"grpc offer without grpc", `bridge: {agent: {version: "1.0", binding: JSONRPC}, offer: [{version: "1.0", binding: JSONRPC}, {version: "0.3", binding: GRPC}]}`, "agents[0].bridge.offer[1].binding: GRPC needs the agent's grpc section"},
		{"offered twice", `bridge: {agent: {version: "1.0", binding: JSONRPC}, offer: [{version: "1.0", binding: JSONRPC}, {version: "1.0", binding: JSONRPC}]}`, "agents[0].bridge.offer[1]: 1.0 over JSONRPC is offered twice"},
		{"bad offer", `bridge: {agent: {version: "1.0", binding: JSONRPC}, offer: [{version: "1.0", binding: JSONRPC}, {version: "2.0", binding: SOAP}]}`, `agents[0].bridge.offer[1].version: want "1.0" or "0.3", got "2.0"`},
		{"own form not offered", `bridge: {agent: {version: "0.3", binding: JSONRPC}, offer: [{version: "1.0", binding: JSONRPC}]}`, "agents[0].bridge.offer: must include the agent's own interface (0.3 over JSONRPC)"},
		{"unknown member", `bridge: {agent: {version: "1.0", binding: JSONRPC}, translate: all}`, "agents[0].bridge.translate: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(withAgent(tc.members)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
	// Every problem of a section is reported, not only the first.
	_, err := Parse([]byte(withAgent(`bridge: {agent: {version: "9", binding: X}, offer: [{version: "1.0", binding: Y}]}`)))
	for _, want := range []string{"bridge.agent.version", "bridge.agent.binding", "bridge.offer[0].binding", "bridge.offer: must include"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q among the problems, got %v", want, err)
		}
	}
}
