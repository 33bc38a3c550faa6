#!/usr/bin/env bash
# Renders and parses the deployment files without a container engine or a
# cluster: helm lint and helm template on the chart (helm pinned, built from
# the Go module proxy; the first build takes minutes, later runs use the
# build cache), promtool's rule checks and unit tests (promtool pinned as a
# tool of deploy/check's go.mod), then deploy/check, a separate Go module,
# parses the rendered manifests, the Compose file, the Dockerfile, the
# Prometheus configuration and rules, and the Grafana dashboard with the
# tools' own Go packages.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
# Helm says so on stderr for every symbolic link it follows: the chart's
# files/ link to the alert rules and the dashboard under deploy/, on purpose.
helm() { go run helm.sh/helm/v3/cmd/helm@v3.22.0 "$@" 2> >(grep -v 'found symbolic link in path' >&2); }
chart=deploy/helm/a2a-gateway
# The sidecar label ci/full-values.yaml gives the dashboard ConfigMap.
full_dashboard_label=grafana.example.com/dashboard=a2a
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

helm lint --strict "$chart"
helm lint --strict "$chart" -f "$chart/ci/full-values.yaml"
# No --kube-version: GitOps tools render without one, so the chart must not
# depend on the cluster's version.
helm template a2a-gateway "$chart" --namespace a2a >"$out/default.yaml"
helm template a2a-gateway "$chart" --namespace a2a -f "$chart/ci/full-values.yaml" >"$out/full.yaml"
echo "deploy-check: helm lint and template done in $((SECONDS - start))s"

cd deploy/check
go tool promtool check rules ../prometheus/alerts.yaml
go tool promtool test rules ../prometheus/tests/alerts_test.yml
echo "deploy-check: promtool done in $((SECONDS - start))s"

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -count=1 ./...
go run . -root ../.. -manifests "$out/default.yaml" -manifests-all "$out/full.yaml" -dashboard-label "$full_dashboard_label"
echo "deploy-check: ok in $((SECONDS - start))s"
