package main

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const repoRoot = "../.."

// The repository's own deployment files pass every check that needs no
// rendered chart (scripts/deploy-check.sh adds the rendered manifests).
func TestRepositoryFilesPass(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-root", repoRoot}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
}

// fixtureOptional is what the fixture's rendering must hold, with the
// repository's rule file and dashboard.
func fixtureOptional() *optional {
	return &optional{
		rulesFile:      filepath.Join(repoRoot, "deploy", "prometheus", "alerts.yaml"),
		dashboardFile:  filepath.Join(repoRoot, "deploy", "grafana", "a2a-gateway.json"),
		dashboardLabel: "grafana_dashboard=1",
	}
}

// fixture is testdata/manifests.yaml with the PrometheusRule and the
// dashboard ConfigMap the chart renders from the repository's files.
func fixture(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opt := fixtureOptional()
	rules, err := os.ReadFile(opt.rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(rules, &file); err != nil {
		t.Fatal(err)
	}
	dashboard, err := os.ReadFile(opt.dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	docs := []map[string]any{
		{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": map[string]any{"name": "a2a-gateway"},
			"spec": map[string]any{"groups": file.Groups}},
		{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a2a-gateway-dashboard", "labels": map[string]string{"grafana_dashboard": "1"}},
			"data":     map[string]string{"a2a-gateway.json": strings.TrimRight(string(dashboard), "\n")}},
	}
	text := string(raw)
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		text += "---\n" + string(b)
	}
	return text
}

// writeFile writes text into a temporary file and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRenderedFixturePasses(t *testing.T) {
	if err := checkManifestFile(writeFile(t, "m.yaml", fixture(t)), fixtureOptional()); err != nil {
		t.Fatal(err)
	}
}

// mutation replaces old with new in a file's text; the case wants an error
// mentioning want.
type mutation struct {
	name, old, new, want string
}

// mutate writes text with m applied into dir/name and fails the test if old
// is not in text (a fixture change would otherwise make the case vacuous).
func mutate(t *testing.T, text string, m mutation) string {
	t.Helper()
	if !strings.Contains(text, m.old) {
		t.Fatalf("%s: %q is not in the fixture", m.name, m.old)
	}
	return strings.Replace(text, m.old, m.new, 1)
}

func wantError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one mentioning %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not mention %q", err, want)
	}
}

func TestManifestProblems(t *testing.T) {
	text := fixture(t)
	cases := []mutation{
		{"unknown field", "  maxUnavailable: 1\n", "  maxUnavailable: 1\n  maxUnavailabel: 2\n", "unknown field"},
		{"unknown kind", "kind: PodDisruptionBudget", "kind: PodDisruptionBudgets", "PodDisruptionBudgets"},
		{"liveness probe path", "path: /healthz", "path: /health", "liveness probe"},
		{"readiness on the public port", "path: /readyz\n              port: admin", "path: /readyz\n              port: http", "readiness probe"},
		{"grace too short", "terminationGracePeriodSeconds: 115", "terminationGracePeriodSeconds: 100", "terminationGracePeriodSeconds"},
		{"no preStop", "              sleep:\n                seconds: 5\n", "              exec:\n                command: [\"true\"]\n", "preStop"},
		{"root user", "runAsUser: 65532", "runAsUser: 0", "runAsUser is 0"},
		{"writable root", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem"},
		{"config rejected", "timeout: 60s", "timeout: 60", "gateway configuration"},
		{"secret missing a variable", "  A2AGW_OPS_TOKEN: ", "  A2AGW_OPS_TOKEN_OLD: ", "A2AGW_OPS_TOKEN"},
		{"admin on loopback", "admin_listen: 0.0.0.0:9090", "admin_listen: 127.0.0.1:9090", "listens on 127.0.0.1 only"},
		{"admin port mismatch", "admin_listen: 0.0.0.0:9090", "admin_listen: 0.0.0.0:9191", "container port \"admin\""},
		{"service targets a missing port", "targetPort: http", "targetPort: web", "which the container does not have"},
		{"pdb selects nothing", "  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: a2a-gateway", "  maxUnavailable: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: other", "does not select the pods"},
		{"pdb lets all go", "  maxUnavailable: 1\n", "  maxUnavailable: 3\n", "lets every one"},
		{"hpa scales another deployment", "    kind: Deployment\n    name: a2a-gateway", "    kind: Deployment\n    name: other", "not deployment a2a-gateway"},
		{"servicemonitor selects both services", "      app.kubernetes.io/component: admin\n  endpoints:", "  endpoints:", "selects 2 services"},
		{"servicemonitor on the public port", "    - port: admin\n      path: /metrics", "    - port: http\n      path: /metrics", "want the admin port"},
		{"no cpu request", "              cpu: 500m\n", "", "no cpu request"},
		{"rolling update drops a pod", "maxUnavailable: 0", "maxUnavailable: 1", "maxUnavailable: 0"},
		{"image by tag", "a2a-gateway@sha256:0000000000000000000000000000000000000000000000000000000000000000", "a2a-gateway:0.1.0", "not by digest"},
		{"admin port open to all", "        - port: admin\n          protocol: TCP\n      from:", "        - port: admin\n          protocol: TCP\n      fromm:", "unknown field"},
		{"policy without the admin port", "        - port: admin\n          protocol: TCP\n      from:", "        - port: metrics\n          protocol: TCP\n      from:", "none of the container's"},
		{"policy selects other pods", "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: a2a-gateway", "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: other", "does not select the gateway pods"},
		{"rules edited in the chart", "alert: A2AGatewayStoreErrors", "alert: A2AGatewayStoreTrouble", "not those of"},
		{"dashboard without the sidecar label", "grafana_dashboard: \"1\"", "grafana_dashboard: \"0\"", "without the sidecar label"},
		{"dashboard edited in the chart", `"title": "a2a-gateway"`, `"title": "gateway"`, "is not"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, checkManifestFile(writeFile(t, "m.yaml", mutate(t, text, c)), fixtureOptional()), c.want)
		})
	}
}

