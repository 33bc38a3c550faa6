package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"go.yaml.in/yaml/v3"
)

// Service names and container paths the Compose file is checked against.
const (
	gatewayConfigPath = "/etc/a2a-gateway/config.yaml"
	gatewayDockerfile = "deploy/Dockerfile"
)

// composeVars finds the variables a Compose file interpolates, so the
// check can give each a placeholder, as the quickstart's exports would.
var composeVars = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

func checkCompose(path string) error {
	p, err := loadCompose(path)
	if err != nil {
		return err
	}
	svc := map[string]types.ServiceConfig{}
	for _, name := range []string{"gateway", "redis", "demo-agent", "prometheus", "grafana"} {
		s, err := p.GetService(name)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		svc[name] = s
	}
	cfg, cfgErr := composeGateway(svc["gateway"])
	errs := []error{cfgErr, composeRedis(svc["redis"]), composeGrafana(svc["grafana"], svc["prometheus"]),
		composeImages(p), composeGrafanaPassword(path)}
	if cfg != nil {
		errs = append(errs, composeWiring(p, cfg, svc["gateway"]), composePrometheus(svc["prometheus"], cfg))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func loadCompose(path string) (*types.Project, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, m := range composeVars.FindAllStringSubmatch(string(raw), -1) {
		env[m[1]] = placeholderSecret
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs, Content: raw}},
		Environment: env,
	}
	p, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("a2a-gateway", true)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// bindSource returns the host file mounted at target.
func bindSource(s types.ServiceConfig, target string) (string, bool) {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source, true
		}
	}
	return "", false
}

// composeGateway checks the gateway service: the image built from the
// Dockerfile, hardened like the Helm chart's pods, and its configuration
// valid with the environment Compose gives it.
func composeGateway(s types.ServiceConfig) (*gatewayCompose, error) {
	var errs []error
	if s.Build == nil || s.Build.Dockerfile != gatewayDockerfile {
		errs = append(errs, fmt.Errorf("service gateway: want build.dockerfile %s", gatewayDockerfile))
	}
	if !s.ReadOnly {
		errs = append(errs, errors.New("service gateway: want read_only: true"))
	}
	if uid, _, _ := strings.Cut(s.User, ":"); uid == "" || uid == "0" || uid == "root" {
		errs = append(errs, fmt.Errorf("service gateway: user %q; want a non-root user", s.User))
	}
	src, ok := bindSource(s, gatewayConfigPath)
	if !ok {
		return nil, errors.Join(append(errs, fmt.Errorf("service gateway: nothing is mounted at %s", gatewayConfigPath))...)
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	cfg, err := gatewayConfig(raw, env)
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("service gateway, %s: %w", src, err))...)
	}
	gc := &gatewayCompose{
		redisAddrs: cfg.Store.Redis.Addrs,
		timeout:    cfg.Shutdown.Timeout.D(),
	}
	for _, a := range cfg.Agents {
		gc.agentURLs = append(gc.agentURLs, a.URL)
	}
	if gc.adminPort, err = listenPort("admin_listen", cfg.AdminListen); err != nil {
		errs = append(errs, err)
	}
	if _, err = listenPort("listen", cfg.Listen); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, composeHealthcheck(s))
	if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= gc.timeout {
		errs = append(errs, fmt.Errorf("service gateway: stop_grace_period must exceed shutdown.timeout (%s), or Docker kills draining streams", gc.timeout))
	}
	return gc, errors.Join(errs...)
}

// composeHealthcheck wants the gateway's healthcheck to run the binary's
// own probe in exec form: the distroless image has no shell or curl.
func composeHealthcheck(s types.ServiceConfig) error {
	hc := s.HealthCheck
	if hc == nil || hc.Disable || len(hc.Test) == 0 {
		return errors.New("service gateway: no healthcheck; want test: [\"CMD\", \"/usr/local/bin/a2a-gateway\", \"healthcheck\"]")
	}
	if len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != wantEntrypoint[0] || hc.Test[2] != "healthcheck" {
		return fmt.Errorf("service gateway: healthcheck %q; want the exec form [\"CMD\", %q, \"healthcheck\", ...] (the image has no shell)", hc.Test, wantEntrypoint[0])
	}
	for i, a := range hc.Test {
		if (a == "--config" || a == "-config") && (i+1 >= len(hc.Test) || hc.Test[i+1] != gatewayConfigPath) {
			return fmt.Errorf("service gateway: healthcheck reads another configuration than %s", gatewayConfigPath)
		}
	}
	return nil
}

