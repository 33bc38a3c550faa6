package interop

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
		t.Skip("starts the gateway, Node.js agents and clients: not a -short test")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("Node.js is required for @a2a-js/sdk: %v", err)
	}
	sel, err := parseSelection(os.Getenv(cellsEnv), os.Getenv(casesEnv))
	if err != nil {
		t.Fatal(err)
	}
	update := os.Getenv(updateEnv) == "1"
	if update && sel.filtered() {
		t.Fatalf("%s and %s select part of the matrix: --update needs all of it", cellsEnv, casesEnv)
	}
	parallel, err := parallelism(os.Getenv(parallelEnv))
	if err != nil {
		t.Fatal(err)
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
	all := matrix(matrixPeers(js, gosdk))
	var run []report.Pair
	for _, p := range all {
		if sel.pair(p) {
			run = append(run, p)
		}
	}
	if len(run) == 0 {
		t.Fatalf("%s=%q selects no pair", cellsEnv, os.Getenv(cellsEnv))
	}
	dir := os.Getenv(logsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

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

	// Only the agents the selected pairs reach.
	var needed []report.Peer
	for _, p := range run {
		if !slices.Contains(needed, p.Agent) {
			needed = append(needed, p.Agent)
		}
	}
	t.Logf("starting %d agents and the webhook receiver", len(needed))
	agents, err := startAgents(ctx, dir, needed)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*agent{}
	var ups []upstream
	for _, a := range agents {
		t.Cleanup(a.stop)
		byID[a.peer.ID] = a
		ups = append(ups, mount(a))
	}
	receiver := webhook.New()
	hooks := httptest.NewServer(receiver)
	t.Cleanup(hooks.Close)

	t.Log("starting the gateway")
	gw, err := startGateway(ctx, bin, dir, jwks, pushKey, ups)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.proc.Stop)
	receiver.Trust(gw.pushJWKS(), gw.pushIssuer())
	t.Cleanup(func() {
		if t.Failed() {
			logs := []string{"gateway.log"}
			for _, a := range agents {
				logs = append(logs, a.log)
			}
			for _, name := range logs {
				t.Logf("--- last lines of %s ---\n%s", name, proc.Tail(filepath.Join(dir, name), 40))
			}
		}
	})

	t.Logf("running %d pairs, %d at a time", len(run), parallel)
	started := time.Now()
	perPair := make([][]report.Result, len(run))
	work := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for i := range work {
				p := run[i]
				a := byID[p.Agent.ID]
				perPair[i] = runPair(ctx, dir, p, sel, clientRun{
					base: gw.agentBase(p.Agent.ID), grpcAddress: gw.grpc[p.Agent.ID], agentProbe: a.base, webhook: hooks.URL,
					token: tokens[alice], otherToken: tokens[bob],
				})
				var lines strings.Builder
				for _, r := range perPair[i] {
					fmt.Fprintf(&lines, "\n  %-19s %-5s %s", r.Case, r.Status, oneLine(r.Detail+" "+r.Reason))
				}
				t.Logf("%s:%s", p, lines.String())
			}
		})
	}
	for i := range run {
		work <- i
	}
	close(work)
	wg.Wait()
	var results []report.Result
	for _, rs := range perPair {
		results = append(results, rs...)
	}
	t.Logf("the matrix: %d pairs in %s", len(run), time.Since(started).Round(time.Second))

	summary := report.Summary(run, results)
	if page, err := os.ReadFile(compatibilityFile); err != nil {
		t.Errorf("reading %s: %v", compatibilityFile, err)
	} else if spliced, err := report.Splice(page, summary); err != nil {
		t.Errorf("%s: %v", compatibilityFile, err)
	} else if update {
		if err := os.WriteFile(resultsFile, report.Markdown(run, results), 0o644); err != nil {
			t.Errorf("writing %s: %v", resultsFile, err)
		}
		if err := os.WriteFile(compatibilityFile, spliced, 0o644); err != nil {
			t.Errorf("writing %s: %v", compatibilityFile, err)
		}
	} else {
		t.Logf("%s and %s were left as they are (./interop/run.sh --update rewrites them)", resultsFile, compatibilityFile)
	}
	failed := 0
	for _, r := range results {
		if r.Status == report.Fail {
			failed++
			t.Errorf("%s, %s: %s %s", r.Pair, r.Case, r.Reason, r.Detail)
		}
	}
	if failed > 0 {
		t.Logf("%d cases failed; the matrix of this run:\n%s", failed, summary)
	}
	if exited, err := gw.proc.Exited(); exited {
		t.Errorf("the gateway exited during the run: %v", err)
	}
	for _, a := range agents {
		if a.proc == nil {
			continue
		}
		if exited, err := a.proc.Exited(); exited {
			t.Errorf("agent %s exited during the run: %v", a.peer.ID, err)
		}
	}
}