// A NetworkPolicy whose admin rule has no peers lets anyone reach the
// admin listener.
func TestAdminPortOpenToAll(t *testing.T) {
	text := mutate(t, fixture(t), mutation{"admin open", "      from:\n        - namespaceSelector:\n            matchLabels:\n              kubernetes.io/metadata.name: monitoring\n", "", ""})
	wantError(t, checkManifestFile(writeFile(t, "m.yaml", text), fixtureOptional()), "opens the admin port to every peer")
}

// Without the optional objects, -manifests-all refuses the rendering.
func TestManifestsAllNeedsOptionalObjects(t *testing.T) {
	text := fixture(t)
	text = text[:strings.Index(text, "apiVersion: monitoring.coreos.com/v1")]
	path := writeFile(t, "m.yaml", text)
	if err := checkManifestFile(path, nil); err != nil {
		t.Fatalf("without -all: %v", err)
	}
	for _, want := range []string{"no ServiceMonitor rendered", "no PrometheusRule rendered", "no NetworkPolicy rendered", "no ConfigMap holds the dashboard"} {
		wantError(t, checkManifestFile(path, fixtureOptional()), want)
	}
}

func TestDockerfileProblems(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []mutation{
		{"final stage runs as root", "USER 65532:65532\n# 8080", "USER 0\n# 8080", "is root"},
		{"named user", "USER 65532:65532\n# 8080", "USER nonroot\n# 8080", "not numeric"},
		{"no user", "USER 65532:65532\n# 8080", "# 8080", "sets no USER"},
		{"final stage on a distribution", "FROM runtime AS gateway", "FROM debian:13 AS gateway", "not a static runtime stage"},
		{"base by tag", "ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian13:nonroot@sha256:f7f8f729987ad0fdf6b05eeeae94b26e6a0f613bdf46feea7fc40f7bd72953e6", "ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian13:nonroot", "not pinned by digest"},
		{"builder by tag", "FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build", "FROM --platform=$BUILDPLATFORM golang:1.26 AS build", "not pinned by digest"},
		{"emulated build", "FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build", "FROM ${GO_IMAGE} AS build", "--platform=$BUILDPLATFORM"},
		{"no target arch", "RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \\\n      go build -trimpath -ldflags \"-s -w -X", "RUN CGO_ENABLED=0 GOOS=${TARGETOS} \\\n      go build -trimpath -ldflags \"-s -w -X", "GOARCH=${TARGETARCH}"},
		{"version not stamped", " -X github.com/a2a-gateway/a2a-gateway/internal/version.version=${VERSION}", "", "does not stamp the version"},
		{"no source label", "org.opencontainers.image.source=", "org.example.source=", "no label org.opencontainers.image.source"},
		{"fixed revision label", `org.opencontainers.image.revision="${REVISION}"`, `org.opencontainers.image.revision="main"`, "want the build argument ${REVISION}"},
		{"shell healthcheck", `CMD ["/usr/local/bin/a2a-gateway", "healthcheck"]`, `CMD curl -f http://127.0.0.1:9090/readyz`, "HEALTHCHECK"},
		{"cgo on", "RUN CGO_ENABLED=0 GOOS", "RUN CGO_ENABLED=1 GOOS", "CGO_ENABLED=0"},
		{"no trimpath", "go build -trimpath -ldflags \"-s -w\" -o /out/demo-agent", "go build -ldflags \"-s -w\" -o /out/demo-agent", "-trimpath"},
		{"shell-form entrypoint", `ENTRYPOINT ["/usr/local/bin/a2a-gateway", "serve", "--config", "/etc/a2a-gateway/config.yaml"]`, "ENTRYPOINT /usr/local/bin/a2a-gateway serve --config /etc/a2a-gateway/config.yaml", "shell form"},
		{"other config path", `"/etc/a2a-gateway/config.yaml"]`, `"/config.yaml"]`, "ENTRYPOINT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, checkDockerfileStages("Dockerfile", strings.NewReader(mutate(t, string(fixture), c))), c.want)
		})
	}
}

