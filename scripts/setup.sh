#!/usr/bin/env bash
# Installs what the gateway's tests need and builds the binaries into bin/.
# Safe to run again: every step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
  echo "setup: installing redis-server (Debian package)"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq redis-server >/dev/null
fi

if [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing chromium (Debian package), for the console's browser test"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium >/dev/null
fi

echo "setup: downloading the Go modules (go mod download)"
go mod download
echo "setup: building bin/a2a-gateway and bin/demo-agent (the first build takes a few minutes)"
mkdir -p bin
go build -o bin/a2a-gateway ./cmd/a2a-gateway
go build -o bin/demo-agent ./cmd/demo-agent
echo "setup: installing the interop suite's pinned npm packages and Go modules (interop/setup.sh)"
./interop/setup.sh
echo "setup: installing the console browser test's pinned npm packages (playwright-core)"
(cd internal/console/e2e && npm ci --no-audit --no-fund --loglevel=error)
echo "setup: done (bin/a2a-gateway, bin/demo-agent; redis-server $(redis-server --version | awk '{print $3}'))"
