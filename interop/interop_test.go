package interop

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/interop/goagent"
	"github.com/a2a-gateway/a2a-gateway/interop/goclient"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/probe"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/proc"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/webhook"
)

const (
	// caseTimeout bounds one case; generous, since the machine is shared.
	caseTimeout = 30 * time.Second
	// cleanupReserve is kept from the test deadline so that every process
	// is stopped before `go test` gives up on the binary.
	cleanupReserve = time.Minute
	resultsFile    = "RESULTS.md"
	// compatibilityFile is the project's compatibility page, whose table
	// the suite keeps up to date.
	compatibilityFile = "../docs/compatibility.md"
	// updateEnv, set to 1 (./interop/run.sh --update), rewrites RESULTS.md
	// and the compatibility page's table from the run; otherwise the
	// tracked files are left alone.
	updateEnv = "INTEROP_UPDATE"
)

// TestInterop runs every client against every agent through the gateway,
// writes RESULTS.md, and fails on any case that neither passes nor carries
// a mark (see marks).
func TestInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the gateway, a Node.js agent and clients: not a -short test")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("Node.js is required for @a2a-js/sdk: %v", err)
	}
	js, err := jsSDKVersion()
	if err != nil {
		t.Fatal(err)
	}
	ctx := suiteContext(t)
	gosdk, err := goSDKVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	t.Log("building the gateway")
	bin, err := buildGateway(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	jwks, tokens, err := mintTokens(ctx, bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	pushKey, err := writePushKey(dir)
	if err != nil {
		t.Fatal(err)
	}

	t.Log("starting the agents and the webhook receiver")
	jsAgent, jsBase, jsGRPC, err := startJSAgent(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(jsAgent.Stop)
	stopGoAgent, goBase, goGRPC, err := startGoAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopGoAgent)
	receiver := webhook.New()
	hooks := httptest.NewServer(receiver)
	t.Cleanup(hooks.Close)

	t.Log("starting the gateway")
	gw, err := startGateway(ctx, bin, dir, jwks, pushKey, []upstream{
		{Name: "js", URL: jsBase, JSONRPCPath: jsAgentJSONRPCPath, RESTPath: jsAgentRESTPath, GRPC: jsGRPC},
		{Name: "go", URL: goBase, JSONRPCPath: goagent.JSONRPCPath, GRPC: goGRPC},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.proc.Stop)
	receiver.Trust(gw.pushJWKS(), gw.pushIssuer())
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"gateway.log", "js-agent.log", "go-agent.log", "js-client.log"} {
				t.Logf("--- last lines of %s ---\n%s", name, proc.Tail(filepath.Join(dir, name), 40))
			}
		}
	})

	agents := map[string]struct{ mount, base string }{
		jsSDK: {"js", jsBase},
		goSDK: {"go", goBase},
	}
	var results []report.Result
	all := pairs(js, gosdk)
	for _, p := range all {
		var cases []report.Case
		for _, c := range report.Cases {
			if p.Applies(c) {
				cases = append(cases, c)
			}
		}
		a := agents[p.Agent.Name]
		run := clientRun{
			base: gw.agentBase(a.mount), grpcAddress: gw.grpc[a.mount], agentProbe: a.base, webhook: hooks.URL,
			token: tokens[alice], otherToken: tokens[bob], cases: cases,
		}
		t.Logf("%s: running %d cases", p, len(cases))
		var outcomes []goclient.Outcome
		var runErr error
		switch p.Client.Name {
		case jsSDK:
			outcomes, runErr = runJSClient(ctx, dir, p, run, caseTimeout)
		case goSDK:
			outcomes = goclient.Run(ctx, goclient.Config{
				Base: run.base, GRPCAddress: run.grpcAddress, OverGRPC: p.Binding == grpcName, Token: run.token, OtherToken: run.otherToken,
				Probe: probe.New(run.agentProbe, run.webhook), CaseTimeout: caseTimeout,
			}, cases)
		default:
			runErr = fmt.Errorf("no runner for %s", p.Client)
		}
		for _, r := range collect(p, outcomes, runErr) {
			t.Logf("  %-16s %-7s %s", r.Case, r.Status, r.Detail)
			results = append(results, r)
		}
	}

	md := report.Markdown(all, results)
	if page, err := os.ReadFile(compatibilityFile); err != nil {
		t.Errorf("reading %s: %v", compatibilityFile, err)
	} else if spliced, err := report.Splice(page, md); err != nil {
		t.Errorf("%s: %v", compatibilityFile, err)
	} else if os.Getenv(updateEnv) == "1" {
		if err := os.WriteFile(resultsFile, md, 0o644); err != nil {
			t.Errorf("writing %s: %v", resultsFile, err)
		}
		if err := os.WriteFile(compatibilityFile, spliced, 0o644); err != nil {
			t.Errorf("writing %s: %v", compatibilityFile, err)
		}
	} else {
		t.Logf("%s and %s were left as they are (./interop/run.sh --update rewrites them)", resultsFile, compatibilityFile)
	}
	for _, r := range results {
		if r.Status == report.Fail {
			t.Errorf("%s, %s: %s %s", r.Pair, r.Case, r.Reason, r.Detail)
		}
	}
	for name, p := range map[string]*proc.Proc{"gateway": gw.proc, "js agent": jsAgent} {
		if exited, err := p.Exited(); exited {
			t.Errorf("the %s exited during the run: %v", name, err)
		}
	}
}

// suiteContext ends before the test's deadline, leaving time to stop every
// process.
func suiteContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-cleanupReserve))
	}
	t.Cleanup(cancel)
	return ctx
}

// collect gives every case of the table a result for the pair: not
// applicable, classified from the runner's outcome, or failed when the
// runner could not report it.
func collect(p report.Pair, outcomes []goclient.Outcome, runErr error) []report.Result {
	byCase := map[report.Case]goclient.Outcome{}
	for _, o := range outcomes {
		byCase[o.Case] = o
	}
	var out []report.Result
	for _, c := range report.Cases {
		switch o, ok := byCase[c]; {
		case !p.Applies(c):
			out = append(out, report.Result{Pair: p, Case: c, Status: report.NotApplicable})
		case runErr != nil:
			out = append(out, report.Result{Pair: p, Case: c, Status: report.Fail, Detail: "the client runner failed: " + runErr.Error()})
		case !ok:
			out = append(out, report.Result{Pair: p, Case: c, Status: report.Fail, Detail: "the client runner reported no result"})
		default:
			out = append(out, report.Classify(p, c, o.Status, o.Detail, marks))
		}
	}
	return out
}
