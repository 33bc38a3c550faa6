package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestRenderedFixturePasses(t *testing.T) {
	if err := checkManifestFile(filepath.Join("testdata", "manifests.yaml"), true); err != nil {
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
	fixture, err := os.ReadFile(filepath.Join("testdata", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(path, []byte(mutate(t, string(fixture), c)), 0o600); err != nil {
				t.Fatal(err)
			}
			wantError(t, checkManifestFile(path, true), c.want)
		})
	}
}

// Without the optional objects, -manifests-all refuses the rendering.
func TestManifestsAllNeedsServiceMonitor(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(fixture)
	text = text[:strings.Index(text, "apiVersion: monitoring.coreos.com/v1")]
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkManifestFile(path, false); err != nil {
		t.Fatalf("without -all: %v", err)
	}
	wantError(t, checkManifestFile(path, true), "no ServiceMonitor rendered")
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
		{"final stage on a distribution", "FROM gcr.io/distroless/static:nonroot AS gateway", "FROM debian:13 AS gateway", "not a static runtime stage"},
		{"cgo on", "RUN CGO_ENABLED=0 GOOS", "RUN CGO_ENABLED=1 GOOS", "CGO_ENABLED=0"},
		{"no trimpath", "go build -trimpath -ldflags \"-s -w\" -o /out/a2a-gateway", "go build -ldflags \"-s -w\" -o /out/a2a-gateway", "-trimpath"},
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
	src := filepath.Join(repoRoot, "deploy")
	dst := t.TempDir()
	for _, p := range []string{"compose.yaml", "compose/gateway.yaml", "prometheus/prometheus.yml", "prometheus/alerts.yaml",
		"grafana/a2a-gateway.json", "grafana/provisioning/datasources/prometheus.yaml", "grafana/provisioning/dashboards/a2a-gateway.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, p))
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.json")
			if err := os.WriteFile(path, []byte(mutate(t, string(fixture), c)), 0o600); err != nil {
				t.Fatal(err)
			}
			wantError(t, checkDashboard(path), c.want)
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
