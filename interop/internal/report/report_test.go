package report

import (
	"bytes"
	"strings"
	"testing"
)

var (
	js       = SDK{Name: "@a2a-js/sdk", Version: "1.3.0"}
	gosdk    = SDK{Name: "a2a-go", Version: "v0.3.3"}
	js10     = Peer{SDK: js, Form: Form{Binding: "JSON-RPC", Protocol: "1.0"}, ID: "js10-jsonrpc"}
	js03     = Peer{SDK: js, Form: Form{Binding: "gRPC", Protocol: "0.3"}, ID: "js03-grpc"}
	go03     = Peer{SDK: gosdk, Form: Form{Binding: "JSON-RPC", Protocol: "0.3"}, ID: "go03-jsonrpc"}
	pairJS   = Pair{Client: js10, Agent: js10}
	pairGo   = Pair{Client: go03, Agent: go03}
	bridged  = Pair{Client: go03, Agent: js10}
	bridged2 = Pair{Client: js10, Agent: go03}
)

var testRules = []Rule{
	{Agent: "a2a-go", Case: PushConfig, Mark: Mark{Status: ExpectedFailure, Reason: "empty delete answer", Match: "delete: "}},
	{Agent: "a2a-go", Case: PushRelay, Mark: Mark{Status: ExpectedFailure, Reason: "sender quirk", Match: "webhook: "}},
	{Client: "@a2a-js/sdk", Protocol: "1.0", Case: Stream, Mark: Mark{Status: ExpectedFailure, Reason: "quirk"}},
	{Client: "a2a-go", AgentProtocol: "1.0", AgentBinding: "json-rpc", Case: Get, Mark: Mark{Status: ExpectedFailure, Reason: "bridged quirk"}},
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name       string
		pair       Pair
		c          Case
		raw        Status
		detail     string
		want       Status
		wantReason string
	}{
		{"pass without a mark", pairGo, Send, Pass, "ok", Pass, ""},
		{"failure without a mark", pairGo, Send, Fail, "boom", Fail, ""},
		{"marked failure with the known detail", pairGo, PushConfig, Fail, "delete: EOF", ExpectedFailure, "empty delete answer"},
		{"marked failure failing otherwise", pairGo, PushConfig, Fail, "create: EOF", Fail, "failed otherwise"},
		{"marked failure that passes", pairGo, PushConfig, Pass, "ok", Fail, "remove the mark"},
		{"mark without Match covers any failure", pairJS, Stream, Fail, "anything", ExpectedFailure, "quirk"},
		{"mark scoped to another agent", pairJS, PushConfig, Fail, "delete: EOF", Fail, ""},
		{"mark scoped to another protocol", pairGo, Stream, Fail, "x", Fail, ""},
		{"mark scoped to the client's form, not the agent's", bridged2, Stream, Fail, "x", ExpectedFailure, "quirk"},
		{"mark scoped to the agent's form", bridged, Get, Fail, "x", ExpectedFailure, "bridged quirk"},
		{"mark scoped to the agent's form, another agent form", pairGo, Get, Fail, "x", Fail, ""},
		{"another mark of the same pair", pairGo, PushRelay, Fail, "webhook: none", ExpectedFailure, "sender quirk"},
		{"an outcome that is neither pass nor fail", pairGo, Send, Status("pending"), "x", Fail, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.pair, tt.c, tt.raw, tt.detail, testRules)
			if got.Status != tt.want {
				t.Fatalf("status %s, want %s (reason %q)", got.Status, tt.want, got.Reason)
			}
			if !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to contain %q", got.Reason, tt.wantReason)
			}
			if got.Detail != tt.detail || got.Pair != tt.pair || got.Case != tt.c {
				t.Errorf("result %+v does not carry its input", got)
			}
		})
	}
}

func TestParseCase(t *testing.T) {
	for _, c := range Cases {
		got, err := ParseCase(string(c))
		if err != nil || got != c {
			t.Errorf("ParseCase(%q) = %q, %v", c, got, err)
		}
	}
	if _, err := ParseCase("teleport"); err == nil {
		t.Error("ParseCase accepted an unknown case")
	}
}

