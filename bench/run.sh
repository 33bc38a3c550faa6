#!/usr/bin/env bash
# Runs the whole benchmark: builds the harness and the gateway, then
# measures every target, the gateway rows with JWT, Redis and dedupe, the
# latency added at a fixed rate (open loop: direct, nginx, passthrough and
# gw-jwt-redis at 1,000 req/s in alternating rounds), the gRPC rows,
# idle-stream memory, and the push relay: paced (480 tasks at 2,400 events/s
# offered), then at saturation (240 tasks, their events back to back)
# (about four minutes).
#
#   bench/run.sh                      # table on stdout, progress on stderr
#   bench/run.sh -json bench.json     # also a machine-readable copy
#   bench/run.sh -duration 5s -concurrency 32 -streams 2000
#   bench/run.sh -open-rate 2000 -open-duration 30s -open-rounds 5
#   bench/run.sh -push-only           # the two push-relay runs alone
#
# nginx is measured when it is on PATH (Debian: apt-get install nginx-light),
# the gw-jwt-redis rows and the push relay when redis-server is (apt-get
# install redis-server).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/a2abench" ./bench/cmd/a2abench && go build -buildvcs=auto -o "$work/a2a-gateway" ./cmd/a2a-gateway)
"$work/a2abench" -gateway-bin "$work/a2a-gateway" "$@"
