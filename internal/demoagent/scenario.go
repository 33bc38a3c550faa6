package demoagent

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

type scenarioKind uint8

const (
	scComplete scenarioKind = iota
	scStream
	scSlow
	scInput
	scAuth
	scFail
	scReject
	scWait
	scNever
	scMessage
	scPush
	scParts
)

// scenarioInfo describes one scenario; the same table drives the parser
// and the card's skills.
type scenarioInfo struct {
	word        string
	kind        scenarioKind
	name        string
	description string
	example     string
}

func scenarios() []scenarioInfo {
	return []scenarioInfo{
		{"complete", scComplete, "Complete", "working, then completed with one artifact echoing the text (also any unrecognised text)", "complete hello"},
		{"stream", scStream, "Stream", "working, then N artifact chunks, then completed", "stream 5"},
		{"slow", scSlow, "Slow", "working, waits the given duration, then completed", "slow 2s"},
		{"input", scInput, "Input required", "asks a question (input-required); the next message to the task is the answer", "input"},
		{"auth", scAuth, "Auth required", "asks for an OAuth2 credential (auth-required); a later message carrying one resumes it", "auth"},
		{"fail", scFail, "Fail", "working, then failed", "fail"},
		{"reject", scReject, "Reject", "rejected at once", "reject"},
		{"wait", scWait, "Wait", "working until canceled", "wait"},
		{"never", scNever, "Never", "working with one progress update, then never finishes", "never"},
		{"message", scMessage, "Message", "answers with a plain message and creates no task", "message hi"},
		{"push", scPush, "Push", "like stream 3, slower, to exercise push notifications", "push"},
		{"parts", scParts, "Parts", "working, then N artifacts part-1 to part-N, each followed by a progress status, then completed; an optional step delay", "parts 5 100ms"},
	}
}

// scenario is what one message asks for.
type scenario struct {
	kind  scenarioKind
	text  string
	count int
	delay time.Duration
	// invalid explains arguments that could not be used; the task fails with it.
	invalid string
}

const (
	defaultChunks = 3
	maxChunks     = 1000
	defaultSlow   = time.Second
	maxSlow       = 10 * time.Minute
)

// parseScenario reads the first word of the text, case-insensitively.
func parseScenario(text string) scenario {
	sc := scenario{kind: scComplete, text: text}
	f := strings.Fields(text)
	if len(f) == 0 {
		return sc
	}
	word := strings.ToLower(f[0])
	for _, s := range scenarios() {
		if s.word == word {
			sc.kind = s.kind
		}
	}
	switch sc.kind {
	case scStream:
		sc.count = defaultChunks
		if len(f) > 1 {
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 || n > maxChunks {
				sc.invalid = fmt.Sprintf("stream takes a chunk count from 1 to %d, such as \"stream 5\"", maxChunks)
			}
			sc.count = n
		}
	case scPush:
		sc.count = defaultChunks
	case scParts:
		sc.parseParts(f[1:])
	case scSlow:
		sc.delay = defaultSlow
		if len(f) > 1 {
			d, err := time.ParseDuration(f[1])
			if err != nil || d < 0 || d > maxSlow {
				sc.invalid = fmt.Sprintf("slow takes a duration up to %s, such as \"slow 2s\"", maxSlow)
			}
			sc.delay = d
		}
	}
	return sc
}

// demoAuthorizationURL is where the auth scenario says a user would grant
// access. The demo has no authorization server; the URL is illustrative.
const demoAuthorizationURL = "https://auth.example.com/oauth2/authorize"

// authRequest is the status message of the auth scenario: text plus the
// structured description of the credential it needs.
func authRequest() []part {
	return []part{
		{text: "Authorization required: grant calendar.read, then send the credential in a message to this task."},
		{isData: true, data: map[string]any{
			"scheme":           "oauth2",
			"scopes":           []any{"calendar.read"},
			"authorizationUrl": demoAuthorizationURL,
		}},
	}
}

// parseParts reads "parts [N] [delay]": N artifacts, each after delay
// (default: the agent's step delay).
func (sc *scenario) parseParts(args []string) {
	sc.count = defaultChunks
	if len(args) > 0 {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 1 || n > maxChunks {
			sc.invalid = fmt.Sprintf("parts takes a count from 1 to %d and an optional delay, such as \"parts 5 100ms\"", maxChunks)
		}
		sc.count = n
	}
	if len(args) > 1 {
		d, err := time.ParseDuration(args[1])
		if err != nil || d < 0 || d > maxSlow {
			sc.invalid = fmt.Sprintf("parts takes a step delay up to %s, such as \"parts 5 100ms\"", maxSlow)
		}
		sc.delay = d
	}
}
