// Command check parses the deployment files the way the tools that consume
// them do, without a container engine or a cluster, and checks that they
// fit together: the Dockerfile (BuildKit's parser), the Compose file
// (compose-go's loader), the Prometheus configuration and alert rules
// (Prometheus's own loaders and PromQL parser), the Grafana dashboard and
// provisioning, and the manifests rendered from the Helm chart (strict
// decoding into the Kubernetes API types and the prometheus-operator
// ServiceMonitor type). Every gateway configuration it meets is validated
// with the gateway's own config package.
//
//	go run . -root ../.. -manifests default.yaml -manifests-all full.yaml
//
// It prints one line per check and exits with status 1 if any failed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "deploy check:", err)
		os.Exit(1)
	}
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	root := fs.String("root", "../..", "repository root")
	var manifests, manifestsAll stringList
	dashboardLabel := fs.String("dashboard-label", "grafana_dashboard=1", "sidecar label (key=value) the dashboard ConfigMap of the -manifests-all renderings carries")
	fs.Var(&manifests, "manifests", "helm template output to check (repeatable)")
	fs.Var(&manifestsAll, "manifests-all", "helm template output rendered with every optional object on: must also hold a Secret, a ServiceMonitor, a PrometheusRule, a NetworkPolicy, the dashboard ConfigMap and an image by digest (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	deploy := filepath.Join(*root, "deploy")
	opt := &optional{
		rulesFile:      filepath.Join(deploy, "prometheus", "alerts.yaml"),
		dashboardFile:  filepath.Join(deploy, "grafana", "a2a-gateway.json"),
		dashboardLabel: *dashboardLabel,
	}
	checks := []struct {
		name string
		run  func() error
	}{
		{"Dockerfile", func() error { return checkDockerfile(filepath.Join(deploy, "Dockerfile")) }},
		{"compose.yaml", func() error { return checkCompose(filepath.Join(deploy, "compose.yaml")) }},
		{"alert rules", func() error { return checkRuleFile(filepath.Join(deploy, "prometheus", "alerts.yaml")) }},
		{"alerts, runbooks and rule tests", func() error {
			return checkAlerts(filepath.Join(deploy, "prometheus", "alerts.yaml"), filepath.Join(*root, "docs", "runbooks.md"),
				filepath.Join(deploy, "prometheus", "tests", "alerts_test.yml"))
		}},
		{"chart values schema", func() error { return checkValuesSchema(filepath.Join(deploy, "helm", "a2a-gateway")) }},
		{"chart files", func() error {
			return checkChartLinks(filepath.Join(deploy, "helm", "a2a-gateway"), map[string]string{
				"files/alerts.yaml": opt.rulesFile, "files/a2a-gateway.json": opt.dashboardFile,
			})
		}},
		{"Grafana dashboard", func() error { return checkDashboard(filepath.Join(deploy, "grafana", "a2a-gateway.json")) }},
		{"example configuration", func() error { return checkExampleConfig(filepath.Join(deploy, "examples", "gateway.yaml")) }},
	}
	for _, m := range manifests {
		checks = append(checks, struct {
			name string
			run  func() error
		}{"manifests " + m, func() error { return checkManifestFile(m, nil) }})
	}
	for _, m := range manifestsAll {
		checks = append(checks, struct {
			name string
			run  func() error
		}{"manifests " + m, func() error { return checkManifestFile(m, opt) }})
	}
	var failed []string
	for _, c := range checks {
		if err := c.run(); err != nil {
			fmt.Fprintf(out, "FAIL %s:\n  %s\n", c.name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
			failed = append(failed, c.name)
			continue
		}
		fmt.Fprintf(out, "ok   %s\n", c.name)
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, ", ") + " failed")
	}
	return nil
}
