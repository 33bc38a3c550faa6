#!/usr/bin/env bash
# Runs the whole benchmark: builds the harness and the gateway, then
# measures every target, the gateway rows with JWT, Redis and dedupe, the
# latency added at a fixed rate (open loop: direct, nginx, passthrough and
# gw-jwt-redis at 1,000 req/s in alternating rounds), and idle-stream memory
# (about three minutes).
#
#   bench/run.sh                      # table on stdout, progress on stderr
#   bench/run.sh -json bench.json     # also a machine-readable copy
#   bench/run.sh -duration 5s -concurrency 32 -streams 2000
#   bench/run.sh -open-rate 2000 -open-duration 30s -open-rounds 5
#
# nginx is measured when it is on PATH (Debian: apt-get install nginx-light),
# the gw-jwt-redis rows when redis-server is (apt-get install redis-server).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/a2abench" ./bench/cmd/a2abench && go build -buildvcs=auto -o "$work/a2a-gateway" ./cmd/a2a-gateway)
"$work/a2abench" -gateway-bin "$work/a2a-gateway" "$@"