// exactTag is an image tag naming one release (major.minor.patch, with an
// optional variant), not a moving line like 7.4 or latest.
var exactTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$`)

// composeImages wants every image pulled from a registry pinned to an
// exact release or a digest; images the project builds are exempt.
func composeImages(p *types.Project) error {
	var errs []error
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		if s.Build != nil {
			continue
		}
		ref, _, _ := strings.Cut(s.Image, "@")
		tag := ""
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			tag = ref[i+1:]
		}
		if !pinnedImage.MatchString(s.Image) && !exactTag.MatchString(tag) {
			errs = append(errs, fmt.Errorf("service %s: image %q is not pinned to an exact version (x.y.z) or a digest", name, s.Image))
		}
	}
	return errors.Join(errs...)
}

// requiredVar is Compose's ${NAME:?message}: the project does not start
// unless NAME is set.
var requiredVar = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*:\?[^}]+\}$`)

// composeGrafanaPassword wants Grafana's admin password taken from a
// required variable: no well-known default such as admin/admin.
func composeGrafanaPassword(path string) error {
	var raw struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := readYAML(path, &raw); err != nil {
		return err
	}
	v, ok := raw.Services["grafana"].Environment["GF_SECURITY_ADMIN_PASSWORD"]
	if !ok || !requiredVar.MatchString(v) {
		return fmt.Errorf("service grafana: GF_SECURITY_ADMIN_PASSWORD is %q; want a required variable, ${NAME:?message}", v)
	}
	return nil
}

// gatewayCompose is what the other services must agree with.
type gatewayCompose struct {
	redisAddrs []string
	agentURLs  []string
	adminPort  int
	timeout    time.Duration
}

// composeWiring checks that the gateway's Redis and agents are services of
// the project.
func composeWiring(p *types.Project, gc *gatewayCompose, gw types.ServiceConfig) error {
	var errs []error
	if len(gc.redisAddrs) == 0 {
		errs = append(errs, errors.New("gateway configuration: no store.redis.addrs; the quickstart runs Redis"))
	}
	hosts := slices.Clone(gc.redisAddrs)
	for _, u := range gc.agentURLs {
		host := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
		host, _, _ = strings.Cut(host, "/")
		hosts = append(hosts, host)
	}
	for _, h := range hosts {
		name, _, err := net.SplitHostPort(h)
		if err != nil {
			name = h
		}
		if _, err := p.GetService(name); err != nil {
			errs = append(errs, fmt.Errorf("gateway configuration names %s, which is no service of the project", h))
		} else if _, ok := gw.DependsOn[name]; !ok {
			errs = append(errs, fmt.Errorf("service gateway: does not depend_on %s", name))
		}
	}
	return errors.Join(errs...)
}

// composeRedis checks the settings the delivery queue and the dedupe
// records rely on.
func composeRedis(s types.ServiceConfig) error {
	args := map[string]string{}
	for i := 0; i+1 < len(s.Command); i++ {
		if strings.HasPrefix(s.Command[i], "--") {
			args[s.Command[i]] = s.Command[i+1]
		}
	}
	var errs []error
	for flag, want := range map[string]string{"--appendonly": "yes", "--appendfsync": "everysec", "--maxmemory-policy": "noeviction"} {
		if args[flag] != want {
			errs = append(errs, fmt.Errorf("service redis: want %s %s in its command, got %q", flag, want, args[flag]))
		}
	}
	return errors.Join(errs...)
}

