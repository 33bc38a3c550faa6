#!/usr/bin/env bash
# Browser end-to-end test of the operations console: builds a2a-gateway,
# and runs console.test.mjs, which starts `a2a-gateway demo` on free ports
# and drives Debian's chromium through playwright-core. Screenshots go to
# internal/console/e2e/output/; with --update they also replace the ones in
# docs/images/ that the README shows, so a plain run changes no tracked file.
# Needs: node 20+, `npm ci` here, /usr/bin/chromium (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../../.. && pwd)

if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "internal/console/e2e/run.sh: ${CHROMIUM:-/usr/bin/chromium} is missing; run scripts/setup.sh" >&2
  exit 1
fi
if [ ! -d node_modules/playwright-core ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

export OUTPUT_DIR="$PWD/output"
rm -rf "$OUTPUT_DIR"
mkdir -p "$OUTPUT_DIR"
export GATEWAY_BIN="$OUTPUT_DIR/a2a-gateway"
(cd "$root" && go build -o "$GATEWAY_BIN" ./cmd/a2a-gateway)
if [ "${1:-}" = "--update" ]; then
  export DOCS_IMAGES="$root/docs/images"
  mkdir -p "$DOCS_IMAGES"
fi
node --test --test-reporter=spec console.test.mjs
