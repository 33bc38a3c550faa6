#!/usr/bin/env bash
# Regenerates the Go code of the A2A gRPC definitions in internal/pb from the
# specification's own a2a.proto files, kept verbatim under internal/pb/proto:
#   lf/a2a/v1/a2a.proto  A2A 1.0 (a2aproject/A2A v1.0.1, specification/a2a.proto)
#   a2a/v1/a2a.proto     A2A 0.3 (a2aproject/A2A v0.3.0, specification/grpc/a2a.proto)
#
# Needs protoc (Debian: apt-get install protobuf-compiler; 3.21.12 here). The
# plugins are pinned: protoc-gen-go at the google.golang.org/protobuf version
# of go.mod, protoc-gen-go-grpc below.
#
# The google.api annotations (HTTP transcoding, field behaviour, method
# signatures) are removed before compiling: they do not change a message's
# wire form, the gateway does not read them, and without them the build
# needs no copy of googleapis.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
grpc_plugin_version=v1.6.0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
GOBIN="$work/bin" go install google.golang.org/protobuf/cmd/protoc-gen-go
GOBIN="$work/bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$grpc_plugin_version"
gen() { # <proto path under internal/pb/proto> <Go package directory under internal/pb>
  mkdir -p "$work/src/$(dirname "$1")"
  perl -0pe '
    s/^import "google\/api\/[^"]+";\n//mg;
    s/\s*option \(google\.api\.http\) = (\{(?:[^{}]++|(?1))*\});//g;
    s/\s*option \(google\.api\.method_signature\) = "[^"]*";//g;
    s/\[\(google\.api\.field_behavior\) = \w+,\s*/[/g;
    s/\s*\[\(google\.api\.field_behavior\)[^\]]*\]//g;
  ' "internal/pb/proto/$1" >"$work/src/$1"
  if grep -n "google\.api" "$work/src/$1"; then
    echo "genproto: an annotation of $1 was not removed" >&2
    exit 1
  fi
  local pkg="github.com/a2a-gateway/a2a-gateway/internal/pb/$2"
  rm -f "internal/pb/$2"/*.pb.go
  PATH="$work/bin:$PATH" protoc -I "$work/src" \
    --go_out="$work/out" --go_opt=module=github.com/a2a-gateway/a2a-gateway --go_opt="M$1=$pkg;$2" \
    --go-grpc_out="$work/out" --go-grpc_opt=module=github.com/a2a-gateway/a2a-gateway --go-grpc_opt="M$1=$pkg;$2" \
    "$1"
  mkdir -p "internal/pb/$2"
  cp "$work/out/internal/pb/$2"/*.go "internal/pb/$2/"
}
mkdir -p "$work/out"
gen lf/a2a/v1/a2a.proto a2a10
gen a2a/v1/a2a.proto a2a03
gofmt -l internal/pb