// copyDeploy copies the files the Compose file refers to into a temporary
// directory laid out like deploy/, with the file named rel replaced by text.
func copyDeploy(t *testing.T, rel, text string) string {
	t.Helper()
	files := []string{"compose.yaml", "compose/gateway.yaml", "prometheus/prometheus.yml", "prometheus/alerts.yaml",
		"grafana/a2a-gateway.json", "grafana/provisioning/datasources/prometheus.yaml", "grafana/provisioning/dashboards/a2a-gateway.yaml"}
	for i, f := range files {
		files[i] = path.Join("deploy", f)
	}
	return filepath.Join(copyFiles(t, path.Join("deploy", rel), text, files...), "deploy")
}

func TestComposeProblems(t *testing.T) {
	cases := []struct {
		file string
		mutation
	}{
		{"compose.yaml", mutation{"no noeviction", "      - noeviction\n", "      - allkeys-lru\n", "--maxmemory-policy noeviction"}},
		{"compose.yaml", mutation{"no aof", "      - --appendonly\n      - \"yes\"", "      - --appendonly\n      - \"no\"", "--appendonly yes"}},
		{"compose.yaml", mutation{"short stop grace", "stop_grace_period: 40s", "stop_grace_period: 10s", "stop_grace_period"}},
		{"compose.yaml", mutation{"writable gateway", "    read_only: true\n    user: \"65532:65532\"\n    cap_drop: [ALL]\n    security_opt", "    user: \"65532:65532\"\n    cap_drop: [ALL]\n    security_opt", "read_only"}},
		{"compose.yaml", mutation{"secret not passed", "      A2AGW_OPS_TOKEN: ${A2AGW_OPS_TOKEN", "      A2AGW_OPS: ${A2AGW_OPS_TOKEN", "A2AGW_OPS_TOKEN"}},
		{"compose.yaml", mutation{"unknown service key", "    read_only: true\n    user: \"65532:65532\"\n    cap_drop: [ALL]\n    security_opt", "    readonly: true\n    security_opt", "readonly"}},
		{"compose.yaml", mutation{"rules not mounted", "      - ./prometheus/alerts.yaml:/etc/prometheus/alerts.yaml:ro\n", "", "not mounted"}},
		{"compose.yaml", mutation{"no healthcheck", `      test: ["CMD", "/usr/local/bin/a2a-gateway", "healthcheck", "--config", "/etc/a2a-gateway/config.yaml"]`, `      disable: true`, "no healthcheck"}},
		{"compose.yaml", mutation{"shell healthcheck", `      test: ["CMD", "/usr/local/bin/a2a-gateway", "healthcheck", "--config", "/etc/a2a-gateway/config.yaml"]`, `      test: ["CMD-SHELL", "curl -f http://127.0.0.1:9090/readyz"]`, "exec form"}},
		{"compose.yaml", mutation{"healthcheck of another file", `"healthcheck", "--config", "/etc/a2a-gateway/config.yaml"]`, `"healthcheck", "--config", "/config.yaml"]`, "another configuration"}},
		{"compose.yaml", mutation{"moving redis tag", "image: redis:7.4.11", "image: redis:7.4", "not pinned to an exact version"}},
		{"compose.yaml", mutation{"latest grafana", "image: grafana/grafana:12.0.0", "image: grafana/grafana:latest", "not pinned to an exact version"}},
		{"compose.yaml", mutation{"default grafana password", "${GRAFANA_ADMIN_PASSWORD:?export GRAFANA_ADMIN_PASSWORD, the password of Grafana's admin user}", "${GRAFANA_ADMIN_PASSWORD:-admin}", "want a required variable"}},
		{"compose/gateway.yaml", mutation{"admin on loopback", `admin_listen: "0.0.0.0:9090"`, `admin_listen: "127.0.0.1:9090"`, "listens on 127.0.0.1 only"}},
		{"compose/gateway.yaml", mutation{"unknown config field", "shutdown:\n", "shutdwn:\n", "shutdwn"}},
		{"compose/gateway.yaml", mutation{"agent not a service", `url: "http://demo-agent:9001"`, `url: "http://agent:9001"`, "no service of the project"}},
		{"prometheus/prometheus.yml", mutation{"scrapes the wrong port", `targets: ["gateway:9090"]`, `targets: ["gateway:8080"]`, "no scrape job targets gateway:9090"}},
		{"prometheus/prometheus.yml", mutation{"unknown prometheus field", "scrape_interval: 15s", "scrape_intervl: 15s", "scrape_intervl"}},
		{"prometheus/alerts.yaml", mutation{"bad rule expression", "sum by (agent) (a2agw_task_orphans) >", "sum by (agent) (a2agw_task_orphans >", "parse error"}},
		{"grafana/provisioning/datasources/prometheus.yaml", mutation{"data source elsewhere", "url: http://prometheus:9090", "url: http://localhost:9090", "want prometheus"}},
		{"grafana/provisioning/dashboards/a2a-gateway.yaml", mutation{"provider path", "path: /var/lib/grafana/dashboards", "path: /dashboards", "no dashboard provider"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(repoRoot, "deploy", c.file))
			if err != nil {
				t.Fatal(err)
			}
			dir := copyDeploy(t, c.file, mutate(t, string(orig), c.mutation))
			wantError(t, checkCompose(filepath.Join(dir, "compose.yaml")), c.want)
		})
	}
}

