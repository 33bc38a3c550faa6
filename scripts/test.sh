#!/usr/bin/env bash
# The test command: static checks (gofmt, go mod tidy, go vet, staticcheck,
# deadcode), every test with the race detector, the multi-replica harness,
# the deployment files' render check, the console's browser test, then the
# interop suite with the official A2A SDKs.
# Tests that need Redis start their own redis-server on a free port.
set -euo pipefail
cd "$(dirname "$0")/.."

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go mod tidy -diff
go vet ./...
# staticcheck, pinned; `go run` builds it from the module proxy on first use.
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
# deadcode, pinned: functions nothing reaches, and functions only tests reach.
./scripts/deadcode.sh
go test -race -count=1 -timeout 20m $(go list ./... | grep -v /scaletest)
# Several gateway processes on a Redis Cluster and on Sentinel, with crashes;
# verbose, so that what the harness measured is printed.
go test -race -count=1 -timeout 10m -v ./scaletest/
# The deployment files (Dockerfile, Compose, Helm chart, Prometheus, Grafana) parse and render.
./scripts/deploy-check.sh
# The operations console in a real headless browser (Debian's chromium), against the demo.
./internal/console/e2e/run.sh
# The official SDKs' clients and agents, end to end through the gateway.
./interop/run.sh
