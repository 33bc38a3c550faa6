package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// manifests are the objects of one `helm template` output, by kind.
type manifests struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	secrets     []*corev1.Secret
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	monitors    []*monitoringv1.ServiceMonitor
	rules       []*monitoringv1.PrometheusRule
	policies    []*networkingv1.NetworkPolicy
}

// decoder decodes YAML strictly (unknown or duplicate fields are errors)
// into the Kubernetes API types and the prometheus-operator types, as an
// API server with field validation Strict would.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), monitoringv1.AddToScheme(s)); err != nil {
		panic(err) // the schemes are compiled in: this cannot fail at run time
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true})
}()

// optional says what a rendering with every optional object on must
// hold besides the default objects; nil for a default rendering.
type optional struct {
	// rulesFile and dashboardFile are the files the PrometheusRule and the
	// dashboard ConfigMap must carry unchanged.
	rulesFile, dashboardFile string
	// dashboardLabel is the sidecar label (key=value) the ConfigMap must have.
	dashboardLabel string
}

func checkManifestFile(path string, opt *optional) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	m, err := decodeManifests(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := m.check(opt); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func decodeManifests(raw []byte) (*manifests, error) {
	m := &manifests{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			m.deployments = append(m.deployments, o)
		case *corev1.Service:
			m.services = append(m.services, o)
		case *corev1.ConfigMap:
			m.configMaps = append(m.configMaps, o)
		case *corev1.Secret:
			m.secrets = append(m.secrets, o)
		case *policyv1.PodDisruptionBudget:
			m.pdbs = append(m.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpas = append(m.hpas, o)
		case *monitoringv1.ServiceMonitor:
			m.monitors = append(m.monitors, o)
		case *monitoringv1.PrometheusRule:
			m.rules = append(m.rules, o)
		case *networkingv1.NetworkPolicy:
			m.policies = append(m.policies, o)
		default:
			return nil, fmt.Errorf("document %d: unexpected kind %s", i, obj.GetObjectKind().GroupVersionKind())
		}
	}
}

// stripComments drops comment lines, so a document holding only helm's
// "# Source:" line counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		out = append(out, line...)
	}
	return out
}
