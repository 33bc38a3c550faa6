package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/demoagent"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gateway"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// runDemo starts the demo agent, a webhook receiver and the gateway in one
// process on loopback, with the embedded store, the push relay and fresh
// development keys, and prints what a person needs to try it. Logs go to
// stderr.
func runDemo(ctx context.Context, args []string, out io.Writer) error {
	return runDemoLogged(ctx, args, out, os.Stderr)
}

// runDemoLogged is runDemo logging to logs.
func runDemoLogged(ctx context.Context, args []string, out, logs io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "public listener of the gateway")
	admin := fs.String("admin", "127.0.0.1:9090", "admin listener (/metrics, /healthz, /readyz)")
	webhook := fs.String("webhook", "127.0.0.1:8081", "listener of the webhook receiver that logs push notifications")
	grpcListen := fs.String("grpc", "127.0.0.1:50051", "the gateway's gRPC listener for the demo agent (A2A 1.0 and 0.3)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := newLogger(logs, *logLevel, "text")

	dir, err := os.MkdirTemp("", "a2a-gateway-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keyPath := filepath.Join(dir, "dev-key.pem")
	key, err := loadOrCreateKey(keyPath, devKeyID, true)
	if err != nil {
		return err
	}
	pushKeyPath := filepath.Join(dir, "push-key.pem")
	if err := writeDemoPushKey(pushKeyPath); err != nil {
		return err
	}

	agent := demoagent.New(demoagent.Options{Push: true, Logger: log.With("component", "demo-agent")})
	defer agent.Close()
	agentLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	agentURL := "http://" + agentLn.Addr().String()
	agent.SetBaseURL(agentURL)
	agentSrv := &http.Server{Handler: agent, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = agentSrv.Serve(agentLn) }()
	defer agentSrv.Close()
	agentGRPCLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	agent.SetGRPCAddress(agentGRPCLn.Addr().String())
	agentGRPC := agent.GRPCServer()
	go func() { _ = agentGRPC.Serve(agentGRPCLn) }()
	defer agentGRPC.Stop()
	// The gateway's gRPC listener for the demo agent: the rewritten card
	// names it.
	gwGRPCLn, err := net.Listen("tcp", *grpcListen)
	if err != nil {
		return fmt.Errorf("listen %s: %w (use -grpc to pick another address)", *grpcListen, err)
	}
	defer gwGRPCLn.Close()

	pub, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w (use -listen to pick another address)", *listen, err)
	}
	adm, err := net.Listen("tcp", *admin)
	if err != nil {
		pub.Close()
		return fmt.Errorf("listen %s: %w (use -admin to pick another address)", *admin, err)
	}
	hookLn, err := net.Listen("tcp", *webhook)
	if err != nil {
		pub.Close()
		adm.Close()
		return fmt.Errorf("listen %s: %w (use -webhook to pick another address)", *webhook, err)
	}
	hookAddr := hookLn.Addr().(*net.TCPAddr)
	hookURL := "http://" + hookAddr.String() + demoWebhookPath
	opsToken := rand.Text()
	if err := os.Setenv(demoOpsTokenEnv, opsToken); err != nil {
		return err
	}
	if err := os.Setenv(demoAuthFlowKeyEnv, newDemoKey()); err != nil {
		return err
	}
	if err := os.Setenv(demoConsoleKeyEnv, newDemoKey()); err != nil {
		return err
	}
	grpcSection := &config.AgentGRPC{Listen: gwGRPCLn.Addr().String(), Upstream: agentGRPCLn.Addr().String()}
	cfg := demoConfig(pub.Addr().String(), adm.Addr().String(), agentURL, grpcSection, keyPath+".jwks.json", pushKeyPath, hookAddr.String())
	stopTracing, err := startTracing(ctx, log)
	if err != nil {
		pub.Close()
		adm.Close()
		hookLn.Close()
		return err
	}
	defer stopTracing()
	gw, err := gateway.New(ctx, cfg, log)
	if err != nil {
		pub.Close()
		adm.Close()
		hookLn.Close()
		return err
	}
	defer gw.Close()
	rcv := newDemoReceiver(hookURL, cfg.PublicURL+"/.well-known/a2a-push-jwks.json", cfg.Push.Signing.Issuer, log.With("component", "webhook-receiver"))
	hookSrv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hookSrv.Serve(hookLn) }()
	defer hookSrv.Close()

	token, err := authz.MintToken(key, devKeyID, devIssuer, devAudience, "demo", "alice", devScopes, 12*time.Hour)
	if err != nil {
		return err
	}
	printDemo(out, cfg, keyPath, token, opsToken, hookURL, gwGRPCLn.Addr().String())
	return gw.ServeGRPC(ctx, pub, adm, map[string]net.Listener{"demo": gwGRPCLn})
}