func TestInapplicable(t *testing.T) {
	tests := []struct {
		pair Pair
		c    Case
		want string
	}{
		{pairJS, List, ""},
		{pairGo, List, "A2A 0.3 has no ListTasks"},
		{bridged, List, "A2A 0.3 has no ListTasks"},
		{bridged2, List, "the agent speaks A2A 0.3"},
		{Pair{Client: js10, Agent: js03}, List, "the agent speaks A2A 0.3"},
		{pairGo, Send, ""},
		{bridged2, Send, ""},
	}
	for _, tt := range tests {
		got := tt.pair.Inapplicable(tt.c)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s, %s: %q, want %q", tt.pair, tt.c, got, tt.want)
		}
	}
}

func sampleRun(t *testing.T) ([]Pair, []Result) {
	t.Helper()
	pairs := []Pair{pairJS, pairGo, bridged}
	runRules := testRules[:2] // the other marks would go stale here
	var results []Result
	for _, p := range pairs {
		for _, c := range Cases {
			switch {
			case p.Inapplicable(c) != "":
				results = append(results, Result{Pair: p, Case: c, Status: NotApplicable, Reason: p.Inapplicable(c)})
			case p == bridged && c == Stream:
				results = append(results, Classify(p, c, Fail, "no final event", runRules))
			case p == pairGo && c == PushRelay:
				results = append(results, Classify(p, c, Fail, "webhook: none", runRules))
			case p == pairGo && c == PushConfig:
				results = append(results, Classify(p, c, Fail, "delete: EOF", runRules))
			case p == pairGo && c == Dedupe:
				results = append(results, Classify(p, c, Fail, "two tasks | one message", runRules))
			default:
				results = append(results, Classify(p, c, Pass, "ok", runRules))
			}
		}
	}
	return pairs, results
}

func TestMarkdown(t *testing.T) {
	pairs, results := sampleRun(t)
	out := Markdown(pairs, results)
	if !bytes.Equal(out, Markdown(pairs, results)) {
		t.Fatal("the same run renders differently")
	}
	text := string(out)
	wants := []struct{ what, want string }{
		{"the header", Header},
		{"the SDKs", "SDKs: @a2a-js/sdk 1.3.0, a2a-go v0.3.3."},
		{"the matrix head", "| client \\ agent | @a2a-js/sdk 1.0 JSON-RPC | a2a-go 0.3 JSON-RPC |\n|---|---|---|\n"},
		{"the 1.0 client's row", "| @a2a-js/sdk 1.0 JSON-RPC | **15/15** |  |\n"},
		{"the 0.3 client's row", "| a2a-go 0.3 JSON-RPC | 13/14 ✗ 1 (1) | **11/14** ✗ 1 (1, 2, 3) |\n"},
		{"the 0.3 pair's cases", "| a2a-go 0.3 JSON-RPC | a2a-go 0.3 JSON-RPC | ✓ | ✓ | ✓ | ✓ | — (1) | ✓ | ✓ | ✓ | xfail (2) | xfail (3) | ✓ | ✓ | ✓ | ✓ | ✗ |"},
		{"one note per reason", "1. list, n/a: A2A 0.3 has no ListTasks\n2. push config, xfail: empty delete answer\n3. push relay, xfail: sender quirk\n"},
		{"the failure with its pipe escaped", "- a2a-go v0.3.3 (0.3 JSON-RPC) -> a2a-go v0.3.3 (0.3 JSON-RPC), dedupe: two tasks \\| one message\n"},
		{"the bridged failure", "- a2a-go v0.3.3 (0.3 JSON-RPC) -> @a2a-js/sdk 1.3.0 (1.0 JSON-RPC), stream: no final event\n"},
	}
	for _, w := range wants {
		if !strings.Contains(text, w.want) {
			t.Errorf("%s: %q not found in\n%s", w.what, w.want, text)
		}
	}
	summary := string(Summary(pairs, results))
	if strings.Contains(summary, "## Cases") || !strings.Contains(summary, wants[4].want) || !strings.Contains(summary, "## Failures") {
		t.Errorf("the summary is not the matrix, notes and failures without the cases:\n%s", summary)
	}
}

func TestMarkdownWithoutFailures(t *testing.T) {
	p := pairJS
	var results []Result
	for _, c := range Cases {
		results = append(results, Result{Pair: p, Case: c, Status: Pass})
	}
	text := string(Markdown([]Pair{p}, results))
	for _, absent := range []string{"## Failures", "## Notes"} {
		if strings.Contains(text, absent) {
			t.Errorf("%q present in a run that only passed", absent)
		}
	}
	if !strings.Contains(text, "| @a2a-js/sdk 1.0 JSON-RPC | **15/15** |\n") {
		t.Errorf("summary of a fully passing pair missing:\n%s", text)
	}
}
