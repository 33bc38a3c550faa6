package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

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