func TestDashboardProblems(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "grafana", "a2a-gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []mutation{
		{"unparsable query", `"expr": "sum by (re`, `"expr": "sum by (re(`, "parse error"},
		{"duplicate panel id", `"id": 3,`, `"id": 2,`, "id already used"},
		{"unresolvable data source", `"name": "DS_PROMETHEUS",
        "label": "Data source"`, `"name": "PROMETHEUS",
        "label": "Data source"`, "no data source variable"},
		{"undefined variable", `"name": "agent",`, `"name": "agents",`, "undefined variables [agent]"},
		{"query not scoped by job", `sum by (result) (rate(a2agw_requests_total{job=~\"$job\", `, `sum by (result) (rate(a2agw_requests_total{`, "not filtered by job"},
		{"no instance variable", `"name": "instance",`, `"name": "replica",`, "no query variable \"instance\""},
		{"no row per agent", `"repeat": "agent"`, `"repeat": ""`, "no row repeats per agent"},
		{"unregistered metric", `a2agw_store_errors_total{`, `a2agw_redis_errors_total{`, "does not register: a2agw_redis_errors_total"},
		{"no budget panel", "a2agw_budget_refusals_total", "a2agw_authz_denials_total", "no panel shows a2agw_budget_refusals_total"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := string(fixture)
			if c.name == "no budget panel" {
				text = strings.ReplaceAll(text, c.old, c.new)
			} else {
				text = mutate(t, text, c)
			}
			wantError(t, checkDashboard(writeFile(t, "d.json", text)), c.want)
		})
	}
}