// demoOpsTokenEnv holds the demo's ops API token, made up at start-up.
const demoOpsTokenEnv = "A2AGW_DEMO_OPS_TOKEN"

// demoAuthFlowKeyEnv holds the key that seals credentials handed over for
// the demo's "calendar" agent, made up at start-up.
const demoAuthFlowKeyEnv = "A2AGW_DEMO_AUTHFLOW_KEY"

// demoConsoleKeyEnv holds the key that signs the demo console's session
// cookies, made up at start-up: sessions end with the demo.
const demoConsoleKeyEnv = "A2AGW_DEMO_CONSOLE_KEY"

// newDemoKey is a random credential encryption key, base64.
func newDemoKey() string {
	key := make([]byte, config.AuthFlowKeyBytes)
	_, _ = rand.Read(key)
	return base64.StdEncoding.EncodeToString(key)
}

// writeDemoPushKey creates the key that signs the demo's push
// notifications; its kid is the file's base name.
func writeDemoPushKey(path string) error {
	key, err := jose.GenerateKey()
	if err != nil {
		return err
	}
	return jose.WritePrivateKeyPEM(path, key)
}

// demoConfig is the configuration the demo runs with: the demo agent (also
// mounted as "calendar", which needs a credential; over gRPC as grpc says),
// the embedded store, the development issuer, and the push relay signing
// with pushKeyPath, where tenant "demo" alone may have webhooks on hook
// (host:port), the demo's receiver on loopback.
func demoConfig(listen, admin, agentURL string, grpc *config.AgentGRPC, jwksPath, pushKeyPath, hook string) *config.Config {
	cfg := &config.Config{
		Listen:      listen,
		AdminListen: admin,
		Log:         config.LogOptions{Format: "text"},
		Auth: authz.Options{Issuers: []authz.IssuerOptions{{
			Name:       "demo",
			Issuer:     devIssuer,
			Audiences:  []string{devAudience},
			Algorithms: []string{"EdDSA"},
			KeyFiles:   []string{jwksPath},
		}}},
		// A short sweep, so the watchdog's budgets below show within seconds.
		Lifecycle: config.LifecycleOptions{OpsTokenEnv: demoOpsTokenEnv, SweepInterval: duration.Duration(2 * time.Second)},
		AuthFlows: config.AuthFlowOptions{Keys: []config.AuthFlowKey{{ID: "demo", KeyEnv: demoAuthFlowKeyEnv}}},
		Push: config.PushOptions{
			Enabled: true,
			Signing: config.PushSigning{KeyFiles: []string{pushKeyPath}},
			Tenants: map[string]config.PushTenant{"demo": {Allowlist: []string{hook}}},
			// Two quick retries and a short breaker, so a notification to
			// a failing webhook is dead-lettered within seconds, and its
			// redelivery from the console goes out soon after the
			// webhook recovers.
			Delivery: config.PushDelivery{
				Schedule:        []duration.Duration{duration.Duration(time.Second), duration.Duration(2 * time.Second)},
				BreakerCooldown: duration.Duration(3 * time.Second),
			},
		},
		Console: config.ConsoleOptions{Enabled: true, SessionKeyEnv: demoConsoleKeyEnv},
		Agents: []config.Agent{
			// Short budgets, so a "never" task is escalated in the ops view
			// a few seconds after it starts.
			{Name: "demo", URL: agentURL, Namespace: "demo", Watchdog: demoWatchdog, GRPC: grpc},
			// The same agent below its secure path, where every task needs a
			// credential: the auth-required flow with a direct hand-off. One
			// agent under two URLs, so one namespace: a task is one task
			// through either mount.
			{Name: "calendar", URL: agentURL + demoagent.SecurePath, Namespace: "demo", AuthFlow: &config.AgentAuthFlow{}},
		},
	}
	cfg.ApplyDefaults()
	return cfg
}

