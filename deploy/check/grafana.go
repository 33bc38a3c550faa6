package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
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

// checkDashboard checks what would make a panel fail in Grafana: duplicate
// panel ids, panels without a position, a data source reference no
// variable resolves (provisioned dashboards do not get __inputs
// substituted), undefined variables, and queries PromQL cannot parse.
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
	ids := map[int]string{}
	queries := 0
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
				errs = append(errs, checkDatasource(where, t.Datasource, vars), checkQuery(where+" target "+t.RefID, t.Expr, vars))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if queries == 0 {
		errs = append(errs, errors.New("no panel queries anything"))
	}
	return errors.Join(errs...)
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
	if _, err := promql.ParseExpr(q); err != nil {
		return fmt.Errorf("%s: %q: %w", where, expr, err)
	}
	return nil
}
