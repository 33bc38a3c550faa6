#!/usr/bin/env bash
# Installs what the interop suite needs: the npm packages pinned in
# package-lock.json (npm ci: @a2a-js/sdk, and @grpc/grpc-js with
# @bufbuild/protobuf for its gRPC transports) and the Go modules of
# interop/go.mod.
# Node.js 20 or later must be on the machine.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "interop/setup.sh: Node.js 20+ and npm are required for @a2a-js/sdk" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "interop/setup.sh: Node.js $(node --version) found; @a2a-js/sdk needs 20 or later" >&2
  exit 1
fi

npm ci --no-audit --no-fund --loglevel=error
go mod download
echo "interop/setup.sh: done (@a2a-js/sdk $(node -p 'require("./node_modules/@a2a-js/sdk/package.json").version'), @grpc/grpc-js $(node -p 'require("./node_modules/@grpc/grpc-js/package.json").version'), $(go list -m -f '{{.Path}} {{.Version}}' github.com/a2aproject/a2a-go))"
