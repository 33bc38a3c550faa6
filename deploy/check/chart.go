package main

import (
	"errors"
	"fmt"
	"path"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// check verifies that the rendered objects fit together and with the
// gateway configuration they carry.
func (m *manifests) check(opt *optional) error {
	var errs []error
	need := func(kind string, n int) {
		if n == 0 {
			errs = append(errs, fmt.Errorf("no %s rendered", kind))
		}
	}
	need("Deployment", len(m.deployments))
	need("ConfigMap", len(m.configMaps))
	need("Service", len(m.services))
	need("PodDisruptionBudget", len(m.pdbs))
	need("HorizontalPodAutoscaler", len(m.hpas))
	if opt != nil {
		need("Secret", len(m.secrets))
		need("ServiceMonitor", len(m.monitors))
		need("PrometheusRule", len(m.rules))
		need("NetworkPolicy", len(m.policies))
	}
	if len(m.deployments) != 1 {
		return errors.Join(append(errs, fmt.Errorf("want one Deployment, got %d", len(m.deployments)))...)
	}
	d := m.deployments[0]
	cfg, err := m.deploymentConfig(d)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, m.checkPod(d, cfg), m.checkServices(d), m.checkScaling(d, cfg), m.checkMonitors(), m.checkPolicies(d))
	if opt != nil {
		errs = append(errs, m.checkRules(opt.rulesFile), m.checkDashboardMap(opt.dashboardFile, opt.dashboardLabel))
		if c, err := gatewayContainer(d); err == nil && !pinnedImage.MatchString(c.Image) {
			errs = append(errs, fmt.Errorf("deployment %s: image %q is not by digest, though image.digest is set", d.Name, c.Image))
		}
	}
	return errors.Join(errs...)
}

// gatewayContainer is the container running the gateway.
func gatewayContainer(d *appsv1.Deployment) (*corev1.Container, error) {
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		return nil, fmt.Errorf("deployment %s: want one container, got %d", d.Name, len(cs))
	}
	return &cs[0], nil
}

// deploymentConfig finds the ConfigMap mounted at the gateway's
// configuration path and validates it with the environment the container
// gets from its Secret and env entries.
func (m *manifests) deploymentConfig(d *appsv1.Deployment) (*config.Config, error) {
	c, err := gatewayContainer(d)
	if err != nil {
		return nil, err
	}
	var vol string
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == gatewayConfigPath || (vm.SubPath != "" && path.Join(vm.MountPath) == gatewayConfigPath) {
			vol = vm.Name
		}
	}
	if vol == "" {
		return nil, fmt.Errorf("deployment %s: nothing is mounted at %s", d.Name, gatewayConfigPath)
	}
	var cmName string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == vol && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	raw, ok := "", false
	for _, cm := range m.configMaps {
		if cm.Name == cmName {
			raw, ok = cm.Data["config.yaml"]
		}
	}
	if !ok {
		return nil, fmt.Errorf("deployment %s: volume %s is no rendered ConfigMap with a config.yaml key", d.Name, vol)
	}
	env, err := m.containerEnv(c)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: %w", d.Name, err)
	}
	cfg, err := gatewayConfig([]byte(raw), env)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s: %w", cmName, err)
	}
	return cfg, nil
}

// containerEnv is the environment a container gets, with placeholder
// values for what comes from objects the chart does not render.
func (m *manifests) containerEnv(c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil {
			continue
		}
		found := false
		for _, s := range m.secrets {
			if s.Name == from.SecretRef.Name {
				found = true
				for k, v := range s.Data {
					env[from.Prefix+k] = string(v)
				}
				for k, v := range s.StringData {
					env[from.Prefix+k] = v
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("envFrom names Secret %s, which is not rendered", from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			env[e.Name] = placeholderSecret
		} else {
			env[e.Name] = e.Value
		}
	}
	return env, nil
}

// checkPod checks the probes, ports, draining and hardening of the pod
// against the gateway configuration.
func (m *manifests) checkPod(d *appsv1.Deployment, cfg *config.Config) error {
	c, err := gatewayContainer(d)
	if err != nil {
		return err
	}
	pod := d.Spec.Template.Spec
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("deployment %s: "+format, append([]any{d.Name}, args...)...))
	}
	adminPort, err := listenPort("admin_listen", cfg.AdminListen)
	if err != nil {
		add("%v", err)
	}
	publicPort, err := listenPort("listen", cfg.Listen)
	if err != nil {
		add("%v", err)
	}
	for name, want := range map[string]int{"http": publicPort, "admin": adminPort} {
		if got := containerPort(c, intstr.FromString(name)); got != want {
			add("container port %q is %d; the configuration listens on %d", name, got, want)
		}
	}
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"liveness", "/healthz", c.LivenessProbe}, {"readiness", "/readyz", c.ReadinessProbe}} {
		switch {
		case p.probe == nil || p.probe.HTTPGet == nil:
			add("no HTTP %s probe", p.name)
		case p.probe.HTTPGet.Path != p.path || containerPort(c, p.probe.HTTPGet.Port) != adminPort:
			add("%s probe asks %s on port %s; want %s on the admin port %d", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port.String(), p.path, adminPort)
		}
	}
	var preStop time.Duration
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds < 1 {
		add("no preStop sleep: the pod would stop accepting connections before its endpoints are removed")
	} else {
		preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	drain := preStop + cfg.Shutdown.Timeout.D() + cfg.Shutdown.StreamGrace.D()
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= drain {
		add("terminationGracePeriodSeconds must exceed preStop + shutdown.timeout + shutdown.stream_grace (%s), or draining pods are killed", drain)
	}
	errs = append(errs, checkHardening(d.Name, pod.SecurityContext, c.SecurityContext))
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			add("no %s request", r)
		}
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		add("rolling updates must keep every pod until its replacement is ready (maxUnavailable: 0)")
	}
	return errors.Join(errs...)
}

