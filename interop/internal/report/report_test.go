package report

import (
	"bytes"
	"strings"
	"testing"
)

var (
	js     = SDK{Name: "@a2a-js/sdk", Version: "1.3.0"}
	gosdk  = SDK{Name: "a2a-go", Version: "v0.3.3"}
	pairJS = Pair{Client: js, Agent: js, Binding: "JSON-RPC", Protocol: "1.0"}
	pairGo = Pair{Client: gosdk, Agent: gosdk, Binding: "JSON-RPC", Protocol: "0.3"}
)

var testRules = []Rule{
	{Agent: "a2a-go", Case: PushConfig, Mark: Mark{Status: ExpectedFailure, Reason: "empty delete answer", Match: "delete: "}},
	{Agent: "a2a-go", Case: PushRelay, Mark: Mark{Status: ExpectedFailure, Reason: "sender quirk", Match: "webhook: "}},
	{Client: "@a2a-js/sdk", Protocol: "1.0", Case: Stream, Mark: Mark{Status: ExpectedFailure, Reason: "quirk"}},
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

func TestApplies(t *testing.T) {
	tests := []struct {
		pair Pair
		c    Case
		want bool
	}{
		{pairJS, List, true},
		{pairGo, List, false},
		{pairGo, Send, true},
	}
	for _, tt := range tests {
		if got := tt.pair.Applies(tt.c); got != tt.want {
			t.Errorf("%s applies to %s: %v, want %v", tt.pair, tt.c, got, tt.want)
		}
	}
}

func sampleRun(t *testing.T) ([]Pair, []Result) {
	t.Helper()
	pairs := []Pair{pairJS, pairGo}
	runRules := testRules[:2] // the stream mark would go stale here
	var results []Result
	for _, p := range pairs {
		for _, c := range Cases {
			switch {
			case !p.Applies(c):
				results = append(results, Result{Pair: p, Case: c, Status: NotApplicable})
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
		{"the 1.0 summary row", "| @a2a-js/sdk | 1.3.0 | @a2a-js/sdk | 1.3.0 | JSON-RPC | 1.0 | 15/15 | — |"},
		{"the 0.3 summary row", "| a2a-go | v0.3.3 | a2a-go | v0.3.3 | JSON-RPC | 0.3 | 11/14 | push config (xfail), push relay (xfail), dedupe (fail) |"},
		{"the 0.3 matrix row", "| a2a-go | a2a-go | JSON-RPC | 0.3 | ✓ | ✓ | ✓ | ✓ | — | ✓ | ✓ | ✓ | xfail (1) | xfail (2) | ✓ | ✓ | ✓ | ✓ | ✗ |"},
		{"one note per reason", "1. xfail: empty delete answer\n2. xfail: sender quirk\n"},
		{"the failure with its pipe escaped", "- a2a-go v0.3.3 -> a2a-go v0.3.3, JSON-RPC, A2A 0.3, dedupe: two tasks \\| one message\n"},
	}
	for _, w := range wants {
		if !strings.Contains(text, w.want) {
			t.Errorf("%s: %q not found in\n%s", w.what, w.want, text)
		}
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
	if !strings.Contains(text, "| 15/15 | — |") {
		t.Errorf("summary of a fully passing pair missing:\n%s", text)
	}
}