// demoWatchdog is the demo agent's budgets per state: a person trying the
// demo sees the watchdog escalate a "never" task within a minute.
var demoWatchdog = config.WatchdogOptions{
	Working:       duration.Duration(demoWorkingBudget),
	InputRequired: duration.Duration(10 * time.Minute),
	AuthRequired:  duration.Duration(10 * time.Minute),
	Action:        config.WatchdogEscalate,
}

const demoWorkingBudget = 20 * time.Second

// selfCommand is how the person who started the demo runs this binary
// again: the path they used, or the set-up's bin/ where they ran it
// through "go run" (whose binary is gone when it exits).
func selfCommand() string {
	if self := os.Args[0]; self != "" && !strings.Contains(self, "go-build") {
		return self
	}
	return "./bin/a2a-gateway"
}

// demoPushSend is the body of a streaming send that registers hookURL as
// the task's push config (1.0, HTTP+JSON).
func demoPushSend(hookURL string) string {
	return `{"message":{"messageId":"m-3","role":"ROLE_USER","parts":[{"text":"stream 3"}]},` +
		`"configuration":{"taskPushNotificationConfig":{"url":"` + hookURL + `"}}}`
}

func printDemo(out io.Writer, cfg *config.Config, keyPath, token, opsToken, hookURL, grpcAddr string) {
	base := cfg.PublicURL + "/agents/demo"
	fmt.Fprintf(out, `
a2a-gateway demo is running (embedded store, single replica). Ctrl-C stops it.

  agent (through the gateway)  %[1]s/
  agent card (rewritten)       %[1]s/.well-known/agent-card.json
  agent over gRPC              %[11]s (lf.a2a.v1.A2AService and a2a.v1.A2AService; h2c)
  metrics, health              http://%[2]s/metrics  /healthz  /readyz

A development token for tenant "demo", subject "alice" (valid 12h):

  export TOKEN=%[3]s

Send a message (JSON-RPC, A2A 1.0):

  curl -s %[1]s/ -H "Authorization: Bearer $TOKEN" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'

Stream one (REST, A2A 1.0):

  curl -sN %[1]s/message:stream -H "Authorization: Bearer $TOKEN" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \
    -d '{"message":{"messageId":"m-2","role":"ROLE_USER","parts":[{"text":"stream 3"}]}}'

Stream one with a push config: the gateway relays each event, signed, to the demo's webhook receiver
(%[7]s), whose log lines on stderr show each relayed notification ("signature ok"):

  curl -sN %[1]s/message:stream -H "Authorization: Bearer $TOKEN" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \
    -d '%[8]s'

The first word of the text picks a scenario: complete, stream N, slow 2s, input, auth, fail, reject,
wait (until canceled), never, message. "wait" and "never" do not finish, so a plain send waits for them
until the agent's request timeout: stream them, or send them with "returnImmediately", as here. A "never"
task is over the demo's %[10]s working budget soon after; the ops view below then shows the watchdog's
escalation:

  curl -s %[1]s/ -H "Authorization: Bearer $TOKEN" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"message":{"messageId":"m-4","role":"ROLE_USER","parts":[{"text":"never"}]},"configuration":{"returnImmediately":true}}}'

A token for another tenant:

  %[9]s token -key %[4]s -tenant other -subject bob

The operations console (tasks and their timelines, dead letters, breakers, auth challenges):

  http://%[2]s/console/    sign in with the ops token %[5]s

A webhook that answers 503 until it is told to recover, to see notifications dead-lettered and
redelivered from the console (register %[7]s/flaky as a push config; recover it with
curl -X POST %[7]s/flaky/recover).

The ops view (task lifecycles, counts by state) on the admin listener:

  curl -s 'http://%[2]s/ops/tasks?agent=demo' -H 'Authorization: Bearer %[5]s'

An agent that asks for a credential before every task (walk-through: docs/auth-flows.md):

  %[6]s/

`, base, cfg.AdminListen, token, keyPath, opsToken, cfg.PublicURL+"/agents/calendar", hookURL, demoPushSend(hookURL),
		selfCommand(), demoWorkingBudget, grpcAddr)
}