// composePrometheus loads the mounted Prometheus configuration with
// Prometheus's own loader, checks that it scrapes the gateway's admin port
// and that the rule files it names are mounted and valid.
func composePrometheus(s types.ServiceConfig, gc *gatewayCompose) error {
	cfgPath := ""
	for _, c := range s.Command {
		if v, ok := strings.CutPrefix(c, "--config.file="); ok {
			cfgPath = v
		}
	}
	if cfgPath == "" {
		return errors.New("service prometheus: no --config.file in its command")
	}
	src, ok := bindSource(s, cfgPath)
	if !ok {
		return fmt.Errorf("service prometheus: nothing is mounted at %s", cfgPath)
	}
	cfg, err := promconfig.LoadFile(src, false, discardLogger())
	if err != nil {
		return fmt.Errorf("service prometheus: %w", err)
	}
	var errs []error
	target := "gateway:" + strconv.Itoa(gc.adminPort)
	scraped := false
	for _, sc := range cfg.ScrapeConfigs {
		for _, sd := range sc.ServiceDiscoveryConfigs {
			static, ok := sd.(discovery.StaticConfig)
			if !ok {
				continue
			}
			for _, g := range static {
				for _, t := range g.Targets {
					if string(t[model.AddressLabel]) == target {
						scraped = true
					}
				}
			}
		}
		if sc.MetricsPath != "/metrics" {
			errs = append(errs, fmt.Errorf("%s: job %s scrapes %s; the gateway serves /metrics", src, sc.JobName, sc.MetricsPath))
		}
	}
	if !scraped {
		errs = append(errs, fmt.Errorf("%s: no scrape job targets %s, the gateway's admin listener", src, target))
	}
	if len(cfg.RuleFiles) == 0 {
		errs = append(errs, fmt.Errorf("%s: loads no rule files", src))
	}
	for _, rf := range cfg.RuleFiles {
		rsrc, ok := bindSource(s, rf)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: rule file %s is not mounted into the prometheus service", src, rf))
			continue
		}
		errs = append(errs, checkRuleFile(rsrc))
	}
	return errors.Join(errs...)
}

// grafanaProvisioning is the part of Grafana's provisioning files the check
// reads (Grafana itself is not a Go module one can import).
type grafanaProvisioning struct {
	APIVersion  int `yaml:"apiVersion"`
	Datasources []struct {
		Name string `yaml:"name"`
		Type string `yaml:"type"`
		URL  string `yaml:"url"`
	} `yaml:"datasources"`
	Providers []struct {
		Name    string `yaml:"name"`
		Type    string `yaml:"type"`
		Options struct {
			Path string `yaml:"path"`
		} `yaml:"options"`
	} `yaml:"providers"`
}

const grafanaProvisioningDir = "/etc/grafana/provisioning"

// composeGrafana checks that Grafana gets a Prometheus data source pointing
// at the prometheus service and a provider that loads the mounted dashboard.
func composeGrafana(g, prom types.ServiceConfig) error {
	dir, ok := bindSource(g, grafanaProvisioningDir)
	if !ok {
		return fmt.Errorf("service grafana: nothing is mounted at %s", grafanaProvisioningDir)
	}
	var errs []error
	datasources := 0
	for _, f := range globYAML(filepath.Join(dir, "datasources")) {
		var p grafanaProvisioning
		if err := readYAML(f, &p); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range p.Datasources {
			datasources++
			if d.Type != "prometheus" || !strings.HasPrefix(d.URL, "http://"+prom.Name+":9090") {
				errs = append(errs, fmt.Errorf("%s: data source %q is %s at %s; want prometheus at http://%s:9090", f, d.Name, d.Type, d.URL, prom.Name))
			}
		}
	}
	if datasources == 0 {
		errs = append(errs, fmt.Errorf("%s/datasources: no data source is provisioned", dir))
	}
	dashboards := 0
	for _, f := range globYAML(filepath.Join(dir, "dashboards")) {
		var p grafanaProvisioning
		if err := readYAML(f, &p); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pr := range p.Providers {
			for _, v := range g.Volumes {
				if v.Type == types.VolumeTypeBind && filepath.Dir(v.Target) == pr.Options.Path && strings.HasSuffix(v.Source, ".json") {
					dashboards++
					errs = append(errs, checkDashboard(v.Source))
				}
			}
		}
	}
	if dashboards == 0 {
		errs = append(errs, errors.New("service grafana: no dashboard provider loads a mounted dashboard"))
	}
	return errors.Join(errs...)
}

func globYAML(dir string) []string {
	var out []string
	for _, ext := range []string{"*.yaml", "*.yml"} {
		m, _ := filepath.Glob(filepath.Join(dir, ext))
		out = append(out, m...)
	}
	return out
}

// readYAML decodes the fields of a file that v has.
func readYAML(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := yaml.NewDecoder(f).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
