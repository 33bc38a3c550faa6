package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"unicode"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// promql parses expressions the way the Prometheus server does by default.
var promql = parser.NewParser(parser.Options{})

// checkRuleFile loads an alert rule file with Prometheus's own loader
// (unknown fields refused, every expression and template parsed), as
// `promtool check rules` would.
func checkRuleFile(path string) error {
	groups, errs := rulefmt.ParseFile(path, false, model.UTF8Validation, promql, discardLogger())
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts++
				if r.Annotations["summary"] == "" {
					return fmt.Errorf("%s: alert %s has no summary annotation", path, r.Alert)
				}
			}
		}
	}
	if alerts == 0 {
		return fmt.Errorf("%s: no alerting rule", path)
	}
	return nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runbookBase is where every alert's runbook_url must point: a section of
// docs/runbooks.md.
const runbookBase = "https://github.com/a2a-gateway/a2a-gateway/blob/main/docs/runbooks.md#"

// requiredAlerts are the failure modes an operator must be paged for.
var requiredAlerts = []string{
	"A2AGatewayDown", "A2AGatewayStoreErrors", "A2AGatewayBudgetRefusalsHigh",
	"A2AGatewayPushBreakerOpen", "A2AGatewayPushDeadLetterRateHigh",
}

// heading matches a level-two Markdown heading.
var heading = regexp.MustCompile(`(?m)^## (.+)$`)

// checkAlerts wants the required alerts, a runbook_url on every alert that
// names an existing section of the runbooks, only metrics the gateway
// registers, and a unit test in which each alert fires.
func checkAlerts(rulesPath, runbooksPath, testsPath string) error {
	groups, errs := rulefmt.ParseFile(rulesPath, false, model.UTF8Validation, promql, discardLogger())
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	book, err := os.ReadFile(runbooksPath)
	if err != nil {
		return err
	}
	sections := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(book), -1) {
		sections[githubAnchor(m[1])] = true
	}
	var exprs []string
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			if r.Alert == "" {
				continue
			}
			alerts[r.Alert] = true
			url := r.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, runbookBase)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: alert %s: runbook_url %q does not point into %s", rulesPath, r.Alert, url, runbookBase))
			case !sections[anchor]:
				errs = append(errs, fmt.Errorf("%s: alert %s: runbook_url names #%s, which is no section of %s", rulesPath, r.Alert, anchor, runbooksPath))
			}
		}
	}
	for _, a := range requiredAlerts {
		if !alerts[a] {
			errs = append(errs, fmt.Errorf("%s: no alert %s", rulesPath, a))
		}
	}
	errs = append(errs, checkMetricNames(rulesPath, exprs, registeredMetrics()), checkRuleTests(testsPath, alerts))
	return errors.Join(errs...)
}

// githubAnchor is the fragment GitHub gives a heading: lower case, spaces
// to hyphens, punctuation dropped.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ruleTests is the part of a promtool test file the check reads.
type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// checkRuleTests wants the unit tests to load the rules and to show every
// alert firing; promtool itself runs them (scripts/deploy-check.sh).
func checkRuleTests(path string, alerts map[string]bool) error {
	var t ruleTests
	if err := readYAML(path, &t); err != nil {
		return err
	}
	if len(t.RuleFiles) == 0 {
		return fmt.Errorf("%s: loads no rule files", path)
	}
	fires := map[string]bool{}
	var errs []error
	for _, tc := range t.Tests {
		for _, a := range tc.AlertRuleTest {
			if !alerts[a.Alertname] {
				errs = append(errs, fmt.Errorf("%s: tests alert %s, which the rules do not have", path, a.Alertname))
			}
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for _, a := range sortedKeys(alerts) {
		if !fires[a] {
			errs = append(errs, fmt.Errorf("%s: no test shows %s firing", path, a))
		}
	}
	return errors.Join(errs...)
}
