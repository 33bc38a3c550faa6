#!/usr/bin/env bash
# Dead code, found by a pinned deadcode (`go run` builds it from the module proxy on first use).
# Fails on
#  - functions nothing reaches, not even a test (`deadcode -test ./...`);
#  - functions only tests reach: unreachable from the binaries, except in test-support packages,
#    the functions scripts/deadcode-api.txt lists, which the documentation offers as API and tests
#    use as such, and the test hooks scripts/deadcode-testhooks.txt lists, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."

deadcode() { go run golang.org/x/tools/cmd/deadcode@v0.52.0 "$@"; }
binaries=(./cmd/a2a-gateway ./cmd/demo-agent ./bench/cmd/a2abench)
# Packages that exist for tests: no binary reaches them, by design.
test_support=(internal/gwtest internal/redistest internal/store/storetest)
allowlist=scripts/deadcode-api.txt
hooks=scripts/deadcode-testhooks.txt

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One line per function: <package path>.<name> <file:line:col>
format='{{range .Funcs}}{{$.Path}}.{{.Name}} {{.Position}}{{"\n"}}{{end}}'
deadcode -test -f "$format" ./... >"$tmp/unreachable"
deadcode -f "$format" "${binaries[@]}" >"$tmp/from-binaries"
grep -v '^[[:space:]]*\(#\|$\)' "$allowlist" >"$tmp/allowed" || true
grep -v '^[[:space:]]*\(#\|$\)' "$hooks" >"$tmp/hooks" || true

failed=0
# Each allowed function is documented on the page its line names.
while read -r fn page; do
  if [ ! -f "$page" ] || ! grep -qF "${fn##*/}" "$page"; then
    echo "deadcode: $allowlist: $page does not document ${fn##*/}"
    failed=1
  fi
done <"$tmp/allowed"

awk -v module="$(go list -m)" -v support="${test_support[*]}" -v allowlist="$allowlist" -v hooks="$hooks" '
  FILENAME == ARGV[1] { allowed[$1] = 1; from[$1] = allowlist; next }
  FILENAME == ARGV[2] { if (NF < 2) { print "deadcode: " hooks ": " $1 " gives no reason"; bad = 1 } allowed[$1] = 1; from[$1] = hooks; next }
  FILENAME == ARGV[3] { dead[$1] = $2; next }
  {
    reported[$1] = 1
    if ($1 in dead || $1 in allowed) next
    for (i = 1; i <= n; i++) if (index($1, module "/" pkgs[i] ".") == 1) next
    only[$1] = $2
  }
  BEGIN { n = split(support, pkgs, " ") }
  END {
    for (f in dead) { print "deadcode: unreachable, even from tests: " dead[f] " " f | "sort"; bad = 1 }
    for (f in only) { print "deadcode: reached only from tests: " only[f] " " f | "sort"; bad = 1 }
    for (f in allowed) {
      if (f in dead) { print "deadcode: " from[f] ": " f " is listed but no test uses it" | "sort"; bad = 1 }
      else if (!(f in reported)) { print "deadcode: " from[f] ": " f " is reached from a binary, or gone: drop it from the list" | "sort"; bad = 1 }
    }
    close("sort")
    if (bad) {
      print "deadcode: delete what nothing needs; list in " allowlist " only functions the documentation offers as API, in " hooks " only hooks tests need"
      exit 1
    }
  }
' "$tmp/allowed" "$tmp/hooks" "$tmp/unreachable" "$tmp/from-binaries" || failed=1
exit "$failed"
