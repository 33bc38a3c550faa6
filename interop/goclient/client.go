// Package goclient runs the interop cases with the github.com/a2aproject/a2a-go
// client (A2A 0.3 over JSON-RPC or gRPC) against one agent through the gateway. The
// client knows the agent only by the card it fetches from the gateway. The
// JavaScript runner (interop/js/lib/cases.mjs) runs the same cases with
// @a2a-js/sdk.
package goclient

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/probe"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
)

// Config says where the agent is and who calls it.
type Config struct {
	// Base is the agent's base URL on the gateway, e.g.
	// http://127.0.0.1:8080/agents/go, where the card is read.
	Base string
	// GRPCAddress is the gateway's gRPC listener for the agent
	// (host:port), the only gRPC interface the card may list.
	GRPCAddress string
	// OverGRPC makes the client call that listener over gRPC instead of
	// JSON-RPC.
	OverGRPC bool
	// Token is the caller's bearer token; OtherToken belongs to a subject
	// of another tenant.
	Token, OtherToken string
	// Probe reads the agent's counters and the webhook receiver.
	Probe *probe.Client
	// CaseTimeout bounds each case.
	CaseTimeout time.Duration
}

// Outcome is one case's result as the runner saw it.
type Outcome struct {
	Case   report.Case
	Status report.Status // Pass or Fail
	Detail string
}

// env is what the cases use.
type env struct {
	client *a2aclient.Client
	other  *a2aclient.Client
	probe  *probe.Client
	// grpc is set when the clients call over gRPC.
	grpc bool
}

// Run discovers the agent from its card (the card case), then runs the
// other cases in order.
func Run(ctx context.Context, cfg Config, cases []report.Case) []Outcome {
	var out []Outcome
	e, detail, err := setup(ctx, cfg)
	if err != nil {
		out = append(out, Outcome{Case: report.Card, Status: report.Fail, Detail: err.Error()})
	} else {
		out = append(out, Outcome{Case: report.Card, Status: report.Pass, Detail: detail})
	}
	for _, c := range cases {
		if c == report.Card {
			continue
		}
		if e == nil {
			out = append(out, Outcome{Case: c, Status: report.Fail, Detail: "no client: card discovery failed (" + err.Error() + ")"})
			continue
		}
		out = append(out, runCase(ctx, cfg.CaseTimeout, c, e))
	}
	return out
}

func runCase(ctx context.Context, timeout time.Duration, c report.Case, e *env) Outcome {
	run, ok := cases[c]
	if !ok {
		return Outcome{Case: c, Status: report.Fail, Detail: "the a2a-go runner has no such case"}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	detail, err := run(ctx, e)
	if err != nil {
		return Outcome{Case: c, Status: report.Fail, Detail: err.Error()}
	}
	return Outcome{Case: c, Status: report.Pass, Detail: detail}
}

func setup(ctx context.Context, cfg Config) (*env, string, error) {
	mine, detail, err := discover(ctx, cfg, cfg.Token)
	if err != nil {
		return nil, "", err
	}
	theirs, _, err := discover(ctx, cfg, cfg.OtherToken)
	if err != nil {
		return nil, "", err
	}
	return &env{client: mine, other: theirs, probe: cfg.Probe, grpc: cfg.OverGRPC}, detail, nil
}

// discover fetches the agent's card from the gateway, checks that it was
// rewritten for the gateway, and builds a client from it alone.
func discover(ctx context.Context, cfg Config, token string) (*a2aclient.Client, string, error) {
	base := strings.TrimRight(cfg.Base, "/")
	// No client timeout: streams last as long as their case allows.
	httpClient := &http.Client{}
	card, err := agentcard.NewResolver(httpClient).Resolve(ctx, base)
	if err != nil {
		return nil, "", fmt.Errorf("card: %w", err)
	}
	// A 0.3 card that names no preferred transport prefers JSON-RPC.
	preferred := cmp.Or(card.PreferredTransport, a2a.TransportProtocolJSONRPC)
	ifaces := append([]a2a.AgentInterface{{URL: card.URL, Transport: preferred}}, card.AdditionalInterfaces...)
	want := a2a.TransportProtocolJSONRPC
	if cfg.OverGRPC {
		want = a2a.TransportProtocolGRPC
	}
	used := ""
	for _, i := range ifaces {
		// A gRPC interface is a bare host:port: the gateway's listener.
		atGateway := strings.HasPrefix(i.URL, base+"/") || i.URL == base
		if i.Transport == a2a.TransportProtocolGRPC {
			atGateway = i.URL == cfg.GRPCAddress
		}
		if !atGateway {
			return nil, "", fmt.Errorf("the card advertises %s (%s), outside the gateway", i.URL, i.Transport)
		}
		if i.Transport == want && used == "" {
			used = i.URL
		}
	}
	if used == "" {
		return nil, "", fmt.Errorf("the card offers no %s interface: %v", want, ifaces)
	}
	if !hasBearerScheme(card) {
		return nil, "", fmt.Errorf("the card does not describe the gateway's bearer authentication: %v", card.SecuritySchemes)
	}
	client, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithJSONRPCTransport(httpClient),
		a2aclient.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{want}}),
		a2aclient.WithInterceptors(bearer{token: token}),
	)
	if err != nil {
		return nil, "", fmt.Errorf("client from the card: %w", err)
	}
	return client, fmt.Sprintf("%s (%s %s)", used, want, card.ProtocolVersion), nil
}

func hasBearerScheme(card *a2a.AgentCard) bool {
	for _, s := range card.SecuritySchemes {
		if h, ok := s.(a2a.HTTPAuthSecurityScheme); ok && strings.EqualFold(h.Scheme, "bearer") {
			return true
		}
	}
	return false
}

// bearer sends the caller's token on every call, the way the SDK attaches
// credentials: as call metadata the transport turns into headers.
type bearer struct {
	a2aclient.PassthroughInterceptor
	token string
}

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	req.Meta["Authorization"] = []string{"Bearer " + b.token}
	return ctx, nil
}