func TestEnvRefs(t *testing.T) {
	got, err := envRefs([]byte("a:\n  password_env: P\n  list:\n    - key_env: K\n    - key_env: K\nhmac_secret_env: H\nnot_env_name: x_env\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "H,K,P" {
		t.Fatalf("envRefs = %v, want [H K P]", got)
	}
}

// copyFiles copies repository files (relative to the root) into a
// temporary root, with the file named rel replaced by text.
func copyFiles(t *testing.T, rel, text string, files ...string) string {
	t.Helper()
	dst := t.TempDir()
	for _, p := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		if p == rel {
			b = []byte(text)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestAlertProblems(t *testing.T) {
	const rules, book, tests = "deploy/prometheus/alerts.yaml", "docs/runbooks.md", "deploy/prometheus/tests/alerts_test.yml"
	cases := []struct {
		file string
		mutation
	}{
		{rules, mutation{"runbook elsewhere", "runbook_url: https://github.com/a2a-gateway/a2a-gateway/blob/main/docs/runbooks.md#a2agatewaydown", "runbook_url: https://wiki.example.com/a2agatewaydown", "does not point into"}},
		{book, mutation{"runbook section missing", "## A2AGatewayStoreErrors", "## Store errors", "no section of"}},
		{rules, mutation{"required alert missing", "alert: A2AGatewayPushBreakerOpen", "alert: A2AGatewayPushBreakerTripped", "no alert A2AGatewayPushBreakerOpen"}},
		{rules, mutation{"unregistered metric", "a2agw_store_errors_total[5m]", "a2agw_redis_errors_total[5m]", "does not register: a2agw_redis_errors_total"}},
		{tests, mutation{"required alert never fires in a test", "alertname: A2AGatewayStoreErrors\n        exp_alerts:\n          - exp_labels:", "alertname: A2AGatewayStoreErrors\n        exp_alerts: []\n        unused:\n          - exp_labels:", "no test shows A2AGatewayStoreErrors firing"}},
		{tests, mutation{"test of an unknown alert", "alertname: A2AGatewayAbsent\n        exp_alerts: []", "alertname: A2AGatewayGone\n        exp_alerts: []", "which the rules do not have"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(repoRoot, c.file))
			if err != nil {
				t.Fatal(err)
			}
			text := mutate(t, string(orig), c.mutation)
			if c.name == "required alert never fires in a test" {
				// Every firing case of the alert, not only the first.
				text = strings.ReplaceAll(string(orig), c.old, c.new)
			}
			root := copyFiles(t, c.file, text, rules, book, tests)
			wantError(t, checkAlerts(filepath.Join(root, rules), filepath.Join(root, book), filepath.Join(root, tests)), c.want)
		})
	}
}

func TestValuesSchemaProblems(t *testing.T) {
	const chart = "deploy/helm/a2a-gateway"
	files := []string{chart + "/values.yaml", chart + "/values.schema.json", chart + "/ci/full-values.yaml"}
	cases := []struct {
		file string
		mutation
	}{
		{chart + "/values.yaml", mutation{"value not in the schema", "replicaCount: 3\n", "replicaCount: 3\nreplicas: 3\n", "replicas is not in values.schema.json"}},
		{chart + "/values.yaml", mutation{"nested value not in the schema", "  pullPolicy: IfNotPresent\n", "  pullPolicy: IfNotPresent\n  pullSecret: x\n", "image.pullSecret is not in values.schema.json"}},
		{chart + "/ci/full-values.yaml", mutation{"CI value not in the schema", "prometheusRule:\n  enabled: true\n", "prometheusRule:\n  enabled: true\n  groups: []\n", "prometheusRule.groups is not in values.schema.json"}},
		{chart + "/values.schema.json", mutation{"schema not strict", `"additionalProperties": false,
  "properties": {
    "replicaCount"`, `"properties": {
    "replicaCount"`, "does not set additionalProperties: false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(repoRoot, c.file))
			if err != nil {
				t.Fatal(err)
			}
			root := copyFiles(t, c.file, mutate(t, string(orig), c.mutation), files...)
			wantError(t, checkValuesSchema(filepath.Join(root, chart)), c.want)
		})
	}
}

// Every constructor of the metrics package is seen: names of each family
// are registered, and histogram series resolve to their histogram.
func TestRegisteredMetrics(t *testing.T) {
	reg := registeredMetrics()
	for _, n := range []string{"a2agw_requests_total", "a2agw_store_round_trip_seconds_bucket", "a2agw_store_errors_total",
		"a2agw_auth_challenges_opened_total", "a2agw_push_queue_depth", "a2agw_tasks", "a2agw_budget_refusals_total"} {
		if !reg.has(n) {
			t.Errorf("%s is not registered", n)
		}
	}
	for _, n := range []string{"a2agw_requests_total_bucket", "a2agw_nothing_total"} {
		if reg.has(n) {
			t.Errorf("%s is registered", n)
		}
	}
}

func TestChartLinks(t *testing.T) {
	chart := t.TempDir()
	if err := os.MkdirAll(filepath.Join(chart, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(chart, "alerts.yaml")
	if err := os.WriteFile(target, []byte("groups: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../alerts.yaml", filepath.Join(chart, "files", "alerts.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := checkChartLinks(chart, map[string]string{"files/alerts.yaml": target}); err != nil {
		t.Fatal(err)
	}
	wantError(t, checkChartLinks(chart, map[string]string{"files/alerts.yaml": filepath.Join(chart, "other.yaml")}), "want")
	copied := writeFile(t, "copy.yaml", "groups: []\n")
	wantError(t, checkChartLinks(filepath.Dir(copied), map[string]string{"copy.yaml": target}), "is not a link")
}