// containerPort resolves a port by number or name; 0 if unknown.
func containerPort(c *corev1.Container, p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	return 0
}

// checkHardening wants a non-root user, no privilege escalation, no
// capabilities and a read-only root file system.
func checkHardening(name string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("deployment %s: "+format, append([]any{name}, args...)...))
	}
	if c == nil {
		c = &corev1.SecurityContext{}
	}
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	nonRoot := c.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = pod.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		add("runAsNonRoot is not set")
	}
	for _, uid := range []*int64{pod.RunAsUser, c.RunAsUser} {
		if uid != nil && *uid == 0 {
			add("runAsUser is 0")
		}
	}
	if c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem {
		add("readOnlyRootFilesystem is not set")
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		add("allowPrivilegeEscalation is not false")
	}
	if c.Capabilities == nil || len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" {
		add("capabilities are not dropped (drop: [ALL])")
	}
	return errors.Join(errs...)
}

// checkServices wants every Service to select the pods and target ports
// the container has, and no Service to expose the admin port publicly.
func (m *manifests) checkServices(d *appsv1.Deployment) error {
	c, err := gatewayContainer(d)
	if err != nil {
		return err
	}
	var errs []error
	podLabels := labels.Set(d.Spec.Template.Labels)
	for _, s := range m.services {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
			errs = append(errs, fmt.Errorf("service %s: selector %v does not select the pods (%v)", s.Name, s.Spec.Selector, podLabels))
		}
		for _, p := range s.Spec.Ports {
			if containerPort(c, p.TargetPort) == 0 {
				errs = append(errs, fmt.Errorf("service %s: port %s targets %s, which the container does not have", s.Name, p.Name, p.TargetPort.String()))
			}
			if p.TargetPort.String() == "admin" && s.Spec.Type != corev1.ServiceTypeClusterIP {
				errs = append(errs, fmt.Errorf("service %s: exposes the admin port as %s", s.Name, s.Spec.Type))
			}
		}
	}
	return errors.Join(errs...)
}

// checkScaling checks the PodDisruptionBudget and the autoscaler against
// the Deployment, and that several replicas share a Redis.
func (m *manifests) checkScaling(d *appsv1.Deployment, cfg *config.Config) error {
	var errs []error
	podLabels := labels.Set(d.Spec.Template.Labels)
	minReplicas := int32(1)
	if d.Spec.Replicas != nil {
		minReplicas = *d.Spec.Replicas
	}
	for _, h := range m.hpas {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != d.Name {
			errs = append(errs, fmt.Errorf("hpa %s scales %s %s, not deployment %s", h.Name, ref.Kind, ref.Name, d.Name))
		}
		if d.Spec.Replicas != nil {
			errs = append(errs, fmt.Errorf("deployment %s sets replicas while hpa %s scales it: every upgrade would reset the count", d.Name, h.Name))
		}
		if h.Spec.MinReplicas != nil {
			minReplicas = *h.Spec.MinReplicas
		}
	}
	if minReplicas > 1 && len(cfg.Store.Redis.Addrs) == 0 {
		errs = append(errs, fmt.Errorf("%d replicas with the embedded store: replicas must share Redis (store.redis.addrs)", minReplicas))
	}
	for _, p := range m.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			errs = append(errs, fmt.Errorf("pdb %s does not select the pods", p.Name))
		}
		switch {
		case p.Spec.MaxUnavailable != nil:
			if p.Spec.MaxUnavailable.Type == intstr.Int && int32(p.Spec.MaxUnavailable.IntValue()) >= minReplicas {
				errs = append(errs, fmt.Errorf("pdb %s: maxUnavailable %s lets every one of the %d pods go at once", p.Name, p.Spec.MaxUnavailable.String(), minReplicas))
			}
		case p.Spec.MinAvailable != nil:
			if p.Spec.MinAvailable.Type == intstr.Int && int32(p.Spec.MinAvailable.IntValue()) >= minReplicas {
				errs = append(errs, fmt.Errorf("pdb %s: minAvailable %s blocks every drain with %d pods", p.Name, p.Spec.MinAvailable.String(), minReplicas))
			}
		default:
			errs = append(errs, fmt.Errorf("pdb %s sets neither maxUnavailable nor minAvailable", p.Name))
		}
	}
	return errors.Join(errs...)
}

// checkMonitors wants each ServiceMonitor to select exactly one Service
// whose named port is the admin port, scraped at /metrics.
func (m *manifests) checkMonitors() error {
	var errs []error
	for _, sm := range m.monitors {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("servicemonitor %s: %w", sm.Name, err))
			continue
		}
		var matched []*corev1.Service
		for _, s := range m.services {
			if sel.Matches(labels.Set(s.Labels)) {
				matched = append(matched, s)
			}
		}
		if len(matched) != 1 {
			errs = append(errs, fmt.Errorf("servicemonitor %s selects %d services; want the admin service only", sm.Name, len(matched)))
			continue
		}
		if len(sm.Spec.Endpoints) == 0 {
			errs = append(errs, fmt.Errorf("servicemonitor %s has no endpoints", sm.Name))
		}
		for _, ep := range sm.Spec.Endpoints {
			ok := false
			for _, p := range matched[0].Spec.Ports {
				ok = ok || (p.Name == ep.Port && p.TargetPort.String() == "admin")
			}
			if !ok || (ep.Path != "" && ep.Path != "/metrics") {
				errs = append(errs, fmt.Errorf("servicemonitor %s scrapes port %q path %q; want the admin port at /metrics", sm.Name, ep.Port, ep.Path))
			}
		}
	}
	return errors.Join(errs...)
}
