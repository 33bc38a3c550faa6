package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashboard is the part of a Grafana dashboard the check reads.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Repeat     string          `json:"repeat"`
	Datasource *datasourceRef  `json:"datasource"`
	GridPos    *map[string]int `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// templateVar matches Grafana's variable syntaxes: $name, ${name},
// ${name:format} and [[name]].
var templateVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// dashboardVars are the variables every query is scoped by: an operator
// with several gateways (jobs), namespaces or replicas picks which.
var dashboardVars = []string{"job", "namespace", "instance"}

// dashboardMetrics are the metrics the dashboard must show: the
// auth-required flows, budget refusals and the Redis store.
var dashboardMetrics = []string{
	"a2agw_auth_challenges_opened_total", "a2agw_auth_challenges_refused_total", "a2agw_auth_resumes_total",
	"a2agw_budget_refusals_total",
	"a2agw_store_round_trip_seconds_count", "a2agw_store_round_trip_seconds_bucket", "a2agw_store_errors_total",
}

// checkDashboard checks what would make a panel fail in Grafana: duplicate
// panel ids, panels without a position, a data source reference no
// variable resolves (provisioned dashboards do not get __inputs
// substituted), undefined variables, and queries PromQL cannot parse. It
// also wants the job, namespace and instance variables on every query, a
// row repeated per agent, panels for the metrics of dashboardMetrics, and
// only metrics the gateway registers.
func checkDashboard(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := d.check(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (d *dashboard) check() error {
	var errs []error
	if d.UID == "" || d.Title == "" {
		errs = append(errs, errors.New("the dashboard needs a uid and a title"))
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for _, v := range append(slices.Clone(dashboardVars), "agent") {
		if vars[v] != "query" {
			errs = append(errs, fmt.Errorf("no query variable %q", v))
		}
	}
	ids := map[int]string{}
	queries := 0
	var exprs []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if prev, dup := ids[p.ID]; dup {
				errs = append(errs, fmt.Errorf("%s: id already used by %q", where, prev))
			}
			ids[p.ID] = p.Title
			if p.GridPos == nil {
				errs = append(errs, fmt.Errorf("%s: no gridPos", where))
			}
			if p.Type != "row" {
				errs = append(errs, checkDatasource(where, p.Datasource, vars))
			}
			for _, t := range p.Targets {
				queries++
				exprs = append(exprs, t.Expr)
				errs = append(errs, checkDatasource(where, t.Datasource, vars), checkQuery(where+" target "+t.RefID, t.Expr, vars))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if queries == 0 {
		errs = append(errs, errors.New("no panel queries anything"))
	}
	errs = append(errs, d.checkAgentRow(), checkMetricNames("dashboard", exprs, registeredMetrics()))
	all := strings.Join(exprs, "\n")
	for _, m := range dashboardMetrics {
		if !regexp.MustCompile(`\b` + m + `\b`).MatchString(all) {
			errs = append(errs, fmt.Errorf("no panel shows %s", m))
		}
	}
	return errors.Join(errs...)
}

// checkAgentRow wants a row repeated for each value of the agent variable,
// with panels under it (an expanded row repeats the panels that follow it
// up to the next row).
func (d *dashboard) checkAgentRow() error {
	for i, p := range d.Panels {
		if p.Type != "row" || p.Repeat != "agent" {
			continue
		}
		if len(p.Panels) > 0 || (i+1 < len(d.Panels) && d.Panels[i+1].Type != "row") {
			return nil
		}
		return fmt.Errorf("row %q repeats per agent but has no panels", p.Title)
	}
	return errors.New("no row repeats per agent (repeat: agent)")
}

// checkDatasource accepts a Prometheus data source named directly or
// through a data source variable the dashboard defines.
func checkDatasource(where string, ds *datasourceRef, vars map[string]string) error {
	if ds == nil {
		return fmt.Errorf("%s: no data source", where)
	}
	if ds.Type != "prometheus" {
		return fmt.Errorf("%s: data source type %q; want prometheus", where, ds.Type)
	}
	for _, m := range templateVar.FindAllStringSubmatch(ds.UID, -1) {
		name := m[1] + m[2] + m[3]
		if vars[name] != "datasource" {
			return fmt.Errorf("%s: data source %q refers to %s, which is no data source variable of the dashboard, so a provisioned copy cannot resolve it", where, ds.UID, name)
		}
	}
	return nil
}

// checkQuery parses a panel's PromQL after putting sample values in place
// of the variables, as Grafana does before it sends the query.
func checkQuery(where, expr string, vars map[string]string) error {
	if strings.TrimSpace(expr) == "" {
		return fmt.Errorf("%s: empty query", where)
	}
	var undefined []string
	q := templateVar.ReplaceAllStringFunc(expr, func(s string) string {
		m := templateVar.FindStringSubmatch(s)
		name := m[1] + m[2] + m[3]
		if strings.HasPrefix(name, "__") { // built-ins: $__rate_interval, $__interval, $__range
			return "5m"
		}
		if _, ok := vars[name]; !ok {
			undefined = append(undefined, name)
		}
		return "value"
	})
	if len(undefined) > 0 {
		return fmt.Errorf("%s: undefined variables %v in %q", where, undefined, expr)
	}
	e, err := promql.ParseExpr(q)
	if err != nil {
		return fmt.Errorf("%s: %q: %w", where, expr, err)
	}
	var errs []error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || !strings.HasPrefix(vs.Name, "a2agw_") {
			return nil
		}
		for _, v := range dashboardVars {
			if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == v }) {
				errs = append(errs, fmt.Errorf("%s: %s is not filtered by %s=~\"$%s\"", where, vs.Name, v, v))
			}
		}
		return nil
	})
	return errors.Join(errs...)
}
