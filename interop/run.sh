#!/usr/bin/env bash
# Runs the interop suite against the gateway of this checkout. With
# --update it also rewrites interop/RESULTS.md and the compatibility
# table of docs/compatibility.md from the run. Run ./interop/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")"

unformatted=$(gofmt -l $(find . -name '*.go' -not -path './node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
if [ "${1:-}" = "--update" ]; then
  export INTEROP_UPDATE=1
fi
go test -race -count=1 -timeout 20m ./...
