package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkRules wants each PrometheusRule to carry the rule groups of the
// rule file unchanged: the chart and a plain Prometheus load one source.
func (m *manifests) checkRules(rulesFile string) error {
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		return err
	}
	var file struct {
		Groups []any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		return fmt.Errorf("%s: %w", rulesFile, err)
	}
	want, err := normalJSON(file.Groups)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range m.rules {
		got, err := normalJSON(r.Spec.Groups)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			errs = append(errs, fmt.Errorf("prometheusrule %s: its groups are not those of %s", r.Name, rulesFile))
		}
	}
	return errors.Join(errs...)
}

// normalJSON is v as JSON decodes it generically, so that values from YAML
// and from typed structs compare alike.
func normalJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// checkDashboardMap wants a ConfigMap with the sidecar label whose JSON
// key holds the dashboard file unchanged.
func (m *manifests) checkDashboardMap(dashboardFile, label string) error {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		return err
	}
	key, value, ok := strings.Cut(label, "=")
	if !ok {
		return fmt.Errorf("dashboard label %q is not key=value", label)
	}
	want := bytes.TrimRight(raw, "\n")
	for _, cm := range m.configMaps {
		for name, data := range cm.Data {
			if !strings.HasSuffix(name, ".json") {
				continue
			}
			if data != string(want) {
				return fmt.Errorf("configmap %s: %s is not %s", cm.Name, name, dashboardFile)
			}
			if cm.Labels[key] != value {
				return fmt.Errorf("configmap %s holds the dashboard without the sidecar label %s", cm.Name, label)
			}
			return nil
		}
	}
	return fmt.Errorf("no ConfigMap holds the dashboard %s", dashboardFile)
}

// checkPolicies wants each NetworkPolicy to select the pods, to let the
// public port in, and the admin port only from named peers, on ports the
// container has.
func (m *manifests) checkPolicies(d *appsv1.Deployment) error {
	c, err := gatewayContainer(d)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range m.policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			errs = append(errs, fmt.Errorf("networkpolicy %s does not select the gateway pods", p.Name))
		}
		allowed := map[string]bool{}
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				if port.Port == nil {
					continue
				}
				if containerPort(c, *port.Port) == 0 {
					errs = append(errs, fmt.Errorf("networkpolicy %s: port %s is none of the container's", p.Name, port.Port.String()))
				}
				name := port.Port.String()
				if port.Port.Type == intstr.Int {
					name = portName(c, port.Port.IntValue())
				}
				allowed[name] = true
				if name == "admin" && len(rule.From) == 0 {
					errs = append(errs, fmt.Errorf("networkpolicy %s opens the admin port to every peer", p.Name))
				}
			}
		}
		for _, want := range []string{"http", "admin"} {
			if !allowed[want] {
				errs = append(errs, fmt.Errorf("networkpolicy %s does not let the %s port in", p.Name, want))
			}
		}
	}
	return errors.Join(errs...)
}

// portName is the name of the container port number n; "" if none.
func portName(c *corev1.Container, n int) string {
	for _, p := range c.Ports {
		if int(p.ContainerPort) == n {
			return p.Name
		}
	}
	return ""
}

// checkChartLinks wants the chart's copies of the rule file and the
// dashboard to be links to them, so there is one file to edit; helm
// package stores the content.
func checkChartLinks(chart string, targets map[string]string) error {
	var errs []error
	for name, target := range targets {
		link := filepath.Join(chart, name)
		dest, err := os.Readlink(link)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s is not a link to %s: %w", link, target, err))
			continue
		}
		got, err1 := filepath.Abs(filepath.Join(filepath.Dir(link), dest))
		want, err2 := filepath.Abs(target)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
		} else if got != want {
			errs = append(errs, fmt.Errorf("%s links to %s; want %s", link, dest, target))
		}
	}
	return errors.Join(errs...)
}
