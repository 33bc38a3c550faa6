package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/interop/goclient"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/proc"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
)

// clientRun is one client runner's invocation against one agent.
type clientRun struct {
	base        string // the agent on the gateway
	grpcAddress string // the gateway's gRPC listener for the agent
	agentProbe  string // the agent's own base URL
	webhook     string
	token       string
	otherToken  string
	cases       []report.Case
}

// runJSClient runs js/client.mjs for one pair and returns its outcomes; its
// log is the pair's own, since pairs run in parallel.
func runJSClient(ctx context.Context, dir string, p report.Pair, r clientRun, perCase time.Duration) ([]goclient.Outcome, error) {
	names := make([]string, len(r.cases))
	for i, c := range r.cases {
		names[i] = string(c)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(len(r.cases)+2)*perCase)
	defer cancel()
	cmd := exec.Command("node", "js/client.mjs",
		"--base", r.base,
		"--binding", cardBinding[p.Client.Form.Binding],
		"--version", p.Client.Form.Protocol,
		"--grpc-address", r.grpcAddress,
		"--agent-probe", r.agentProbe,
		"--webhook", r.webhook,
		"--cases", strings.Join(names, ","),
	)
	cmd.Env = append(os.Environ(), "INTEROP_TOKEN="+r.token, "INTEROP_OTHER_TOKEN="+r.otherToken)
	logPath := filepath.Join(dir, "client-"+p.Client.ID+"-"+p.Agent.ID+".log")
	out, err := proc.Run(ctx, "js client", cmd, logPath)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, proc.Tail(logPath, 20))
	}
	return parseJSResults(out)
}

// parseJSResults reads the runner's last stdout line; anything the SDK
// printed before it is ignored.
func parseJSResults(out []byte) ([]goclient.Outcome, error) {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	last := lines[len(lines)-1]
	var doc struct {
		Cases []struct {
			Case   string `json:"case"`
			Status string `json:"status"`
			Detail string `json:"detail"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(last, &doc); err != nil {
		return nil, fmt.Errorf("js client printed no result line: %w: %q", err, last)
	}
	var outcomes []goclient.Outcome
	for _, c := range doc.Cases {
		name, err := report.ParseCase(c.Case)
		if err != nil {
			return nil, fmt.Errorf("js client: %w", err)
		}
		status := report.Status(c.Status)
		if status != report.Pass && status != report.Fail {
			return nil, fmt.Errorf("js client: case %s has status %q", c.Case, c.Status)
		}
		outcomes = append(outcomes, goclient.Outcome{Case: name, Status: status, Detail: c.Detail})
	}
	return outcomes, nil
}