// parallelEnv sets how many pairs run at once (INTEROP_PARALLEL, default
// defaultParallel): each pair is one client process or goroutine, and
// every pair shares the gateway and the agents.
const (
	// logsEnv keeps the run's files (gateway.yaml, every log) in the
	// directory it names, for a look after the run; by default they go
	// with the test's temporary directory.
	logsEnv         = "INTEROP_LOGS"
	parallelEnv     = "INTEROP_PARALLEL"
	defaultParallel = 2
)

func parallelism(s string) (int, error) {
	if s == "" {
		return defaultParallel, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: want a positive number, got %q", parallelEnv, s)
	}
	return n, nil
}

// mount is the agent's mount on the gateway, named by the agent's peer ID:
// the agent's one form, and every form of the matrix offered.
func mount(a *agent) upstream {
	u := upstream{
		Name: a.peer.ID, URL: a.base, GRPC: a.grpcAddress,
		Agent: bridgeInterface{Version: a.peer.Form.Protocol, Binding: cardBinding[a.peer.Form.Binding]},
	}
	switch a.peer.Form.Binding {
	case jsonRPC:
		u.JSONRPCPath = jsAgentJSONRPCPath
		if a.peer.SDK.Name == goSDK {
			u.JSONRPCPath = goagent.JSONRPCPath
		}
	case httpJSON:
		u.RESTPath = jsAgentRESTPath
	}
	for _, f := range jsForms {
		u.Offer = append(u.Offer, bridgeInterface{Version: f.Protocol, Binding: cardBinding[f.Binding]})
	}
	return u
}

// runPair runs the pair's client on the selected cases and classifies
// every case of the table.
func runPair(ctx context.Context, dir string, p report.Pair, sel selection, run clientRun) []report.Result {
	for _, c := range report.Cases {
		if p.Inapplicable(c) == "" && sel.runs(c) {
			run.cases = append(run.cases, c)
		}
	}
	var outcomes []goclient.Outcome
	var runErr error
	switch p.Client.SDK.Name {
	case jsSDK:
		outcomes, runErr = runJSClient(ctx, dir, p, run, caseTimeout)
	case goSDK:
		outcomes = goclient.Run(ctx, goclient.Config{
			Base: run.base, GRPCAddress: run.grpcAddress, OverGRPC: p.Client.Form.Binding == grpcName,
			Token: run.token, OtherToken: run.otherToken,
			Probe: probe.New(run.agentProbe, run.webhook), CaseTimeout: caseTimeout,
		}, run.cases)
	default:
		runErr = fmt.Errorf("no runner for %s", p.Client.SDK)
	}
	return collect(p, sel, outcomes, runErr)
}

// oneLine keeps a case's detail on its log line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

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

// collect gives every case of the table the selection runs a result for
// the pair: not applicable (with the reason), classified from the runner's
// outcome, or failed when the runner could not report it.
func collect(p report.Pair, sel selection, outcomes []goclient.Outcome, runErr error) []report.Result {
	byCase := map[report.Case]goclient.Outcome{}
	for _, o := range outcomes {
		byCase[o.Case] = o
	}
	var out []report.Result
	for _, c := range report.Cases {
		o, ok := byCase[c]
		switch why := p.Inapplicable(c); {
		case why != "":
			out = append(out, report.Result{Pair: p, Case: c, Status: report.NotApplicable, Reason: why})
		case !sel.runs(c):
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
