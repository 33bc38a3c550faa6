// Package report holds the interop suite's vocabulary (the cases, the
// client/agent pairs, the outcome of each case) and turns a run's results
// into RESULTS.md, the compatibility table docs/compatibility.md includes.
package report

import (
	"fmt"
	"strings"
)

// Status is the outcome of one case for one pair.
type Status string

const (
	// Pass: the case did what it checks.
	Pass Status = "pass"
	// Fail: the case did not, and nothing explains why: the suite fails.
	Fail Status = "fail"
	// ExpectedFailure: the case fails because of a known quirk of the SDK
	// version under test, recorded with its reason.
	ExpectedFailure Status = "xfail"
	// NotApplicable: the pair's protocol versions cannot have the case;
	// the result's reason says why.
	NotApplicable Status = "n/a"
)

// Case identifies one interop case. The same names are used by the Go and
// the JavaScript runners.
type Case string

// The cases, in the order they run and appear in the table.
const (
	Card            Case = "card"
	Send            Case = "send"
	Stream          Case = "stream"
	Get             Case = "get"
	List            Case = "list"
	Cancel          Case = "cancel"
	Resubscribe     Case = "resubscribe"
	InputRequired   Case = "input_required"
	PushConfig      Case = "push_config"
	PushRelay       Case = "push_relay"
	PushOrder       Case = "push_order"
	TenantIsolation Case = "tenant_isolation"
	// RefusedStream and RefusedResubscribe: streaming methods the gateway
	// refuses must reach the client as an error, not as an empty stream.
	RefusedStream      Case = "refused_stream"
	RefusedResubscribe Case = "refused_resubscribe"
	Dedupe             Case = "dedupe"
)

// Cases lists every case in table order.
var Cases = []Case{Card, Send, Stream, Get, List, Cancel, Resubscribe, InputRequired, PushConfig, PushRelay, PushOrder, TenantIsolation, RefusedStream, RefusedResubscribe, Dedupe}

var caseTitles = map[Case]string{
	Card:               "card",
	Send:               "send",
	Stream:             "stream",
	Get:                "get",
	List:               "list",
	Cancel:             "cancel",
	Resubscribe:        "resubscribe",
	InputRequired:      "input-required",
	PushConfig:         "push config",
	PushRelay:          "push relay",
	PushOrder:          "push order",
	TenantIsolation:    "tenant isolation",
	RefusedStream:      "refused stream",
	RefusedResubscribe: "refused resubscribe",
	Dedupe:             "dedupe",
}

// Title is the case's column heading.
func (c Case) Title() string {
	if t, ok := caseTitles[c]; ok {
		return t
	}
	return string(c)
}

// ParseCase accepts a case name as the runners print it.
func ParseCase(s string) (Case, error) {
	for _, c := range Cases {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown case %q", s)
}

// SDK is an SDK at the version under test.
type SDK struct {
	Name    string
	Version string
}

func (s SDK) String() string { return s.Name + " " + s.Version }

// Form is one protocol version over one binding, as the table spells
// them: Binding "JSON-RPC", "HTTP+JSON" or "gRPC", Protocol "1.0" or "0.3".
type Form struct {
	Binding  string
	Protocol string
}

func (f Form) String() string { return f.Protocol + " " + f.Binding }

// Peer is an SDK speaking one form: a client, or an agent that serves only
// that form.
type Peer struct {
	SDK  SDK
	Form Form
	// ID names the peer in filters and, for an agent, its mount on the
	// gateway: letters, digits and '-'.
	ID string
}

// Label is the peer as the table names it: the SDK without its version
// (the table states the versions once) and the form.
func (p Peer) Label() string { return p.SDK.Name + " " + p.Form.String() }

// Pair is one client talking to one agent through the gateway; the
// gateway bridges them when their forms differ.
type Pair struct {
	Client Peer
	Agent  Peer
}

func (p Pair) String() string {
	return fmt.Sprintf("%s (%s) -> %s (%s)", p.Client.SDK, p.Client.Form, p.Agent.SDK, p.Agent.Form)
}

// Bridged reports whether the gateway translates between the pair's forms.
func (p Pair) Bridged() bool { return p.Client.Form != p.Agent.Form }

// Inapplicable says why the pair cannot have the case, or "" when it can:
// ListTasks exists only in 1.0, so the client and the agent must both
// speak 1.0.
func (p Pair) Inapplicable(c Case) string {
	switch {
	case c != List:
		return ""
	case p.Client.Form.Protocol != "1.0":
		return "A2A 0.3 has no ListTasks"
	case p.Agent.Form.Protocol != "1.0":
		return "the agent speaks A2A 0.3, which has no ListTasks for a 1.0 ListTasks to be bridged to"
	}
	return ""
}

// Result is one case's outcome for one pair, after marks are applied.
type Result struct {
	Pair   Pair
	Case   Case
	Status Status
	// Detail is what the runner saw.
	Detail string
	// Reason explains an expected failure or why the case does not apply,
	// and for a failure caused by a stale mark, what to change.
	Reason string
}

// Mark records why a case is allowed not to pass for some pairs.
type Mark struct {
	// Status is ExpectedFailure.
	Status Status
	// Reason is shown in the table's notes.
	Reason string
	// Match, when set, must occur in the failure's detail: the mark then
	// covers only the known quirk, and the case failing in any other way
	// still fails the suite.
	Match string
}

// Rule attaches a mark to the cases it matches; empty fields match any
// value. Binding and Protocol are the client's form, AgentBinding and
// AgentProtocol the agent's.
type Rule struct {
	Client, Agent               string
	Binding, Protocol           string
	AgentBinding, AgentProtocol string
	Case                        Case
	Mark                        Mark
}

func (r Rule) matches(p Pair, c Case) bool {
	eq := func(rule, v string) bool { return rule == "" || strings.EqualFold(rule, v) }
	return r.Case == c && eq(r.Client, p.Client.SDK.Name) && eq(r.Agent, p.Agent.SDK.Name) &&
		eq(r.Binding, p.Client.Form.Binding) && eq(r.Protocol, p.Client.Form.Protocol) &&
		eq(r.AgentBinding, p.Agent.Form.Binding) && eq(r.AgentProtocol, p.Agent.Form.Protocol)
}

// Lookup returns the first rule's mark matching the pair and case.
func Lookup(rules []Rule, p Pair, c Case) (Mark, bool) {
	for _, r := range rules {
		if r.matches(p, c) {
			return r.Mark, true
		}
	}
	return Mark{}, false
}

// Classify turns a runner's raw outcome (Pass or Fail) into the case's
// status. A mark covers only the failure it names: a marked case that
// passes fails the suite (the mark is stale and must go), and so does a
// marked case failing in another way.
func Classify(p Pair, c Case, raw Status, detail string, rules []Rule) Result {
	r := Result{Pair: p, Case: c, Detail: detail}
	mark, marked := Lookup(rules, p, c)
	switch {
	case raw == Pass && !marked:
		r.Status = Pass
	case raw == Pass:
		r.Status = Fail
		r.Reason = fmt.Sprintf("marked %s (%s) but passes: remove the mark", mark.Status, mark.Reason)
	case raw == Fail && marked && mark.Status == ExpectedFailure && strings.Contains(detail, mark.Match):
		r.Status = ExpectedFailure
		r.Reason = mark.Reason
	case raw == Fail && marked && mark.Status == ExpectedFailure:
		r.Status = Fail
		r.Reason = fmt.Sprintf("expected to fail with %q (%s), failed otherwise", mark.Match, mark.Reason)
	default:
		r.Status = Fail
	}
	return r
}
