#!/usr/bin/env bash
# Renders and parses the deployment files without a container engine or a
# cluster: helm lint and helm template on the chart (helm pinned, built from
# the Go module proxy; the first build takes minutes, later runs use the
# build cache), then deploy/check, a separate Go module, parses the rendered
# manifests, the Compose file, the Dockerfile, the Prometheus configuration
# and rules, and the Grafana dashboard with the tools' own Go packages.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
helm() { go run helm.sh/helm/v3/cmd/helm@v3.22.0 "$@"; }
chart=deploy/helm/a2a-gateway
# The chart needs the preStop sleep action (Kubernetes 1.30 and later);
# helm template assumes an old version unless told.
kube_version=1.33.0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

helm lint --strict "$chart"
helm lint --strict "$chart" -f "$chart/ci/full-values.yaml"
helm template a2a-gateway "$chart" --namespace a2a --kube-version "$kube_version" >"$out/default.yaml"
helm template a2a-gateway "$chart" --namespace a2a --kube-version "$kube_version" \
  -f "$chart/ci/full-values.yaml" >"$out/full.yaml"
echo "deploy-check: helm lint and template done in $((SECONDS - start))s"

cd deploy/check
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -count=1 ./...
go run . -root ../.. -manifests "$out/default.yaml" -manifests-all "$out/full.yaml"
echo "deploy-check: ok in $((SECONDS - start))s"
